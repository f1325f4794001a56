//! Fuzz body (4): the buffer of a `bridge::stream` crossing, both sides driven step by step
//! on this thread, against a sequential model.
//!
//! The producer side is the crossing's real pump (from `bridge_core::stream::start`,
//! which builds a crossing without spawning its producer) over a scripted stream; the
//! consumer side is the real [`Crossing`] (or its `catch_unwind` form). The first byte picks
//! the bound (`byte % 5`) and the consumer's form (`byte & 8`); then each byte picks an
//! operation:
//!
//! | byte % 10 | operation                                                            |
//! |-----------|----------------------------------------------------------------------|
//! | 0         | script: the stream's next poll yields a new item                     |
//! | 1         | script: the stream's next poll returns `Pending` (so does a poll with nothing scripted) |
//! | 2, 3      | script: the stream's next poll panics; ends                          |
//! | 4         | wake the waker the stream kept at its last `Pending` (an I/O event)  |
//! | 5         | poll the pump                                                        |
//! | 6         | poll the pump if its waker was woken since its last poll (a fair executor) |
//! | 7         | poll the consumer                                                    |
//! | 8         | drop the consumer                                                    |
//! | 9         | drop the pump (its executor shut down)                               |
//!
//! After every step the body checks: how many times the stream was polled (never while the
//! buffer is full: at most `bound` items waiting, or with bound 0 one, only while the
//! consumer waits); what each poll returned (items in order, the end, the panic after the
//! items, the loss of the producer); how many times each side's waker was woken (the
//! consumer's when an item or the end arrives while it waits, the producer's when room
//! appears while it waits for room, or when the consumer leaves while it waits for anything:
//! exactly those, so a lost wake-up and a spurious one both fail); and that the stream is
//! dropped once the pump finishes. At the end it drops what is left and checks that every
//! item made, and the stream, were dropped exactly once.

use crate::{Drops, Expected, Input, Tracked, is_expected};
use bridge::stream::Crossing;
use futures::Stream;
use futures::stream::FusedStream;
use std::collections::VecDeque;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// The id under which the stream itself records its drop (items count from 1).
const STREAM_ID: u32 = 0;

/// What the scripted stream does at a poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Yield(u32),
    Pending,
    Panic,
    End,
}

/// The script and what the stream did, shared by the stream and the body.
#[derive(Default)]
struct Script {
    next: VecDeque<Action>,
    polls: usize,
    /// The waker of the stream's last `Pending`, until it is woken.
    waker: Option<Waker>,
}

/// A stream that does what its script says, one action per poll.
struct Scripted {
    script: Arc<Mutex<Script>>,
    drops: Arc<Drops>,
    _alive: Tracked,
}

impl Stream for Scripted {
    type Item = Tracked;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Tracked>> {
        let mut script = self.script.lock().unwrap();
        script.polls += 1;
        match script.next.pop_front().unwrap_or(Action::Pending) {
            Action::Yield(id) => Poll::Ready(Some(Tracked::new(id, &self.drops))),
            Action::Pending => {
                script.waker = Some(cx.waker().clone());
                Poll::Pending
            }
            Action::Panic => {
                drop(script);
                panic::panic_any(Expected(0))
            }
            Action::End => Poll::Ready(None),
        }
    }
}

/// Counts its wake-ups.
#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// How the stream ended, as the model knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Open,
    Finished,
    Panicked,
    Lost,
}

/// The sequential model: what the buffer holds and which waker it keeps.
#[derive(Debug)]
struct Model {
    bound: usize,
    items: VecDeque<u32>,
    end: End,
    /// The consumer's last poll was `Pending` and nothing woke it since.
    consumer_waits: bool,
    /// With bound 0: the consumer waits for an item (the only room there is).
    wanted: bool,
    /// The buffer keeps the producer's waker (for room, or for cancellation).
    producer_kept: bool,
    /// ... and it waits for room.
    producer_waits_for_room: bool,
    /// The stream keeps the producer's waker (its last poll was `Pending`).
    stream_kept: bool,
    consumer_gone: bool,
    /// The end was delivered (or the consumer's poll resumed a panic).
    terminated: bool,
    pump_done: bool,
    stream_polls: usize,
    consumer_wakes: usize,
    producer_wakes: usize,
}

impl Model {
    fn room(&self) -> bool {
        self.items.len() < self.bound.max(usize::from(self.wanted))
    }

    fn wake_consumer(&mut self) {
        if self.consumer_waits {
            self.consumer_waits = false;
            self.consumer_wakes += 1;
        }
    }

    fn wake_producer_if_room(&mut self) {
        if self.producer_waits_for_room && self.room() {
            self.producer_waits_for_room = false;
            self.producer_kept = false;
            self.producer_wakes += 1;
        }
    }

    /// One poll of the pump, whose stream does `script` (front first); returns whether it
    /// finished and how many actions it used.
    fn poll_pump(&mut self, script: &[Action]) -> (bool, usize) {
        let mut used = 0;
        loop {
            if self.consumer_gone {
                return (true, used);
            }
            if !self.room() {
                self.producer_kept = true;
                self.producer_waits_for_room = true;
                return (false, used);
            }
            self.producer_waits_for_room = false;
            let action = script.get(used).copied().unwrap_or(Action::Pending);
            used += 1;
            self.stream_polls += 1;
            match action {
                Action::Yield(id) => {
                    self.items.push_back(id);
                    self.wake_consumer();
                }
                Action::Pending => {
                    self.stream_kept = true;
                    self.producer_kept = true;
                    return (false, used);
                }
                Action::Panic | Action::End => {
                    self.end = if action == Action::Panic {
                        End::Panicked
                    } else {
                        End::Finished
                    };
                    self.wake_consumer();
                    return (true, used);
                }
            }
        }
    }
}

enum Consumer {
    Plain(Crossing<Tracked>),
    Catching(bridge::stream::CaughtCrossing<Tracked>),
}

/// What one poll of the consumer gave.
#[derive(Debug, PartialEq, Eq)]
enum Got {
    Item(u32),
    Pending,
    Ended,
    Panicked,
    Lost,
}

impl Consumer {
    fn is_terminated(&self) -> bool {
        match self {
            Consumer::Plain(c) => c.is_terminated(),
            Consumer::Catching(c) => c.is_terminated(),
        }
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Got {
        let polled = panic::catch_unwind(AssertUnwindSafe(|| match self {
            Consumer::Plain(c) => Pin::new(c).poll_next(cx).map(|item| item.map(Ok)),
            Consumer::Catching(c) => Pin::new(c).poll_next(cx),
        }));
        let payload = match polled {
            Ok(Poll::Pending) => return Got::Pending,
            Ok(Poll::Ready(None)) => return Got::Ended,
            Ok(Poll::Ready(Some(Ok(item)))) => return Got::Item(item.id),
            // The catching consumer gives the error; the plain one resumes the panic, or
            // panics with the error's message when the producer was lost.
            Ok(Poll::Ready(Some(Err(err)))) => match err.try_into_panic() {
                Ok(payload) => payload,
                Err(err) if err.is_lost() => return Got::Lost,
                Err(err) => panic!("the crossing gave an error of no kind it makes: {err}"),
            },
            Err(payload) => payload,
        };
        if is_expected(payload.as_ref(), 0) {
            Got::Panicked
        } else if payload
            .downcast_ref::<String>()
            .is_some_and(|m| m.contains("was lost"))
        {
            Got::Lost
        } else {
            panic::resume_unwind(payload)
        }
    }
}

/// Runs the program that `data` encodes; panics if the crossing departs from the model.
///
/// # Panics
///
/// On the first step whose stream polls, results or wake-ups differ from the model's, or
/// at the end if an item or the stream was not dropped exactly once.
///
/// # Examples
///
/// ```
/// // Bound 1: script two items, poll the pump (it stops at the full buffer), take one,
/// // poll the pump again (woken: room), end, take the rest.
/// bridge_fuzz::stream::run(&[1, 0, 0, 5, 7, 6, 3, 6, 7, 7, 7]);
/// ```
pub fn run(data: &[u8]) {
    crate::quiet_expected_panics();
    let mut input = Input::new(data);
    let Some(first) = input.byte() else {
        return;
    };
    let bound = usize::from(first % 5);
    let drops = Arc::new(Drops::default());
    let script = Arc::new(Mutex::new(Script::default()));
    let stream = Scripted {
        script: Arc::clone(&script),
        drops: Arc::clone(&drops),
        _alive: Tracked::new(STREAM_ID, &drops),
    };
    let (pump, unstarted) = bridge_core::stream::start(stream, bound);
    let crossing = unstarted.with_producer(None);
    assert_eq!(crossing.bound(), bound);
    let mut world = World {
        model: Model {
            bound,
            items: VecDeque::new(),
            end: End::Open,
            consumer_waits: false,
            wanted: false,
            producer_kept: false,
            producer_waits_for_room: false,
            stream_kept: false,
            consumer_gone: false,
            terminated: false,
            pump_done: false,
            stream_polls: 0,
            consumer_wakes: 0,
            producer_wakes: 0,
        },
        script,
        drops,
        pump: Some(Box::pin(pump)),
        consumer: Some(if first & 8 == 0 {
            Consumer::Plain(crossing)
        } else {
            Consumer::Catching(crossing.catch_unwind())
        }),
        consumer_waker: Arc::default(),
        producer_waker: Arc::default(),
        producer_wakes_seen: 0,
        made: 0,
    };
    let mut step = 0;
    while let Some(op) = input.below(10) {
        world.apply(op, step);
        world.check(step);
        step += 1;
    }
    world.finish();
}

type Pump = Pin<Box<dyn Future<Output = bool> + Send>>;

struct World {
    model: Model,
    script: Arc<Mutex<Script>>,
    drops: Arc<Drops>,
    pump: Option<Pump>,
    consumer: Option<Consumer>,
    consumer_waker: Arc<Count>,
    producer_waker: Arc<Count>,
    /// The producer's wake count at its last poll.
    producer_wakes_seen: usize,
    /// Items scripted so far (ids 1..=made).
    made: u32,
}

impl World {
    fn apply(&mut self, op: u8, step: usize) {
        match op {
            0 => {
                self.made += 1;
                let id = self.made;
                self.script
                    .lock()
                    .unwrap()
                    .next
                    .push_back(Action::Yield(id));
            }
            1 => self.script.lock().unwrap().next.push_back(Action::Pending),
            2 => self.script.lock().unwrap().next.push_back(Action::Panic),
            3 => self.script.lock().unwrap().next.push_back(Action::End),
            4 => {
                let waker = self.script.lock().unwrap().waker.take();
                if let Some(waker) = waker {
                    assert!(
                        self.model.stream_kept,
                        "step {step}: the stream kept a waker"
                    );
                    self.model.stream_kept = false;
                    self.model.producer_wakes += 1;
                    waker.wake();
                }
            }
            5 => self.poll_pump(step),
            6 => {
                if self.producer_waker.0.load(SeqCst) > self.producer_wakes_seen {
                    self.poll_pump(step);
                }
            }
            7 => self.poll_consumer(step),
            8 => {
                if let Some(consumer) = self.consumer.take() {
                    let model = &mut self.model;
                    model.consumer_gone = true;
                    model.consumer_waits = false;
                    model.items.clear();
                    if model.producer_kept {
                        model.producer_kept = false;
                        model.producer_waits_for_room = false;
                        model.producer_wakes += 1;
                    }
                    drop(consumer);
                }
            }
            9 => {
                if let Some(pump) = self.pump.take() {
                    drop(pump);
                    self.model.pump_done = true;
                    if self.model.end == End::Open && !self.model.consumer_gone {
                        self.model.end = End::Lost;
                        self.model.wake_consumer();
                    }
                }
            }
            _ => unreachable!("op is below 10"),
        }
    }

    fn poll_pump(&mut self, step: usize) {
        let Some(pump) = self.pump.as_mut() else {
            return;
        };
        let scripted: Vec<Action> = self.script.lock().unwrap().next.iter().copied().collect();
        let (done, used) = self.model.poll_pump(&scripted);
        self.producer_wakes_seen = self.producer_waker.0.load(SeqCst);
        let waker = Waker::from(Arc::clone(&self.producer_waker));
        let polled = pump.as_mut().poll(&mut Context::from_waker(&waker));
        assert_eq!(
            polled.is_ready(),
            done,
            "step {step}: the pump's poll (model {:?})",
            self.model
        );
        if let Poll::Ready(panicked) = polled {
            // The pump says whether its stream panicked, as the model ended it.
            assert_eq!(
                panicked,
                matches!(self.model.end, End::Panicked),
                "step {step}: the pump's output (model {:?})",
                self.model
            );
        }
        let left = self.script.lock().unwrap().next.len();
        assert_eq!(
            scripted.len().saturating_sub(used),
            left,
            "step {step}: the script used"
        );
        if done {
            self.pump = None;
            self.model.pump_done = true;
        }
    }

    fn poll_consumer(&mut self, step: usize) {
        let Some(consumer) = self.consumer.as_mut() else {
            return;
        };
        let model = &mut self.model;
        let expected = if model.terminated {
            Got::Ended
        } else if let Some(id) = model.items.pop_front() {
            model.wanted = false;
            model.wake_producer_if_room();
            Got::Item(id)
        } else {
            match model.end {
                End::Open => {
                    model.consumer_waits = true;
                    model.wanted = true;
                    model.wake_producer_if_room();
                    Got::Pending
                }
                End::Finished => Got::Ended,
                End::Panicked => Got::Panicked,
                End::Lost => Got::Lost,
            }
        };
        if matches!(expected, Got::Ended | Got::Panicked | Got::Lost) {
            model.terminated = true;
        }
        let waker = Waker::from(Arc::clone(&self.consumer_waker));
        let got = consumer.poll(&mut Context::from_waker(&waker));
        assert_eq!(got, expected, "step {step}: the consumer's poll");
        assert_eq!(
            consumer.is_terminated(),
            model.terminated,
            "step {step}: is_terminated"
        );
    }

    fn check(&self, step: usize) {
        let model = &self.model;
        assert!(
            model.items.len() <= model.bound.max(1),
            "step {step}: the model overfilled"
        );
        let script = self.script.lock().unwrap();
        assert_eq!(
            script.polls, model.stream_polls,
            "step {step}: stream polls (model {model:?})"
        );
        assert_eq!(
            self.consumer_waker.0.load(SeqCst),
            model.consumer_wakes,
            "step {step}: consumer wake-ups (model {model:?})"
        );
        assert_eq!(
            self.producer_waker.0.load(SeqCst),
            model.producer_wakes,
            "step {step}: producer wake-ups (model {model:?})"
        );
        let stream_drops = self.drops.count(STREAM_ID);
        assert_eq!(
            stream_drops,
            u32::from(model.pump_done),
            "step {step}: the stream's drops"
        );
        for id in 1..=self.made {
            assert!(
                self.drops.count(id) <= 1,
                "step {step}: item {id} dropped twice"
            );
        }
    }

    fn finish(mut self) {
        drop(self.consumer.take());
        if let Some(mut pump) = self.pump.take() {
            // The consumer is gone: one poll finishes the pump.
            let waker = Waker::from(Arc::clone(&self.producer_waker));
            let polled = pump.as_mut().poll(&mut Context::from_waker(&waker));
            assert!(
                polled.is_ready(),
                "the pump went on after its consumer left"
            );
        }
        assert_eq!(self.drops.count(STREAM_ID), 1, "the stream's drops");
        // Items scripted but never polled were never made.
        let unmade: Vec<u32> = (self.script.lock().unwrap().next.iter())
            .filter_map(|a| match a {
                Action::Yield(id) => Some(*id),
                _ => None,
            })
            .collect();
        for id in 1..=self.made {
            let expected = u32::from(!unmade.contains(&id));
            assert_eq!(self.drops.count(id), expected, "item {id}'s drops");
        }
    }
}
