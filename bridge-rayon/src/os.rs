//! What the OS offers that std does not, for the bridge crates: one thread's scheduling
//! priority, and its time slice.
//!
//! The public form of the priority is [`lower_thread_priority`](crate::lower_thread_priority);
//! the CPU side asks for a long slice on its own (`courtesy.rs`). The only `unsafe` code of
//! this crate: each block says why it is sound (`// SAFETY:`).

use std::io;
use std::time::Duration;

/// The longest time slice Linux grants a thread that asks for one (`sched_setattr`'s
/// `sched_runtime` for the fair class, bounded by the kernel to 0.1-100 ms).
pub(crate) const MAX_SLICE: Duration = Duration::from_millis(100);

/// The error of a call this module makes only where the OS offers it.
fn unsupported(why: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, why)
}

/// `Ok` for a call that returned 0, the OS's error (errno) otherwise.
#[cfg(target_os = "linux")]
fn zero_or_errno(returned: libc::c_long) -> io::Result<()> {
    if returned == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets the calling thread's nice value (-20 to 19; higher runs later when CPUs are short).
///
/// On Linux a nice value belongs to a thread, not to the process, and `setpriority` with
/// `PRIO_PROCESS` and id 0 sets the calling thread's (setpriority(2), "NOTES"). Elsewhere the
/// same call would set the whole process's, so it is refused as `Unsupported`.
///
/// # Errors
///
/// - [`io::ErrorKind::Unsupported`] off Linux;
/// - the OS's error otherwise, e.g. `PermissionDenied` for a value below the current one
///   without the privilege to raise a priority.
pub(crate) fn set_thread_nice(nice: i32) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `setpriority` takes no pointers and has no preconditions: a bad argument
        // is an error return (with errno set), which is all this call can cause.
        let set = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
        zero_or_errno(libc::c_long::from(set))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = nice;
        Err(unsupported(
            "a thread's own priority can only be set on Linux",
        ))
    }
}

/// The calling thread's nice value, as the kernel reports it (Linux: `getpriority` of the
/// calling thread, which there has a nice value of its own).
///
/// # Errors
///
/// [`io::ErrorKind::Unsupported`] off Linux; the OS's error if `getpriority` fails.
pub(crate) fn thread_nice() -> io::Result<i32> {
    #[cfg(target_os = "linux")]
    {
        // -1 is both a nice value and the error return: errno tells them apart, so it is
        // cleared first.
        // SAFETY: `__errno_location` has no preconditions.
        let errno = unsafe { libc::__errno_location() };
        // SAFETY: it points to this thread's errno, valid for the thread's life; nothing
        // else holds a reference to it.
        unsafe { *errno = 0 };
        // SAFETY: `getpriority` takes no pointers and has no preconditions.
        let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        if nice == -1 {
            let error = io::Error::last_os_error();
            if error.raw_os_error() != Some(0) {
                return Err(error);
            }
        }
        Ok(nice)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(unsupported(
            "a thread's own priority can only be read on Linux",
        ))
    }
}

/// `struct sched_attr` of sched_setattr(2), its first version (48 bytes): policy, flags, nice,
/// and the `sched_runtime` that the fair class reads as the thread's time slice.
#[cfg(target_os = "linux")]
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// The fair class's policies, whose `sched_runtime` is a time slice: `SCHED_OTHER` (0) and
/// `SCHED_BATCH` (3).
#[cfg(target_os = "linux")]
const FAIR_POLICIES: [u32; 2] = [0, 3];

/// `SCHED_FLAG_RESET_ON_FORK`: the threads this one starts begin with the default slice (and
/// a real-time policy or a negative nice value is not passed on either).
#[cfg(target_os = "linux")]
const RESET_ON_FORK: u64 = 1;

/// The calling thread's scheduling attributes (`sched_getattr`).
#[cfg(target_os = "linux")]
fn sched_attr() -> io::Result<SchedAttr> {
    let mut attr = SchedAttr::default();
    let size = std::mem::size_of::<SchedAttr>() as libc::c_uint;
    // SAFETY: `attr` is a live, writable `struct sched_attr` of `size` bytes (the first
    // version of the struct, which every kernel with the call accepts), and the kernel writes
    // at most `size` bytes into it; pid 0 is the calling thread, flags must be 0.
    let got = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            std::ptr::addr_of_mut!(attr),
            size,
            0,
        )
    };
    zero_or_errno(got).map(|()| attr)
}

/// The calling thread's time slice, as the kernel reports it: `Ok(None)` for a thread outside
/// the fair class or a kernel that reports none (before Linux 6.12, where `sched_runtime` is 0
/// for the fair class).
///
/// # Errors
///
/// [`io::ErrorKind::Unsupported`] off Linux; the OS's error if `sched_getattr` fails.
#[cfg(test)]
pub(crate) fn thread_slice() -> io::Result<Option<Duration>> {
    #[cfg(target_os = "linux")]
    {
        let attr = sched_attr()?;
        Ok((FAIR_POLICIES.contains(&attr.policy) && attr.runtime > 0)
            .then(|| Duration::from_nanos(attr.runtime)))
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(unsupported(
            "a thread's time slice can only be read on Linux",
        ))
    }
}

/// Asks the kernel for a time slice of `slice` for the calling thread (Linux 6.12 and later;
/// the kernel bounds it to 0.1 ms-[`MAX_SLICE`], and `Duration::ZERO` gives back the default),
/// keeping its policy and nice value. A slice changes when the thread runs among threads
/// that want a CPU, not its share of the CPU: a thread whose slice is longer than another's
/// has a later deadline, so the other runs first when both are waiting, and preempts it when
/// it wakes. Older kernels accept the call and ignore the slice.
///
/// A thread's slice would pass to the threads it starts (a runtime built lazily in a poll, a
/// blocking pool's threads), so the call also sets reset-on-fork: they start with the
/// default. Reset-on-fork also resets a negative nice value in those threads, so a thread at
/// a raised priority is refused instead.
///
/// # Errors
///
/// - [`io::ErrorKind::Unsupported`] off Linux, for a thread outside the fair class
///   (`SCHED_OTHER`, `SCHED_BATCH`: a real-time thread's attributes are left alone), or for
///   one at a negative nice value;
/// - the OS's error if `sched_getattr` or `sched_setattr` fails.
pub(crate) fn set_thread_slice(slice: Duration) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let now = sched_attr()?;
        if !FAIR_POLICIES.contains(&now.policy) {
            return Err(unsupported(
                "only a thread of the fair class (SCHED_OTHER, SCHED_BATCH) has a time slice",
            ));
        }
        if now.nice < 0 {
            return Err(unsupported(
                "a thread at a raised priority keeps its slice: reset-on-fork would not pass \
                 its priority to the threads it starts",
            ));
        }
        let attr = SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            policy: now.policy,
            flags: RESET_ON_FORK,
            nice: now.nice,
            runtime: u64::try_from(slice.as_nanos()).unwrap_or(u64::MAX),
            ..SchedAttr::default()
        };
        // SAFETY: `attr` is a live, initialized `struct sched_attr` whose `size` field gives
        // its length; the kernel only reads it. pid 0 is the calling thread, flags must be 0.
        let set = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, std::ptr::addr_of!(attr), 0) };
        zero_or_errno(set)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = slice;
        Err(unsupported(
            "a thread's time slice can only be set on Linux",
        ))
    }
}

#[cfg(all(test, target_os = "linux", not(bridge_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_thread_lowers_its_own_priority_and_no_other() {
        let before = thread_nice().unwrap();
        let target = (before + 5).min(19);
        let lowered = std::thread::spawn(move || {
            set_thread_nice(target).unwrap();
            thread_nice().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(lowered, target);
        // This thread (and so the process's other threads) kept its own.
        assert_eq!(thread_nice().unwrap(), before);
    }

    #[test]
    fn raising_a_priority_needs_the_privilege() {
        // Lowering is always allowed; raising it back needs the privilege (CAP_SYS_NICE, or
        // an RLIMIT_NICE that allows it), which a test run as root has.
        std::thread::spawn(|| {
            set_thread_nice(19).unwrap();
            let raised = set_thread_nice(0);
            let privileged = raised.is_ok();
            if !privileged {
                assert_eq!(raised.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
            }
            assert_eq!(thread_nice().unwrap(), if privileged { 0 } else { 19 });
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_thread_sets_its_own_slice_and_keeps_its_nice_value() {
        let caller = thread_slice().unwrap();
        let (before, after, nice) = std::thread::spawn(|| {
            set_thread_nice(5).unwrap();
            let before = thread_slice().unwrap();
            set_thread_slice(MAX_SLICE).unwrap();
            let after = thread_slice().unwrap();
            set_thread_slice(Duration::ZERO).unwrap();
            assert_eq!(thread_slice().unwrap(), before, "the default back");
            (before, after, thread_nice().unwrap())
        })
        .join()
        .unwrap();
        assert_eq!(nice, 5, "setting the slice kept the nice value");
        // Before 6.12 the kernel reports no slice and ignores the request.
        if before.is_some() {
            assert_eq!(after, Some(MAX_SLICE));
        } else {
            assert_eq!(after, None);
        }
        assert_eq!(
            thread_slice().unwrap(),
            caller,
            "the caller's slice did not change"
        );
    }

    #[test]
    fn the_threads_a_thread_starts_keep_its_nice_value_and_begin_with_the_default_slice() {
        let default = thread_slice().unwrap();
        let (own, child) = std::thread::spawn(|| {
            set_thread_nice(4).unwrap();
            set_thread_slice(MAX_SLICE).unwrap();
            let child = std::thread::spawn(|| (thread_slice().unwrap(), thread_nice().unwrap()))
                .join()
                .unwrap();
            (thread_slice().unwrap(), child)
        })
        .join()
        .unwrap();
        assert_eq!(own, default.map(|_| MAX_SLICE));
        assert_eq!(child, (default, 4));
    }

    #[test]
    fn a_thread_at_a_raised_priority_keeps_its_slice() {
        std::thread::spawn(|| {
            // Raising needs the privilege (a test run as root has it); without it the
            // thread cannot be put at a raised priority to check on.
            if let Err(e) = set_thread_nice(-1) {
                assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
                return;
            }
            let before = thread_slice().unwrap();
            let refused = set_thread_slice(MAX_SLICE).unwrap_err();
            assert_eq!(refused.kind(), io::ErrorKind::Unsupported);
            assert_eq!(thread_slice().unwrap(), before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_kernel_bounds_the_slice() {
        std::thread::spawn(|| {
            let reported = thread_slice().unwrap().is_some();
            set_thread_slice(MAX_SLICE * 2).unwrap();
            let expected = reported.then_some(MAX_SLICE);
            assert_eq!(thread_slice().unwrap(), expected);
        })
        .join()
        .unwrap();
    }
}
