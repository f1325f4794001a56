//! The busy machine: a rayon pool that runs [`kernel`] on every CPU and counts the kernels
//! done, which the harness reads around every batch.

use std::hint::black_box;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// Bytes hashed by one kernel.
pub const KERNEL_BYTES: usize = 4096;

/// The unit of background work: the 64-bit FNV-1a hash of `buf`.
pub fn kernel(buf: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    buf.iter()
        .fold(OFFSET, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// The background work, running from [`Load::start`] until the load is dropped.
#[derive(Debug)]
pub struct Load {
    pool: rayon::ThreadPool,
    threads: usize,
    kernels: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Load {
    /// Starts one background thread per CPU this process may use.
    pub fn start() -> io::Result<Self> {
        Self::start_threads(crate::proc::cpus(), 0)
    }

    /// Starts `threads` background threads (at least one) at nice `nice` (0: the default)
    /// where the OS allows it.
    pub fn start_threads(threads: usize, nice: u8) -> io::Result<Self> {
        let threads = threads.max(1);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("busy-{i}"))
            .start_handler(move |_| {
                if nice > 0 {
                    let _ = bridge::cpu::lower_thread_priority(nice);
                }
            })
            .build()
            .map_err(io::Error::other)?;
        let kernels = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        {
            let kernels = Arc::clone(&kernels);
            let stop = Arc::clone(&stop);
            pool.spawn_broadcast(move |ctx| {
                // Each hash is fed back into the buffer, so the work stays in the loop.
                let mut buf = [0u8; KERNEL_BYTES];
                for (k, byte) in buf.iter_mut().enumerate() {
                    *byte = (k ^ ctx.index()) as u8;
                }
                while !stop.load(Relaxed) {
                    let hash = kernel(black_box(&buf));
                    buf[0] = hash as u8;
                    kernels.fetch_add(1, Relaxed);
                }
            });
        }
        Ok(Self {
            pool,
            threads,
            kernels,
            stop,
        })
    }

    /// The background threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Kernels finished since the load started.
    pub fn kernels(&self) -> u64 {
        self.kernels.load(Relaxed)
    }

    /// The load as words for a scenario's frame.
    pub fn describe(&self) -> String {
        format!(
            "a busy machine: a rayon pool of {} threads (of {} CPUs, normal priority) hashes \
             {KERNEL_BYTES}-byte buffers in a tight loop, counting finished kernels. Background \
             kernels/s is the kernels finished during the variant's batches per second; \
             background / idle-baseline is that against a baseline batch per round in which \
             the main thread sleeps and the background runs alone (median of the per-round \
             ratios).",
            self.threads,
            crate::proc::cpus(),
        )
    }
}

impl Drop for Load {
    /// Stops the loops and waits until every thread has left its loop.
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        self.pool.broadcast(|_| ());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_kernel_is_fnv_1a() {
        assert_eq!(kernel(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(kernel(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(kernel(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn no_loop_runs_after_the_load_is_dropped() {
        // That the loops count kernels, the harness's test under a load shows.
        let load = Load::start().unwrap();
        let counter = Arc::clone(&load.kernels);
        drop(load);
        let after = counter.load(Relaxed);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(counter.load(Relaxed), after, "a loop ran on after the drop");
    }
}
