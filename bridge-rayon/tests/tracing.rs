//! Feature `tracing`: the span current at a spawn is current while the closure runs, on a
//! pool thread and inline in the waiter that claims the job.
#![cfg(feature = "tracing")]

use bridge_rayon::{ThreadPoolExt, spawn, spawn_cancellable, spawn_fifo};
use std::fmt;
use std::sync::{Mutex, OnceLock};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber, info_span};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::{LookupSpan, Registry};

/// Every event seen in this test binary: its message and the name of the span current at it.
static SEEN: Mutex<Vec<(String, Option<&'static str>)>> = Mutex::new(Vec::new());

struct Recorder;

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut message = Message(String::new());
        event.record(&mut message);
        let span = ctx.event_span(event).map(|span| span.name());
        SEEN.lock().unwrap().push((message.0, span));
    }
}

/// Installs the recorder as the global subscriber (pool threads log there too), once.
fn install() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        tracing::subscriber::set_global_default(Registry::default().with(Recorder)).unwrap();
    });
}

/// The span current at the event whose message is `message` (each test logs its own).
fn span_at(message: &str) -> Option<&'static str> {
    let seen = SEEN.lock().unwrap();
    let mut hits = seen.iter().filter(|(m, _)| m == message);
    let (_, span) = hits
        .next()
        .unwrap_or_else(|| panic!("no event {message:?}"));
    assert!(hits.next().is_none(), "event {message:?} logged twice");
    *span
}

#[test]
fn spawn_runs_in_the_callers_span() {
    install();
    let task = info_span!("spawn_caller").in_scope(|| spawn(|| tracing::info!("in spawn")));
    task.wait();
    assert_eq!(span_at("in spawn"), Some("spawn_caller"));
}

#[test]
fn spawn_fifo_runs_in_the_callers_span() {
    install();
    let task =
        info_span!("fifo_caller").in_scope(|| spawn_fifo(|| tracing::info!("in spawn_fifo")));
    task.wait();
    assert_eq!(span_at("in spawn_fifo"), Some("fifo_caller"));
}

#[test]
fn spawn_cancellable_runs_in_the_callers_span() {
    install();
    let task = info_span!("cancellable_caller")
        .in_scope(|| spawn_cancellable(|_flag| tracing::info!("in spawn_cancellable")));
    task.wait();
    assert_eq!(span_at("in spawn_cancellable"), Some("cancellable_caller"));
}

#[test]
fn awaited_task_runs_in_the_callers_span() {
    install();
    let task = info_span!("await_caller").in_scope(|| spawn(|| tracing::info!("awaited")));
    futures::executor::block_on(task);
    assert_eq!(span_at("awaited"), Some("await_caller"));
}

#[test]
fn thread_pool_ext_runs_in_the_callers_span() {
    install();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let (a, b, c) = info_span!("pool_caller").in_scope(|| {
        let a = pool.spawn_task(|| tracing::info!("in spawn_task"));
        let b = pool.spawn_fifo_task(|| tracing::info!("in spawn_fifo_task"));
        let c = pool.spawn_cancellable_task(|_| tracing::info!("in spawn_cancellable_task"));
        (a, b, c)
    });
    // Waited for outside the span: the closures keep the span of their spawn.
    a.wait();
    b.wait();
    c.wait();
    assert_eq!(span_at("in spawn_task"), Some("pool_caller"));
    assert_eq!(span_at("in spawn_fifo_task"), Some("pool_caller"));
    assert_eq!(span_at("in spawn_cancellable_task"), Some("pool_caller"));
}

#[test]
fn job_claimed_by_its_waiter_runs_in_the_spawners_span() {
    install();
    // A pool of one thread: its worker spawns a task onto its own deque, then waits for it
    // inside another span. Nothing else can take the job, so the wait runs it inline, and the
    // closure sees the span of the spawn, not that of the wait.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let (worker, ran_on) = pool.install(|| {
        let task = info_span!("claim_spawner").in_scope(|| {
            spawn(|| {
                tracing::info!("claimed inline");
                std::thread::current().id()
            })
        });
        let ran_on = info_span!("claim_waiter").in_scope(|| task.wait());
        tracing::info!("after the claim");
        (std::thread::current().id(), ran_on)
    });
    assert_eq!(worker, ran_on, "the waiter ran the job");
    assert_eq!(span_at("claimed inline"), Some("claim_spawner"));
    assert_eq!(span_at("after the claim"), None);
}

#[test]
fn a_panicking_closure_leaves_the_span() {
    install();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let task = info_span!("panic_caller").in_scope(|| pool.spawn_task(|| -> u8 { panic!("bad") }));
    assert!(task.join().is_err());
    // The pool thread's next job sees no span left entered by the panic.
    pool.spawn_task(|| tracing::info!("after the panic")).wait();
    assert_eq!(span_at("after the panic"), None);
}
