//! Copies the doc comments of the family's sub-crates onto modules of this crate, so that
//! rustdoc runs their examples as this crate's doctests (see Cargo.toml for why).
//!
//! Each doc comment (a run of `///` or `//!` lines) that holds a code fence becomes
//! `#[doc = "..."] pub mod <crate>_<file>_<line> {}` in `$OUT_DIR/examples.rs`, its text
//! unchanged, so rustdoc reads its fences, hidden `# ` lines and attributes (`no_run`,
//! `compile_fail`, ...) as it would in the crate itself. The READMEs the crates include as
//! their front pages become one module each.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs};

const CRATES: &[&str] = &[
    "bridge-core",
    "bridge-rayon",
    "bridge-tokio",
    "bridge-object-store",
];

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = String::new();
    for name in CRATES {
        let dir = root.join(name);
        println!("cargo:rerun-if-changed={}", dir.join("src").display());
        let readme = dir.join("README.md");
        let lib = fs::read_to_string(dir.join("src/lib.rs")).expect("the crate's lib.rs");
        if lib.contains("include_str!(\"../README.md\")") {
            println!("cargo:rerun-if-changed={}", readme.display());
            let text = fs::read_to_string(&readme).expect("the README the crate includes");
            item(&mut out, &format!("{name}/README.md"), &text);
        }
        let mut files = Vec::new();
        sources(&dir.join("src"), &mut files);
        for file in files {
            let shown = file.strip_prefix(&root).unwrap().display().to_string();
            let text = fs::read_to_string(&file).unwrap();
            for (line, doc) in doc_comments(&text) {
                item(&mut out, &format!("{shown}:{line}"), &doc);
            }
        }
    }
    let path = PathBuf::from(env::var_os("OUT_DIR").unwrap()).join("examples.rs");
    fs::write(path, out).unwrap();
}

/// The `.rs` files under `dir`, sorted, leaving out the loom models (they are tests).
fn sources(dir: &Path, files: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if path.file_name().unwrap() != "loom_models" {
                sources(&path, files);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// (first line, text) of each doc comment holding a code fence.
fn doc_comments(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut current: Option<(usize, &str, String)> = None;
    for (n, line) in source.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = ["///", "//!"].into_iter().find(|m| {
            // `////` is an ordinary comment, as for rustdoc.
            trimmed.starts_with(m) && !trimmed.starts_with("////")
        });
        match (marker, &mut current) {
            (Some(m), Some((_, kind, text))) if *kind == m => {
                text.push_str(strip(trimmed, m));
                text.push('\n');
            }
            (m, _) => {
                if let Some((start, _, text)) = current.take() {
                    if text.contains("```") {
                        found.push((start, text));
                    }
                }
                current = m.map(|m| (n + 1, m, format!("{}\n", strip(trimmed, m))));
            }
        }
    }
    if let Some((start, _, text)) = current.filter(|(_, _, text)| text.contains("```")) {
        found.push((start, text));
    }
    found
}

/// A doc line's text, without its marker and the one space after it.
fn strip<'a>(line: &'a str, marker: &str) -> &'a str {
    let rest = &line[marker.len()..];
    rest.strip_prefix(' ').unwrap_or(rest)
}

fn item(out: &mut String, source: &str, doc: &str) {
    let name: String = source
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    writeln!(out, "/// From `{source}`.\n///").unwrap();
    writeln!(out, "#[doc = {doc:?}]\npub mod {name} {{}}").unwrap();
}
