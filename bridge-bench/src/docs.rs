//! The reference page of a study for `--docs DIR`: `DIR/STUDY.md` and `DIR/STUDY.svg`.

use crate::report::table;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The machine and checkout of a run: CPUs and model, OS and architecture, day (UTC), commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    pub cpus: usize,
    pub cpu_model: Option<String>,
    pub os: String,
    pub date: String,
    pub commit: Option<String>,
}

impl Machine {
    /// Reads the facts of this machine now.
    pub fn detect() -> Self {
        Self {
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu_model: crate::proc::cpu_model(),
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            date: chrono::Utc::now().format("%Y-%m-%d").to_string(),
            commit: commit(),
        }
    }

    fn model(&self) -> &str {
        self.cpu_model.as_deref().unwrap_or("model unknown")
    }

    /// The CPUs and their model, e.g. `2 CPUs (AMD EPYC 7B13)`.
    pub fn cpus_text(&self) -> String {
        format!("{} CPUs ({})", self.cpus, self.model())
    }

    /// The machine in a few words, for a goal that was not met on it.
    pub fn short(&self) -> String {
        format!("{}, {} CPUs", self.model(), self.cpus)
    }

    /// One line that names the machine, the checkout and `mode`, for a `results.md`.
    pub fn summary(&self, mode: &str) -> String {
        let commit = self.commit.as_ref().map(|c| format!(", commit {c}"));
        let (cpus, os, date) = (self.cpus_text(), &self.os, &self.date);
        let commit = commit.unwrap_or_default();
        format!("Machine: {cpus}, {os}{commit}, {date} (UTC); mode {mode}.")
    }
}

/// The short hash of `HEAD`, marked when tracked files have changes; `None` without git.
fn commit() -> Option<String> {
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        out.status.success().then_some(text)
    };
    let hash = git(&["rev-parse", "--short", "HEAD"])?;
    let status = git(&["status", "--porcelain", "--untracked-files=no"]);
    Some(match status {
        Some(changes) if !changes.is_empty() => format!("{hash} (uncommitted changes)"),
        _ => hash,
    })
}

/// The cargo command, from the repository root, that reruns this process with `args`.
pub fn command_line(args: impl IntoIterator<Item = OsString>) -> String {
    let args: Vec<String> = args
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let quoted =
        shlex::try_join(args.iter().map(String::as_str)).unwrap_or_else(|_| args.join(" "));
    format!("cargo run --release --manifest-path bridge-bench/Cargo.toml -- {quoted}")
}

/// What one study's page shows: the command, the machine, the mode, the time taken and the
/// study's markdown.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    pub study: &'a str,
    pub command: &'a str,
    pub machine: &'a Machine,
    pub mode: &'a str,
    pub took_secs: f64,
    pub markdown: &'a str,
}

impl Page<'_> {
    /// The page as markdown; its chart is `STUDY.svg` next to it.
    pub fn markdown(&self) -> String {
        let Self { study, machine, .. } = *self;
        let cpus = format!("{} ({})", machine.cpus, machine.model());
        let date = format!("{} (UTC)", machine.date);
        let mut facts = vec![("CPUs", cpus), ("OS", machine.os.clone()), ("date", date)];
        facts.extend(machine.commit.as_ref().map(|c| ("commit", c.clone())));
        facts.push(("mode", self.mode.to_owned()));
        facts.push(("took", format!("{:.1} s", self.took_secs)));
        let facts: Vec<Vec<String>> = facts
            .into_iter()
            .map(|(k, v)| vec![k.to_owned(), v])
            .collect();
        format!(
            "# The `{study}` study\n\nA reference run of `bridge-bench`'s `{study}` study. It \
             was made by this command, from the root of the repository; rerun it to get \
             numbers for your machine:\n\n```sh\n{}\n```\n\n{}\n![{study}: median time per \
             operation of each variant, one panel per scenario; bridge \
             highlighted]({study}.svg)\n\n## Results\n\n{}\n",
            self.command,
            table(&["machine and run", ""], "---", &facts),
            self.markdown.trim_end()
        )
    }
}

/// Writes `DIR/STUDY.md` and `DIR/STUDY.svg`, creating `dir`, and returns the page's path.
pub fn write(dir: &Path, page: &Page<'_>, svg: &str) -> io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(format!("{}.svg", page.study)), svg)?;
    let path = dir.join(format!("{}.md", page.study));
    std::fs::write(&path, page.markdown())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_command_machine_chart_and_results() {
        let args = ["all", "--out", "my dir", "$HOME"].map(OsString::from);
        assert_eq!(
            command_line(args),
            "cargo run --release --manifest-path bridge-bench/Cargo.toml -- all --out \
             'my dir' '$HOME'"
        );
        let machine = Machine {
            cpus: 2,
            cpu_model: Some("AMD EPYC 7B13".to_owned()),
            os: "linux x86_64".to_owned(),
            date: "2025-01-01".to_owned(),
            commit: None,
        };
        let page = Page {
            study: "oneshot",
            command: "cmd",
            machine: &machine,
            mode: "full",
            took_secs: 31.24,
            markdown: "### oneshot / same-thread\n\nTakeaway: fine.\n\n",
        };
        let md = page.markdown();
        assert!(md.contains("```sh\ncmd\n```\n\n| machine and run |  |\n| --- | --- |\n"));
        assert!(md.contains("| CPUs | 2 (AMD EPYC 7B13) |\n| OS | linux x86_64 |\n"));
        assert!(md.contains("| took | 31.2 s |\n\n![oneshot: median"));
        assert!(md.ends_with("## Results\n\n### oneshot / same-thread\n\nTakeaway: fine.\n"));
        assert_eq!(
            machine.summary("quick"),
            "Machine: 2 CPUs (AMD EPYC 7B13), linux x86_64, 2025-01-01 (UTC); mode quick."
        );
    }
}
