//! The bounded buffer between a stream's producer (the pump, on one side) and its consumer
//! (the [`Crossing`](super::Crossing), on the other): a queue, how the stream ended, and one
//! waker per side, under one lock. It knows no runtime, so either side may run anywhere.
//!
//! The rules it keeps (the fuzz body `bridge_fuzz::stream` checks them against a model):
//!
//! - the producer may poll its stream only while [`reserve`](Buffer::reserve) says there is
//!   room: fewer than `bound` items wait, or (`bound` 0) the queue is empty and the consumer
//!   waits for an item;
//! - the consumer's waker is woken when an item or the end arrives; the producer's when room
//!   appears (only if it waits for room, not for its stream) and when the consumer is gone;
//! - items come out in the order they went in; after the consumer is gone every item is
//!   dropped once, the buffered ones by the consumer, later ones by the producer.
//!
// Maintainers: wakers are taken out under the lock and woken after it is released, and no
// item is dropped under it, so no user code but a waker's `clone` runs under the lock.

use std::any::Any;
use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};

/// A panic payload, as `catch_unwind` gives it.
pub(crate) type Payload = Box<dyn Any + Send + 'static>;

/// How the producer's stream ended, or `Open` while it goes on.
pub(crate) enum End {
    /// The stream may yield more.
    Open,
    /// The stream returned `None`.
    Finished,
    /// The stream's `poll_next` panicked with this payload (taken by the consumer).
    Panicked(Option<Payload>),
    /// The producer was dropped before its stream ended, the consumer still there: the
    /// executor running it shut down.
    Lost,
}

/// What [`Buffer::reserve`] tells the producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reserve {
    /// Poll the stream: its next item has room.
    Room,
    /// No room: the producer's waker is kept and woken when room appears.
    Full,
    /// The consumer is gone: stop, and drop the stream.
    Gone,
}

/// What the consumer takes out of the buffer.
pub(crate) enum Next<T> {
    /// The next item in order.
    Item(T),
    /// The stream ended.
    Finished,
    /// The stream panicked after its last item.
    Panicked(Payload),
    /// The producer was lost (see [`End::Lost`]).
    Lost,
}

struct State<T> {
    items: VecDeque<T>,
    bound: usize,
    end: End,
    /// The consumer polled, found no item, and has not taken one since: with `bound` 0,
    /// the only time the producer may poll its stream.
    wanted: bool,
    consumer: Option<Waker>,
    producer: Option<Waker>,
    /// The producer's waker waits for room (not for its stream, which has its own waker).
    producer_waits_for_room: bool,
    consumer_gone: bool,
}

impl<T> State<T> {
    fn has_room(&self) -> bool {
        self.items.len() < self.bound.max(usize::from(self.wanted))
    }

    /// The producer's waker, if it waits for room and there is some now.
    fn take_producer_if_room(&mut self) -> Option<Waker> {
        if self.producer_waits_for_room && self.has_room() {
            self.producer_waits_for_room = false;
            self.producer.take()
        } else {
            None
        }
    }
}

/// The shared half of one crossing.
pub(crate) struct Buffer<T> {
    state: Mutex<State<T>>,
}

fn store(slot: &mut Option<Waker>, waker: &Waker) {
    match slot {
        Some(old) if old.will_wake(waker) => {}
        _ => *slot = Some(waker.clone()),
    }
}

fn wake(waker: Option<Waker>) {
    if let Some(waker) = waker {
        waker.wake();
    }
}

impl<T> Buffer<T> {
    pub(crate) fn new(bound: usize) -> Self {
        Self {
            state: Mutex::new(State {
                // Room for what may wait, up to a size that a huge bound must not allocate
                // up front.
                items: VecDeque::with_capacity(bound.clamp(1, 64)),
                bound,
                end: End::Open,
                wanted: false,
                consumer: None,
                producer: None,
                producer_waits_for_room: false,
                consumer_gone: false,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // No code that can panic runs under the lock but a waker's clone, which leaves the
        // state whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    // The producer's side.

    /// Whether the producer may poll its stream for one item now; if not because the buffer
    /// is full, `waker` is woken when room appears.
    pub(crate) fn reserve(&self, waker: &Waker) -> Reserve {
        let mut state = self.lock();
        if state.consumer_gone {
            Reserve::Gone
        } else if state.has_room() {
            state.producer_waits_for_room = false;
            Reserve::Room
        } else {
            store(&mut state.producer, waker);
            state.producer_waits_for_room = true;
            Reserve::Full
        }
    }

    /// Queues an item made after a [`Reserve::Room`]; gives it back if the consumer is gone.
    pub(crate) fn push(&self, item: T) -> Result<(), T> {
        let mut state = self.lock();
        if state.consumer_gone {
            return Err(item);
        }
        state.items.push_back(item);
        let consumer = state.consumer.take();
        drop(state);
        wake(consumer);
        Ok(())
    }

    /// The stream returned `Pending`: keeps `waker` so that the consumer's drop can stop the
    /// producer. Returns `false` if the consumer is gone already.
    pub(crate) fn park(&self, waker: &Waker) -> bool {
        let mut state = self.lock();
        if state.consumer_gone {
            return false;
        }
        store(&mut state.producer, waker);
        state.producer_waits_for_room = false;
        true
    }

    /// The stream ended (`Finished` or `Panicked`), or the producer is being dropped before
    /// it did (`Lost`, which changes nothing once the stream has ended).
    pub(crate) fn close(&self, end: End) {
        let mut state = self.lock();
        if !matches!(state.end, End::Open) || state.consumer_gone {
            // A payload nobody will take is dropped here, outside the lock.
            drop(state);
            drop(end);
            return;
        }
        state.end = end;
        let consumer = state.consumer.take();
        drop(state);
        wake(consumer);
    }

    // The consumer's side.

    /// The next item, the end, or `Pending` with `waker` kept until one of them arrives.
    pub(crate) fn poll_next(&self, waker: &Waker) -> Poll<Next<T>> {
        let mut state = self.lock();
        if let Some(item) = state.items.pop_front() {
            state.wanted = false;
            let producer = state.take_producer_if_room();
            drop(state);
            wake(producer);
            return Poll::Ready(Next::Item(item));
        }
        match &mut state.end {
            End::Open => {}
            End::Finished => return Poll::Ready(Next::Finished),
            End::Lost => return Poll::Ready(Next::Lost),
            End::Panicked(payload) => {
                return Poll::Ready(match payload.take() {
                    Some(payload) => Next::Panicked(payload),
                    // Taken by an earlier poll: the stream has ended.
                    None => Next::Finished,
                });
            }
        }
        store(&mut state.consumer, waker);
        state.wanted = true;
        let producer = state.take_producer_if_room();
        drop(state);
        wake(producer);
        Poll::Pending
    }

    /// The consumer is gone: the buffered items are dropped here and the producer is woken,
    /// to find out and drop its stream.
    pub(crate) fn cancel(&self) {
        let mut state = self.lock();
        state.consumer_gone = true;
        state.consumer = None;
        let items = std::mem::take(&mut state.items);
        let end = std::mem::replace(&mut state.end, End::Finished);
        let producer = state.producer.take();
        drop(state);
        drop(items);
        drop(end);
        wake(producer);
    }

    /// How many items wait, and whether the stream has ended (for `Debug`).
    pub(crate) fn snapshot(&self) -> (usize, usize, &'static str) {
        let state = self.lock();
        let end = match state.end {
            End::Open => "open",
            End::Finished => "finished",
            End::Panicked(_) => "panicked",
            End::Lost => "lost",
        };
        (state.items.len(), state.bound, end)
    }
}
