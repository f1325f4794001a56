//! Asking `block_in_place` whether it may run here, without a noisy panic.
//!
//! Inside a `LocalSet` on a multi-thread runtime `block_in_place` panics before it runs its
//! closure ("can call blocking only when running on the multi-threaded runtime"), and tokio
//! offers no public way to know that beforehand. The bridge calls it under `catch_unwind`,
//! with a panic-hook filter that silences that one panic on the probing thread. The filter is
//! installed once, on first use, around whatever hook was there; a hook set later replaces it,
//! and the refusal then shows in stderr, harmlessly. Under `panic = "abort"` nothing can be
//! caught, so the probe is skipped: use [`LocalSet`](crate::LocalSet) there.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Set while this thread asks `block_in_place`, cleared before any caller code runs.
    static PROBING: Cell<bool> = const { Cell::new(false) };
}

fn install_quiet_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !PROBING.try_with(Cell::get).unwrap_or(false) {
                previous(info);
            }
        }));
    });
}

/// Clears the probing flag when the probe ends, or when the closure starts.
struct Probing;

impl Probing {
    fn start() -> Self {
        PROBING.with(|p| p.set(true));
        Probing
    }

    fn stop() {
        PROBING.with(|p| p.set(false));
    }
}

impl Drop for Probing {
    fn drop(&mut self) {
        let _ = PROBING.try_with(|p| p.set(false));
    }
}

/// Runs `f` inside `tokio::task::block_in_place` if the context allows it; `Err(())` if it
/// refused, in which case `f` did not run (it is dropped; keep what it would consume in a slot
/// it borrows). A panic of `f` itself propagates.
pub(crate) fn try_block_in_place<R>(f: impl FnOnce() -> R) -> Result<R, ()> {
    if cfg!(panic = "abort") {
        return Ok(tokio::task::block_in_place(f));
    }
    install_quiet_hook();
    let mut f = Some(f);
    let attempt = {
        let _probing = Probing::start();
        panic::catch_unwind(AssertUnwindSafe(|| {
            tokio::task::block_in_place(|| {
                Probing::stop();
                let f = f.take().expect("block_in_place runs its closure once");
                // The caller's panics must propagate as they are, not as a refusal.
                panic::catch_unwind(AssertUnwindSafe(f))
            })
        }))
    };
    match attempt {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(payload)) => panic::resume_unwind(payload),
        // `block_in_place` refused before running the closure.
        Err(_) if f.is_some() => Err(()),
        // The closure ran and `block_in_place`'s own exit panicked: not a refusal.
        Err(payload) => panic::resume_unwind(payload),
    }
}

/// Whether `block_in_place` may run on this thread (see the module docs for the cost).
pub(crate) fn block_in_place_allowed() -> bool {
    try_block_in_place(|| ()).is_ok()
}

/// Runs `f` with panics caught and kept out of stderr; `Err(())` if it panicked.
pub(crate) fn quietly(f: impl FnOnce()) -> Result<(), ()> {
    if cfg!(panic = "abort") {
        f();
        return Ok(());
    }
    install_quiet_hook();
    let _probing = Probing::start();
    panic::catch_unwind(AssertUnwindSafe(f)).map_err(|_| ())
}
