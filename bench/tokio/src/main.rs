// SPDX-License-Identifier: MIT
//! Tokio side of libvega's scheduler microbenchmarks; the C side is bench/sched/sched_bench.c.
//!
//! Usage: vega-tokio-bench <spawn|yield|pingpong> <current|multi> <n>
//! Prints one line: `tokio <bench> <flavor> <ns_per_op>`.
//! Time is measured inside block_on (runtime creation and shutdown are excluded). The timed body
//! runs as a spawned task, so that on the multi-thread runtime it runs on a worker like
//! vega_rt_block_on's task does (Tokio's block_on future itself runs on the calling thread, which
//! is not a worker, and every spawn from it would go through the inject queue).

use std::process::exit;
use std::time::Instant;

use tokio::runtime::{Builder, Runtime};
use tokio::sync::mpsc;

/// Tasks the yield bench spreads its yields over.
const YIELD_TASKS: u64 = 10;
/// The spawn bench spawns and joins at most this many tasks at a time (same in the C side).
const SPAWN_BATCH: u64 = 100_000;

fn usage() -> ! {
    eprintln!("usage: vega-tokio-bench <spawn|yield|pingpong> <current|multi> <n>");
    exit(2);
}

async fn bench_spawn(n: u64) -> u64 {
    let t0 = Instant::now();
    let mut left = n;
    let mut handles = Vec::with_capacity(SPAWN_BATCH.min(n) as usize);
    while left > 0 {
        let k = left.min(SPAWN_BATCH);
        for i in 0..k {
            handles.push(tokio::spawn(async move { i }));
        }
        for h in handles.drain(..) {
            std::hint::black_box(h.await.expect("task panicked"));
        }
        left -= k;
    }
    t0.elapsed().as_nanos() as u64
}

async fn bench_yield(n: u64) -> u64 {
    let per = n / YIELD_TASKS;
    let t0 = Instant::now();
    let handles: Vec<_> = (0..YIELD_TASKS)
        .map(|_| {
            tokio::spawn(async move {
                for _ in 0..per {
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for h in handles {
        h.await.expect("task panicked");
    }
    t0.elapsed().as_nanos() as u64
}

async fn bench_pingpong(n: u64) -> u64 {
    let (to_pong, mut pong_rx) = mpsc::channel::<u64>(1);
    let (to_ping, mut ping_rx) = mpsc::channel::<u64>(1);
    let t0 = Instant::now();
    let pong = tokio::spawn(async move {
        while let Some(v) = pong_rx.recv().await {
            if to_ping.send(v + 1).await.is_err() {
                break;
            }
        }
    });
    let ping = tokio::spawn(async move {
        let mut v = 0u64;
        for _ in 0..n {
            to_pong.send(v).await.expect("pong gone");
            v = ping_rx.recv().await.expect("pong closed");
        }
        v
    });
    let v = ping.await.expect("ping panicked");
    pong.await.expect("pong panicked");
    assert_eq!(v, n);
    t0.elapsed().as_nanos() as u64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        usage();
    }
    let bench = args[1].as_str();
    let flavor = args[2].as_str();
    let n: u64 = match args[3].parse() {
        Ok(n) if n > 0 => n,
        _ => usage(),
    };
    let rt: Runtime = match flavor {
        "current" => Builder::new_current_thread().build(),
        "multi" => Builder::new_multi_thread().worker_threads(2).build(),
        _ => usage(),
    }
    .expect("runtime");
    // Ops actually performed (yield rounds n down to a multiple of the task count).
    let (ns, ops) = match bench {
        "spawn" => (rt.block_on(async move { tokio::spawn(bench_spawn(n)).await.unwrap() }), n),
        "yield" => (
            rt.block_on(async move { tokio::spawn(bench_yield(n)).await.unwrap() }),
            n / YIELD_TASKS * YIELD_TASKS,
        ),
        "pingpong" => (rt.block_on(async move { tokio::spawn(bench_pingpong(n)).await.unwrap() }), n),
        _ => usage(),
    };
    drop(rt);
    println!("tokio {} {} {:.1}", bench, flavor, ns as f64 / ops.max(1) as f64);
}
