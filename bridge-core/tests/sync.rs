//! The sync and blocking conventions of the oneshot, on one thread and across two.

mod helpers;

use bridge_core::oneshot::{self, RecvError, RecvTimeoutError, SendError, TryRecvError};
use helpers::DropCounter;
use std::thread;
use std::time::{Duration, Instant};

#[test]
fn try_recv_tells_empty_from_closed() {
    let (tx, mut rx) = oneshot::channel::<u8>();
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    tx.send(5).unwrap();
    assert_eq!(rx.try_recv(), Ok(5));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));

    let (tx, mut rx) = oneshot::channel::<u8>();
    drop(tx);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
}

#[test]
fn send_to_a_dropped_receiver_hands_the_value_back_undropped() {
    let drops = DropCounter::default();
    let (tx, rx) = oneshot::channel();
    drop(rx);
    assert!(tx.is_closed());
    let SendError(back) = tx.send(drops.value(9)).unwrap_err();
    assert_eq!(back.id, 9);
    assert_eq!(
        drops.drops(),
        0,
        "the channel dropped a value it handed back"
    );
    drop(back);
    assert_eq!(drops.drops(), 1);
}

#[test]
fn dropping_the_receiver_drops_an_unreceived_value_once() {
    let drops = DropCounter::default();
    let (tx, rx) = oneshot::channel();
    tx.send(drops.value(1)).unwrap();
    assert_eq!(drops.drops(), 0);
    drop(rx);
    assert_eq!(drops.drops(), 1);
}

#[test]
fn a_received_value_is_dropped_by_its_owner_only() {
    let drops = DropCounter::default();
    let (tx, rx) = oneshot::channel();
    tx.send(drops.value(1)).unwrap();
    let value = rx.recv_blocking().unwrap();
    assert_eq!(drops.drops(), 0);
    drop(value);
    assert_eq!(drops.drops(), 1);
}

#[test]
fn is_closed_follows_the_receiver() {
    let (tx, rx) = oneshot::channel::<()>();
    assert!(!tx.is_closed());
    drop(rx);
    assert!(tx.is_closed());
}

#[test]
fn recv_timeout_times_out_then_stays_usable() {
    let (tx, mut rx) = oneshot::channel::<&str>();
    let start = Instant::now();
    assert_eq!(
        rx.recv_timeout(Duration::from_millis(20)),
        Err(RecvTimeoutError::Timeout)
    );
    assert!(start.elapsed() >= Duration::from_millis(20));
    assert_eq!(
        rx.recv_timeout(Duration::ZERO),
        Err(RecvTimeoutError::Timeout)
    );
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    tx.send("late").unwrap();
    assert_eq!(rx.recv_timeout(Duration::ZERO), Ok("late"));
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(1)),
        Err(RecvTimeoutError::Closed)
    );
}

#[test]
fn recv_deadline_in_the_past_still_takes_a_value_that_is_there() {
    let (tx, mut rx) = oneshot::channel();
    let past = Instant::now();
    assert_eq!(rx.recv_deadline(past), Err(RecvTimeoutError::Timeout));
    tx.send(3).unwrap();
    assert_eq!(rx.recv_deadline(past), Ok(3));
}

#[test]
fn a_huge_timeout_waits_without_overflowing() {
    let (tx, mut rx) = oneshot::channel();
    let sender = thread::spawn(move || {
        thread::sleep(Duration::from_millis(5));
        tx.send(1).unwrap();
    });
    assert_eq!(rx.recv_timeout(Duration::MAX), Ok(1));
    sender.join().unwrap();
}

#[test]
fn recv_timeout_reports_a_close_that_comes_while_it_waits() {
    let (tx, mut rx) = oneshot::channel::<u8>();
    let dropper = thread::spawn(move || {
        thread::sleep(Duration::from_millis(10));
        drop(tx);
    });
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(60)),
        Err(RecvTimeoutError::Closed)
    );
    dropper.join().unwrap();
}

#[test]
fn recv_blocking_wakes_on_a_late_send_and_on_a_late_drop() {
    let (tx, rx) = oneshot::channel();
    let sender = thread::spawn(move || {
        thread::sleep(Duration::from_millis(10));
        tx.send(String::from("late")).unwrap();
    });
    assert_eq!(rx.recv_blocking().as_deref(), Ok("late"));
    sender.join().unwrap();

    let (tx, rx) = oneshot::channel::<u8>();
    let dropper = thread::spawn(move || {
        thread::sleep(Duration::from_millis(10));
        drop(tx);
    });
    assert_eq!(rx.recv_blocking(), Err(RecvError));
    dropper.join().unwrap();
}

#[test]
fn a_stray_unpark_does_not_end_a_blocking_receive() {
    let (tx, mut rx) = oneshot::channel::<u8>();
    let me = thread::current();
    let unparker = thread::spawn(move || {
        for _ in 0..20 {
            me.unpark();
            thread::sleep(Duration::from_millis(1));
        }
        tx.send(4).unwrap();
    });
    assert_eq!(rx.recv_timeout(Duration::from_secs(60)), Ok(4));
    unparker.join().unwrap();
}

#[test]
fn errors_display_what_happened() {
    assert!(RecvError.to_string().contains("sender was dropped"));
    assert!(TryRecvError::Empty.to_string().contains("empty"));
    assert!(
        TryRecvError::Closed
            .to_string()
            .contains("sender was dropped")
    );
    assert!(RecvTimeoutError::Timeout.to_string().contains("timed out"));
    assert!(
        RecvTimeoutError::Closed
            .to_string()
            .contains("sender was dropped")
    );
    assert!(SendError(1).to_string().contains("receiver was dropped"));
    assert_eq!(format!("{:?}", SendError(1)), "SendError(..)");
    assert_eq!(TryRecvError::from(RecvError), TryRecvError::Closed);
    assert_eq!(RecvTimeoutError::from(RecvError), RecvTimeoutError::Closed);
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(SendError(1));
    assert!(boxed.source().is_none());
}

#[test]
fn handles_are_send_and_sync_and_one_pointer_wide() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<oneshot::Sender<Vec<u8>>>();
    send_sync::<oneshot::Receiver<Vec<u8>>>();
    // A !Sync but Send payload still moves across threads in the channel.
    send_sync::<oneshot::Receiver<std::cell::Cell<u8>>>();
    assert_eq!(
        std::mem::size_of::<oneshot::Sender<[u8; 64]>>(),
        std::mem::size_of::<usize>()
    );
    assert_eq!(
        std::mem::size_of::<Option<oneshot::Receiver<[u8; 64]>>>(),
        std::mem::size_of::<usize>()
    );
}

#[test]
fn debug_output_names_the_handles() {
    let (tx, rx) = oneshot::channel::<u8>();
    assert_eq!(format!("{tx:?}"), "Sender { is_closed: false }");
    assert_eq!(format!("{rx:?}"), "Receiver { .. }");
}

#[test]
fn an_abandoned_receiver_keeps_the_sender_open_and_hands_the_value_back() {
    let drops = DropCounter::default();
    let (tx, rx) = oneshot::channel();
    rx.abandon();
    assert!(!tx.is_closed());
    let back = tx.send(drops.value(3)).unwrap_err().into_inner();
    assert_eq!((back.id, drops.drops()), (3, 0));
    drop(back);
    assert_eq!(drops.drops(), 1);

    // Abandoning after the value arrived drops it, once.
    let (tx, rx) = oneshot::channel();
    tx.send(drops.value(4)).unwrap();
    rx.abandon();
    assert_eq!(drops.drops(), 2);

    // A sender dropped after the abandon frees the channel without a value.
    let (tx, rx) = oneshot::channel::<u8>();
    rx.abandon();
    drop(tx);
}

#[test]
fn is_ready_tells_whether_a_receive_would_wait() {
    let (tx, mut rx) = oneshot::channel::<u8>();
    assert!(!rx.is_ready());
    assert_eq!(
        rx.recv_timeout(Duration::ZERO),
        Err(RecvTimeoutError::Timeout)
    );
    assert!(!rx.is_ready());
    drop(tx);
    assert!(rx.is_ready());
    assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    assert!(rx.is_ready());
}
