// SPDX-License-Identifier: MIT
//! Tokio TCP echo server for libvega's echo benchmark (bench/run-echo.sh); its peers are
//! cli/vega-echo and the raw loops in bench/echo.
//!
//! Usage: vega-tokio-echo <current|multi1> PORT
//! Listens on 127.0.0.1:PORT; `current` is the current-thread runtime, `multi1` the
//! multi-thread runtime with one worker. One task per connection: read into a 4 KiB buffer,
//! write_all it back, with TCP_NODELAY as vega-echo and the raw loops set it. Prints only errors.

use std::process::exit;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Builder;

fn usage() -> ! {
    eprintln!("usage: vega-tokio-echo <current|multi1> PORT");
    exit(2);
}

async fn conn(mut s: TcpStream) {
    let _ = s.set_nodelay(true);
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if s.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

async fn serve(port: u16) {
    let l = match TcpListener::bind(("127.0.0.1", port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("vega-tokio-echo: bind 127.0.0.1:{port}: {e}");
            exit(1);
        }
    };
    loop {
        match l.accept().await {
            Ok((s, _)) => {
                tokio::spawn(conn(s));
            }
            Err(e) => {
                // Out of descriptors and the like: say so, back off (an error path: blocking
                // the one worker for 100 ms is fine here), go on.
                eprintln!("vega-tokio-echo: accept: {e}");
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        usage();
    }
    let port: u16 = args[2].parse().unwrap_or_else(|_| usage());
    let rt = match args[1].as_str() {
        "current" => Builder::new_current_thread().enable_io().build(),
        "multi1" => Builder::new_multi_thread().worker_threads(1).enable_io().build(),
        _ => usage(),
    }
    .expect("runtime");
    // The accept loop runs as a task, on the worker, like vega-echo's (block_on's own future
    // runs on the calling thread, which on the multi-thread runtime is not a worker).
    rt.block_on(async move {
        let _ = tokio::spawn(serve(port)).await;
    });
}
