//! The context-stack harness: the places synchronous code can find itself ([`Ctx`]), how
//! each is entered ([`Ctx::enter`], and stacked with [`enter_stack`]), the route a call
//! takes in each ([`Ctx::route`], [`route_at_top`]), the shapes a program holds a call in
//! ([`Shape`], [`site`]) and the [`watchdog`].
//!
//! Three drivers use it: the `run_blocking` fuzz body (stacks decoded from bytes, a list of
//! calls at the top), the property tests (`fuzz/tests/proptest.rs`: random stacks and
//! shapes) and the differential suite (`fuzz/tests/differential.rs`: a corpus of futures
//! through every entry point in every context and shape, against tokio's own `block_on`).
//!
//! # Examples
//!
//! ```
//! use bridge_fuzz::contexts::{Ctx, Resources, Site, enter_stack, route_at_top};
//! use std::time::Duration;
//!
//! // A current-thread runtime's task, and in it a nested run_blocking.
//! let stack = [Ctx::CurrentTask, Ctx::Nested];
//! let want = route_at_top(&stack);
//! let top = Site::Sync(Box::new(move || assert_eq!(bridge_tokio::route(), want)));
//! bridge_fuzz::contexts::watchdog("the example", Duration::from_secs(60), move || {
//!     enter_stack(&stack, Resources::Fresh, None, top)
//! });
//! ```

use bridge_tokio::{Route, run_blocking};
use std::cell::RefCell;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, mpsc};
use std::time::Duration;

/// A boxed future that can move between threads: an async call site, or a call made there.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

// ---------------------------------------------------------------------------------------
// The contexts.

/// A place where synchronous code can find itself. Runtimes are multi-thread (two
/// workers) or current-thread, I/O and timers enabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ctx {
    /// A thread no runtime or pool has entered (in a stack: a fresh one).
    Thread,
    /// A worker of a one-thread rayon pool.
    Rayon,
    /// The body of `futures::executor::block_on` (which refuses to run inside another on the
    /// same thread: one per stack).
    FuturesExecutor,
    /// A multi-thread runtime's task, on a worker.
    MultiTask,
    /// A multi-thread runtime's `block_on` body.
    MultiBody,
    /// A multi-thread runtime's `spawn_blocking` thread.
    MultiBlocking,
    /// A current-thread runtime's `block_on` body.
    CurrentBody,
    /// A current-thread runtime's task.
    CurrentTask,
    /// A current-thread runtime's `spawn_blocking` thread.
    CurrentBlocking,
    /// The body of a `LocalSet`'s `block_on` on a current-thread runtime.
    CurrentLocalBody,
    /// A `spawn_local` task of a `LocalSet` on a current-thread runtime.
    CurrentLocalTask,
    /// The body of a `LocalSet`'s `block_on` on a multi-thread runtime.
    MultiLocalBody,
    /// A `spawn_local` task of a `LocalSet` on a multi-thread runtime.
    MultiLocalTask,
    /// `LocalSet::run_until` inside a multi-thread runtime's `block_on` body.
    MultiRunUntil,
    /// The body of `bridge_core::block_on`.
    BlockOn,
    /// The future of a nested `run_blocking`.
    Nested,
}

impl Ctx {
    /// Every context.
    pub const ALL: [Ctx; 16] = [
        Ctx::Thread,
        Ctx::Rayon,
        Ctx::FuturesExecutor,
        Ctx::MultiTask,
        Ctx::MultiBody,
        Ctx::MultiBlocking,
        Ctx::CurrentBody,
        Ctx::CurrentTask,
        Ctx::CurrentBlocking,
        Ctx::CurrentLocalBody,
        Ctx::CurrentLocalTask,
        Ctx::MultiLocalBody,
        Ctx::MultiLocalTask,
        Ctx::MultiRunUntil,
        Ctx::BlockOn,
        Ctx::Nested,
    ];

    /// The call site is inside an async body, where a sibling future can sit beside it.
    pub fn is_async(self) -> bool {
        !matches!(
            self,
            Ctx::Thread | Ctx::Rayon | Ctx::MultiBlocking | Ctx::CurrentBlocking
        )
    }

    /// tokio timers work at the call site: a runtime's body or task (or a `run_blocking`
    /// future, whose polls have one entered), not a runtime-free executor.
    pub fn has_tokio_timers(self) -> bool {
        self.is_async() && !matches!(self, Ctx::FuturesExecutor | Ctx::BlockOn)
    }

    /// In a stack, entered on a thread of its own: a fresh thread, and every runtime (one
    /// cannot start inside another's context).
    fn needs_own_thread(self) -> bool {
        !matches!(
            self,
            Ctx::Rayon | Ctx::FuturesExecutor | Ctx::BlockOn | Ctx::Nested
        )
    }

    /// The route a call takes in this context, entered where a call takes `outer`.
    pub fn route(self, outer: Route) -> Route {
        match self {
            Ctx::Thread | Ctx::Rayon => Route::Inline,
            Ctx::MultiTask => Route::OnWorker,
            // The future of a call with no runtime, or of a handoff, is polled on a thread no
            // runtime has entered (polled right there again); that of a call on a worker, on
            // that worker in its first poll (see `Shape::route` for the later ones).
            Ctx::Nested if outer == Route::OnWorker => Route::OnWorker,
            Ctx::Nested => Route::Inline,
            // A runtime-free executor changes nothing about the tokio context.
            Ctx::FuturesExecutor | Ctx::BlockOn => outer,
            // A multi-thread runtime's other threads (a `LocalSet` refuses block_in_place)
            // and every thread of a current-thread runtime (its spawn_blocking threads are
            // inside its context) hand the future to a thread of its own.
            _ => Route::Handoff,
        }
    }

    /// Enters this context on the calling thread and runs `site` in it. A task's panic is
    /// resumed here. `level`: the stack level, for [`Resources::PoolPerLevel`].
    ///
    /// # Panics
    ///
    /// If `site` is async and the context is not ([`Ctx::is_async`]), and with every panic
    /// of `site`.
    pub fn enter<T: Send + 'static>(self, site: Site<T>, resources: Resources, level: usize) -> T {
        use tokio::task::{LocalSet, spawn_blocking, spawn_local};
        let on_multi_thread = matches!(
            self,
            Ctx::MultiTask
                | Ctx::MultiBody
                | Ctx::MultiBlocking
                | Ctx::MultiLocalBody
                | Ctx::MultiLocalTask
                | Ctx::MultiRunUntil
        );
        match self {
            Ctx::Thread => site.run(),
            Ctx::Rayon if resources == Resources::PoolPerLevel => {
                rayon_pool(level).install(move || site.run())
            }
            Ctx::Rayon => rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .expect("a rayon pool")
                .install(move || site.run()),
            Ctx::FuturesExecutor => futures::executor::block_on(site.into_future()),
            Ctx::BlockOn => bridge_core::block_on(site.into_future()),
            Ctx::Nested => run_blocking(site.into_future()),
            _ => with_runtime(on_multi_thread, resources, move |rt| match self {
                Ctx::MultiTask | Ctx::CurrentTask => {
                    task(rt.block_on(async move { tokio::spawn(site.into_future()).await }))
                }
                Ctx::MultiBlocking | Ctx::CurrentBlocking => {
                    task(rt.block_on(async move { spawn_blocking(move || site.run()).await }))
                }
                Ctx::MultiLocalBody | Ctx::CurrentLocalBody => {
                    LocalSet::new().block_on(rt, site.into_future())
                }
                Ctx::MultiLocalTask | Ctx::CurrentLocalTask => task(
                    LocalSet::new()
                        .block_on(rt, async move { spawn_local(site.into_future()).await }),
                ),
                Ctx::MultiRunUntil => {
                    rt.block_on(async move { LocalSet::new().run_until(site.into_future()).await })
                }
                _ => rt.block_on(site.into_future()),
            }),
        }
    }
}

/// The route a call takes at the top of `stack` (entered in order, outermost first).
///
/// # Examples
///
/// ```
/// use bridge_fuzz::contexts::{Ctx, route_at_top};
/// use bridge_tokio::Route;
///
/// assert_eq!(route_at_top(&[]), Route::Inline);
/// assert_eq!(route_at_top(&[Ctx::MultiTask, Ctx::BlockOn, Ctx::Nested]), Route::OnWorker);
/// ```
pub fn route_at_top(stack: &[Ctx]) -> Route {
    stack
        .iter()
        .fold(Route::Inline, |outer, ctx| ctx.route(outer))
}

/// What runs in a context: sync code, or an async body (only where [`Ctx::is_async`]).
#[allow(missing_debug_implementations)]
pub enum Site<T> {
    /// Synchronous code.
    Sync(Box<dyn FnOnce() -> T + Send>),
    /// An async body, polled by the context's executor.
    Async(BoxFuture<T>),
}

impl<T: Send + 'static> Site<T> {
    fn run(self) -> T {
        match self {
            Site::Sync(f) => f(),
            Site::Async(_) => panic!("an async site in a sync context"),
        }
    }

    fn into_future(self) -> BoxFuture<T> {
        match self {
            Site::Sync(f) => Box::pin(async move { f() }),
            Site::Async(body) => body,
        }
    }
}

/// Where a context's runtimes and rayon pools come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resources {
    /// Each made for its entry and dropped after it, so that their threads exit (and run
    /// their thread-local destructors).
    Fresh,
    /// Runtimes fresh; a one-thread rayon pool per stack level, built once per process. Each
    /// level has its own (a stack that entered one pool twice, with a blocked thread
    /// between, would deadlock); a pool per program would leave rayon's asynchronous
    /// teardown running into the next one (the fuzz body's: LeakSanitizer checks each input).
    PoolPerLevel,
    /// Multi-thread runtimes: the process's one, which lives as long as the process, and
    /// with it the connection drivers that a pooled client spawns on it. The rest fresh.
    SharedMultiThread,
}

/// Runs `f` with a runtime, I/O and timers enabled: a multi-thread one (two workers), the
/// shared one or a fresh one, or a fresh current-thread one; a fresh one is dropped after.
fn with_runtime<R>(
    multi_thread: bool,
    resources: Resources,
    f: impl FnOnce(&tokio::runtime::Runtime) -> R,
) -> R {
    use tokio::runtime::{Builder, Runtime};
    static SHARED: OnceLock<Runtime> = OnceLock::new();
    let build = |builder: &mut Builder| builder.enable_all().build().expect("a runtime");
    let multi = || build(Builder::new_multi_thread().worker_threads(2));
    if multi_thread && resources == Resources::SharedMultiThread {
        return f(SHARED.get_or_init(multi));
    }
    let runtime = if multi_thread {
        multi()
    } else {
        build(&mut Builder::new_current_thread())
    };
    let result = f(&runtime);
    drop(runtime);
    result
}

/// The stack levels that [`Resources::PoolPerLevel`] has a pool for.
const LEVELS: usize = 8;

/// The one-thread rayon pool of stack level `level` (see [`Resources::PoolPerLevel`]).
fn rayon_pool(level: usize) -> &'static rayon::ThreadPool {
    static POOLS: [OnceLock<rayon::ThreadPool>; LEVELS] = [const { OnceLock::new() }; LEVELS];
    POOLS[level].get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(move |_| format!("fuzz-level-{level}"))
            .build()
            .expect("a rayon pool")
    })
}

/// A tokio task's output; its panic resumed here.
fn task<T>(joined: Result<T, tokio::task::JoinError>) -> T {
    joined.unwrap_or_else(|error| match error.try_into_panic() {
        Ok(payload) => panic::resume_unwind(payload),
        Err(error) => panic!("the task: {error}"),
    })
}

/// Runs `f` on a fresh thread and waits for it; its panic is resumed here.
fn on_thread(f: impl FnOnce() + Send + 'static) {
    if let Err(payload) = std::thread::spawn(f).join() {
        panic::resume_unwind(payload);
    }
}

/// Enters `stack[0]`, the rest inside it, and runs `top` at the top (an async `top` needs an
/// async context there). Thread and runtime contexts are entered on a thread of their own,
/// joined before this returns. `siblings`: every async body of the stack runs its inner part
/// as a branch of a `join!` beside a sibling that ticks at that period.
///
/// # Panics
///
/// With the first panic that escapes a level.
pub fn enter_stack(stack: &[Ctx], resources: Resources, siblings: Option<Duration>, top: Site<()>) {
    let Some((&ctx, rest)) = stack.split_first() else {
        return top.run();
    };
    let site = if rest.is_empty() {
        top
    } else {
        let rest = rest.to_vec();
        Site::Sync(Box::new(move || {
            enter_stack(&rest, resources, siblings, top)
        }))
    };
    let site = match (site, siblings) {
        (Site::Sync(inner), Some(period)) if ctx.is_async() => {
            let tick = Tick {
                period,
                tokio_timers: ctx.has_tokio_timers(),
            };
            Site::Async(Box::pin(joined(async move { inner() }, tick, false)))
        }
        (site, _) => site,
    };
    let level = rest.len();
    if ctx.needs_own_thread() {
        on_thread(move || ctx.enter(site, resources, level));
    } else {
        ctx.enter(site, resources, level);
    }
}

// ---------------------------------------------------------------------------------------
// The shapes.

/// How a program holds the call at the top of its stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Called from the top's sync code.
    Plain,
    /// Called plainly, while every async body of the stack runs its inner part as one
    /// branch of a `join!` whose other branch ticks (see [`enter_stack`]).
    SiblingsAtEveryLevel,
    /// In one branch of a `tokio::join!` at the (async) top, after one tick, while the other
    /// branch ticks.
    JoinedSibling,
    /// In the winning branch of a `tokio::select!` at the (async) top, against a 30 s timer
    /// that stays pending; the body waits a tick afterwards.
    SelectedSibling,
    /// Nested in a future, run by `run_blocking`, that joins a ticking sibling.
    NestedInJoin,
    /// From a `Drop` while a panic unwinds.
    DropWhileUnwinding,
    /// From a thread-local destructor when the top's thread exits.
    ThreadLocalDestructor,
}

impl Shape {
    /// Every shape.
    pub const ALL: [Shape; 7] = [
        Shape::Plain,
        Shape::SiblingsAtEveryLevel,
        Shape::JoinedSibling,
        Shape::SelectedSibling,
        Shape::NestedInJoin,
        Shape::DropWhileUnwinding,
        Shape::ThreadLocalDestructor,
    ];

    /// The shape exists only at an async call site ([`Ctx::is_async`]).
    pub fn needs_async_top(self) -> bool {
        matches!(self, Shape::JoinedSibling | Shape::SelectedSibling)
    }

    /// The route of a call in this shape at the top of `stack`; `None` from a thread-local
    /// destructor, where it depends on which of the thread's thread-locals are gone already.
    pub fn route(self, stack: &[Ctx]) -> Option<Route> {
        let (top, below) = match stack.split_last() {
            Some((&top, below)) => (Some(top), route_at_top(below)),
            None => (None, Route::Inline),
        };
        match self {
            Shape::NestedInJoin => Some(Ctx::Nested.route(route_at_top(stack))),
            Shape::ThreadLocalDestructor => None,
            // After a tick, in a later poll of the top's future: a nested run_blocking's
            // future on a worker was not ready in its first poll, so the worker has left the
            // scheduler (block_in_place), and a call there hands off.
            Shape::JoinedSibling | Shape::SelectedSibling
                if top == Some(Ctx::Nested) && below == Route::OnWorker =>
            {
                Some(Route::Handoff)
            }
            _ => Some(route_at_top(stack)),
        }
    }
}

/// The site that makes `call` in `shape` at the top of a stack whose top context is `top`
/// (`None`: no context), the sibling timers ticking every `tick`; `helper_first`: the call's
/// branch of a `join!` comes first. At an async call site (the sibling shapes) the call is
/// the future `at_async_site` makes (as a user writes it there, with `.await`). The outcome
/// goes to `report`, at once or (a thread-local destructor) when the thread exits; `Err` if
/// the shape itself failed (the timer branch won, the drop ran with no panic unwinding, the
/// outer `run_blocking` panicked).
///
/// # Panics
///
/// If `shape` needs an async top ([`Shape::needs_async_top`]) that `top` is not.
pub fn site<T: Send + 'static>(
    shape: Shape,
    top: Option<Ctx>,
    tick: Duration,
    helper_first: bool,
    call: impl FnOnce() -> T + Send + 'static,
    at_async_site: impl FnOnce() -> BoxFuture<T> + Send + 'static,
    report: impl FnOnce(Result<T, String>) + Send + 'static,
) -> Site<()> {
    assert!(
        !shape.needs_async_top() || top.is_some_and(Ctx::is_async),
        "{shape:?} needs an async call site, not {top:?}"
    );
    let tick = Tick {
        period: tick,
        tokio_timers: top.is_some_and(Ctx::has_tokio_timers),
    };
    match shape {
        Shape::Plain | Shape::SiblingsAtEveryLevel => {
            Site::Sync(Box::new(move || report(Ok(call()))))
        }
        Shape::JoinedSibling => Site::Async(Box::pin(async move {
            let call = at_async_site();
            let after_a_tick = async move {
                pause(tick.period, tick.tokio_timers).await;
                call.await
            };
            report(Ok(joined(after_a_tick, tick, helper_first).await));
        })),
        Shape::SelectedSibling => Site::Async(Box::pin(async move {
            report(selected(at_async_site(), tick).await);
        })),
        Shape::NestedInJoin => Site::Sync(Box::new(move || {
            // run_blocking's polls have a runtime entered: the sibling uses tokio's timer.
            let tick = Tick {
                tokio_timers: true,
                ..tick
            };
            let outer = panic::catch_unwind(AssertUnwindSafe(|| {
                run_blocking(joined(async move { call() }, tick, helper_first))
            }));
            report(outer.map_err(|p| format!("the outer call: {}", panic_message(&*p))));
        })),
        Shape::DropWhileUnwinding => Site::Sync(Box::new(move || report(while_unwinding(call)))),
        Shape::ThreadLocalDestructor => Site::Sync(Box::new(move || {
            at_thread_exit(Box::new(move || report(Ok(call()))));
        })),
    }
}

/// How a sibling ticks: its period, and whether on tokio's timer or on a wake-up from
/// another thread (where no runtime is there to drive a tokio timer).
#[derive(Debug, Clone, Copy)]
struct Tick {
    period: Duration,
    tokio_timers: bool,
}

/// Waits `d` on tokio's timer, or on a thread where no runtime is entered.
async fn pause(d: Duration, tokio_timers: bool) {
    if tokio_timers {
        tokio::time::sleep(d).await;
    } else {
        let (tx, rx) = bridge_core::oneshot::channel::<()>();
        std::thread::spawn(move || {
            std::thread::sleep(d);
            let _ = tx.send(());
        });
        let _ = rx.await;
    }
}

/// `call` as one branch of a `tokio::join!` whose other branch ticks until it is done.
async fn joined<T>(call: impl Future<Output = T>, tick: Tick, helper_first: bool) -> T {
    let done = Arc::new(AtomicBool::new(false));
    let finished = done.clone();
    let helper = async move {
        let outcome = call.await;
        finished.store(true, Ordering::Release);
        outcome
    };
    let ticker = async move {
        while !done.load(Ordering::Acquire) {
            pause(tick.period, tick.tokio_timers).await;
        }
    };
    if helper_first {
        tokio::join!(helper, ticker).0
    } else {
        tokio::join!(ticker, helper).1
    }
}

/// `call` in the winning branch of a `select!` whose other branch waits on a long timer;
/// the timer stays pending, and the body waits a tick afterwards.
async fn selected<T>(call: BoxFuture<T>, tick: Tick) -> Result<T, String> {
    let slow = pause(Duration::from_secs(30), tick.tokio_timers);
    tokio::pin!(slow);
    tokio::select! {
        outcome = async { pause(tick.period, tick.tokio_timers).await; call.await } => {
            pause(tick.period, tick.tokio_timers).await;
            Ok(outcome)
        }
        () = &mut slow => Err("the 30 s timer branch won".to_owned()),
    }
}

/// Runs its closure when dropped.
struct OnDrop<'a>(Option<Box<dyn FnOnce() + 'a>>);

impl Drop for OnDrop<'_> {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// Unwinds on purpose (raised with `resume_unwind`, which runs no panic hook).
struct Unwinding;

/// `call` from a `Drop` that runs while a panic unwinds through it.
fn while_unwinding<T>(call: impl FnOnce() -> T) -> Result<T, String> {
    let mut outcome = Err("the drop left no outcome".to_owned());
    let caught = panic::catch_unwind(AssertUnwindSafe(|| {
        let _guard = OnDrop(Some(Box::new(|| {
            outcome = match std::thread::panicking() {
                true => Ok(call()),
                false => Err("the drop ran without a panic unwinding".to_owned()),
            };
        })));
        panic::resume_unwind(Box::new(Unwinding));
    }));
    assert!(caught.is_err_and(|payload| payload.is::<Unwinding>()));
    outcome
}

thread_local! {
    /// Calls to make in a thread-local destructor, in order, when the thread exits.
    static AT_EXIT: RefCell<Vec<OnDrop<'static>>> = const { RefCell::new(Vec::new()) };
}

/// Runs `call` in a thread-local destructor when this thread exits.
fn at_thread_exit(call: Box<dyn FnOnce()>) {
    AT_EXIT.with(|calls| calls.borrow_mut().push(OnDrop(Some(call))));
}

/// Registers this thread's destructor of [`Shape::ThreadLocalDestructor`] calls now: called
/// before the thread touches tokio, it runs after tokio's own thread-locals are gone.
pub fn register_thread_exit_early() {
    AT_EXIT.with(|_| ());
}

// ---------------------------------------------------------------------------------------
// The watchdog.

/// Runs `f` on a thread of its own and returns its value (or resumes its panic) once the
/// thread has exited; fails if no result comes within `limit`, naming `what`.
///
/// # Panics
///
/// With `f`'s panic, or if `f` takes longer than `limit`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let got = bridge_fuzz::contexts::watchdog("a sum", Duration::from_secs(5), || 2 + 2);
/// assert_eq!(got, 4);
/// ```
pub fn watchdog<T: Send + 'static>(
    what: &str,
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::Builder::new()
        .name("under-watchdog".into())
        .spawn(move || {
            let _ = tx.send(panic::catch_unwind(AssertUnwindSafe(f)));
        })
        .expect("the watchdog's thread");
    match rx.recv_timeout(limit) {
        Ok(result) => {
            // Its thread-local destructors (tokio's parker among them) run before it exits.
            let _ = worker.join();
            result.unwrap_or_else(|payload| panic::resume_unwind(payload))
        }
        Err(_) => panic!("{what} hung: no result within {} s", limit.as_secs()),
    }
}

/// The text of a panic's payload (a `&str` or a `String`).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a payload that is not a string)".to_owned())
}
