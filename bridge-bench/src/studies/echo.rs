//! The loopback TCP servers of the studies: the echo server of the `run` and `no-runtime`
//! studies, and [`tcp_server`], which the others' servers run on too.

use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::{Builder, Runtime};

/// Bytes of every request and every response.
pub const MESSAGE: usize = 64;

/// A TCP server on 127.0.0.1 in this process, on its own multi-thread runtime with one
/// worker (threads named `name`), that serves every connection with a task of `serve`. Its
/// tasks end when its runtime is dropped. An accept error ends it: then connects fail and the
/// study's checks fail, instead of calls that hang.
pub fn tcp_server<F>(
    name: &'static str,
    serve: impl Fn(TcpStream) -> F + Send + 'static,
) -> io::Result<(SocketAddr, Runtime)>
where
    F: Future<Output = ()> + Send + 'static,
{
    let runtime = server_runtime(name)?;
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
    Ok((addr, runtime))
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

/// One [`MESSAGE`]-byte round trip to the echo server carrying `i` and `k`; whether the
/// echo matched.
pub async fn round_trip(stream: &mut TcpStream, i: u64, k: u64) -> io::Result<bool> {
    let mut sent = [0u8; MESSAGE];
    let mut back = [0u8; MESSAGE];
    sent[..8].copy_from_slice(&i.to_le_bytes());
    sent[8..16].copy_from_slice(&k.to_le_bytes());
    stream.write_all(&sent).await?;
    stream.read_exact(&mut back).await?;
    Ok(back == sent)
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
async fn echo(mut stream: TcpStream) {
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
