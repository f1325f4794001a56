//! Fuzz body (1): `bridge_core::oneshot` driven by an operation language, against a
//! reference model.
//!
//! The program works on three channel slots at once. Each byte picks an operation, the next
//! one the slot (and, for some, one more its argument):
//!
//! | byte % 13 | operation                                                           |
//! |-----------|---------------------------------------------------------------------|
//! | 0         | replace the slot's channel with a new one (old receiver dropped first) |
//! | 1, 2, 3   | send the next value; drop the sender; drop the receiver             |
//! | 4         | abandon the receiver                                                |
//! | 5         | poll the receiver with waker 0 or 1                                 |
//! | 6, 7      | `try_recv`; `recv_timeout(0)`                                       |
//! | 8, 9      | `Sender::is_closed`; `Receiver::is_ready`                           |
//! | 10, 11    | a second thread sends (or drops the sender) after a few yields, while this one receives with `recv_blocking`, `block_on` or `recv_timeout` |
//! | 12        | a second thread drops the receiver while this one sends             |
//!
//! After every step the body checks the operation's result, how often each waker was woken
//! and how many registrations of it the channels hold, and that every value that left the
//! channels was dropped exactly once and every value still in one was not dropped.
//! The sequential model is the contract of `bridge_core::oneshot`, as its docs state it.

use crate::{Drops, Input, Tracked};
use bridge_core::oneshot::{self, Receiver, RecvError, RecvTimeoutError, Sender, TryRecvError};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

const SLOTS: u8 = 3;
const WAKERS: usize = 2;

/// Runs the program that `data` encodes; panics if the channel departs from the model.
///
/// # Panics
///
/// On the first step whose result, wake-ups, registrations or drops differ from the
/// model's; the message names the step.
///
/// # Examples
///
/// ```
/// // Poll slot 0 with waker 1, send on it, then receive it with try_recv.
/// bridge_fuzz::oneshot::run(&[5, 0, 1, 1, 0, 6, 0]);
/// ```
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let mut world = World::new();
    let mut step = 0;
    while let Some(op) = input.below(13) {
        let Some(slot) = input.below(SLOTS) else {
            break;
        };
        let arg = match op {
            5 | 10 | 11 => input.byte().unwrap_or(0),
            _ => 0,
        };
        world.apply(usize::from(slot), op, arg, step);
        world.check(step);
        step += 1;
    }
    world.close(step);
}

/// A waker that counts its wake-ups.
#[derive(Debug, Default)]
struct Counting(AtomicUsize);

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// What the model knows of one channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Both handles alive, nothing sent.
    Empty,
    /// The value with this id waits in the channel.
    Full(u32),
    /// Nothing will come: received, sender dropped, or receiver gone.
    Closed,
}

#[derive(Debug)]
struct Model {
    sender: bool,
    receiver: bool,
    abandoned: bool,
    slot: Slot,
    /// The waker index the channel holds a registration of.
    registered: Option<usize>,
}

impl Model {
    fn new() -> Self {
        Self {
            sender: true,
            receiver: true,
            abandoned: false,
            slot: Slot::Empty,
            registered: None,
        }
    }
}

/// The real handles of one slot, and their model.
struct Channel {
    tx: Option<Sender<Tracked>>,
    rx: Option<Receiver<Tracked>>,
    model: Model,
}

impl Channel {
    fn new() -> Self {
        let (tx, rx) = oneshot::channel();
        Self {
            tx: Some(tx),
            rx: Some(rx),
            model: Model::new(),
        }
    }
}

struct World {
    channels: Vec<Channel>,
    counters: Vec<Arc<Counting>>,
    wakers: Vec<Waker>,
    /// Expected wake-ups per waker.
    wakes: [usize; WAKERS],
    drops: Arc<Drops>,
    next_id: u32,
}

impl World {
    fn new() -> Self {
        let counters: Vec<_> = (0..WAKERS).map(|_| Arc::new(Counting::default())).collect();
        let wakers = counters
            .iter()
            .map(|c| Waker::from(Arc::clone(c)))
            .collect();
        Self {
            channels: (0..SLOTS).map(|_| Channel::new()).collect(),
            counters,
            wakers,
            wakes: [0; WAKERS],
            drops: Arc::default(),
            next_id: 0,
        }
    }

    fn value(&mut self) -> Tracked {
        self.next_id += 1;
        Tracked::new(self.next_id, &self.drops)
    }

    /// The model's side of a wake-up of the channel's registration, which it consumes.
    fn wake_registered(&mut self, slot: usize) {
        if let Some(w) = self.channels[slot].model.registered.take() {
            self.wakes[w] += 1;
        }
    }

    fn apply(&mut self, slot: usize, op: u8, arg: u8, step: usize) {
        let here = format!("step {step}: op {op} on slot {slot}");
        match op {
            0 => {
                let old = std::mem::replace(&mut self.channels[slot], Channel::new());
                drop(old.rx);
                drop(old.tx);
                // The old channel's registration went with its receiver, unwoken.
            }
            1 => {
                let value = self.value();
                let id = value.id;
                let Some(tx) = self.channels[slot].tx.take() else {
                    return;
                };
                let model = &mut self.channels[slot].model;
                model.sender = false;
                let result = tx.send(value).map_err(|e| e.into_inner().id);
                if model.receiver {
                    assert_eq!(result, Ok(()), "{here}: send to a live receiver");
                    model.slot = Slot::Full(id);
                    self.wake_registered(slot);
                } else {
                    assert_eq!(result, Err(id), "{here}: send to a gone receiver");
                }
            }
            2 => {
                if self.channels[slot].tx.take().is_none() {
                    return;
                }
                let model = &mut self.channels[slot].model;
                model.sender = false;
                if model.receiver && model.slot == Slot::Empty {
                    model.slot = Slot::Closed;
                    self.wake_registered(slot);
                }
            }
            3 | 4 => {
                let Some(rx) = self.channels[slot].rx.take() else {
                    return;
                };
                if op == 3 {
                    drop(rx);
                } else {
                    rx.abandon();
                }
                let model = &mut self.channels[slot].model;
                model.receiver = false;
                model.abandoned = op == 4;
                model.registered = None;
                model.slot = Slot::Closed;
            }
            5 => {
                let w = usize::from(arg) % WAKERS;
                let channel = &mut self.channels[slot];
                let Some(rx) = channel.rx.as_mut() else {
                    return;
                };
                let mut cx = Context::from_waker(&self.wakers[w]);
                let got = Pin::new(rx).poll(&mut cx).map(|r| r.map(|v| v.id));
                let model = &mut channel.model;
                let want = match model.slot {
                    Slot::Full(id) => Poll::Ready(Ok(id)),
                    Slot::Closed => Poll::Ready(Err(RecvError)),
                    Slot::Empty => Poll::Pending,
                };
                assert_eq!(got, want, "{here}: poll");
                match model.slot {
                    Slot::Full(_) => model.slot = Slot::Closed,
                    Slot::Empty => model.registered = Some(w),
                    Slot::Closed => {}
                }
            }
            6 => {
                let channel = &mut self.channels[slot];
                let Some(rx) = channel.rx.as_mut() else {
                    return;
                };
                let got = rx.try_recv().map(|v| v.id);
                let model = &mut channel.model;
                let want = match model.slot {
                    Slot::Full(id) => Ok(id),
                    Slot::Closed => Err(TryRecvError::Closed),
                    Slot::Empty => Err(TryRecvError::Empty),
                };
                assert_eq!(got, want, "{here}: try_recv");
                if let Slot::Full(_) = model.slot {
                    model.slot = Slot::Closed;
                }
            }
            7 => {
                let channel = &mut self.channels[slot];
                let Some(rx) = channel.rx.as_mut() else {
                    return;
                };
                let got = rx.recv_timeout(Duration::ZERO).map(|v| v.id);
                let want = match channel.model.slot {
                    Slot::Full(id) => Ok(id),
                    Slot::Closed => Err(RecvTimeoutError::Closed),
                    Slot::Empty => Err(RecvTimeoutError::Timeout),
                };
                assert_eq!(got, want, "{here}: recv_timeout(0)");
                match channel.model.slot {
                    Slot::Full(_) => channel.model.slot = Slot::Closed,
                    // It displaced the registration, and wakes that task as it returns.
                    Slot::Empty => self.wake_registered(slot),
                    Slot::Closed => {}
                }
            }
            8 => {
                let channel = &self.channels[slot];
                if let Some(tx) = &channel.tx {
                    let want = !channel.model.receiver && !channel.model.abandoned;
                    assert_eq!(tx.is_closed(), want, "{here}: is_closed");
                }
            }
            9 => {
                let channel = &self.channels[slot];
                if let Some(rx) = &channel.rx {
                    let want = channel.model.slot != Slot::Empty;
                    assert_eq!(rx.is_ready(), want, "{here}: is_ready");
                }
            }
            10 | 11 => self.cross_thread_close(slot, op == 10, arg, &here),
            12 => self.cross_thread_receiver_drop(slot, &here),
            _ => unreachable!("op is below 13"),
        }
    }

    /// Another thread sends (or drops the sender) after `arg % 8` yields while this thread
    /// receives in the convention `arg / 8 % 3` picks. Only on a channel with both handles,
    /// nothing sent and no registration, so every interleaving has one outcome.
    fn cross_thread_close(&mut self, slot: usize, send: bool, arg: u8, here: &str) {
        let value = self.value();
        let id = value.id;
        let channel = &mut self.channels[slot];
        if channel.model.slot != Slot::Empty || channel.model.registered.is_some() {
            return;
        }
        let (Some(tx), Some(mut rx)) = (channel.tx.take(), channel.rx.take()) else {
            unreachable!("{here}: an empty slot has both handles");
        };
        let yields = arg % 8;
        let other = std::thread::spawn(move || {
            for _ in 0..yields {
                std::thread::yield_now();
            }
            if send {
                assert!(tx.send(value).is_ok(), "the receiver is alive");
            } else {
                drop((tx, value));
            }
        });
        let got = match arg / 8 % 3 {
            0 => rx.recv_blocking().map_err(|_| RecvTimeoutError::Closed),
            1 => {
                let got = bridge_core::block_on(&mut rx).map_err(|_| RecvTimeoutError::Closed);
                channel.rx = Some(rx);
                got
            }
            _ => {
                let got = rx.recv_timeout(Duration::from_secs(60));
                channel.rx = Some(rx);
                got
            }
        };
        other.join().expect("the other thread");
        let got = got.map(|v| v.id);
        let model = &mut channel.model;
        model.sender = false;
        model.slot = Slot::Closed;
        model.receiver = channel.rx.is_some();
        if send {
            assert_eq!(got, Ok(id), "{here}: receive of a cross-thread send");
        } else {
            assert_eq!(
                got,
                Err(RecvTimeoutError::Closed),
                "{here}: receive of a cross-thread sender drop"
            );
        }
    }

    /// Another thread drops the receiver while this one sends. Either may win: a won send
    /// leaves the value to the receiver's drop, a lost one hands it back. Either way it is
    /// dropped exactly once, which `check` verifies.
    fn cross_thread_receiver_drop(&mut self, slot: usize, here: &str) {
        let value = self.value();
        let channel = &mut self.channels[slot];
        if channel.model.slot != Slot::Empty || channel.model.registered.is_some() {
            return;
        }
        let (Some(tx), Some(rx)) = (channel.tx.take(), channel.rx.take()) else {
            unreachable!("{here}: an empty slot has both handles");
        };
        let other = std::thread::spawn(move || drop(rx));
        let result = tx.send(value);
        other.join().expect("the other thread");
        drop(result);
        channel.model = Model {
            sender: false,
            receiver: false,
            abandoned: false,
            slot: Slot::Closed,
            registered: None,
        };
    }

    fn check(&self, step: usize) {
        for (w, counter) in self.counters.iter().enumerate() {
            assert_eq!(
                counter.0.load(SeqCst),
                self.wakes[w],
                "step {step}: wake-ups of waker {w}"
            );
            let registrations = self
                .channels
                .iter()
                .filter(|c| c.model.registered == Some(w))
                .count();
            // One reference in `counters`, one in `wakers`; the rest are registrations.
            assert_eq!(
                Arc::strong_count(counter) - 2,
                registrations,
                "step {step}: registrations of waker {w}"
            );
        }
        for id in 1..=self.next_id {
            let in_channel = self.channels.iter().any(|c| c.model.slot == Slot::Full(id));
            let want = if in_channel { 0 } else { 1 };
            assert_eq!(
                self.drops.count(id),
                want,
                "step {step}: drops of value {id}"
            );
        }
    }

    /// Drops every handle; every value must then have been dropped exactly once.
    fn close(mut self, step: usize) {
        for channel in &mut self.channels {
            channel.rx = None;
            channel.tx = None;
            channel.model.registered = None;
            channel.model.slot = Slot::Closed;
        }
        self.check(step);
    }
}
