//! Where a crossing's producer runs: one function per side, each starting the pump there and
//! giving back the task whose drop cancels it.

use std::future::Future;

/// The producer's task, kept by the consumer and dropped with it, which cancels the pump on
/// its side (the buffer's cancel, which wakes the pump, stops it in any case).
#[derive(Debug)]
pub(crate) enum Producer {
    /// On the shared I/O runtime.
    #[cfg(feature = "tokio")]
    Io { _task: bridge_tokio::IoTask<()> },
    /// On the rayon pool.
    #[cfg(feature = "rayon")]
    Cpu { _task: bridge_rayon::Task<()> },
    /// Polled by whoever holds the pump (the fuzz body's hook).
    Manual,
}

/// Runs `pump` as a task of the shared `IoRuntime`.
#[cfg(feature = "tokio")]
pub(crate) fn io(pump: impl Future<Output = ()> + Send + 'static) -> Producer {
    Producer::Io {
        _task: bridge_tokio::spawn_io(pump),
    }
}

/// Runs `pump` on the rayon pool, one poll per wake-up as a rayon job, with the shared
/// `IoRuntime`'s handle entered during each poll (feature `tokio`).
#[cfg(feature = "rayon")]
pub(crate) fn cpu(pump: impl Future<Output = ()> + Send + 'static) -> Producer {
    Producer::Cpu {
        _task: crate::cpu::spawn_future(pump),
    }
}
