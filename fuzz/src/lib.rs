//! The bodies of bridge's fuzz targets, one library function per target, so that
//! `cargo test` replays the checked-in corpus on stable and `cargo fuzz` explores on
//! nightly with the very same code.
//!
//! Each body decodes its input into a small program, runs it against the real crate and
//! checks every result against a reference model; a mismatch panics with the step and the
//! state, which is what the fuzzer reports as a crash.
//!
//! - [`oneshot::run`]: operations on several `bridge_core::oneshot` channels, some on other
//!   threads, against a sequential model of the channel;
//! - [`task::run`]: the rayon task protocol (spawn, drop, detach, await, timeout, panic)
//!   on a pool whose threads can be held, so a dropped task is known not to have started;
//! - [`run_blocking::run`]: `bridge_tokio::run_blocking` and its variants at the top of
//!   generated stacks of contexts and nested calls;
//! - [`stream::run`]: the buffer of a `bridge::stream` crossing (producer yields, pending,
//!   panics and ends; consumer polls and drops) against a sequential model.
//!
//! [`contexts`] is the context-stack harness that the `run_blocking` body, the property
//! tests and the differential suite (this crate's tests) share.
//!
//! # Examples
//!
//! ```
//! // Any bytes are a valid program: the decoder maps each byte onto an operation.
//! bridge_fuzz::oneshot::run(&[0x00, 0x13, 0x25, 0x07, 0x30]);
//! ```

#![forbid(unsafe_code)]

pub mod contexts;
pub mod oneshot;
pub mod run_blocking;
pub mod stream;
pub mod task;

/// Reads operations out of the fuzzer's bytes. Running out of bytes ends the program; no
/// input is rejected.
///
/// # Examples
///
/// ```
/// let mut input = bridge_fuzz::Input::new(b"\x05\x0b");
/// let ops: Vec<u8> = std::iter::from_fn(|| input.below(4)).collect();
/// assert_eq!(ops, [1, 3]);
/// ```
#[derive(Debug)]
pub struct Input<'a> {
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    /// Reads from `bytes`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut input = bridge_fuzz::Input::new(&[7, 200]);
    /// assert_eq!(input.byte(), Some(7));
    /// assert_eq!(input.below(3), Some(2));
    /// assert_eq!(input.byte(), None);
    /// ```
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    /// The next byte, or `None` at the end.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(bridge_fuzz::Input::new(&[]).byte(), None);
    /// ```
    pub fn byte(&mut self) -> Option<u8> {
        let (&first, rest) = self.bytes.split_first()?;
        self.bytes = rest;
        Some(first)
    }

    /// The next byte reduced below `n` (which must not be 0), or `None` at the end.
    ///
    /// # Panics
    ///
    /// If `n` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(bridge_fuzz::Input::new(&[10]).below(4), Some(2));
    /// ```
    pub fn below(&mut self, n: u8) -> Option<u8> {
        assert!(n > 0, "below(0) has no value to return");
        self.byte().map(|b| b % n)
    }

    /// Whether every byte has been read.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut input = bridge_fuzz::Input::new(&[1]);
    /// assert!(!input.is_empty());
    /// input.byte();
    /// assert!(input.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// Counts how many times values of each id were dropped, to find leaks and double drops.
#[derive(Debug, Default)]
pub(crate) struct Drops {
    counts: std::sync::Mutex<std::collections::HashMap<u32, u32>>,
}

impl Drops {
    pub(crate) fn count(&self, id: u32) -> u32 {
        let counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts.get(&id).copied().unwrap_or(0)
    }

    fn record(&self, id: u32) {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        *counts.entry(id).or_insert(0) += 1;
    }
}

/// A value with an id that records its drop in a shared [`Drops`].
#[derive(Debug)]
pub(crate) struct Tracked {
    pub(crate) id: u32,
    drops: std::sync::Arc<Drops>,
}

impl Tracked {
    pub(crate) fn new(id: u32, drops: &std::sync::Arc<Drops>) -> Self {
        Self {
            id,
            drops: std::sync::Arc::clone(drops),
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.record(self.id);
    }
}

/// The payload of every panic a fuzz program provokes on purpose, so that the panic hook can
/// tell them from real failures.
///
/// # Examples
///
/// ```
/// let payload = std::panic::catch_unwind(|| std::panic::panic_any(bridge_fuzz::Expected(3)))
///     .unwrap_err();
/// assert_eq!(payload.downcast_ref::<bridge_fuzz::Expected>(), Some(&bridge_fuzz::Expected(3)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected(pub u32);

/// Installs, once per process, a panic hook that stays silent for [`Expected`] panics and
/// hands every other panic to the hook that was there before (the fuzzer's, which aborts,
/// or the default one, which prints).
///
/// The bodies provoke panics inside rayon jobs and tokio tasks on purpose and check that the
/// bridge carries them back; without this hook the fuzzer would abort at the first one.
///
/// # Examples
///
/// ```
/// bridge_fuzz::quiet_expected_panics();
/// // Silent, and caught:
/// assert!(std::panic::catch_unwind(|| std::panic::panic_any(bridge_fuzz::Expected(1))).is_err());
/// ```
pub fn quiet_expected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<Expected>() {
                previous(info);
            }
        }));
    });
}

/// Whether `payload` is the [`Expected`] panic with this id.
pub(crate) fn is_expected(payload: &(dyn std::any::Any + Send), id: u32) -> bool {
    payload.downcast_ref::<Expected>() == Some(&Expected(id))
}
