//! The studies' loopback TCP servers: the echo server of the `run` and `no-runtime` studies,
//! the HTTP object server of `cpu-async` and `no-runtime`, and [`tcp_server`], which the
//! others' servers run on too.

use bytes::Bytes;
use futures::future::join_all;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::{Builder, Runtime};

/// Bytes of every request and every response.
pub const MESSAGE: usize = 64;

/// A TCP server ([`serve_on`]) on its own multi-thread runtime with one worker (threads named
/// `name`): its address and runtime.
pub fn tcp_server<F>(
    name: &'static str,
    serve: impl Fn(TcpStream) -> F + Send + 'static,
) -> io::Result<(SocketAddr, Runtime)>
where
    F: Future<Output = ()> + Send + 'static,
{
    let runtime = server_runtime(name)?;
    Ok((serve_on(&runtime, name, serve)?, runtime))
}

/// A TCP server on 127.0.0.1 in this process, on `runtime`, that serves every connection with
/// a task of `serve`; its address. Its tasks end when the runtime is dropped. An accept error
/// ends it: then connects fail and the study's checks fail, instead of calls that hang.
pub fn serve_on<F>(
    runtime: &Runtime,
    name: &'static str,
    serve: impl Fn(TcpStream) -> F + Send + 'static,
) -> io::Result<SocketAddr>
where
    F: Future<Output = ()> + Send + 'static,
{
    let listener = runtime.block_on(TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))?;
    let addr = listener.local_addr()?;
    runtime.spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => drop(tokio::spawn(serve(stream))),
                Err(e) => return eprintln!("{name}: the server stops: {e}"),
            }
        }
    });
    Ok(addr)
}

/// A multi-thread runtime with one worker (threads named `name`), I/O and timers: a
/// loopback server's own.
pub fn server_runtime(name: &'static str) -> io::Result<Runtime> {
    Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(name)
        .enable_all()
        .build()
}

/// A connection to `addr` with `TCP_NODELAY`.
pub async fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// One [`MESSAGE`]-byte round trip to the echo server carrying `i` and `k`; an
/// `InvalidData` error if the echo differs.
pub async fn round_trip(stream: &mut TcpStream, i: u64, k: u64) -> io::Result<()> {
    let mut sent = [0u8; MESSAGE];
    let mut back = [0u8; MESSAGE];
    sent[..8].copy_from_slice(&i.to_le_bytes());
    sent[8..16].copy_from_slice(&k.to_le_bytes());
    stream.write_all(&sent).await?;
    stream.read_exact(&mut back).await?;
    if back == sent {
        Ok(())
    } else {
        Err(io::Error::new(io::ErrorKind::InvalidData, "a wrong echo"))
    }
}

/// One round trip carrying `i` on each of the first `fan_out` of `conns` at once, after
/// opening to `addr` the connections missing; the first error.
pub async fn round_trips(
    addr: SocketAddr,
    conns: &mut Vec<TcpStream>,
    fan_out: usize,
    i: u64,
) -> io::Result<()> {
    while conns.len() < fan_out {
        conns.push(connect(addr).await?);
    }
    let trips = conns[..fan_out].iter_mut().zip(0u64..);
    let echoes = join_all(trips.map(|(s, k)| round_trip(s, i, k))).await;
    echoes.into_iter().collect()
}

/// A rayon pool of `threads` threads named `name-k`, each running `start` first.
pub fn pool(threads: usize, name: &'static str, start: fn()) -> io::Result<rayon::ThreadPool> {
    let builder = rayon::ThreadPoolBuilder::new().num_threads(threads);
    let builder = builder.thread_name(move |k| format!("{name}-{k}"));
    let builder = builder.start_handler(move |_| start());
    builder.build().map_err(io::Error::other)
}

/// Workers of bridge's shared I/O runtime.
pub fn io_workers() -> usize {
    let io = bridge::rt::IoRuntime::global();
    io.handle().metrics().num_workers()
}

/// The echo server ([`tcp_server`]): its address and runtime.
pub fn echo_server() -> io::Result<(SocketAddr, Runtime)> {
    tcp_server("echo-server", echo)
}

/// Echoes [`MESSAGE`]-byte messages until the client closes, then resets the connection
/// (`SO_LINGER` 0): the client's close stays an ordinary one and leaves no socket in
/// TIME_WAIT, which the connections opened per call would otherwise pile up.
pub async fn echo(mut stream: TcpStream) {
    if stream.set_nodelay(true).is_err() || stream.set_zero_linger().is_err() {
        return;
    }
    let mut buf = [0u8; MESSAGE];
    while stream.read_exact(&mut buf).await.is_ok() {
        if stream.write_all(&buf).await.is_err() {
            return;
        }
    }
}

/// Serves HTTP/1.1 on one connection: GET and HEAD of `objects`, keyed by the path without its
/// leading `/`.
pub async fn serve_http(stream: TcpStream, objects: Arc<HashMap<String, Bytes>>) {
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let response = respond(&request, &objects);
        async move { Ok::<_, std::convert::Infallible>(response) }
    });
    let http = hyper::server::conn::http1::Builder::new();
    let _ = http.serve_connection(TokioIo::new(stream), service).await;
}

fn respond(request: &Request<Incoming>, objects: &HashMap<String, Bytes>) -> Response<Full<Bytes>> {
    let key = request.uri().path().trim_start_matches('/');
    let head = request.method() == Method::HEAD;
    let (status, body, len) = match objects.get(key) {
        _ if !head && request.method() != Method::GET => {
            (StatusCode::METHOD_NOT_ALLOWED, Bytes::new(), 0)
        }
        Some(body) if head => (StatusCode::OK, Bytes::new(), body.len()),
        Some(body) => (StatusCode::OK, body.clone(), body.len()),
        None => (StatusCode::NOT_FOUND, Bytes::new(), 0),
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    response
}
