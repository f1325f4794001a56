//! Property tests for the oneshot channel.
//!
//! One channel is driven on one thread by a random sequence of operations (send, drop either
//! handle, abandon the receiver, poll with one of several counting wakers, `try_recv`,
//! `recv_timeout`, `recv_blocking`, `is_closed`, `is_ready`), and a sequential reference
//! model predicts every result.
//! After every step the suite checks the result, the wake count of each waker, how many
//! registrations of each waker the channel holds (through the `Arc` strong count, so a
//! leaked or doubled waker shows), and how many times each value was dropped.
//!
//! The contract the model encodes, read from `receiver.rs` and `sender.rs`:
//!
//! - A pending poll registers its waker; a later poll replaces the registration (polling
//!   again with the same waker keeps one registration, never two).
//! - A send or a sender drop wakes the registered waker, if any, exactly once, and consumes
//!   the registration.
//! - `try_recv` neither registers nor deregisters anything.
//! - A blocking receive (`recv_timeout`) registers the thread in place of any task waker;
//!   when it returns it wakes the task whose registration it displaced, so that task polls
//!   again (and registers again) instead of sleeping through the send.
//! - Dropping the receiver drops its registered waker unwoken, and a value still in the
//!   channel with it.
//! - Once the value was received, or the sender dropped without sending, every receive
//!   reports closed, and nobody is woken any more.
//! - A failed send hands the value back untouched; the channel never drops it.

use bridge_core::oneshot::{self, Receiver, RecvError, RecvTimeoutError, Sender, TryRecvError};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// How many counting wakers a case can poll with.
const WAKERS: usize = 3;
/// How many distinct value ids a `Send` can carry.
const IDS: usize = 4;

/// A waker that counts its wake-ups.
#[derive(Debug, Default)]
struct CountingWaker {
    wakes: AtomicUsize,
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, SeqCst);
    }
}

/// The counting wakers of one case, and the `Waker`s the test polls with.
struct Wakers {
    counters: Vec<Arc<CountingWaker>>,
    wakers: Vec<Waker>,
}

impl Wakers {
    fn new(n: usize) -> Self {
        let counters: Vec<_> = (0..n).map(|_| Arc::new(CountingWaker::default())).collect();
        let wakers = counters
            .iter()
            .map(|c| Waker::from(Arc::clone(c)))
            .collect();
        Self { counters, wakers }
    }

    fn wakes(&self, i: usize) -> usize {
        self.counters[i].wakes.load(SeqCst)
    }

    /// How many clones of waker `i` someone other than the test holds: the channel's
    /// registration, if any.
    fn held_by_channel(&self, i: usize) -> usize {
        // One reference in `counters`, one in `wakers`.
        Arc::strong_count(&self.counters[i]) - 2
    }

    /// The wake counts of the first `N` wakers.
    fn all_wakes<const N: usize>(&self) -> [usize; N] {
        std::array::from_fn(|i| self.wakes(i))
    }

    /// The channel's registrations of the first `N` wakers.
    fn all_held_by_channel<const N: usize>(&self) -> [usize; N] {
        std::array::from_fn(|i| self.held_by_channel(i))
    }

    fn context(&self, i: usize) -> Context<'_> {
        Context::from_waker(&self.wakers[i])
    }
}

/// Drop counters, one per value id.
type DropCounts = Arc<[AtomicUsize; IDS]>;

/// A value that counts its drops.
#[derive(Debug)]
struct Value {
    id: usize,
    drops: DropCounts,
}

impl Drop for Value {
    fn drop(&mut self) {
        self.drops[self.id].fetch_add(1, SeqCst);
    }
}

/// How long a `RecvTimeout` waits.
#[derive(Debug, Clone, Copy)]
enum Wait {
    /// `Duration::ZERO`.
    Zero,
    /// One millisecond.
    Short,
    /// Ten seconds when the model says the receive returns at once (a receive that wrongly
    /// blocks shows as a slow, failing case), one millisecond when it says it times out.
    Long,
}

#[derive(Debug, Clone, Copy)]
enum Op {
    /// Sends value `id`; a no-op once the sender is gone.
    Send(usize),
    DropSender,
    DropReceiver,
    /// Polls the receiver with waker `i`.
    Poll(usize),
    TryRecv,
    RecvTimeout(Wait),
    /// `recv_blocking`, only when the model says it returns at once (it would hang
    /// otherwise: nothing else runs on this thread); a no-op otherwise.
    RecvBlocking,
    IsClosed,
    /// `Receiver::abandon`: gone, but the sender is not told.
    AbandonReceiver,
    /// `Receiver::is_ready`.
    IsReady,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..IDS).prop_map(Op::Send),
        1 => Just(Op::DropSender),
        1 => Just(Op::DropReceiver),
        5 => (0..WAKERS).prop_map(Op::Poll),
        2 => Just(Op::TryRecv),
        2 => prop_oneof![Just(Wait::Zero), Just(Wait::Short), Just(Wait::Long)]
            .prop_map(Op::RecvTimeout),
        1 => Just(Op::RecvBlocking),
        1 => Just(Op::IsClosed),
        1 => Just(Op::AbandonReceiver),
        1 => Just(Op::IsReady),
    ]
}

/// What an operation returned, with values reduced to their ids.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// The handle the operation needs is gone (or `recv_blocking` would hang).
    Skipped,
    Sent(Result<(), usize>),
    Dropped,
    Polled(Poll<Result<usize, RecvError>>),
    TryRecv(Result<usize, TryRecvError>),
    RecvTimeout(Result<usize, RecvTimeoutError>),
    RecvBlocking(Result<usize, RecvError>),
    IsClosed(bool),
    IsReady(bool),
}

/// The channel's contents, as the model sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Both handles alive, nothing sent yet.
    Empty,
    /// The value with this id waits to be received.
    Full(usize),
    /// No value will come: the sender dropped without sending, the value was received, or
    /// the receiver is gone.
    Closed,
}

/// The sequential reference model.
#[derive(Debug)]
struct Model {
    sender: bool,
    receiver: bool,
    /// The receiver left through `abandon`: the sender still reads the channel as open.
    abandoned: bool,
    slot: Slot,
    /// The waker index of the channel's task registration, if any.
    registered: Option<usize>,
    wakes: [usize; WAKERS],
    drops: [usize; IDS],
    /// Ids of the values that were made (sent, successfully or not).
    created: [bool; IDS],
    /// Ids of the values the test holds (received, or handed back by a failed send).
    held: Vec<usize>,
}

impl Model {
    fn new() -> Self {
        Self {
            sender: true,
            receiver: true,
            abandoned: false,
            slot: Slot::Empty,
            registered: None,
            wakes: [0; WAKERS],
            drops: [0; IDS],
            created: [false; IDS],
            held: Vec::new(),
        }
    }

    /// The receiver is woken (its registration consumed) when the sender finishes.
    fn wake_registered(&mut self) {
        if let Some(i) = self.registered.take() {
            self.wakes[i] += 1;
        }
    }

    /// Takes the value, if there is one, for a receive. `None` means "still empty".
    fn receive(&mut self) -> Option<Result<usize, RecvError>> {
        match self.slot {
            Slot::Full(id) => {
                self.slot = Slot::Closed;
                self.held.push(id);
                Some(Ok(id))
            }
            Slot::Closed => Some(Err(RecvError)),
            Slot::Empty => None,
        }
    }

    fn step(&mut self, op: Op) -> Outcome {
        let receiver_op = matches!(
            op,
            Op::Poll(_)
                | Op::TryRecv
                | Op::RecvTimeout(_)
                | Op::RecvBlocking
                | Op::AbandonReceiver
                | Op::IsReady
        );
        if receiver_op && !self.receiver {
            return Outcome::Skipped;
        }
        match op {
            Op::Send(id) => {
                if !self.sender {
                    return Outcome::Skipped;
                }
                self.sender = false;
                self.created[id] = true;
                if self.receiver {
                    assert_eq!(
                        self.slot,
                        Slot::Empty,
                        "model: a live sender on a used slot"
                    );
                    self.slot = Slot::Full(id);
                    self.wake_registered();
                    Outcome::Sent(Ok(()))
                } else {
                    self.held.push(id);
                    Outcome::Sent(Err(id))
                }
            }
            Op::DropSender => {
                if !self.sender {
                    return Outcome::Skipped;
                }
                self.sender = false;
                if self.receiver {
                    self.slot = Slot::Closed;
                    self.wake_registered();
                }
                Outcome::Dropped
            }
            Op::DropReceiver | Op::AbandonReceiver => {
                if !self.receiver {
                    return Outcome::Skipped;
                }
                self.receiver = false;
                self.abandoned = matches!(op, Op::AbandonReceiver);
                // Dropped, not woken.
                self.registered = None;
                if let Slot::Full(id) = self.slot {
                    self.drops[id] += 1;
                }
                self.slot = Slot::Closed;
                Outcome::Dropped
            }
            Op::Poll(i) => match self.receive() {
                Some(result) => Outcome::Polled(Poll::Ready(result)),
                None => {
                    self.registered = Some(i);
                    Outcome::Polled(Poll::Pending)
                }
            },
            Op::TryRecv => Outcome::TryRecv(match self.receive() {
                Some(result) => result.map_err(|RecvError| TryRecvError::Closed),
                None => Err(TryRecvError::Empty),
            }),
            Op::RecvTimeout(_) => Outcome::RecvTimeout(match self.receive() {
                Some(result) => result.map_err(|RecvError| RecvTimeoutError::Closed),
                None => {
                    // The thread's registration replaced the task's, and the timeout took it
                    // back; the displaced task is woken so it polls again.
                    self.wake_registered();
                    Err(RecvTimeoutError::Timeout)
                }
            }),
            Op::RecvBlocking => match self.slot {
                Slot::Empty => Outcome::Skipped,
                _ => {
                    let result = self.receive().expect("model: a settled slot");
                    self.receiver = false;
                    self.registered = None;
                    Outcome::RecvBlocking(result)
                }
            },
            Op::IsClosed => {
                if self.sender {
                    Outcome::IsClosed(!self.receiver && !self.abandoned)
                } else {
                    Outcome::Skipped
                }
            }
            Op::IsReady => Outcome::IsReady(self.slot != Slot::Empty),
        }
    }
}

/// The real channel and everything the test owns.
struct Harness {
    tx: Option<Sender<Value>>,
    rx: Option<Receiver<Value>>,
    wakers: Wakers,
    drops: DropCounts,
    /// Values the test received or got back from a failed send, in that order.
    held: Vec<Value>,
}

impl Harness {
    fn new() -> Self {
        let (tx, rx) = oneshot::channel();
        Self {
            tx: Some(tx),
            rx: Some(rx),
            wakers: Wakers::new(WAKERS),
            drops: Arc::default(),
            held: Vec::new(),
        }
    }

    /// Keeps a received value and reduces it to its id.
    fn keep(&mut self, value: Value) -> usize {
        let id = value.id;
        self.held.push(value);
        id
    }

    /// Runs `op`. `expected` is the model's outcome: it only picks the timeout of a
    /// `Wait::Long` receive and says whether `recv_blocking` is safe to call.
    fn step(&mut self, op: Op, expected: &Outcome) -> Outcome {
        match op {
            Op::Send(id) => match self.tx.take() {
                None => Outcome::Skipped,
                Some(tx) => {
                    let value = Value {
                        id,
                        drops: Arc::clone(&self.drops),
                    };
                    Outcome::Sent(tx.send(value).map_err(|e| self.keep(e.into_inner())))
                }
            },
            Op::DropSender => match self.tx.take() {
                None => Outcome::Skipped,
                Some(tx) => {
                    drop(tx);
                    Outcome::Dropped
                }
            },
            Op::DropReceiver => match self.rx.take() {
                None => Outcome::Skipped,
                Some(rx) => {
                    drop(rx);
                    Outcome::Dropped
                }
            },
            Op::Poll(i) => match self.rx.as_mut() {
                None => Outcome::Skipped,
                Some(rx) => {
                    let mut cx = self.wakers.context(i);
                    let polled = Pin::new(rx).poll(&mut cx);
                    Outcome::Polled(polled.map(|r| r.map(|v| self.keep(v))))
                }
            },
            Op::TryRecv => match self.rx.as_mut() {
                None => Outcome::Skipped,
                Some(rx) => Outcome::TryRecv(rx.try_recv().map(|v| self.keep(v))),
            },
            Op::RecvTimeout(wait) => match self.rx.as_mut() {
                None => Outcome::Skipped,
                Some(rx) => {
                    let timeout = match wait {
                        Wait::Zero => Duration::ZERO,
                        Wait::Short => Duration::from_millis(1),
                        Wait::Long
                            if *expected
                                == Outcome::RecvTimeout(Err(RecvTimeoutError::Timeout)) =>
                        {
                            Duration::from_millis(1)
                        }
                        Wait::Long => Duration::from_secs(10),
                    };
                    Outcome::RecvTimeout(rx.recv_timeout(timeout).map(|v| self.keep(v)))
                }
            },
            Op::RecvBlocking => {
                if *expected == Outcome::Skipped {
                    return Outcome::Skipped;
                }
                match self.rx.take() {
                    None => Outcome::Skipped,
                    Some(rx) => Outcome::RecvBlocking(rx.recv_blocking().map(|v| self.keep(v))),
                }
            }
            Op::IsClosed => match self.tx.as_ref() {
                None => Outcome::Skipped,
                Some(tx) => Outcome::IsClosed(tx.is_closed()),
            },
            Op::AbandonReceiver => match self.rx.take() {
                None => Outcome::Skipped,
                Some(rx) => {
                    rx.abandon();
                    Outcome::Dropped
                }
            },
            Op::IsReady => match self.rx.as_ref() {
                None => Outcome::Skipped,
                Some(rx) => Outcome::IsReady(rx.is_ready()),
            },
        }
    }

    /// Compares everything observable with the model.
    fn check(&self, model: &Model, step: usize) -> Result<(), TestCaseError> {
        prop_assert_eq!(
            self.tx.is_some(),
            model.sender,
            "sender presence, step {}",
            step
        );
        prop_assert_eq!(
            self.rx.is_some(),
            model.receiver,
            "receiver presence, step {}",
            step
        );
        for i in 0..WAKERS {
            prop_assert_eq!(
                self.wakers.wakes(i),
                model.wakes[i],
                "wake count of waker {}, step {}",
                i,
                step
            );
            prop_assert_eq!(
                self.wakers.held_by_channel(i),
                usize::from(model.registered == Some(i)),
                "registrations of waker {} held by the channel, step {}",
                i,
                step
            );
        }
        for id in 0..IDS {
            prop_assert_eq!(
                self.drops[id].load(SeqCst),
                model.drops[id],
                "drop count of value {}, step {}",
                id,
                step
            );
        }
        let held: Vec<usize> = self.held.iter().map(|v| v.id).collect();
        prop_assert_eq!(&held, &model.held, "values the test holds, step {}", step);
        Ok(())
    }
}

/// Runs one case of the model test: `ops`, then the leftover handles are dropped (receiver
/// first if `receiver_first`), then the values the test holds, one by one.
fn run_model(ops: &[Op], receiver_first: bool) -> Result<(), TestCaseError> {
    let mut model = Model::new();
    let mut harness = Harness::new();
    harness.check(&model, 0)?;
    for (n, &op) in ops.iter().enumerate() {
        let step = n + 1;
        let expected = model.step(op);
        let actual = harness.step(op, &expected);
        prop_assert_eq!(&actual, &expected, "outcome of {:?}, step {}", op, step);
        harness.check(&model, step)?;
    }

    // Tear down: both handles, then the held values.
    let teardown = if receiver_first {
        [Op::DropReceiver, Op::DropSender]
    } else {
        [Op::DropSender, Op::DropReceiver]
    };
    for (n, op) in teardown.into_iter().enumerate() {
        let step = ops.len() + 1 + n;
        let expected = model.step(op);
        let actual = harness.step(op, &expected);
        prop_assert_eq!(&actual, &expected, "outcome of teardown {:?}", op);
        harness.check(&model, step)?;
    }
    prop_assert_eq!(
        model.registered,
        None,
        "a registration outlived the channel"
    );
    for &id in &model.held {
        // The channel is gone, and it never dropped a value the test holds.
        prop_assert_eq!(
            harness.drops[id].load(SeqCst),
            0,
            "held value {} dropped early",
            id
        );
    }
    for value in std::mem::take(&mut harness.held) {
        let id = value.id;
        drop(value);
        prop_assert_eq!(harness.drops[id].load(SeqCst), 1, "held value {} drops", id);
    }
    for id in 0..IDS {
        prop_assert_eq!(
            harness.drops[id].load(SeqCst),
            usize::from(model.created[id]),
            "every value made is dropped exactly once (value {})",
            id
        );
    }
    Ok(())
}

/// A receive in the mixed-convention test.
#[derive(Debug, Clone, Copy)]
enum Recv {
    /// Poll with waker `i`.
    Poll(usize),
    /// `recv_timeout` with zero (`true`) or one millisecond (`false`).
    Timeout(bool),
    Try,
}

fn recv() -> impl Strategy<Value = Recv> {
    prop_oneof![
        (0..2usize).prop_map(Recv::Poll),
        any::<bool>().prop_map(Recv::Timeout),
        Just(Recv::Try),
    ]
}

/// What a receive in the mixed-convention test returned: `Ok(true)` for the value, `Ok(false)`
/// for "not yet" (pending, timed out, empty), `Err(())` for closed.
fn mixed_recv(
    rx: &mut Receiver<Value>,
    op: Recv,
    wakers: &Wakers,
    got: &mut Option<Value>,
) -> Result<bool, ()> {
    let result = match op {
        Recv::Poll(i) => match Pin::new(rx).poll(&mut wakers.context(i)) {
            Poll::Pending => return Ok(false),
            Poll::Ready(r) => r.map_err(|RecvError| ()),
        },
        Recv::Timeout(zero) => {
            let timeout = if zero {
                Duration::ZERO
            } else {
                Duration::from_millis(1)
            };
            match rx.recv_timeout(timeout) {
                Err(RecvTimeoutError::Timeout) => return Ok(false),
                r => r.map_err(|_| ()),
            }
        }
        Recv::Try => match rx.try_recv() {
            Err(TryRecvError::Empty) => return Ok(false),
            r => r.map_err(|_| ()),
        },
    };
    result.map(|value| {
        assert!(got.is_none(), "received a second value");
        *got = Some(value);
        true
    })
}

/// The mixed-convention test: `ops` on one receiver, with the sender sending (or, if
/// `close`, dropping) before `ops[at]`; then the receiver is awaited with `block_on`.
///
/// The oracle is written out directly rather than through `Model`: before the event every
/// receive reports "not yet"; the event wakes the waker of the last poll if no timed receive
/// came after it; the first receive after a send gets the value; every later one (and every
/// one after a close) reports closed; nobody is woken after the event.
fn run_mixed(ops: &[Recv], at: usize, close: bool) -> Result<(), TestCaseError> {
    const ID: usize = 0;
    let drops: DropCounts = Arc::default();
    let wakers = Wakers::new(2);
    let (tx, mut rx) = oneshot::channel::<Value>();
    let mut tx = Some(tx);
    let mut registered: Option<usize> = None;
    let mut expected_wakes = [0usize; 2];
    let mut got: Option<Value> = None;
    let mut delivered = false;

    for (step, &op) in ops.iter().enumerate() {
        if step == at {
            let tx = tx.take().expect("one event");
            if close {
                drop(tx);
            } else {
                let value = Value {
                    id: ID,
                    drops: Arc::clone(&drops),
                };
                prop_assert!(tx.send(value).is_ok(), "send to a live receiver failed");
            }
            if let Some(i) = registered.take() {
                expected_wakes[i] += 1;
            }
        }
        let before_event = tx.is_some();
        let result = mixed_recv(&mut rx, op, &wakers, &mut got);
        if before_event {
            prop_assert_eq!(
                result,
                Ok(false),
                "{:?} before the event, step {}",
                op,
                step
            );
            match op {
                Recv::Poll(i) => registered = Some(i),
                Recv::Timeout(_) => {
                    // The timed receive displaced the task's registration and wakes it.
                    if let Some(i) = registered.take() {
                        expected_wakes[i] += 1;
                    }
                }
                Recv::Try => {}
            }
        } else if !close && !delivered {
            prop_assert_eq!(result, Ok(true), "{:?}: first receive after the send", op);
            delivered = true;
        } else {
            prop_assert_eq!(result, Err(()), "{:?} after completion, step {}", op, step);
        }
        prop_assert_eq!(wakers.all_wakes(), expected_wakes, "wakes, step {}", step);
        let expected_registrations = [0, 1].map(|i| usize::from(registered == Some(i)));
        prop_assert_eq!(
            wakers.all_held_by_channel(),
            expected_registrations,
            "registrations, step {}",
            step
        );
        prop_assert_eq!(drops[ID].load(SeqCst), 0, "value dropped while in flight");
    }

    if let Some(tx) = tx.take() {
        // `at == ops.len()`: the event comes after every receive.
        if close {
            drop(tx);
        } else {
            let value = Value {
                id: ID,
                drops: Arc::clone(&drops),
            };
            prop_assert!(tx.send(value).is_ok(), "send to a live receiver failed");
        }
        if let Some(i) = registered.take() {
            expected_wakes[i] += 1;
        }
    }
    prop_assert_eq!(wakers.all_wakes(), expected_wakes, "wakes after the event");

    // The channel is settled, so `block_on` returns at once.
    let last = bridge_core::block_on(&mut rx);
    if close || delivered {
        prop_assert!(matches!(last, Err(RecvError)), "block_on after completion");
    } else {
        let value = last.map_err(|e| TestCaseError::fail(format!("block_on: {e}")))?;
        got = Some(value);
    }
    drop(rx);
    prop_assert_eq!(wakers.all_wakes(), expected_wakes, "wakes at the end");
    prop_assert_eq!(wakers.all_held_by_channel(), [0, 0], "a waker leaked");
    prop_assert_eq!(
        got.is_some(),
        !close,
        "the value was received exactly when sent"
    );
    prop_assert_eq!(
        drops[ID].load(SeqCst),
        0,
        "the channel dropped a received value"
    );
    drop(got);
    prop_assert_eq!(
        drops[ID].load(SeqCst),
        usize::from(!close),
        "value drops at the end"
    );
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 512,
        // Keep the test hermetic: no regression files next to the sources.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn oneshot_matches_model(
        ops in prop::collection::vec(op(), 0..=32),
        receiver_first in any::<bool>(),
    ) {
        run_model(&ops, receiver_first)?;
    }

    #[test]
    fn conventions_mix_on_one_receiver(
        (ops, at) in prop::collection::vec(recv(), 0..=12)
            .prop_flat_map(|ops| {
                let len = ops.len();
                (Just(ops), 0..=len)
            }),
        close in any::<bool>(),
    ) {
        run_mixed(&ops, at, close)?;
    }
}
