//! The async convention of the oneshot, on every executor the crate family meets.

mod helpers;

use bridge_core::oneshot::{self, RecvError};
use helpers::CountingWaker;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::thread;
use std::time::Duration;

fn send_later<T: Send + 'static>(tx: oneshot::Sender<T>, value: T) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        thread::sleep(Duration::from_millis(5));
        tx.send(value).map_err(|_| "receiver gone").unwrap();
    })
}

#[test]
fn awaits_on_a_tokio_current_thread_runtime() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (tx, rx) = oneshot::channel();
    let sender = send_later(tx, 1);
    assert_eq!(rt.block_on(rx), Ok(1));
    sender.join().unwrap();
}

#[test]
fn awaits_in_tokio_multi_thread_tasks() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..64 {
            let (tx, rx) = oneshot::channel();
            tasks.push(tokio::spawn(rx));
            tokio::spawn(async move { tx.send(i).unwrap() });
        }
        for (i, task) in tasks.into_iter().enumerate() {
            assert_eq!(task.await.unwrap(), Ok(i));
        }
    });
}

#[test]
fn awaits_on_async_executor() {
    let ex = async_executor::Executor::new();
    let (tx, rx) = oneshot::channel();
    let sender = send_later(tx, "ex");
    let task = ex.spawn(rx);
    assert_eq!(futures::executor::block_on(ex.run(task)), Ok("ex"));
    sender.join().unwrap();
}

#[test]
fn awaits_on_the_futures_executor_and_on_block_on() {
    let (tx, rx) = oneshot::channel();
    let sender = send_later(tx, 2);
    assert_eq!(futures::executor::block_on(rx), Ok(2));
    sender.join().unwrap();

    let (tx, rx) = oneshot::channel();
    let sender = send_later(tx, 3);
    assert_eq!(bridge_core::block_on(rx), Ok(3));
    sender.join().unwrap();
}

#[test]
fn a_dropped_sender_wakes_the_awaiting_task_with_an_error() {
    let (tx, mut rx) = oneshot::channel::<u8>();
    let (wakes, waker) = CountingWaker::new();
    let mut cx = Context::from_waker(&waker);
    assert!(Pin::new(&mut rx).poll(&mut cx).is_pending());
    drop(tx);
    assert_eq!(wakes.wakes(), 1);
    assert_eq!(Pin::new(&mut rx).poll(&mut cx), Poll::Ready(Err(RecvError)));
}

#[test]
fn polling_after_completion_is_an_error_not_a_hang_or_a_panic() {
    let (tx, mut rx) = oneshot::channel();
    tx.send(1).unwrap();
    let (wakes, waker) = CountingWaker::new();
    let mut cx = Context::from_waker(&waker);
    assert_eq!(Pin::new(&mut rx).poll(&mut cx), Poll::Ready(Ok(1)));
    for _ in 0..3 {
        assert_eq!(Pin::new(&mut rx).poll(&mut cx), Poll::Ready(Err(RecvError)));
    }
    assert_eq!(wakes.wakes(), 0);
}

#[test]
fn only_the_latest_waker_is_woken() {
    let (tx, mut rx) = oneshot::channel();
    let (first, first_waker) = CountingWaker::new();
    let (second, second_waker) = CountingWaker::new();
    assert!(
        Pin::new(&mut rx)
            .poll(&mut Context::from_waker(&first_waker))
            .is_pending()
    );
    assert!(
        Pin::new(&mut rx)
            .poll(&mut Context::from_waker(&second_waker))
            .is_pending()
    );
    tx.send(()).unwrap();
    assert_eq!((first.wakes(), second.wakes()), (0, 1));
}

#[test]
fn the_conventions_mix_on_one_handle() {
    let (tx, mut rx) = oneshot::channel();
    let (wakes, waker) = CountingWaker::new();
    let mut cx = Context::from_waker(&waker);
    assert!(Pin::new(&mut rx).poll(&mut cx).is_pending());
    // The timed receive takes the registration over and, when it gives up, wakes the task
    // so that it polls again.
    assert!(rx.recv_timeout(Duration::from_millis(2)).is_err());
    assert_eq!(wakes.wakes(), 1);
    assert!(Pin::new(&mut rx).poll(&mut cx).is_pending());
    let sender = send_later(tx, 8);
    sender.join().unwrap();
    assert_eq!(wakes.wakes(), 2);
    assert_eq!(Pin::new(&mut rx).poll(&mut cx), Poll::Ready(Ok(8)));
}

#[test]
fn a_receiver_moves_between_executors_mid_wait() {
    let (tx, mut rx) = oneshot::channel();
    let (first, waker) = CountingWaker::new();
    assert!(
        Pin::new(&mut rx)
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    let sender = send_later(tx, 5);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(rx), Ok(5));
    sender.join().unwrap();
    assert_eq!(first.wakes(), 0, "the abandoned waker was woken");
}

/// A waker that counts its clones in `clones` and does nothing when woken.
fn clone_counting_waker(clones: &'static std::sync::atomic::AtomicUsize) -> std::task::Waker {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::task::{RawWaker, RawWakerVTable, Waker};

    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, ignore, ignore, ignore);
    fn clone(data: *const ()) -> RawWaker {
        // SAFETY: every RawWaker with this vtable points at the `&'static AtomicUsize` given
        // to `clone_counting_waker`.
        let clones = unsafe { &*data.cast::<AtomicUsize>() };
        clones.fetch_add(1, SeqCst);
        RawWaker::new(data, &VTABLE)
    }
    fn ignore(_: *const ()) {}

    let data = std::ptr::from_ref(clones).cast::<()>();
    // SAFETY: the vtable keeps RawWaker's contract: `clone` makes a waker of the same
    // 'static data, and wake, wake_by_ref and drop own nothing and do nothing.
    unsafe { Waker::from_raw(RawWaker::new(data, &VTABLE)) }
}

#[test]
fn a_poll_with_the_registered_waker_keeps_it_instead_of_cloning_again() {
    static CLONES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let clones = || CLONES.load(std::sync::atomic::Ordering::SeqCst);
    let waker = clone_counting_waker(&CLONES);
    let mut cx = Context::from_waker(&waker);
    let (tx, mut rx) = oneshot::channel();
    assert!(Pin::new(&mut rx).poll(&mut cx).is_pending());
    assert_eq!(clones(), 1, "the first poll stores one clone");
    assert!(Pin::new(&mut rx).poll(&mut cx).is_pending());
    assert_eq!(
        clones(),
        1,
        "a poll with the same waker keeps the stored one"
    );
    tx.send(5).unwrap();
    assert_eq!(Pin::new(&mut rx).poll(&mut cx), Poll::Ready(Ok(5)));
    assert_eq!(clones(), 1);
}
