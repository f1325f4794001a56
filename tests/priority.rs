//! `bridge::cpu::lower_thread_priority` only ever lowers a thread's priority: a thread that
//! already runs at a higher nice value keeps it, also in a process that may raise priorities
//! (root in a container).
#![cfg(all(not(bridge_loom), feature = "rayon", target_os = "linux"))]

/// The calling thread's nice value, from the kernel's own report (`/proc/thread-self/stat`,
/// field 19; the command name in field 2 is in parentheses and may hold spaces).
fn nice_of_this_thread() -> i32 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    // Fields from the third (state) on: the nice value is the 19th field of the line.
    after_name.split(' ').nth(19 - 3).unwrap().parse().unwrap()
}

#[test]
fn a_thread_at_nice_19_stays_at_19() {
    std::thread::spawn(|| {
        bridge::cpu::lower_thread_priority(19).unwrap();
        assert_eq!(nice_of_this_thread(), 19);
        bridge::cpu::lower_thread_priority(10).unwrap();
        assert_eq!(
            nice_of_this_thread(),
            19,
            "lower_thread_priority(10) raised the thread"
        );
    })
    .join()
    .unwrap();
}

#[test]
fn a_thread_at_the_default_priority_is_lowered() {
    std::thread::spawn(|| {
        let before = nice_of_this_thread();
        let nice = (before + 5).clamp(1, 19);
        bridge::cpu::lower_thread_priority(u8::try_from(nice).unwrap()).unwrap();
        assert_eq!(nice_of_this_thread(), nice.max(before));
    })
    .join()
    .unwrap();
}
