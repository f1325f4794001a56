//! A lower OS priority for the threads that run CPU work.

use std::io;

/// Lowers the calling thread's OS scheduling priority to the nice value `nice` (1 to 19;
/// the higher, the later the thread runs while other threads wait for a CPU). For the
/// threads of a CPU pool: call it from rayon's `ThreadPoolBuilder::start_handler`.
///
/// It never raises a priority: a thread that already runs at `nice` or nicer (a higher nice
/// value) is left as it is, also where the process has the privilege to raise it.
///
/// A service that hands CPU work to rayon keeps its I/O side responsive only while the
/// runtime's workers get a CPU when they wake. With every CPU busy with CPU work at the
/// same priority, a waking worker waits for the scheduler's next turn, and the latency of
/// requests that need no CPU work grows with the load; a bound on the work in flight
/// ([`Limit`](crate::Limit)) keeps the queue short but not the CPUs free. At nice 10 a pool
/// thread gets about a tenth of the CPU share of a thread at the default priority, so the
/// runtime's workers run first and the pool takes the cycles they leave. It yields to every
/// thread at the default priority, other processes' too: on a machine that others keep busy
/// the pool gets less CPU than at the default priority. The
/// [overload study](https://github.com/bridge-rs/bridge/blob/main/docs/studies/overload.md)
/// measures both priorities side by side.
///
/// Linux only: there a nice value belongs to one thread. Elsewhere the call would change the
/// whole process and is refused.
///
/// # Errors
///
/// - [`io::ErrorKind::InvalidInput`] for a `nice` outside 1 to 19 (0 is the default
///   priority, and values below it raise a priority, which this function does not do);
/// - [`io::ErrorKind::Unsupported`] off Linux;
/// - the OS's error if it refuses to report or to set the thread's nice value.
///
/// # Examples
///
/// Rayon's global pool at nice 10, set up once at the start of `main`, before anything
/// uses rayon:
///
/// ```
/// rayon::ThreadPoolBuilder::new()
///     .start_handler(|_| {
///         // Refused off Linux: the pool then runs at the default priority.
///         let _ = bridge::cpu::lower_thread_priority(10);
///     })
///     .build_global()
///     .expect("the global pool is set up once, before its first use");
///
/// let sum = rayon::join(|| (0..1000u64).sum::<u64>(), || 1);
/// assert_eq!(sum, (499_500, 1));
/// ```
///
/// A thread already nicer than asked stays as it is:
///
/// ```
/// # #[cfg(target_os = "linux")]
/// std::thread::spawn(|| {
///     bridge::cpu::lower_thread_priority(19).unwrap();
///     // Not raised back to 10, whatever the process's privileges.
///     bridge::cpu::lower_thread_priority(10).unwrap();
/// })
/// .join()
/// .unwrap();
/// ```
///
/// A value outside 1 to 19 is refused before the OS is asked:
///
/// ```
/// use std::io::ErrorKind;
///
/// let refused = bridge::cpu::lower_thread_priority(20).unwrap_err();
/// assert_eq!(refused.kind(), ErrorKind::InvalidInput);
/// ```
pub fn lower_thread_priority(nice: u8) -> io::Result<()> {
    if !(1..=19).contains(&nice) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("nice {nice} is not a lower priority: use 1 to 19"),
        ));
    }
    let nice = i32::from(nice);
    // A thread at this nice value or a higher one already runs this late or later: setting
    // `nice` would raise its priority (allowed with the privilege, e.g. as root).
    if crate::os::thread_nice()? >= nice {
        return Ok(());
    }
    crate::os::set_thread_nice(nice)
}

#[cfg(all(test, target_os = "linux", not(bridge_loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_pool_threads_run_at_the_nice_value_and_the_caller_does_not() {
        let before = crate::os::thread_nice().unwrap();
        // Lower than this process runs at already (a lower one could not be set back).
        let nice = u8::try_from((before + 10).clamp(1, 19)).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .start_handler(move |_| lower_thread_priority(nice).unwrap())
            .build()
            .unwrap();
        let nices = pool.broadcast(|_| crate::os::thread_nice().unwrap());
        assert_eq!(nices, [i32::from(nice); 2]);
        assert_eq!(crate::os::thread_nice().unwrap(), before);
    }

    #[test]
    fn a_thread_already_nicer_is_left_as_it_is() {
        std::thread::spawn(|| {
            lower_thread_priority(19).unwrap();
            assert_eq!(crate::os::thread_nice().unwrap(), 19);
            // Setting 10 would raise the thread's priority (allowed with the privilege).
            lower_thread_priority(10).unwrap();
            assert_eq!(crate::os::thread_nice().unwrap(), 19);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn zero_and_values_past_19_are_refused() {
        let before = crate::os::thread_nice().unwrap();
        for nice in [0, 20, 255] {
            let refused = lower_thread_priority(nice).unwrap_err();
            assert_eq!(refused.kind(), io::ErrorKind::InvalidInput, "nice {nice}");
        }
        // Nothing was changed.
        assert_eq!(crate::os::thread_nice().unwrap(), before);
    }
}
