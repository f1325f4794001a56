//! The recorder of the tracing tests: a global subscriber whose layer keeps every event's
//! message, level, current span and thread.
#![allow(dead_code)]

use std::fmt;
use std::sync::{Mutex, OnceLock};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::{LookupSpan, Registry};

/// One event seen in this test binary.
#[derive(Debug, Clone)]
pub struct Seen {
    pub message: String,
    pub level: Level,
    /// The name of the span current at the event.
    pub span: Option<&'static str>,
    /// The name of the thread that logged it.
    pub thread: Option<String>,
}

static SEEN: Mutex<Vec<Seen>> = Mutex::new(Vec::new());

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
        SEEN.lock().unwrap().push(Seen {
            message: message.0,
            level: *event.metadata().level(),
            span: ctx.event_span(event).map(|span| span.name()),
            thread: std::thread::current().name().map(String::from),
        });
    }
}

/// Installs the recorder as the global subscriber (runtime and handoff threads log there
/// too), once.
pub fn install() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        tracing::subscriber::set_global_default(Registry::default().with(Recorder)).unwrap();
    });
}

/// Every event whose message is `message` (each test logs its own).
pub fn seen(message: &str) -> Vec<Seen> {
    SEEN.lock()
        .unwrap()
        .iter()
        .filter(|seen| seen.message == message)
        .cloned()
        .collect()
}

/// Every event whose message starts with `prefix` (the bridge's own).
pub fn seen_prefix(prefix: &str) -> Vec<Seen> {
    SEEN.lock()
        .unwrap()
        .iter()
        .filter(|seen| seen.message.starts_with(prefix))
        .cloned()
        .collect()
}
