//! Random schedules of spawn / drop / detach / await / wait-with-timeout / try-get, with
//! panicking and gated closures, over a real pool of two threads.
//!
//! Checked in every case: each task that is taken yields exactly its own value or its own
//! panic; a task dropped while both pool threads are held at the gate, and queued behind
//! them, never runs; and once the pool has drained, every value made and every closure's
//! captures were dropped exactly once.

mod common;

use bridge_rayon::{Error, Task, ThreadPoolExt};
use proptest::prelude::*;
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex, Once};
use std::time::Duration;

/// The payload of a panic the schedule asked for; the panic hook stays quiet for these.
struct Planned(usize);

fn quiet_planned_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<Planned>() {
                default(info);
            }
        }));
    });
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Spawn { panics: bool, gated: bool },
    Drop(usize),
    Detach(usize),
    Await(usize),
    WaitTimeout(usize),
    TryGet(usize),
    OpenGate,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<bool>(), any::<bool>()).prop_map(|(panics, gated)| Op::Spawn { panics, gated }),
        2 => (0..8usize).prop_map(Op::Drop),
        1 => (0..8usize).prop_map(Op::Detach),
        2 => (0..8usize).prop_map(Op::Await),
        1 => (0..8usize).prop_map(Op::WaitTimeout),
        1 => (0..8usize).prop_map(Op::TryGet),
        1 => Just(Op::OpenGate),
    ]
}

/// Counts drops into a shared counter.
struct Counted {
    id: usize,
    drops: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, SeqCst);
    }
}

#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
    /// Gated closures that have started and wait (or waited) at the gate.
    held: AtomicUsize,
}

impl Gate {
    fn pass(&self) {
        self.held.fetch_add(1, SeqCst);
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }

    fn is_open(&self) -> bool {
        *self.open.lock().unwrap()
    }
}

struct Live {
    id: usize,
    panics: bool,
    task: Task<Counted>,
    /// Spawned while both pool threads were held at the closed gate: it cannot start until
    /// the gate opens.
    stuck: bool,
}

/// A panic payload, as `catch_unwind` gives it.
type Payload = Box<dyn Any + Send + 'static>;

/// What a non-panicking take gave, as a value or a payload; a lost job fails the case.
fn taken(
    live_id: usize,
    got: Result<Counted, Error>,
) -> Result<Result<Counted, Payload>, TestCaseError> {
    match got {
        Ok(value) => Ok(Ok(value)),
        Err(err) => match err.try_into_panic() {
            Ok(payload) => Ok(Err(payload)),
            Err(err) => Err(TestCaseError::fail(format!("task {live_id} lost: {err}"))),
        },
    }
}

/// Checks what a task produced against what it was told to do.
fn check(live_id: usize, panics: bool, got: Result<Counted, Payload>) -> Result<(), TestCaseError> {
    match got {
        Ok(value) => {
            prop_assert!(!panics, "task {} returned although it panics", live_id);
            prop_assert_eq!(value.id, live_id, "a value reached the wrong task");
        }
        Err(payload) => {
            prop_assert!(panics, "task {} panicked unexpectedly", live_id);
            let planned = payload.downcast_ref::<Planned>().map(|p| p.0);
            prop_assert_eq!(planned, Some(live_id), "a panic reached the wrong task");
        }
    }
    Ok(())
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    quiet_planned_panics();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let gate = Arc::new(Gate::default());
    let value_drops = Arc::new(AtomicUsize::new(0));
    let capture_drops = Arc::new(AtomicUsize::new(0));
    let made = Arc::new(AtomicUsize::new(0));
    let ran: Arc<Mutex<BTreeMap<usize, ()>>> = Arc::default();
    let mut live: Vec<Live> = Vec::new();
    let mut never_run = Vec::new();
    let mut spawned = 0;

    for op in ops {
        match op {
            Op::Spawn { panics, gated } => {
                let id = spawned;
                spawned += 1;
                // Both threads held at a closed gate: this job must queue behind them.
                let stuck = !gate.is_open() && gate.held.load(SeqCst) >= 2;
                let (job_gate, made, ran) = (gate.clone(), made.clone(), ran.clone());
                let drops = value_drops.clone();
                let capture = Counted {
                    id,
                    drops: capture_drops.clone(),
                };
                let task = pool.spawn_task(move || {
                    let _keep = &capture;
                    ran.lock().unwrap().insert(id, ());
                    if gated {
                        job_gate.pass();
                    }
                    if panics {
                        std::panic::panic_any(Planned(id));
                    }
                    made.fetch_add(1, SeqCst);
                    Counted { id, drops }
                });
                live.push(Live {
                    id,
                    panics,
                    task,
                    stuck,
                });
                if gated {
                    // Let the gated closure reach the gate, if a thread is free for it, so that
                    // `held` tells the truth for the next spawns.
                    let deadline = std::time::Instant::now() + Duration::from_millis(20);
                    while gate.held.load(SeqCst) < 2 && std::time::Instant::now() < deadline {
                        std::thread::yield_now();
                    }
                }
            }
            Op::Drop(i) if i < live.len() => {
                let gone = live.remove(i);
                if gone.stuck && !gate.is_open() {
                    never_run.push(gone.id);
                }
            }
            Op::Detach(i) if i < live.len() => live.remove(i).task.detach(),
            Op::Await(i) if i < live.len() => {
                // A blocking take could wait behind the gate forever: open it first.
                gate.open();
                let Live {
                    id, panics, task, ..
                } = live.remove(i);
                check(
                    id,
                    panics,
                    taken(id, futures::executor::block_on(task.catch_unwind()))?,
                )?;
            }
            Op::WaitTimeout(i) if i < live.len() => {
                let entry = &mut live[i];
                let (id, panics) = (entry.id, entry.panics);
                let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    entry.task.wait_timeout(Duration::from_micros(200))
                }));
                match got {
                    Ok(None) => {}
                    Ok(Some(value)) => {
                        check(id, panics, Ok(value))?;
                        live.remove(i);
                    }
                    Err(payload) => {
                        check(id, panics, Err(payload))?;
                        live.remove(i);
                    }
                }
            }
            Op::TryGet(i) if i < live.len() => {
                let entry = &mut live[i];
                let (id, panics) = (entry.id, entry.panics);
                let got =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| entry.task.try_get()));
                match got {
                    Ok(None) => {}
                    Ok(Some(value)) => {
                        check(id, panics, Ok(value))?;
                        live.remove(i);
                    }
                    Err(payload) => {
                        check(id, panics, Err(payload))?;
                        live.remove(i);
                    }
                }
            }
            Op::OpenGate => gate.open(),
            _ => {}
        }
    }

    gate.open();
    for Live {
        id, panics, task, ..
    } in live
    {
        check(id, panics, taken(id, task.join())?)?;
    }
    // Drain the pool: every job queued so far (the detached and dropped tasks' too) has
    // finished once both threads have passed this.
    common::drain(&pool);
    drop(pool);

    let ran = ran.lock().unwrap();
    for id in &never_run {
        prop_assert!(
            !ran.contains_key(id),
            "task {} ran although it was cancelled first",
            id
        );
    }
    prop_assert_eq!(
        capture_drops.load(SeqCst),
        spawned,
        "captures dropped != spawned"
    );
    prop_assert_eq!(
        value_drops.load(SeqCst),
        made.load(SeqCst),
        "values dropped != made"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_schedules(ops in proptest::collection::vec(op(), 1..32)) {
        run(ops)?;
    }
}
