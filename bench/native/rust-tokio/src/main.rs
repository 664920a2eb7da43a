//! `rust_tokio_*_mailbox_throughput`: the reference page's "Rust tokio mpsc" row (the bare bounded channel
//! the reference mailbox is built on), run with exactly the workload and protocol of the Java CLI
//! (`bench/src/main/java/dev/mighty/mailbox/bench/cli`):
//!
//! - two tasks alive for the whole run on a multi-thread runtime with 2 workers: a producer task that runs
//!   the schedule and a consumer task;
//! - a `tokio::sync::mpsc::channel(capacity)` (default 1024) carrying a 16-byte frame descriptor by value
//!   (kind u32 = 7, length u32 = 0, id u64 = index), `tx.send(f).await` waiting the way the channel does;
//! - `--msgs` messages per iteration (default 1000; 10000 is the microbenchmark size), `--warmup` iterations
//!   (default 2000) then `--iterations` measured iterations (default 8000) per row; `--quick` = 500 / 1000;
//! - the rows interleaved round-robin (recv, drain, recv, drain, ...), as the CLI interleaves its rows;
//! - per iteration, the CLI's handshake: the producer publishes the job, waits until the consumer is ready,
//!   gives the start signal and sends; the consumer times itself from the start signal to its last message
//!   and checks that it received exactly 0 .. n-1, in order (a failed check exits with status 1).
//!
//! The handshake waits yield to tokio's scheduler at every step (`yield_now`), where the CLI's threads spin
//! first: a task that spins holds its worker, and tokio may have queued the peer task in that worker's LIFO
//! slot, which the other worker does not steal.
//!
//! Rows:
//! - `rust_tokio_mailbox_throughput`: `rx.recv().await` per message, the page's bare mpsc row;
//! - `rust_tokio_drain_mailbox_throughput`: `rx.recv().await`, then `rx.try_recv()` until empty (tokio 1.24
//!   has no `recv_many`): the batched receive a user can write with this version.
//!
//! Output (stdout): the reference lines, then one JSON object per row on one line (the CLI's `--native`
//! reads them). Progress and failures go to stderr. `--fault` swaps messages 0 and 1 of the first
//! iteration: the check must then fail (the smoke test's proof that the check runs).
//!
//! Build: `cargo build --release --offline` against Debian's packaged crates (`.cargo/config.toml`;
//! `bench/native/run.sh` does it).

use std::process::exit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::mpsc;

const KIND: u32 = 7;
const STOP: u64 = u64::MAX;
const ROWS: [(&str, &str); 2] = [
    (
        "rust_tokio_mailbox_throughput",
        "Rust tokio::sync::mpsc::channel(capacity) of 16 B frames: send().await / recv().await; \
         2 tasks, 2-worker runtime",
    ),
    (
        "rust_tokio_drain_mailbox_throughput",
        "Rust tokio mpsc: send().await / recv().await then try_recv() until empty (1.24 has no recv_many); \
         2 tasks, 2-worker runtime",
    ),
];

#[derive(Clone, Copy)]
struct Frame {
    kind: u32,
    length: u32,
    id: u64,
}

/// The CLI's OrderCheck: counts one iteration's messages and remembers the first one out of place.
#[derive(Default)]
struct OrderCheck {
    received: u64,
    expected: u64,
    first_bad: Option<(u64, u64)>,
}

impl OrderCheck {
    fn begin(&mut self, n: u64) {
        self.received = 0;
        self.expected = n;
        self.first_bad = None;
    }

    #[inline]
    fn check(&mut self, f: Frame) {
        if (f.id != self.received || f.kind != KIND || f.length != 0) && self.first_bad.is_none() {
            self.first_bad = Some((self.received, f.id));
        }
        self.received += 1;
    }

    fn failure(&self) -> Option<String> {
        if self.received == self.expected && self.first_bad.is_none() {
            return None;
        }
        let mismatch = match self.first_bad {
            Some((index, value)) => format!(", firstMismatch: index={} value={}", index, value),
            None => String::new(),
        };
        Some(format!("received={}, expected={}{}", self.received, self.expected, mismatch))
    }
}

#[repr(align(64))]
#[derive(Default)]
struct Padded(AtomicU64);

/// The CLI's TwoThreadHarness reduced to iterations. The job (`op`, `count`) is stored before the release
/// store of `generation` and loaded after the consumer's acquire load of it; the result (`elapsed`, `ok`,
/// `failure`) is stored before the release store of `done` and loaded after the producer's acquire load.
#[derive(Default)]
struct Shared {
    generation: Padded,
    ready: Padded,
    go: Padded,
    done: Padded,
    op: AtomicU64,
    count: AtomicU64,
    elapsed: AtomicU64,
    ok: AtomicBool,
    failure: Mutex<Option<String>>,
}

async fn wait_for(word: &AtomicU64, value: u64) {
    while word.load(Ordering::Acquire) != value {
        tokio::task::yield_now().await;
    }
}

struct Options {
    msgs: u64,
    capacity: u64,
    warmup: u64,
    iterations: u64,
    fault: bool,
}

fn usage(why: &str) -> ! {
    eprintln!(
        "{}\nusage: rust-tokio [--quick] [--msgs N] [--capacity N] [--warmup N] [--iterations N] [--fault]",
        why
    );
    exit(2)
}

fn parse(option: &str, value: Option<&String>, min: u64) -> u64 {
    let value = value.unwrap_or_else(|| usage(&format!("{}: missing value", option)));
    match value.parse::<u64>() {
        Ok(v) if v >= min => v,
        _ => usage(&format!("{}: {} (expected: an integer >= {})", option, value, min)),
    }
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut msgs, mut capacity, mut warmup, mut iterations) = (1000, 1024, None, None);
    let (mut quick, mut fault) = (false, false);
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1);
        match args[i].as_str() {
            "--quick" => quick = true,
            "--fault" => fault = true,
            "--msgs" => {
                msgs = parse("--msgs", value, 1);
                i += 1
            }
            "--capacity" => {
                capacity = parse("--capacity", value, 1);
                i += 1
            }
            "--warmup" => {
                warmup = Some(parse("--warmup", value, 0));
                i += 1
            }
            "--iterations" => {
                iterations = Some(parse("--iterations", value, 1));
                i += 1
            }
            other => usage(&format!("unknown option: {}", other)),
        }
        i += 1;
    }
    Options {
        msgs,
        capacity,
        warmup: warmup.unwrap_or(if quick { 500 } else { 2000 }),
        iterations: iterations.unwrap_or(if quick { 1000 } else { 8000 }),
        fault,
    }
}

async fn consumer(shared: Arc<Shared>, mut receivers: Vec<mpsc::Receiver<Frame>>) {
    let mut checks: Vec<OrderCheck> = receivers.iter().map(|_| OrderCheck::default()).collect();
    let mut seen = 0;
    loop {
        let mut gen;
        while {
            gen = shared.generation.0.load(Ordering::Acquire);
            gen == seen
        } {
            tokio::task::yield_now().await;
        }
        seen = gen;
        let op = shared.op.load(Ordering::Relaxed);
        if op == STOP {
            return;
        }
        let n = shared.count.load(Ordering::Relaxed);
        let row = op as usize;
        let rx = &mut receivers[row];
        let check = &mut checks[row];
        shared.ready.0.store(gen, Ordering::Release);
        wait_for(&shared.go.0, gen).await;
        let start = Instant::now();
        check.begin(n);
        if row == 0 {
            while check.received < n {
                match rx.recv().await {
                    Some(f) => check.check(f),
                    None => break,
                }
            }
        } else {
            while check.received < n {
                match rx.recv().await {
                    Some(f) => check.check(f),
                    None => break,
                }
                while check.received < n {
                    match rx.try_recv() {
                        Ok(f) => check.check(f),
                        Err(_) => break,
                    }
                }
            }
        }
        let failure = check.failure();
        shared.elapsed.store(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        shared.ok.store(failure.is_none(), Ordering::Relaxed);
        *shared.failure.lock().unwrap() = failure;
        shared.done.0.store(gen, Ordering::Release);
    }
}

/// Runs the schedule; returns each row's measured iteration times, or the failed check.
async fn producer(
    shared: Arc<Shared>,
    senders: Vec<mpsc::Sender<Frame>>,
    o: Options,
) -> Result<Vec<Vec<u64>>, String> {
    let mut nanos: Vec<Vec<u64>> = senders.iter().map(|_| Vec::with_capacity(o.iterations as usize)).collect();
    let rounds = o.warmup + o.iterations;
    let step = (rounds / 10).max(1);
    let mut gen = 0;
    for r in 0..rounds {
        for (row, tx) in senders.iter().enumerate() {
            gen += 1;
            shared.op.store(row as u64, Ordering::Relaxed);
            shared.count.store(o.msgs, Ordering::Relaxed);
            shared.generation.0.store(gen, Ordering::Release);
            wait_for(&shared.ready.0, gen).await;
            shared.go.0.store(gen, Ordering::Release);
            let fault = o.fault && r == 0 && o.msgs > 1;
            for i in 0..o.msgs {
                let id = if fault && i < 2 { 1 - i } else { i }; // --fault: swap messages 0 and 1
                let f = Frame { kind: KIND, length: 0, id };
                if tx.send(f).await.is_err() {
                    return Err("the receiver is gone".to_string());
                }
            }
            wait_for(&shared.done.0, gen).await;
            if !shared.ok.load(Ordering::Relaxed) {
                let why = shared.failure.lock().unwrap().take().unwrap_or_default();
                return Err(format!("{} iteration {}: {}", ROWS[row].0, r, why));
            }
            if r >= o.warmup {
                nanos[row].push(shared.elapsed.load(Ordering::Relaxed));
            }
        }
        if (r + 1) % step == 0 {
            eprintln!("[rust-tokio] {}/{} rounds", r + 1, rounds);
        }
    }
    shared.op.store(STOP, Ordering::Relaxed);
    shared.generation.0.store(gen + 1, Ordering::Release);
    Ok(nanos)
}

/// The nearest-rank percentile of sorted values.
fn percentile(sorted: &[u64], p: f64) -> u64 {
    let rank = ((p / 100.0 * sorted.len() as f64) + 0.999999999) as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn main() {
    let o = options();
    let (msgs, capacity, warmup, iterations) = (o.msgs, o.capacity, o.warmup, o.iterations);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap_or_else(|e| {
            eprintln!("cannot start the tokio runtime: {}", e);
            exit(1)
        });
    let result = runtime.block_on(async move {
        let shared = Arc::new(Shared::default());
        let (senders, receivers): (Vec<_>, Vec<_>) =
            ROWS.iter().map(|_| mpsc::channel::<Frame>(capacity as usize)).unzip();
        let consumer = tokio::spawn(consumer(shared.clone(), receivers));
        let result = tokio::spawn(producer(shared, senders, o)).await;
        let result = result.map_err(|e| format!("producer task: {}", e)).and_then(|r| r);
        if result.is_ok() {
            consumer.await.map_err(|e| format!("consumer task: {}", e))?;
        }
        result
    });
    let nanos = match result {
        Ok(nanos) => nanos,
        Err(why) => {
            eprintln!("check failed: {}", why);
            exit(1)
        }
    };
    drop(runtime);

    let label = if msgs % 1000 == 0 { format!("{}k", msgs / 1000) } else { msgs.to_string() };
    let column = ROWS.iter().map(|r| r.0.len() + 3).max().unwrap_or(0).max(32);
    let sorted: Vec<Vec<u64>> = nanos
        .iter()
        .map(|v| {
            let mut s = v.clone();
            s.sort_unstable();
            s
        })
        .collect();
    for (row, s) in sorted.iter().enumerate() {
        println!(
            "{:<column$}median={:>10.3} ms  p95={:>10.3} ms  p99={:>10.3} ms  ({} msgs/iter)",
            ROWS[row].0,
            percentile(s, 50.0) as f64 / 1e6,
            percentile(s, 95.0) as f64 / 1e6,
            percentile(s, 99.0) as f64 / 1e6,
            label,
            column = column
        );
    }
    let toolchain = format!("{} --release", env!("RUSTC_VERSION"));
    let library = format!("tokio {} (rt-multi-thread, sync)", env!("TOKIO_VERSION"));
    for (row, s) in sorted.iter().enumerate() {
        let times: Vec<String> = nanos[row].iter().map(|t| t.to_string()).collect();
        println!(
            "{{\"name\": {}, \"description\": {}, \"toolchain\": {}, \"library\": {}, \"msgs\": {}, \
             \"capacity\": {}, \"warmup\": {}, \"iterations\": {}, \"medianNanos\": {}, \"p95Nanos\": {}, \
             \"p99Nanos\": {}, \"iterationNanos\": [{}]}}",
            json_string(ROWS[row].0),
            json_string(ROWS[row].1),
            json_string(&toolchain),
            json_string(&library),
            msgs,
            capacity,
            warmup,
            iterations,
            percentile(s, 50.0),
            percentile(s, 95.0),
            percentile(s, 99.0),
            times.join(", ")
        );
    }
}
