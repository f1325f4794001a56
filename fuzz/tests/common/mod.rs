//! This test binary run again as a child process, for one test: hangs and aborts then end
//! with the child, not with the binary under test.
#![allow(dead_code)]

use bridge_fuzz::contexts::watchdog;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A running child: the process, its stdout lines as they come, its stderr once it closes.
pub struct Running {
    pub child: Child,
    pub lines: mpsc::Receiver<String>,
    pub stderr: JoinHandle<String>,
}

/// Runs `test` alone (`--exact`, one test thread) in a child process of this binary, with the
/// environment variable `var` set to the test's name, so that the child knows it is one.
pub fn spawn(test: &str, var: &str) -> Running {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(var, test)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the child test process");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let stderr = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = err.read_to_end(&mut text);
        String::from_utf8_lossy(&text).into_owned()
    });
    Running {
        child,
        lines,
        stderr,
    }
}

/// Runs `body` in a child process (this binary, this test only) and checks that it exited
/// cleanly after printing its marker, within 60 s. In the child itself, runs `body` and
/// prints the marker.
pub fn in_child(test: &str, body: impl FnOnce()) {
    const VAR: &str = "BRIDGE_TEST_CHILD";
    if std::env::var(VAR).as_deref() == Ok(test) {
        body();
        println!("child {test}: done");
        return;
    }
    let Running {
        child,
        lines,
        stderr,
    } = spawn(test, VAR);
    let (status, stdout) = watchdog(test, Duration::from_secs(60), move || {
        let mut child = child;
        let stdout: Vec<String> = lines.iter().collect();
        (child.wait().expect("the child's status"), stdout.join("\n"))
    });
    let stderr = stderr.join().expect("the child's stderr");
    assert!(
        status.success() && stdout.contains(&format!("child {test}: done")),
        "child {test} failed ({status}):\n{stdout}\n{stderr}"
    );
}
