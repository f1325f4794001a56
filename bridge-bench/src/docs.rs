//! The reference page of a study for `--docs DIR`: `DIR/STUDY.md` with the command that made
//! it, the machine it ran on, the study's markdown and its chart, copied to `DIR/STUDY.svg`.

use crate::report::table;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Facts about the machine and the checkout a run happened on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// CPUs this process may use.
    pub cpus: usize,
    pub cpu_model: Option<String>,
    /// The operating system and architecture, e.g. `linux x86_64`.
    pub os: String,
    /// The day of the run, `YYYY-MM-DD` in UTC.
    pub date: String,
    /// The checked-out commit, e.g. `83541f5`, marked when tracked files differ from it.
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
        format!(
            "Machine: {}, {}{}, {} (UTC); mode {mode}.",
            self.cpus_text(),
            self.os,
            commit.unwrap_or_default(),
            self.date
        )
    }
}

/// The short hash of `HEAD`, marked when tracked files have changes; `None` if git is missing
/// or this is not a checkout.
fn commit() -> Option<String> {
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let hash = git(&["rev-parse", "--short", "HEAD"])?;
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if dirty {
        format!("{hash} (uncommitted changes)")
    } else {
        hash
    })
}

/// The command that reruns this process through cargo from the repository root, each
/// argument quoted for a POSIX shell where it needs it.
pub fn command_line(args: impl IntoIterator<Item = OsString>) -> String {
    let args: Vec<String> = args
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let quoted =
        shlex::try_join(args.iter().map(String::as_str)).unwrap_or_else(|_| args.join(" "));
    format!("cargo run --release --manifest-path bridge-bench/Cargo.toml -- {quoted}")
}

/// What one study's page shows.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    pub study: &'a str,
    /// The command that made the run, from [`command_line`].
    pub command: &'a str,
    pub machine: &'a Machine,
    /// How long and how often it measured.
    pub mode: &'a str,
    pub took_secs: f64,
    /// The markdown the study printed.
    pub markdown: &'a str,
}

impl Page<'_> {
    /// The page as markdown; its chart is `STUDY.svg` next to it.
    pub fn markdown(&self) -> String {
        let Self { study, machine, .. } = *self;
        let mut facts = vec![
            vec![
                "CPUs".to_owned(),
                format!("{} ({})", machine.cpus, machine.model()),
            ],
            vec!["OS".to_owned(), machine.os.clone()],
            vec!["date".to_owned(), format!("{} (UTC)", machine.date)],
        ];
        if let Some(commit) = &machine.commit {
            facts.push(vec!["commit".to_owned(), commit.clone()]);
        }
        facts.push(vec!["mode".to_owned(), self.mode.to_owned()]);
        facts.push(vec!["took".to_owned(), format!("{:.1} s", self.took_secs)]);
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
    fn the_command_quotes_what_a_shell_would_split() {
        let args = ["all", "--out", "my dir", "$HOME"].map(OsString::from);
        assert_eq!(
            command_line(args),
            "cargo run --release --manifest-path bridge-bench/Cargo.toml -- all --out \
             'my dir' '$HOME'"
        );
    }

    #[test]
    fn the_page_has_command_machine_chart_and_results() {
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
