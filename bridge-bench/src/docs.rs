//! The reference page of a study for `--docs DIR`: `DIR/STUDY.md` with the command that made
//! it, the machine it ran on, the study's markdown and its chart, copied to `DIR/STUDY.svg`.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// Facts about the machine and the checkout a run happened on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// CPUs this process may use.
    pub cpus: usize,
    /// The CPU's model name, where `/proc/cpuinfo` tells it.
    pub cpu_model: Option<String>,
    /// The operating system and architecture, e.g. `linux x86_64`.
    pub os: String,
    /// The day of the run, `YYYY-MM-DD` in UTC.
    pub date: String,
    /// The checked-out commit, e.g. `83541f5`, with ` (uncommitted changes)` after it when
    /// tracked files differ from it; `None` outside a git checkout.
    pub commit: Option<String>,
}

impl Machine {
    /// Reads the facts of this machine now.
    pub fn detect() -> Self {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| cpu_model(&info));
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Self {
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu_model,
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            date: utc_date(secs),
            commit: commit(),
        }
    }

    /// The CPUs and their model, e.g. `2 CPUs (AMD EPYC 7B13)`; `model unknown` where
    /// `/proc/cpuinfo` does not tell it.
    pub fn cpus_text(&self) -> String {
        format!(
            "{} CPUs ({})",
            self.cpus,
            self.cpu_model.as_deref().unwrap_or("model unknown")
        )
    }

    /// The machine in a few words, for a goal that was not met on it: the CPU model, then
    /// the CPUs, e.g. `AMD EPYC 7B13, 2 CPUs`.
    pub fn short(&self) -> String {
        format!(
            "{}, {} CPUs",
            self.cpu_model.as_deref().unwrap_or("model unknown"),
            self.cpus
        )
    }

    /// One line that names the machine, the checkout and `mode`, for the head of a study's
    /// `results.md`.
    pub fn summary(&self, mode: &str) -> String {
        let mut out = format!("Machine: {}, {}", self.cpus_text(), self.os);
        if let Some(commit) = &self.commit {
            let _ = write!(out, ", commit {commit}");
        }
        let _ = write!(out, ", {} (UTC); mode {mode}.", self.date);
        out
    }
}

/// The CPU model of a `/proc/cpuinfo` text: the first `model name` line (x86, most arm64
/// kernels), else the first of the keys other architectures use for it (`cpu model`,
/// `Processor`, `Hardware`, `uarch`, `cpu`).
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    [
        "model name",
        "cpu model",
        "Processor",
        "Hardware",
        "uarch",
        "cpu",
    ]
    .into_iter()
    .find_map(|wanted| {
        cpuinfo.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == wanted && !value.trim().is_empty()).then(|| value.trim().to_owned())
        })
    })
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

/// The UTC calendar date of `secs` seconds after the Unix epoch, as `YYYY-MM-DD`.
pub fn utc_date(secs: u64) -> String {
    // Howard Hinnant's days-to-civil, for days since 1970-01-01 in the proleptic Gregorian
    // calendar; eras are 400-year cycles starting on 0000-03-01.
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// The command that reruns this process through cargo, e.g.
/// `cargo run --release --manifest-path bridge-bench/Cargo.toml -- all --docs docs/studies`, with each argument quoted
/// for a POSIX shell where it needs it.
pub fn command_line(args: impl IntoIterator<Item = OsString>) -> String {
    let mut out = "cargo run --release --manifest-path bridge-bench/Cargo.toml --".to_owned();
    for arg in args {
        out.push(' ');
        out.push_str(&shell_quote(&arg.to_string_lossy()));
    }
    out
}

/// `arg` as a POSIX shell word: as is when it holds only safe characters, otherwise in single
/// quotes (a quote inside becomes `'\''`).
fn shell_quote(arg: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !arg.is_empty() && arg.chars().all(safe) {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// What one study's page shows.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    /// The study's name.
    pub study: &'a str,
    /// The command that made the run, from [`command_line`].
    pub command: &'a str,
    /// The machine it ran on.
    pub machine: &'a Machine,
    /// How long and how often it measured, e.g. `full: 51 rounds per scenario, batches of
    /// ~40 ms`.
    pub mode: &'a str,
    /// The study's wall time in seconds.
    pub took_secs: f64,
    /// The markdown the study printed: every scenario's heading, frame, table and takeaway.
    pub markdown: &'a str,
}

impl Page<'_> {
    /// The page as markdown; its chart is `STUDY.svg` next to it.
    pub fn markdown(&self) -> String {
        let Self {
            study,
            command,
            machine,
            mode,
            took_secs,
            markdown,
        } = *self;
        let mut out = String::new();
        let _ = writeln!(out, "# The `{study}` study\n");
        let _ = writeln!(
            out,
            "A reference run of `bridge-bench`'s `{study}` study. It was made by this command, \
             from the root of the repository; rerun it to get numbers for your machine:\n"
        );
        let _ = writeln!(out, "```sh\n{command}\n```\n");
        out.push_str("| machine and run | |\n| --- | --- |\n");
        let cpus = format!(
            "{} ({})",
            machine.cpus,
            machine.cpu_model.as_deref().unwrap_or("model unknown")
        );
        let _ = writeln!(out, "| CPUs | {} |", table_cell(&cpus));
        let _ = writeln!(out, "| OS | {} |", table_cell(&machine.os));
        let _ = writeln!(out, "| date | {} (UTC) |", machine.date);
        if let Some(commit) = &machine.commit {
            let _ = writeln!(out, "| commit | {} |", table_cell(commit));
        }
        let _ = writeln!(out, "| mode | {} |", table_cell(mode));
        let _ = writeln!(out, "| took | {took_secs:.1} s |\n");
        let _ = writeln!(
            out,
            "![{study}: median time per operation of each variant, one panel per scenario; \
             bridge highlighted]({study}.svg)\n"
        );
        out.push_str("## Results\n\n");
        out.push_str(markdown.trim_end());
        out.push('\n');
        out
    }
}

/// `text` made safe for a markdown table cell: `|` escaped, line breaks as spaces.
fn table_cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// Writes `DIR/STUDY.md` and `DIR/STUDY.svg`, creating `dir`, and returns the page's path.
///
/// # Errors
///
/// Any I/O error from creating the directory or writing the files.
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
    fn dates_from_unix_seconds() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(86_399), "1970-01-01");
        assert_eq!(utc_date(86_400), "1970-01-02");
        // A leap day, and the last second of a leap year.
        assert_eq!(utc_date(951_782_400), "2000-02-29");
        assert_eq!(utc_date(1_735_689_599), "2024-12-31");
        assert_eq!(utc_date(1_735_689_600), "2025-01-01");
        assert_eq!(utc_date(4_107_542_400), "2100-03-01");
    }

    #[test]
    fn the_command_quotes_what_a_shell_would_split() {
        let args = ["all", "--docs", "docs/studies", "--out", "my dir", "it's"].map(OsString::from);
        assert_eq!(
            command_line(args),
            "cargo run --release --manifest-path bridge-bench/Cargo.toml -- all --docs docs/studies --out 'my dir' \
             'it'\\''s'"
        );
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("--out=target/x"), "--out=target/x");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
    }

    #[test]
    fn cpu_model_is_the_first_model_name() {
        let info = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 1\n\
                    model name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: other\n";
        assert_eq!(cpu_model(info).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(cpu_model("processor\t: 0\nmodel\t: 1\n"), None);
        assert_eq!(
            cpu_model("processor\t: 0\nuarch\t\t: sifive,u74-mc\n").as_deref(),
            Some("sifive,u74-mc")
        );
        assert_eq!(cpu_model("model name\t:   \n"), None);
    }

    #[test]
    fn the_page_has_command_machine_chart_and_results() {
        let machine = Machine {
            cpus: 2,
            cpu_model: Some("AMD EPYC 7B13".to_owned()),
            os: "linux x86_64".to_owned(),
            date: "2025-01-01".to_owned(),
            commit: Some("83541f5".to_owned()),
        };
        let page = Page {
            study: "oneshot",
            command: "cargo run --release --manifest-path bridge-bench/Cargo.toml -- all --docs docs/studies",
            machine: &machine,
            mode: "full: 51 rounds per scenario, batches of ~40 ms",
            took_secs: 31.24,
            markdown: "### oneshot / same-thread\n\n| a | b |\n\nTakeaway: fine.\n\n",
        };
        assert_eq!(
            page.markdown(),
            "# The `oneshot` study\n\n\
             A reference run of `bridge-bench`'s `oneshot` study. It was made by this command, \
             from the root of the repository; rerun it to get numbers for your machine:\n\n\
             ```sh\ncargo run --release --manifest-path bridge-bench/Cargo.toml -- all --docs docs/studies\n```\n\n\
             | machine and run | |\n| --- | --- |\n\
             | CPUs | 2 (AMD EPYC 7B13) |\n\
             | OS | linux x86_64 |\n\
             | date | 2025-01-01 (UTC) |\n\
             | commit | 83541f5 |\n\
             | mode | full: 51 rounds per scenario, batches of ~40 ms |\n\
             | took | 31.2 s |\n\n\
             ![oneshot: median time per operation of each variant, one panel per scenario; \
             bridge highlighted](oneshot.svg)\n\n\
             ## Results\n\n\
             ### oneshot / same-thread\n\n| a | b |\n\nTakeaway: fine.\n"
        );
    }

    #[test]
    fn the_summary_names_cpus_model_and_mode() {
        let mut machine = Machine {
            cpus: 2,
            cpu_model: Some("AMD EPYC 7B13".to_owned()),
            os: "linux x86_64".to_owned(),
            date: "2025-01-01".to_owned(),
            commit: Some("83541f5".to_owned()),
        };
        assert_eq!(
            machine.summary("quick: 5 rounds per scenario, batches of ~3 ms, 1 run"),
            "Machine: 2 CPUs (AMD EPYC 7B13), linux x86_64, commit 83541f5, 2025-01-01 (UTC); \
             mode quick: 5 rounds per scenario, batches of ~3 ms, 1 run."
        );
        assert_eq!(machine.short(), "AMD EPYC 7B13, 2 CPUs");
        machine.cpu_model = None;
        assert_eq!(machine.cpus_text(), "2 CPUs (model unknown)");
    }

    #[test]
    fn table_cells_escape_pipes_and_line_breaks() {
        assert_eq!(table_cell("a|b\nc"), "a\\|b c");
    }

    #[test]
    fn write_puts_page_and_chart_side_by_side() {
        let dir = std::env::temp_dir().join(format!("bridge-bench-docs-{}", std::process::id()));
        let machine = Machine {
            cpus: 1,
            cpu_model: None,
            os: "x".to_owned(),
            date: "2025-01-01".to_owned(),
            commit: None,
        };
        let page = Page {
            study: "demo",
            command: "cmd",
            machine: &machine,
            mode: "quick",
            took_secs: 0.0,
            markdown: "",
        };
        let path = write(&dir, &page, "<svg/>").unwrap();
        assert_eq!(path, dir.join("demo.md"));
        assert_eq!(
            std::fs::read_to_string(dir.join("demo.svg")).unwrap(),
            "<svg/>"
        );
        let md = std::fs::read_to_string(&path).unwrap();
        assert!(md.contains("| CPUs | 1 (model unknown) |\n| OS | x |\n"));
        assert!(!md.contains("commit"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
