//! Every method of the trait through an `IoStore`, against each store (`InMemory`,
//! `LocalFileSystem`, `HttpStore` on a loopback server), from each kind of caller: a
//! CPU-side task (`bridge::cpu::spawn_future`), tasks of a current-thread and of a
//! multi-thread runtime, and synchronous code (`bridge::run_blocking` for each request,
//! `bridge::iter_blocking` for each stream) on a plain thread, a rayon worker, a
//! current-thread runtime's body and a multi-thread runtime's task. Each pass checks every
//! result (`common::every_method`) under a watchdog.
#![cfg(not(bridge_loom))]

mod common;

use bridge_object_store::IoStore;
use common::{Backend, KINDS, Kind, Mode, WATCHDOG, every_method, watchdog};
use object_store::ObjectStore;
use std::sync::Arc;

/// The store of `kind`, wrapped, and what keeps it alive.
fn wrapped(kind: Kind) -> (Arc<dyn ObjectStore>, Backend) {
    let backend = Backend::new(kind);
    (Arc::new(IoStore::new(Arc::clone(&backend.store))), backend)
}

fn each_store(context: &'static str, run: fn(Arc<dyn ObjectStore>, Kind)) {
    for kind in KINDS {
        let (store, backend) = wrapped(kind);
        watchdog(&format!("{context} on {kind:?}"), WATCHDOG, move || {
            run(store, kind)
        });
        drop(backend);
    }
}

#[test]
fn from_a_cpu_side_task() {
    each_store("spawn_future", |store, kind| {
        bridge_rayon::spawn_future(every_method(store, kind, Mode::Async, "cpu".into())).wait();
    });
}

#[test]
fn from_a_current_thread_runtime_task() {
    each_store("current-thread task", |store, kind| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            tokio::spawn(every_method(store, kind, Mode::Async, "ct".into()))
                .await
                .unwrap();
        });
    });
}

#[test]
fn from_a_multi_thread_runtime_task() {
    each_store("multi-thread task", |store, kind| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            tokio::spawn(every_method(store, kind, Mode::Async, "mt".into()))
                .await
                .unwrap();
        });
    });
}

#[test]
fn from_sync_code_on_a_plain_thread() {
    each_store("sync, plain thread", |store, kind| {
        bridge_core::block_on(every_method(store, kind, Mode::Sync, "plain".into()));
    });
}

#[test]
fn from_sync_code_on_a_rayon_worker() {
    each_store("sync, rayon worker", |store, kind| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        pool.install(|| {
            bridge_core::block_on(every_method(store, kind, Mode::Sync, "rayon".into()))
        });
    });
}

#[test]
fn from_sync_code_in_a_current_thread_runtime() {
    each_store("sync, current-thread body", |store, kind| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            // Synchronous code inside the runtime's body: each call hands off.
            bridge_core::block_on(every_method(store, kind, Mode::Sync, "ct-sync".into()));
        });
    });
}

#[test]
fn from_sync_code_in_a_multi_thread_runtime_task() {
    each_store("sync, multi-thread task", |store, kind| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            tokio::spawn(async move {
                bridge_core::block_on(every_method(store, kind, Mode::Sync, "mt-sync".into()));
            })
            .await
            .unwrap();
        });
    });
}
