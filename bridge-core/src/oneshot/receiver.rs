//! The receiving half: one handle, three conventions (sync, blocking, async).

use super::channel::{Channel, ChannelPtr, ReceiverWaker, invalid_state};
use super::states::*;
use super::{RecvError, RecvTimeoutError, TryRecvError};
use crate::backoff::Backoff;
use crate::sync::Parked;
use crate::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use crate::sync::thread;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Receives the one value of its [`Sender`](super::Sender), in whichever convention suits
/// the call site:
///
/// - **async**: `rx.await` (it is a [`Future`]) on any executor: tokio, async-executor,
///   futures' executor, [`block_on`](crate::block_on);
/// - **blocking**: [`recv_blocking`](Self::recv_blocking), [`recv_timeout`](Self::recv_timeout),
///   [`recv_deadline`](Self::recv_deadline);
/// - **sync**: [`try_recv`](Self::try_recv), which never blocks.
///
/// The conventions mix on one handle: poll it, then block with a timeout, then poll again.
/// Once the value has been received, or the sender was dropped without sending, every
/// further receive reports that the channel is closed.
///
/// # Examples
///
/// ```
/// let (tx, rx) = bridge::oneshot::channel();
/// std::thread::spawn(move || tx.send("done").unwrap());
/// assert_eq!(bridge::block_on(rx), Ok("done"));
/// ```
#[must_use = "a Receiver does nothing unless it is awaited or received from; dropping it closes the channel"]
pub struct Receiver<T> {
    channel: ChannelPtr<T>,
    // Invariant in `T`, like `Sender`. Auto traits come from the impls below.
    _marker: PhantomData<fn(T) -> T>,
}

// SAFETY: the receiver takes a `T` that was made on the sender's thread, so `T: Send` is
// needed and enough; the shared cell follows the ownership rules in `states`.
unsafe impl<T: Send> Send for Receiver<T> {}
// SAFETY: every method that changes the channel or reads its slots takes `&mut self` or
// `self`; through a shared reference only `is_ready`'s single atomic load is possible.
unsafe impl<T: Send> Sync for Receiver<T> {}

impl<T> Unpin for Receiver<T> {}

// Unwind safe whatever `T`, for the reasons given at `Sender`'s impls: the state moves in
// single atomic steps and foreign code (a waker's `clone`, `wake` or drop, a value's drop)
// only runs while it is settled.
impl<T> UnwindSafe for Receiver<T> {}
impl<T> RefUnwindSafe for Receiver<T> {}

impl<T> Receiver<T> {
    pub(super) fn new(channel: ChannelPtr<T>) -> Self {
        Self {
            channel,
            _marker: PhantomData,
        }
    }

    /// Takes the value if it is there, without blocking and without registering anything.
    ///
    /// # Errors
    ///
    /// - [`TryRecvError::Empty`]: no value yet; the sender may still send one.
    /// - [`TryRecvError::Closed`]: the sender was dropped without sending, or the value was
    ///   already received.
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge::oneshot::{self, TryRecvError};
    ///
    /// let (tx, mut rx) = oneshot::channel();
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// tx.send(1).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Closed));
    /// ```
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let channel = self.channel();
        // ORDERING: Acquire pairs with the sender's Release of MESSAGE, so the value it wrote
        // is visible before we read it.
        match channel.state.load(Acquire) {
            // SAFETY: MESSAGE observed with Acquire.
            MESSAGE => Ok(unsafe { take_message(channel) }),
            DISCONNECTED => Err(TryRecvError::Closed),
            // UNPARKING: the sender is mid hand-over; nothing is there to take yet.
            EMPTY | RECEIVING | UNPARKING => Err(TryRecvError::Empty),
            other => invalid_state(other),
        }
    }

    /// Blocks this thread until the value comes or the sender is dropped.
    ///
    /// It spins briefly first (a value that arrives while it spins is taken without a sleep
    /// and a cross-thread wake-up), then parks the thread; it never burns a core while it
    /// waits.
    ///
    /// If an earlier poll left a task's waker registered, the blocking receive takes the
    /// registration over and wakes that task when it returns (the same holds for
    /// [`recv_timeout`](Self::recv_timeout) and [`recv_deadline`](Self::recv_deadline)),
    /// so no task waits for a wake-up that went to this thread instead.
    ///
    /// Do not call this on a thread that drives async tasks (a tokio worker, an executor
    /// thread): it blocks the whole thread. Await the receiver there instead.
    ///
    /// # Errors
    ///
    /// [`RecvError`] if the sender was dropped without sending, or the value was already
    /// received.
    ///
    /// # Examples
    ///
    /// ```
    /// let (tx, rx) = bridge::oneshot::channel();
    /// std::thread::spawn(move || tx.send(vec![1, 2, 3]).unwrap());
    /// assert_eq!(rx.recv_blocking(), Ok(vec![1, 2, 3]));
    /// ```
    pub fn recv_blocking(self) -> Result<T, RecvError> {
        let mut this = self;
        this.recv_until(None).map_err(|_| RecvError)
    }

    /// Blocks this thread until the value comes, the sender is dropped, or `timeout`
    /// passes. After a timeout the receiver is still usable.
    ///
    /// # Errors
    ///
    /// - [`RecvTimeoutError::Timeout`]: no value yet.
    /// - [`RecvTimeoutError::Closed`]: the sender was dropped without sending, or the value
    ///   was already received.
    ///
    /// # Examples
    ///
    /// ```
    /// use bridge::oneshot::{self, RecvTimeoutError};
    /// use std::time::Duration;
    ///
    /// let (tx, mut rx) = oneshot::channel();
    /// assert_eq!(rx.recv_timeout(Duration::from_millis(5)), Err(RecvTimeoutError::Timeout));
    /// std::thread::spawn(move || tx.send(9).unwrap());
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(60)), Ok(9));
    /// ```
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        // A timeout too large for the clock waits without a deadline.
        self.recv_until(Instant::now().checked_add(timeout))
    }

    /// Blocks this thread until the value comes, the sender is dropped, or `deadline`
    /// passes. After a timeout the receiver is still usable.
    ///
    /// # Errors
    ///
    /// - [`RecvTimeoutError::Timeout`]: no value yet.
    /// - [`RecvTimeoutError::Closed`]: the sender was dropped without sending, or the value
    ///   was already received.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let (tx, mut rx) = bridge::oneshot::channel();
    /// tx.send('x').unwrap();
    /// let deadline = Instant::now() + Duration::from_millis(10);
    /// assert_eq!(rx.recv_deadline(deadline), Ok('x'));
    /// ```
    pub fn recv_deadline(&mut self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        self.recv_until(Some(deadline))
    }

    fn channel(&self) -> &Channel<T> {
        // SAFETY: a live receiver keeps the channel allocated (the sender only frees it
        // after it acquired DISCONNECTED, which only the receiver's drop stores while the
        // sender is alive).
        unsafe { self.channel.as_ref() }
    }

    /// The blocking receive. If it displaces a task waker that an earlier poll registered,
    /// it wakes that task when it returns, so the task polls again instead of waiting for a
    /// wake-up that now goes to this thread.
    pub(crate) fn recv_until(&mut self, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
        self.recv_until_with(deadline, true)
    }

    /// [`recv_until`](Self::recv_until), parking at once when `spin` is false.
    pub(crate) fn recv_until_with(
        &mut self,
        deadline: Option<Instant>,
        spin: bool,
    ) -> Result<T, RecvTimeoutError> {
        let mut displaced = None;
        let result = self.wait(deadline, spin, &mut displaced);
        if let Some(waker) = displaced {
            waker.wake();
        }
        result
    }

    /// Spin (if `spin`), then register this thread, then park.
    fn wait(
        &mut self,
        deadline: Option<Instant>,
        spin: bool,
        displaced: &mut Option<Waker>,
    ) -> Result<T, RecvTimeoutError> {
        let channel = self.channel();

        // First the family's backoff (`backoff`): a value that lands within it saves a
        // park here and an unpark on the sender's side. A deadline that has already passed
        // gets one look, not a spin.
        // ORDERING: every Acquire load here pairs with the sender's Release of its final state.
        let mut state = channel.state.load(Acquire);
        let spin = spin && deadline.is_none_or(|deadline| deadline > Instant::now());
        let mut backoff = Backoff::new();
        while spin && state != MESSAGE && state != DISCONNECTED && backoff.snooze() {
            // ORDERING: Acquire, as above.
            state = channel.state.load(Acquire);
        }

        // Register this thread as the waker, unless the channel is already done.
        loop {
            match state {
                // SAFETY: MESSAGE observed with Acquire.
                MESSAGE => return Ok(unsafe { take_message(channel) }),
                DISCONNECTED => return Err(RecvTimeoutError::Closed),
                EMPTY => match register(channel, ReceiverWaker::Thread(thread::current())) {
                    Ok(()) => break,
                    Err(actual) => state = actual,
                },
                // A task waker left by an earlier poll: this thread replaces it.
                RECEIVING => match reclaim(channel) {
                    Ok(stale) => {
                        if let ReceiverWaker::Task(waker) = stale {
                            *displaced = Some(waker);
                        }
                        state = EMPTY;
                    }
                    Err(actual) => state = actual,
                },
                UNPARKING => state = wait_out_unparking(channel),
                other => invalid_state(other),
            }
        }

        // Parked until the sender moves the state on, or the deadline passes.
        loop {
            let parked = match deadline {
                None => {
                    thread::park();
                    Parked::Early
                }
                Some(deadline) => thread::park_deadline(deadline),
            };
            state = if parked == Parked::Expired {
                match reclaim(channel) {
                    Ok(ours) => {
                        drop(ours);
                        return Err(RecvTimeoutError::Timeout);
                    }
                    // The sender won the race: its value (or close) is here or on its way.
                    Err(actual) => actual,
                }
            } else {
                channel.state.load(Acquire)
            };
            if state == UNPARKING {
                state = wait_out_unparking(channel);
            }
            match state {
                // SAFETY: MESSAGE observed with Acquire.
                MESSAGE => return Ok(unsafe { take_message(channel) }),
                DISCONNECTED => return Err(RecvTimeoutError::Closed),
                // A spurious wake-up (or an unpark meant for an earlier wait): park again.
                RECEIVING => {}
                other => invalid_state(other),
            }
        }
    }
}

impl<T> Future for Receiver<T> {
    type Output = Result<T, RecvError>;

    /// Resolves to the value, or to [`RecvError`] if the sender was dropped without sending
    /// or the value was already taken. Polling after completion returns `Err(RecvError)`
    /// again; it never panics and never stays pending.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let channel = self.get_mut().channel();
        // ORDERING: Acquire pairs with the sender's Release of its final state.
        let mut state = channel.state.load(Acquire);
        loop {
            match state {
                // SAFETY: MESSAGE observed with Acquire.
                MESSAGE => return Poll::Ready(Ok(unsafe { take_message(channel) })),
                DISCONNECTED => return Poll::Ready(Err(RecvError)),
                EMPTY => match register(channel, ReceiverWaker::Task(cx.waker().clone())) {
                    Ok(()) => return Poll::Pending,
                    Err(actual) => state = actual,
                },
                // Polled again while registered: the task may have moved, so store this
                // poll's waker (reusing the old one when it wakes the same task).
                RECEIVING => match reclaim(channel) {
                    Ok(old) => {
                        let waker = match old {
                            ReceiverWaker::Task(old) if old.will_wake(cx.waker()) => old,
                            _ => cx.waker().clone(),
                        };
                        match register(channel, ReceiverWaker::Task(waker)) {
                            Ok(()) => return Poll::Pending,
                            Err(actual) => state = actual,
                        }
                    }
                    Err(actual) => state = actual,
                },
                // The sender is a few instructions from its final store and will wake the
                // waker it took; ask to be polled again rather than spin here.
                UNPARKING => {
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                other => invalid_state(other),
            }
        }
    }
}

impl<T> Drop for Receiver<T> {
    #[inline]
    fn drop(&mut self) {
        self.release(DISCONNECTED);
    }
}

impl<T> Receiver<T> {
    /// Whether a receive now would return without waiting: the value is there, or the
    /// channel is closed. Takes nothing and registers nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// let (tx, rx) = bridge::oneshot::channel();
    /// assert!(!rx.is_ready());
    /// tx.send(1).unwrap();
    /// assert!(rx.is_ready());
    /// ```
    pub fn is_ready(&self) -> bool {
        // ORDERING: Relaxed: a snapshot; the receive that follows does its own Acquire.
        matches!(self.channel().state.load(Relaxed), MESSAGE | DISCONNECTED)
    }

    /// Drops the receiver without telling the sender: [`Sender::is_closed`] keeps returning
    /// `false`, so a producer that checks it to skip unwanted work goes on. The value it
    /// sends is handed back by `send`, as after an ordinary drop.
    ///
    /// This is for fire-and-forget work, where the result is not wanted but the work is.
    ///
    /// [`Sender::is_closed`]: super::Sender::is_closed
    ///
    /// # Examples
    ///
    /// ```
    /// let (tx, rx) = bridge::oneshot::channel();
    /// rx.abandon();
    /// assert!(!tx.is_closed());
    /// assert_eq!(tx.send(5).unwrap_err().into_inner(), 5);
    /// ```
    pub fn abandon(self) {
        let mut this = std::mem::ManuallyDrop::new(self);
        this.release(ABANDONED);
    }

    /// Gives up this handle: `gone` (DISCONNECTED or ABANDONED) tells a live sender how.
    ///
    /// Inlined for its common end, a channel already closed (the value was taken, or the
    /// sender dropped): one plain load and the free, without the frame of the full state
    /// machine in [`release_open`](Self::release_open).
    #[inline]
    fn release(&mut self, gone: u8) {
        // ORDERING: Acquire: on MESSAGE or DISCONNECTED the sender's accesses must
        // happen-before our free (and the value's drop).
        let state = self.channel().state.load(Acquire);
        if state == DISCONNECTED {
            // SAFETY: DISCONNECTED observed with Acquire: the sender is gone and the value
            // slot is empty; we are last and do not touch the channel again.
            unsafe { Channel::free(self.channel) };
            return;
        }
        self.release_open(gone, state);
    }

    /// [`release`](Self::release) from any `state` (read with Acquire) but DISCONNECTED
    /// seen on the first look: the sender may be alive, or have left a value.
    #[inline(never)]
    fn release_open(&mut self, gone: u8, mut state: u8) {
        let channel = self.channel();
        // Dropped only after the channel is settled, so a panicking destructor cannot leave
        // it half-closed.
        let mut stale_waker = None;
        let value = loop {
            match state {
                // ORDERING: success Release: our accesses happen-before the sender's free;
                // failure Acquire as for the load above.
                EMPTY => match channel
                    .state
                    .compare_exchange(EMPTY, gone, Release, Acquire)
                {
                    Ok(_) => {
                        drop(stale_waker);
                        return;
                    }
                    Err(actual) => state = actual,
                },
                RECEIVING => match reclaim(channel) {
                    Ok(waker) => {
                        stale_waker = Some(waker);
                        state = EMPTY;
                    }
                    Err(actual) => state = actual,
                },
                UNPARKING => state = wait_out_unparking(channel),
                // SAFETY: MESSAGE observed with Acquire: the sender is gone and the value is
                // ours.
                MESSAGE => break Some(unsafe { channel.take_value() }),
                DISCONNECTED => break None,
                other => invalid_state(other),
            }
        };
        // SAFETY: the sender is gone (MESSAGE or DISCONNECTED acquired); we are last and do
        // not touch the channel again.
        unsafe { Channel::free(self.channel) };
        drop(value);
        drop(stale_waker);
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver").finish_non_exhaustive()
    }
}

/// Takes the value and marks it taken, so later receives report `Closed` and the drop frees
/// the channel without dropping a value.
///
/// # Safety
///
/// The caller observed `MESSAGE` with Acquire ordering through the receiver.
unsafe fn take_message<T>(channel: &Channel<T>) -> T {
    // SAFETY: in MESSAGE the sender is gone and the slot holds its value.
    let value = unsafe { channel.take_value() };
    // ORDERING: Relaxed: the sender is gone, so only this receiver reads the state again.
    channel.state.store(DISCONNECTED, Relaxed);
    value
}

/// Stores `waker` and moves EMPTY -> RECEIVING. On failure the waker is dropped and the
/// state that stopped it (MESSAGE or DISCONNECTED) is returned.
fn register<T>(channel: &Channel<T>, waker: ReceiverWaker) -> Result<(), u8> {
    // SAFETY: the caller saw EMPTY, in which only the receiver touches the waker slot, and it
    // is empty there.
    unsafe { channel.write_waker(waker) };
    // ORDERING: success Release publishes the waker to the sender's Acquire when it moves
    // RECEIVING -> UNPARKING. Failure Acquire: the caller may read the value next.
    match channel
        .state
        .compare_exchange(EMPTY, RECEIVING, Release, Acquire)
    {
        Ok(_) => Ok(()),
        Err(actual) => {
            // SAFETY: the state never left EMPTY through us, so the slot is still ours and
            // holds the waker just written.
            drop(unsafe { channel.take_waker() });
            Err(actual)
        }
    }
}

/// Moves RECEIVING -> EMPTY and takes the stored waker back. On failure the sender got there
/// first and the state it stored (UNPARKING, MESSAGE or DISCONNECTED) is returned.
fn reclaim<T>(channel: &Channel<T>) -> Result<ReceiverWaker, u8> {
    // ORDERING: success Relaxed: the waker was written by this receiver, earlier in its own
    // history, so no other thread's writes need to become visible. Failure Acquire: the
    // caller may read the value next.
    match channel
        .state
        .compare_exchange(RECEIVING, EMPTY, Relaxed, Acquire)
    {
        // SAFETY: moving the state away from RECEIVING gave the waker slot back to us, and it
        // holds the waker we stored.
        Ok(_) => Ok(unsafe { channel.take_waker() }),
        Err(actual) => Err(actual),
    }
}

/// Waits out the sender's few instructions between taking the waker and storing its final
/// state, and returns that state.
fn wait_out_unparking<T>(channel: &Channel<T>) -> u8 {
    loop {
        // ORDERING: Acquire pairs with the sender's Release of its final state.
        let state = channel.state.load(Acquire);
        if state != UNPARKING {
            return state;
        }
        thread::yield_now();
    }
}
