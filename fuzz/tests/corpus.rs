//! Replays the checked-in fuzz corpus through the fuzz bodies, on stable, as part of
//! `cargo test`: every input the fuzzer kept (and every crash it found, once fixed) stays a
//! regression test.

use std::path::PathBuf;

/// Runs `body` on every file of `fuzz/corpus/<target>`; fails if there is none.
fn replay(target: &str, body: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus in {}", dir.display());
    for file in &files {
        let data = std::fs::read(file).expect("a corpus file");
        if let Err(payload) = std::panic::catch_unwind(|| body(&data)) {
            eprintln!("corpus input {} failed", file.display());
            std::panic::resume_unwind(payload);
        }
    }
    eprintln!("{target}: {} inputs replayed", files.len());
}

#[test]
fn oneshot_corpus() {
    replay("oneshot", bridge_fuzz::oneshot::run);
}

#[test]
fn task_corpus() {
    replay("task", bridge_fuzz::task::run);
}

#[test]
fn run_blocking_corpus() {
    replay("run_blocking", bridge_fuzz::run_blocking::run);
}

#[test]
fn stream_corpus() {
    replay("stream", bridge_fuzz::stream::run);
}
