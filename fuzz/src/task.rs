//! Fuzz body (2): the rayon task protocol of `bridge_rayon`: spawn, drop, detach, await,
//! wait with a timeout, and panics, on a two-thread pool whose threads the program can hold.
//!
//! While the pool is held (both threads parked inside a job of the program's), a task
//! spawned since is known not to have started, so the body can assert what the docs promise
//! for it: a wait with a timeout returns `None`, a dropped task never runs its closure, a
//! detached one still runs. Each byte picks an operation, the next one its argument:
//!
//! | byte % 9 | operation                                                            |
//! |----------|----------------------------------------------------------------------|
//! | 0        | spawn (argument: `spawn_task`, `spawn_fifo_task` or `spawn_cancellable_task`; returns or panics) |
//! | 1, 2     | drop the task; detach it                                             |
//! | 3        | await it (`catch_unwind` on `bridge_core::block_on`), releasing the pool first |
//! | 4        | `wait_timeout` of 1 ms                                               |
//! | 5        | `try_get`                                                            |
//! | 6, 7     | hold the pool; release it                                            |
//! | 8        | `join`, releasing the pool first                                     |
//!
//! Every closure captures a tracked token and returns a tracked value (or panics with an
//! [`Expected`] payload). At the end the body releases the pool, drops what is left, and
//! checks that every token and every value made was dropped exactly once (waiting for the
//! pool to get there), that no dropped unstarted task ran, and that every detached one did.

use crate::{Drops, Expected, Input, Tracked, is_expected};
use bridge_rayon::ThreadPoolExt;
use rayon::ThreadPool;
use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

const THREADS: usize = 2;
const LIVE: usize = 6;

/// Runs the program that `data` encodes; panics if a task departs from its contract.
///
/// # Panics
///
/// On the first result that differs from the task's contract, or at the end if a token or
/// value was not dropped exactly once within 30 seconds, or a task ran that must not have.
///
/// # Examples
///
/// ```
/// // Hold the pool, spawn a task, drop it, release: its closure must never run.
/// bridge_fuzz::task::run(&[6, 0, 0, 0, 1, 0, 7, 0]);
/// ```
pub fn run(data: &[u8]) {
    crate::quiet_expected_panics();
    let mut input = Input::new(data);
    let mut world = World::new();
    let mut step = 0;
    while let Some(op) = input.below(9) {
        let Some(arg) = input.byte() else {
            break;
        };
        world.apply(op, arg, step);
        world.check_no_double_drop(step);
        step += 1;
    }
    world.finish();
}

fn pool() -> &'static ThreadPool {
    static POOL: OnceLock<ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(THREADS)
            .thread_name(|i| format!("fuzz-task-{i}"))
            .build()
            .expect("a two-thread rayon pool")
    })
}

/// Parks every pool thread in a job until released.
#[derive(Default)]
struct Hold {
    /// How many pool threads are parked, and whether they may go.
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl Hold {
    /// Occupies every thread of the pool; returns once all of them are parked.
    fn start() -> Arc<Self> {
        let hold = Arc::new(Self::default());
        for _ in 0..THREADS {
            let hold = Arc::clone(&hold);
            pool().spawn(move || {
                let mut state = hold.state.lock().unwrap();
                state.0 += 1;
                hold.changed.notify_all();
                while !state.1 {
                    state = hold.changed.wait(state).unwrap();
                }
            });
        }
        let mut state = hold.state.lock().unwrap();
        while state.0 < THREADS {
            state = hold.changed.wait(state).unwrap();
        }
        drop(state);
        hold
    }

    fn release(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }
}

/// One spawned task as the program knows it.
struct Spawned {
    index: u32,
    panics: bool,
    /// Spawned while the pool was held, and not released since: certainly not started.
    queued: bool,
    task: bridge_rayon::Task<Tracked>,
}

/// What became of a task's handle, checked at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Still held, or its result was received.
    Kept,
    /// Dropped before it could have started: its closure must never run.
    DroppedQueued,
    /// Detached: its closure must run.
    Detached,
    /// Dropped after it may have started: either is allowed.
    Dropped,
}

struct World {
    live: Vec<Spawned>,
    hold: Option<Arc<Hold>>,
    drops: Arc<Drops>,
    /// Per task: whether its closure ran, whether it panics (and so makes no value), and
    /// what became of its handle.
    ran: Vec<Arc<AtomicBool>>,
    panics: Vec<bool>,
    fates: Vec<Fate>,
}

impl World {
    fn new() -> Self {
        Self {
            live: Vec::new(),
            hold: None,
            drops: Arc::default(),
            ran: Vec::new(),
            panics: Vec::new(),
            fates: Vec::new(),
        }
    }

    fn release(&mut self) {
        if let Some(hold) = self.hold.take() {
            hold.release();
        }
        for spawned in &mut self.live {
            spawned.queued = false;
        }
    }

    /// Takes the live task the argument picks, if there is one.
    fn pick(&mut self, arg: u8) -> Option<Spawned> {
        if self.live.is_empty() {
            return None;
        }
        let i = usize::from(arg) % self.live.len();
        Some(self.live.swap_remove(i))
    }

    fn apply(&mut self, op: u8, arg: u8, step: usize) {
        match op {
            0 => self.spawn(arg),
            1 => {
                if let Some(s) = self.pick(arg) {
                    self.fates[s.index as usize] = if s.queued {
                        Fate::DroppedQueued
                    } else {
                        Fate::Dropped
                    };
                    drop(s.task);
                }
            }
            2 => {
                if let Some(s) = self.pick(arg) {
                    self.fates[s.index as usize] = Fate::Detached;
                    s.task.detach();
                }
            }
            3 | 8 => {
                self.release();
                if let Some(s) = self.pick(arg) {
                    let (index, panics) = (s.index, s.panics);
                    let outcome = if op == 3 {
                        bridge_core::block_on(s.task.catch_unwind())
                    } else {
                        s.task.join()
                    };
                    check_outcome(
                        index,
                        panics,
                        outcome.map_err(bridge_core::Error::into_panic),
                        step,
                    );
                }
            }
            4 | 5 => {
                let Some(mut s) = self.pick(arg) else {
                    return;
                };
                let got = panic::catch_unwind(AssertUnwindSafe(|| {
                    if op == 4 {
                        s.task.wait_timeout(Duration::from_millis(1))
                    } else {
                        s.task.try_get()
                    }
                }));
                match got {
                    Ok(None) => self.live.push(s),
                    _ if s.queued => {
                        panic!(
                            "step {step}: task {} finished while the pool was held",
                            s.index
                        )
                    }
                    Ok(Some(value)) => check_outcome(s.index, s.panics, Ok(value), step),
                    Err(payload) => check_outcome(s.index, s.panics, Err(payload), step),
                }
            }
            6 => {
                if self.hold.is_none() {
                    self.hold = Some(Hold::start());
                }
            }
            7 => self.release(),
            _ => unreachable!("op is below 9"),
        }
    }

    fn spawn(&mut self, arg: u8) {
        if self.live.len() >= LIVE {
            return;
        }
        let index = u32::try_from(self.ran.len()).expect("few tasks");
        let panics = arg & 4 != 0;
        let ran = Arc::new(AtomicBool::new(false));
        let token = Tracked::new(token_id(index), &self.drops);
        let drops = Arc::clone(&self.drops);
        let flag = Arc::clone(&ran);
        let body = move || {
            flag.store(true, SeqCst);
            drop(token);
            if panics {
                panic::panic_any(Expected(index));
            }
            Tracked::new(value_id(index), &drops)
        };
        let task = match arg % 3 {
            0 => pool().spawn_task(body),
            1 => pool().spawn_fifo_task(body),
            _ => pool().spawn_cancellable_task(move |_cancel| body()),
        };
        self.ran.push(ran);
        self.panics.push(panics);
        self.fates.push(Fate::Kept);
        self.live.push(Spawned {
            index,
            panics,
            queued: self.hold.is_some(),
            task,
        });
    }

    fn check_no_double_drop(&self, step: usize) {
        for index in 0..self.ran.len() as u32 {
            for id in [token_id(index), value_id(index)] {
                assert!(
                    self.drops.count(id) <= 1,
                    "step {step}: value {id} dropped twice"
                );
            }
        }
    }

    /// Releases the pool, drops the remaining tasks, and checks the fate of every task.
    fn finish(mut self) {
        self.release();
        for s in std::mem::take(&mut self.live) {
            self.fates[s.index as usize] = Fate::Dropped;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        for (index, fate) in self.fates.iter().enumerate() {
            let index = index as u32;
            let ran = &self.ran[index as usize];
            // A task that ran without panicking made a value, which must be dropped once.
            let settled = || {
                self.drops.count(token_id(index)) == 1
                    && (!ran.load(SeqCst)
                        || self.panics[index as usize]
                        || self.drops.count(value_id(index)) == 1)
            };
            while !settled() {
                assert!(
                    Instant::now() < deadline,
                    "task {index} ({fate:?}): token or value not dropped within 30 s"
                );
                std::thread::sleep(Duration::from_micros(100));
            }
            match fate {
                Fate::DroppedQueued => {
                    assert!(
                        !ran.load(SeqCst),
                        "task {index} ran after it was dropped unstarted"
                    )
                }
                Fate::Detached => assert!(ran.load(SeqCst), "detached task {index} never ran"),
                Fate::Kept | Fate::Dropped => {}
            }
        }
        self.check_no_double_drop(usize::MAX);
    }
}

fn token_id(index: u32) -> u32 {
    2 * index + 1
}

fn value_id(index: u32) -> u32 {
    2 * index + 2
}

/// A panic payload, as `catch_unwind` gives it.
type Payload = Box<dyn Any + Send + 'static>;

/// Checks what task `index` gave: its value, or its panic if it `panics`.
/// A lost job panics in `Error::into_panic` on the way here.
fn check_outcome(index: u32, panics: bool, outcome: Result<Tracked, Payload>, step: usize) {
    match outcome {
        Ok(value) if !panics => {
            assert_eq!(
                value.id,
                value_id(index),
                "step {step}: task {index}'s value"
            )
        }
        Err(payload) if panics => assert!(
            is_expected(payload.as_ref(), index),
            "step {step}: task {index} came back with a different panic"
        ),
        Ok(_) => panic!("step {step}: task {index} returned a value instead of its panic"),
        Err(_) => panic!("step {step}: task {index} panicked although it should not"),
    }
}
