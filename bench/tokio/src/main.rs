// SPDX-License-Identifier: MIT
//! Tokio side of libvega's scheduler microbenchmarks; the C side is bench/sched/sched_bench.c.
//!
//! Usage: vega-tokio-bench <spawn|yield|pingpong|sleep|tree|ring|mutex|sem|chan> <current|multi> <n>
//! Prints one line: `tokio <bench> <flavor> <ns_per_op> <peak_rss_kib>` (getrusage ru_maxrss).
//! The shapes and their checks are described in bench/sched/sched_bench.c.
//! Time is measured inside block_on (runtime creation and shutdown are excluded). The timed body
//! runs as a spawned task, so that on the multi-thread runtime it runs on a worker like
//! vega_rt_block_on's task does (Tokio's block_on future itself runs on the calling thread, which
//! is not a worker, and every spawn from it would go through the inject queue).

use std::future::Future;
use std::pin::Pin;
use std::process::exit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::{Builder, Runtime};
use tokio::sync::{mpsc, Mutex, Notify, Semaphore};

/// Tasks the yield bench spreads its yields over.
const YIELD_TASKS: u64 = 10;
/// The spawn bench spawns and joins at most this many tasks at a time (same in the C side).
const SPAWN_BATCH: u64 = 100_000;
/// ring: times the token goes round.
const RING_ROUNDS: u64 = 10;
/// mutex, sem, chan: contending tasks.
const CONTENDERS: u64 = 16;
/// sem: permits.
const SEM_PERMITS: usize = 4;
/// chan: channel capacity.
const CHAN_CAP: usize = 128;

trait Boxed: Future<Output = u64> + Send + Sized + 'static {
    fn boxed(self) -> Pin<Box<dyn Future<Output = u64> + Send>> {
        Box::pin(self)
    }
}
impl<F: Future<Output = u64> + Send + 'static> Boxed for F {}

fn usage() -> ! {
    eprintln!("usage: vega-tokio-bench <spawn|yield|pingpong|sleep|tree|ring|mutex|sem|chan> <current|multi> <n>");
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

/// Sleep i (from the task's start): 1 ms + a scrambled, distinct fraction of 49 ms (same as
/// the C side).
fn sleep_offset_ns(i: u64, n: u64) -> u64 {
    let k = (i * 7919) % n;
    1_000_000 + k * 49_000_000 / n
}

async fn bench_sleep(n: u64) -> u64 {
    let t0 = Instant::now();
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let d = Duration::from_nanos(sleep_offset_ns(i, n));
            tokio::spawn(async move {
                tokio::time::sleep_until(tokio::time::Instant::now() + d).await;
                i
            })
        })
        .collect();
    let mut sum = 0u64;
    for h in handles {
        sum += h.await.expect("task panicked");
    }
    let ns = t0.elapsed().as_nanos() as u64;
    assert_eq!(sum, n * (n - 1) / 2);
    ns
}

fn tree_node(depth: u64) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    Box::pin(async move {
        if depth <= 1 {
            return 1;
        }
        let l = tokio::spawn(tree_node(depth - 1));
        let r = tokio::spawn(tree_node(depth - 1));
        1 + l.await.expect("task panicked") + r.await.expect("task panicked")
    })
}

async fn bench_tree(depth: u64) -> u64 {
    let t0 = Instant::now();
    let nodes = tree_node(depth).await;
    let ns = t0.elapsed().as_nanos() as u64;
    assert_eq!(nodes, (1u64 << depth) - 1);
    ns
}

struct RingSlot {
    go: Notify,
    val: AtomicU64,
}

async fn bench_ring(n: u64) -> u64 {
    let slots: Arc<Vec<RingSlot>> = Arc::new(
        (0..n)
            .map(|_| RingSlot {
                go: Notify::new(),
                val: AtomicU64::new(0),
            })
            .collect(),
    );
    let t0 = Instant::now();
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let slots = slots.clone();
            tokio::spawn(async move {
                let me = &slots[i as usize];
                let next = &slots[((i + 1) % n) as usize];
                for _ in 0..RING_ROUNDS {
                    me.go.notified().await;
                    let v = me.val.load(Ordering::Acquire);
                    next.val.store(v + 1, Ordering::Release);
                    next.go.notify_one();
                }
            })
        })
        .collect();
    slots[0].go.notify_one(); // val 0
    for h in handles {
        h.await.expect("task panicked");
    }
    let ns = t0.elapsed().as_nanos() as u64;
    assert_eq!(slots[0].val.load(Ordering::Acquire), n * RING_ROUNDS);
    ns
}

async fn bench_mutex(n: u64) -> u64 {
    let per = n / CONTENDERS;
    let mu = Arc::new(Mutex::new(0u64));
    let t0 = Instant::now();
    let handles: Vec<_> = (0..CONTENDERS)
        .map(|_| {
            let mu = mu.clone();
            tokio::spawn(async move {
                for _ in 0..per {
                    *mu.lock().await += 1;
                }
            })
        })
        .collect();
    for h in handles {
        h.await.expect("task panicked");
    }
    let ns = t0.elapsed().as_nanos() as u64;
    assert_eq!(*mu.lock().await, per * CONTENDERS);
    ns
}

async fn bench_sem(n: u64) -> u64 {
    let per = n / CONTENDERS;
    let sem = Arc::new(Semaphore::new(SEM_PERMITS));
    let counter = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    let handles: Vec<_> = (0..CONTENDERS)
        .map(|_| {
            let sem = sem.clone();
            let counter = counter.clone();
            tokio::spawn(async move {
                for _ in 0..per {
                    let p = sem.acquire().await.expect("closed");
                    counter.fetch_add(1, Ordering::Relaxed);
                    drop(p);
                }
            })
        })
        .collect();
    for h in handles {
        h.await.expect("task panicked");
    }
    let ns = t0.elapsed().as_nanos() as u64;
    assert_eq!(counter.load(Ordering::Relaxed), per * CONTENDERS);
    ns
}

async fn bench_chan(n: u64) -> u64 {
    let per = n / CONTENDERS;
    let (tx, mut rx) = mpsc::channel::<u64>(CHAN_CAP);
    let t0 = Instant::now();
    let handles: Vec<_> = (0..CONTENDERS)
        .map(|_| {
            let tx = tx.clone();
            tokio::spawn(async move {
                for i in 1..=per {
                    tx.send(i).await.expect("receiver gone");
                }
            })
        })
        .collect();
    drop(tx);
    let mut sum = 0u64;
    for _ in 0..per * CONTENDERS {
        sum += rx.recv().await.expect("closed early");
    }
    for h in handles {
        h.await.expect("task panicked");
    }
    let ns = t0.elapsed().as_nanos() as u64;
    assert_eq!(sum, CONTENDERS * (per * (per + 1) / 2));
    ns
}

fn peak_rss_kib() -> i64 {
    // ru_maxrss from /proc/self/status (VmHWM), as getrusage would give without a libc crate.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(-1)
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
        "current" => Builder::new_current_thread().enable_time().build(),
        "multi" => Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build(),
        _ => usage(),
    }
    .expect("runtime");
    // Ops actually performed (yield rounds n down to a multiple of the task count).
    let (ns, ops) = match bench {
        "spawn" => (
            rt.block_on(async move { tokio::spawn(bench_spawn(n)).await.unwrap() }),
            n,
        ),
        "yield" => (
            rt.block_on(async move { tokio::spawn(bench_yield(n)).await.unwrap() }),
            n / YIELD_TASKS * YIELD_TASKS,
        ),
        "pingpong" => (
            rt.block_on(async move { tokio::spawn(bench_pingpong(n)).await.unwrap() }),
            n,
        ),
        "sleep" => (
            rt.block_on(async move { tokio::spawn(bench_sleep(n)).await.unwrap() }),
            n,
        ),
        "tree" if n <= 40 => (
            rt.block_on(async move { tokio::spawn(bench_tree(n)).await.unwrap() }),
            (1u64 << n) - 1,
        ),
        "ring" => (
            rt.block_on(async move { tokio::spawn(bench_ring(n)).await.unwrap() }),
            n * RING_ROUNDS,
        ),
        "mutex" | "sem" | "chan" if n >= CONTENDERS => {
            let f = match bench {
                "mutex" => bench_mutex(n).boxed(),
                "sem" => bench_sem(n).boxed(),
                _ => bench_chan(n).boxed(),
            };
            (
                rt.block_on(async move { tokio::spawn(f).await.unwrap() }),
                n / CONTENDERS * CONTENDERS,
            )
        }
        _ => usage(),
    };
    drop(rt);
    println!(
        "tokio {} {} {:.1} {}",
        bench,
        flavor,
        ns as f64 / ops.max(1) as f64,
        peak_rss_kib()
    );
}
