//! The loopback echo server of the `run` and `no-runtime` studies.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::{Builder, Runtime};

/// Bytes of every request and every response.
pub const MESSAGE: usize = 64;

/// An echo server on its own multi-thread runtime with one worker, in this process, on
/// 127.0.0.1. Its tasks end when its runtime is dropped.
#[derive(Debug)]
pub struct EchoServer {
    pub addr: SocketAddr,
    pub runtime: Runtime,
}

impl EchoServer {
    pub fn start() -> io::Result<Self> {
        let runtime = Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("echo-server")
            .enable_all()
            .build()?;
        let listener = runtime.block_on(TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))?;
        let addr = listener.local_addr()?;
        runtime.spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((stream, _)) => drop(tokio::spawn(echo(stream))),
                    Err(e) => {
                        // The listener closes: connects fail and the checksum fails,
                        // instead of calls that hang.
                        eprintln!("the echo server stops: {e}");
                        return;
                    }
                }
            }
        });
        Ok(Self { addr, runtime })
    }
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
