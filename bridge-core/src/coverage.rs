//! Arm coverage of the state machines: which arms the loom models and the tests reached.
//!
//! Test machinery of the bridge crates, compiled only with `--cfg bridge_loom` or
//! `--cfg bridge_coverage` (which `.ci/loom-coverage` sets): no other build has this module,
//! its macros or the crates' arm lists, and every crate's `arm!` marker expands to nothing
//! there. Each crate declares the arms of its state machines in one list, and marks every arm
//! with [`__arm!`](crate::__arm):
//!
//! ```text
//! use bridge_core::__coverage::Decl;
//!
//! /// Every arm of this crate's state machines, reached or not.
//! const ARMS: &[Decl] = &[
//!     Decl::loom("claim.won"),
//!     // loom's timed park never returns early: only the std tests reach this one.
//!     Decl::std("claim.deadline_early"),
//! ];
//!
//! fn claim(won: bool) {
//!     if won {
//!         bridge_core::__arm!(ARMS, "claim.won");
//!     }
//! }
//! # claim(true);
//! ```
//!
//! A name missing from the list is a compile error in these builds (the loom clippy step of
//! `.ci/run` compiles them), so the list cannot fall behind the code.
//!
//! When the environment variable `BRIDGE_COVERAGE_FILE` names a file, the first hit of each
//! arm in a process appends `hit <name>` to it, and the first hit of any arm of a list
//! appends `declared <loom|std> <name>` for every arm of that list. Appends are single
//! small writes to a file opened in append mode, so the test binaries (and the threads of
//! each) can share one file. `.ci/loom-coverage` sets the variable, runs the loom suites
//! and the std tests, and fails on every declared arm without a hit: a `loom` arm must be
//! hit by a loom model, a `std` arm by a loom model or a std test.

use std::fmt;

pub use crate::coverage_arms::ARMS as CORE_ARMS;

/// One declared arm: its name, and which suite must reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decl {
    /// The arm's name, `machine.operation.arm` by convention.
    pub name: &'static str,
    /// Which suite must reach it.
    pub reach: Reach,
}

/// Which suite must reach an arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// A loom model must reach it.
    Loom,
    /// loom cannot reach it (say why next to the arm); a std test must.
    Std,
}

impl fmt::Display for Reach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Loom => "loom",
            Self::Std => "std",
        })
    }
}

impl Decl {
    /// An arm that a loom model must reach.
    ///
    /// # Examples
    ///
    /// ```text
    /// const ARMS: &[bridge_core::__coverage::Decl] =
    ///     &[bridge_core::__coverage::Decl::loom("machine.op.arm")];
    /// assert_eq!(ARMS[0].reach, bridge_core::__coverage::Reach::Loom);
    /// ```
    pub const fn loom(name: &'static str) -> Self {
        Self {
            name,
            reach: Reach::Loom,
        }
    }

    /// An arm that loom cannot reach, so a std test must.
    ///
    /// # Examples
    ///
    /// ```text
    /// const ARMS: &[bridge_core::__coverage::Decl] =
    ///     &[bridge_core::__coverage::Decl::std("machine.op.deadline_early")];
    /// assert_eq!(ARMS[0].reach, bridge_core::__coverage::Reach::Std);
    /// ```
    pub const fn std(name: &'static str) -> Self {
        Self {
            name,
            reach: Reach::Std,
        }
    }
}

/// Whether `name` is in `arms`; `__arm!` checks it at compile time.
///
pub const fn is_declared(arms: &[Decl], name: &str) -> bool {
    let mut i = 0;
    while i < arms.len() {
        if bytes_eq(arms[i].name.as_bytes(), name.as_bytes()) {
            return true;
        }
        i += 1;
    }
    false
}

const fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Marks one arm of a state machine: `__arm!(ARMS, "machine.op.arm")`, where `ARMS` is the
/// calling crate's `&[Decl]` list (see [`__coverage`](crate::__coverage)).
///
/// The name must be in the list (a compile error otherwise).
#[doc(hidden)]
#[macro_export]
macro_rules! __arm {
    ($arms:expr, $name:expr) => {{
        const _: () = ::core::assert!(
            $crate::__coverage::is_declared($arms, $name),
            ::core::concat!("coverage arm ", $name, " is not in the declared list")
        );
        $crate::__arm_count!($arms, $name);
    }};
}

/// The counting half of [`__arm!`](crate::__arm).
#[doc(hidden)]
#[macro_export]
macro_rules! __arm_count {
    ($arms:expr, $name:expr) => {{
        static ARM: $crate::__coverage::Arm = $crate::__coverage::Arm::new($name, $arms);
        ARM.hit();
    }};
}

pub use counting::{Arm, declare, report};

/// The counters. std primitives only, never loom's: a hit must not be a loom branch point
/// (it would multiply the interleavings), and loom objects cannot outlive one execution.
mod counting {
    use super::Decl;
    use std::collections::BTreeSet;
    use std::io::Write;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    /// The counter of one arm; `__arm!` makes one static per call site.
    #[derive(Debug)]
    pub struct Arm {
        name: &'static str,
        arms: &'static [Decl],
        hits: AtomicUsize,
    }

    /// What this process has recorded: the arms hit at least once, and the names declared.
    struct Registry {
        hit: Vec<&'static Arm>,
        declared: BTreeSet<&'static str>,
    }

    static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
        hit: Vec::new(),
        declared: BTreeSet::new(),
    });

    fn registry() -> std::sync::MutexGuard<'static, Registry> {
        // A panic while the lock was held (a failing test) leaves the data consistent.
        REGISTRY
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    impl Arm {
        /// A counter for the arm `name` of the list `arms`.
        ///
        /// # Examples
        ///
        /// ```text
        /// use bridge_core::__coverage::{Arm, Decl};
        ///
        /// static ARM: Arm = Arm::new("doc.arm.new", &[Decl::loom("doc.arm.new")]);
        /// ARM.hit();
        /// ```
        pub const fn new(name: &'static str, arms: &'static [Decl]) -> Self {
            Self {
                name,
                arms,
                hits: AtomicUsize::new(0),
            }
        }

        /// Counts a hit; the first one registers the arm (and its list).
        ///
        /// # Examples
        ///
        /// ```text
        /// use bridge_core::__coverage::{Arm, Decl};
        ///
        /// static ARM: Arm = Arm::new("doc.arm.hit", &[Decl::loom("doc.arm.hit")]);
        /// ARM.hit();
        /// ARM.hit();
        /// assert!(bridge_core::__coverage::report().contains(&("doc.arm.hit", 2)));
        /// ```
        pub fn hit(&'static self) {
            // ORDERING: Relaxed: a statistic that orders nothing; the read-modify-write alone
            // makes exactly one hit see 0 and register the arm.
            if self.hits.fetch_add(1, Relaxed) == 0 {
                let mut registry = registry();
                let mut lines = declare_into(&mut registry, self.arms);
                registry.hit.push(self);
                lines.push_str(&format!("hit {}\n", self.name));
                append(&lines);
            }
        }
    }

    fn declare_into(registry: &mut Registry, arms: &'static [Decl]) -> String {
        let mut lines = String::new();
        for decl in arms {
            if registry.declared.insert(decl.name) {
                lines.push_str(&format!("declared {} {}\n", decl.reach, decl.name));
            }
        }
        lines
    }

    /// Records the arms of `arms` as declared (as the first hit of any of them would), so
    /// a list none of whose arms was reached still shows up as unreached.
    ///
    /// # Examples
    ///
    /// ```text
    /// const ARMS: &[bridge_core::__coverage::Decl] =
    ///     &[bridge_core::__coverage::Decl::loom("doc.declare.never")];
    /// bridge_core::__coverage::declare(ARMS);
    /// ```
    pub fn declare(arms: &'static [Decl]) {
        let lines = declare_into(&mut registry(), arms);
        append(&lines);
    }

    /// The arms hit so far in this process, by name, with their hit counts.
    ///
    /// # Examples
    ///
    /// ```text
    /// let hits = bridge_core::__coverage::report();
    /// assert!(hits.windows(2).all(|w| w[0].0 < w[1].0));
    /// ```
    pub fn report() -> Vec<(&'static str, usize)> {
        let mut hits = std::collections::BTreeMap::new();
        for arm in &registry().hit {
            // ORDERING: Relaxed: a statistic.
            *hits.entry(arm.name).or_insert(0) += arm.hits.load(Relaxed);
        }
        hits.into_iter().collect()
    }

    /// Appends `lines` to the file named by `BRIDGE_COVERAGE_FILE`, if set. One write per
    /// call, in append mode: concurrent processes interleave whole writes.
    fn append(lines: &str) {
        if lines.is_empty() {
            return;
        }
        let Some(path) = std::env::var_os("BRIDGE_COVERAGE_FILE") else {
            return;
        };
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| file.write_all(lines.as_bytes()));
        if let Err(error) = written {
            // The coverage script then reports the arms as unreached; say why here.
            eprintln!("bridge coverage: cannot append to {path:?}: {error}");
        }
    }
}
