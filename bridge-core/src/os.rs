//! What the OS offers that std does not, for the bridge crates: one thread's scheduling
//! priority.
//!
//! Internal to the bridge crates (hidden from the docs, no stability promise); the public
//! form is `bridge_rayon::lower_thread_priority`.

use std::io;

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
///
/// # Examples
///
/// ```
/// use bridge_core::__os::{set_thread_nice, thread_nice};
///
/// std::thread::spawn(|| {
///     if set_thread_nice(10).is_ok() {
///         assert_eq!(thread_nice().unwrap(), 10);
///     }
/// })
/// .join()
/// .unwrap();
/// ```
pub fn set_thread_nice(nice: i32) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `setpriority` takes no pointers and has no preconditions: a bad argument
        // is an error return (with errno set), which is all this call can cause.
        let set = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
        if set == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = nice;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "a thread's own priority can only be set on Linux",
        ))
    }
}

/// The calling thread's nice value, as the kernel reports it (Linux: field 19 of
/// `/proc/thread-self/stat`).
///
/// # Errors
///
/// [`io::ErrorKind::Unsupported`] off Linux; an I/O or parse error if the file cannot be read.
///
/// # Examples
///
/// ```
/// # #[cfg(target_os = "linux")]
/// assert!((-20..=19).contains(&bridge_core::__os::thread_nice().unwrap()));
/// ```
pub fn thread_nice() -> io::Result<i32> {
    #[cfg(target_os = "linux")]
    {
        let stat = std::fs::read_to_string("/proc/thread-self/stat")?;
        // The command name (field 2) is in parentheses and may hold spaces: count the fields
        // after its closing parenthesis, where field 3 starts.
        let after_name = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .ok_or_else(|| io::Error::other("no command name in /proc/thread-self/stat"))?;
        after_name
            .split_whitespace()
            .nth(19 - 3)
            .and_then(|field| field.parse().ok())
            .ok_or_else(|| io::Error::other("no nice field in /proc/thread-self/stat"))
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "a thread's own priority can only be read on Linux",
        ))
    }
}

#[cfg(all(test, target_os = "linux"))]
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
}
