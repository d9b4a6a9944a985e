//! Bad input is an error, never a panic, a hang or a huge allocation.
//!
//! A small seeded mutator (our own, so a seed replays after any `cargo
//! update`, as `schedule.rs` argues for its generator) damages real inputs —
//! the shipped `scenarios/*.yaml`, a history and a drain written by the rig's
//! own types — by flipping, deleting and duplicating bytes and lines and by
//! swapping numbers for huge, negative and non-numbers. Each damaged input
//! goes to the reader a user's file would reach:
//! - `sinkhole_scenario::from_str` (and the rendering of its error);
//! - `sinkhole_history::parse` (the one reader), then the index and the counter on what it read;
//! - `sinkhole_checker::store::{decode, read, for_each}` for `drained.bin`, then the counter;
//! - `sinkhole_checker::recheck` on a directory with a damaged `drained.partitions.json`.
//!
//! The checked-in old run (`tests/fixtures/old-results/`) gives a real
//! history and drain as more seeds.
//!
//! Every case must return (`Ok` or `Err`, either is fine) without a panic
//! (caught per case), within a time bound (watched from another thread),
//! and without any single allocation above [`MAX_ALLOCATION`] (a length
//! taken from the input and trusted). Failing cases are printed with their
//! seed; `ROBUSTNESS_VERBOSE=1` prints every case before it runs (for one
//! that aborts the process).
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use sinkhole_base::rundir::ModeDir;
use sinkhole_checker::{store, DrainedRecord, Expected, HistoryIndex, PartitionDrain};
use sinkhole_model::{CommitOutcome, Committable, Event, EventKind, SinkMode, Source, TxnProtocol};

// ---------------------------------------------------------------- allocations

/// No reader needs more than this at once for inputs of a few kilobytes.
const MAX_ALLOCATION: usize = 64 << 20;
/// Above this the allocator refuses (the process aborts, naming the size)
/// rather than let a trusted length take the machine's memory.
const REFUSE_ALLOCATION: usize = 1 << 30;

struct Watched;

thread_local! {
    /// The largest single allocation on this thread since the last reset.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

unsafe impl GlobalAlloc for Watched {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > REFUSE_ALLOCATION {
            refuse(layout.size());
            return std::ptr::null_mut();
        }
        note(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > REFUSE_ALLOCATION {
            refuse(layout.size());
            return std::ptr::null_mut();
        }
        note(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > REFUSE_ALLOCATION {
            refuse(new_size);
            return std::ptr::null_mut();
        }
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Says why the process is about to abort, without allocating.
fn refuse(size: usize) {
    let mut digits = [0u8; 20];
    let (mut n, mut i) = (size, digits.len());
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for part in [&b"robustness: refused an allocation of "[..], &digits[i..], &b" bytes\n"[..]] {
        unsafe { libc::write(2, part.as_ptr().cast(), part.len()) };
    }
}

#[global_allocator]
static ALLOC: Watched = Watched;

// ---------------------------------------------------------------- the mutator

/// splitmix64: tiny, and the same sequence for a seed forever.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// What a number or a value may be swapped for: limits of every integer
/// width the formats use, past them, negative, fractional, not a number.
const TOKENS: &[&str] = &[
    "0",
    "-1",
    "1",
    "-0",
    "32767",
    "32768",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999999",
    "1e308",
    "-1e308",
    "1e999",
    "0.5",
    "NaN",
    ".nan",
    ".inf",
    "-.inf",
    "0x7fffffff",
    "1_000",
    "true",
    "null",
    "~",
    "\"\"",
    "\"x\"",
    "x",
    "[]",
    "{}",
    "[[[[[[[[",
    "&a",
    "*a",
    "!!binary",
    "- ",
    ": ",
    "\t",
    "#",
    "\"\\u0000\"",
    "é",
];

/// The integer extremes alone, for swapping numbers more often with numbers.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "65535",
    "2147483647",
    "4294967295",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
];

/// Spans of ASCII digits (with a leading '-').
fn numbers(s: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if s[i].is_ascii_digit() {
            let start = if i > 0 && s[i - 1] == b'-' { i - 1 } else { i };
            let mut j = i;
            while j < s.len() && s[j].is_ascii_digit() {
                j += 1;
            }
            out.push((start, j));
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// Spans between double quotes, or words after ": " (YAML's plain scalars).
fn strings(s: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut open = None;
    for (i, &b) in s.iter().enumerate() {
        if b == b'"' {
            match open.take() {
                Some(a) => out.push((a, i + 1)),
                None => open = Some(i),
            }
        }
    }
    for i in 0..s.len().saturating_sub(2) {
        if &s[i..i + 2] == b": " && s[i + 2].is_ascii_alphabetic() {
            let end = (i + 2..s.len()).find(|&j| !(s[j].is_ascii_alphanumeric() || s[j] == b'-')).unwrap_or(s.len());
            out.push((i + 2, end));
        }
    }
    out
}

fn lines(s: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut a = 0;
    for (i, &b) in s.iter().enumerate() {
        if b == b'\n' {
            out.push((a, i + 1));
            a = i + 1;
        }
    }
    if a < s.len() {
        out.push((a, s.len()));
    }
    out
}

fn replace(s: &mut Vec<u8>, (a, b): (usize, usize), with: &[u8]) {
    s.splice(a..b, with.iter().copied());
}

/// One damage to a text or a byte string.
fn mutate_once(rng: &mut Rng, s: &mut Vec<u8>) -> &'static str {
    let n = s.len();
    match rng.below(12) {
        0 if n > 0 => {
            let i = rng.below(n);
            s[i] ^= 1 << rng.below(8);
            "flip a bit"
        }
        1 if n > 0 => {
            let i = rng.below(n);
            s[i] = rng.next() as u8;
            "set a byte"
        }
        2 if n > 0 => {
            let a = rng.below(n);
            let b = (a + 1 + rng.below(16)).min(n);
            s.drain(a..b);
            "delete bytes"
        }
        3 if n > 0 => {
            let a = rng.below(n);
            let b = (a + 1 + rng.below(64)).min(n);
            let dup: Vec<u8> = s[a..b].to_vec();
            replace(s, (b, b), &dup);
            "duplicate bytes"
        }
        4 => {
            let l = lines(s);
            if l.is_empty() {
                return "no line to delete";
            }
            let span = *rng.pick(&l);
            replace(s, span, b"");
            "delete a line"
        }
        5 => {
            let l = lines(s);
            if l.is_empty() {
                return "no line to duplicate";
            }
            let (a, b) = *rng.pick(&l);
            let dup: Vec<u8> = s[a..b].to_vec();
            replace(s, (b, b), &dup);
            "duplicate a line"
        }
        6 => {
            let l = lines(s);
            if l.len() < 2 {
                return "no lines to swap";
            }
            let i = rng.below(l.len() - 1);
            let (x, y) = (l[i], l[i + 1]);
            let (first, second) = (s[x.0..x.1].to_vec(), s[y.0..y.1].to_vec());
            replace(s, (x.0, y.1), &[second, first].concat());
            "swap two lines"
        }
        7 | 8 => {
            let nums = numbers(s);
            if nums.is_empty() {
                return "no number";
            }
            let span = *rng.pick(&nums);
            let with = if rng.below(3) > 0 { rng.pick(NUMBERS) } else { rng.pick(TOKENS) };
            replace(s, span, with.as_bytes());
            "swap a number"
        }
        9 => {
            let strs = strings(s);
            if strs.is_empty() {
                return "no string";
            }
            let span = *rng.pick(&strs);
            replace(s, span, rng.pick(TOKENS).as_bytes());
            "swap a string"
        }
        10 => {
            let i = rng.below(n + 1);
            replace(s, (i, i), rng.pick(TOKENS).as_bytes());
            "insert a token"
        }
        _ => {
            s.truncate(rng.below(n + 1));
            "truncate"
        }
    }
}

fn mutate(rng: &mut Rng, seed: &[u8]) -> (Vec<u8>, Vec<&'static str>) {
    let mut s = seed.to_vec();
    let steps = 1 + rng.below(4);
    let how = (0..steps).map(|_| mutate_once(rng, &mut s)).collect();
    (s, how)
}

/// For JSON lines: the value of one field of one line swapped for a token,
/// so the numbers a reader trusts (seqs, lengths, counts) meet extremes
/// often, not once in a thousand cases.
fn mutate_field(rng: &mut Rng, seed: &[u8]) -> (Vec<u8>, Vec<&'static str>) {
    let mut s = seed.to_vec();
    let steps = 1 + rng.below(3);
    for _ in 0..steps {
        let keys: Vec<usize> = (0..s.len().saturating_sub(2)).filter(|&i| &s[i..i + 2] == b"\":").collect();
        if keys.is_empty() {
            break;
        }
        let v = *rng.pick(&keys) + 2;
        let end = (v..s.len()).find(|&j| matches!(s[j], b',' | b'}' | b']' | b'\n')).unwrap_or(s.len());
        if s.get(v) == Some(&b'"') {
            let close = (v + 1..s.len()).find(|&j| s[j] == b'"').map_or(s.len(), |j| j + 1);
            replace(&mut s, (v, close), rng.pick(TOKENS).as_bytes());
        } else {
            replace(&mut s, (v, end), rng.pick(TOKENS).as_bytes());
        }
    }
    let (s, mut how) = if rng.below(3) == 0 { mutate(rng, &s) } else { (s, Vec::new()) };
    how.insert(0, "swap field values");
    (s, how)
}

// ---------------------------------------------------------------- seeds

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn scenario_seeds() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(repo().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    v.sort();
    assert!(v.len() >= 10, "the shipped scenarios are the seeds");
    v
}

/// The checked-in old run (`tests/fixtures/old-results/`): a real history
/// and drain of the rig, as more seeds.
struct RealRun {
    history: String,
    drained: Vec<u8>,
    partitions: Vec<PartitionDrain>,
    expected: Expected,
}

fn real_run() -> RealRun {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/old-results");
    let run = std::fs::read_dir(&base)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("summary.json").is_file())
        .expect("the old-results fixture");
    let dir = run.join("legacy");
    let verdict: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("verdict.json")).unwrap()).unwrap();
    let s = sinkhole_scenario::load(&run.join("scenario.yaml")).unwrap();
    RealRun {
        history: std::fs::read_to_string(dir.join("history.jsonl")).unwrap(),
        drained: std::fs::read(dir.join(store::FILE_NAME)).unwrap(),
        partitions: store::read_partitions(&dir.join(store::PARTITIONS_FILE)).unwrap(),
        expected: Expected {
            run_id: verdict["run_id"].as_str().unwrap().to_string(),
            parallelism: s.job.parallelism,
            records_per_subtask: s.job.records_per_subtask,
        },
    }
}

const RUN: &str = "rb";
const PER_SUBTASK: u64 = 40;

fn expected() -> Expected {
    Expected { run_id: RUN.into(), parallelism: 2, records_per_subtask: PER_SUBTASK }
}

fn tid(s: u32, c: u64) -> String {
    format!("sinkhole-{RUN}-legacy-{s}-{c}")
}

/// A job of two subtasks, 4 checkpoints of 10 records each, with a restore
/// after checkpoint 2: commits, a dropped commit, an abort by the sink, a
/// lingering abort, faults with effects. Every event kind the checker reads.
fn history_seed() -> Vec<Event> {
    let mut out = Vec::new();
    let mut t = 0u64;
    let mut push = |source: Source, kind: EventKind| {
        t += 1000;
        out.push(Event { wall_ms: 1_700_000_000_000 + t / 1000, mono_us: t, mode: SinkMode::Legacy, source, kind });
    };
    let worker = |subtask| Source::Worker { subtask };
    for attempt in 0..2u32 {
        push(Source::Coordinator, EventKind::JobStarted { attempt, restored_from: (attempt > 0).then_some(2) });
        for s in 0..2u32 {
            push(Source::Coordinator, EventKind::WorkerStarted { subtask: s, pid: 100 + s, attempt });
        }
        let checkpoints = if attempt == 0 { 1..=3u64 } else { 3..=4u64 };
        for c in checkpoints {
            for s in 0..2u32 {
                let id = tid(s, c);
                push(
                    worker(s),
                    EventKind::ProducerInit {
                        transactional_id: id.clone(),
                        producer_id: i64::from(s) * 1000,
                        epoch: c as i16,
                        version: 5,
                        enable_2pc: false,
                        keep_prepared_txn: false,
                        protocol: TxnProtocol::V2,
                    },
                );
                push(worker(s), EventKind::TxnOpened { transactional_id: id.clone(), checkpoint: c });
                let (first, last) = ((c - 1) * 10, c * 10 - 1);
                push(
                    worker(s),
                    EventKind::TxnPrecommitted {
                        committable: Committable {
                            checkpoint: c,
                            transactional_id: id.clone(),
                            producer_id: i64::from(s) * 1000,
                            producer_epoch: c as i16,
                            protocol: TxnProtocol::V2,
                            records: 10,
                            first_seq: Some(first),
                            last_seq: Some(last),
                        },
                        flush_us: 300,
                    },
                );
            }
            push(Source::Coordinator, EventKind::CheckpointPersisted { id: c, path: format!("chk-{c}.json") });
            for s in 0..2u32 {
                let id = tid(s, c);
                push(
                    worker(s),
                    EventKind::CommitStarted { transactional_id: id.clone(), checkpoint: c, restored: false },
                );
                let outcome = match (attempt, c, s) {
                    (0, 3, _) => CommitOutcome::Failed { error: "killed".into() },
                    (1, 3, 1) => CommitOutcome::Dropped { error: "PRODUCER_FENCED (90)".into() },
                    _ => CommitOutcome::Committed,
                };
                push(
                    worker(s),
                    EventKind::CommitFinished {
                        transactional_id: id,
                        checkpoint: c,
                        restored: attempt > 0,
                        outcome,
                        latency_us: 900,
                    },
                );
            }
        }
        if attempt == 0 {
            push(
                Source::Fault,
                EventKind::FaultStarted {
                    name: "kill".into(),
                    fault: "kill-workers".into(),
                    effect: serde_json::json!({"signals": [{"pid": 100, "signal": "SIGKILL"}]}),
                },
            );
            push(
                worker(0),
                EventKind::TxnAborted {
                    transactional_id: tid(0, 4),
                    producer_id: 0,
                    epoch: 4,
                    reason: "closing".into(),
                },
            );
            push(worker(1), EventKind::LingeringAborted { transactional_id: tid(1, 4), epoch: 5 });
            push(Source::Coordinator, EventKind::FailureDetected { subtask: Some(0), reason: "killed".into() });
        }
    }
    push(Source::Coordinator, EventKind::JobFinished { outcome: "finished".into(), attempts: 2 });
    out
}

/// What the drain read for that history: every record once, a few twice
/// (the dropped commit's range is missing), one foreign, over 3 partitions.
fn drain_seed() -> (Vec<DrainedRecord>, Vec<PartitionDrain>) {
    let mut recs = Vec::new();
    let mut offsets = [0i64; 3];
    for s in 0..2u32 {
        for q in 0..PER_SUBTASK {
            if s == 1 && (20..30).contains(&q) {
                continue;
            }
            let p = (q % 3) as usize;
            let copies = if q == 5 { 2 } else { 1 };
            for _ in 0..copies {
                recs.push(DrainedRecord {
                    partition: p as i32,
                    offset: offsets[p],
                    value: format!("{RUN}:{s}:{q}").into_bytes(),
                    tid: Some(tid(s, q / 10 + 1)),
                    produced_us: Some(1000 + q as i64),
                });
                offsets[p] += 1;
            }
        }
    }
    recs.push(DrainedRecord {
        partition: 2,
        offset: offsets[2],
        value: b"other:0:1".to_vec(),
        tid: None,
        produced_us: None,
    });
    offsets[2] += 1;
    let parts = (0..3)
        .map(|p| PartitionDrain {
            partition: p as i32,
            low_watermark: 0,
            high_watermark: offsets[p] + 2,
            position: offsets[p] + if p == 1 { 0 } else { 2 },
            records: offsets[p] as u64,
        })
        .collect();
    (recs, parts)
}

/// The field offsets of each record in an encoded drain: (tid length, value length).
fn length_fields(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = b"SINKHOLE-DRAIN-1\n".len();
    while i + 22 <= bytes.len() {
        let tl = u16::from_le_bytes([bytes[i + 20], bytes[i + 21]]);
        let tl = if tl == 0xFFFF { 0 } else { usize::from(tl) };
        let vl_at = i + 22 + tl;
        let vl = u32::from_le_bytes(bytes[vl_at..vl_at + 4].try_into().unwrap()) as usize;
        out.push((i + 20, vl_at));
        i = vl_at + 4 + vl;
    }
    out
}

/// Byte damage, or a length field set to an extreme.
fn mutate_drain(rng: &mut Rng, seed: &[u8], fields: &[(usize, usize)]) -> (Vec<u8>, Vec<&'static str>) {
    if rng.below(3) > 0 {
        let mut s = seed.to_vec();
        let &(tl, vl) = rng.pick(fields);
        let how = if rng.below(2) == 0 {
            let v = *rng.pick(&[0u16, 1, 0x7FFF, 0xFFFE, 0xFFFF]);
            s[tl..tl + 2].copy_from_slice(&v.to_le_bytes());
            "set a tid length"
        } else {
            let v = *rng.pick(&[0u32, 1, 0x7FFF_FFFF, 0xFFFF_FFFE, u32::MAX, 1 << 30]);
            s[vl..vl + 4].copy_from_slice(&v.to_le_bytes());
            "set a value length"
        };
        let (s, mut more) = if rng.below(2) == 0 { (s, Vec::new()) } else { mutate(rng, &s) };
        more.insert(0, how);
        return (s, more);
    }
    mutate(rng, seed)
}

// ---------------------------------------------------------------- running cases

/// How long one case may take (debug build, a busy 2-core machine).
const CASE_LIMIT: Duration = Duration::from_secs(10);

struct Case {
    label: String,
    run: Box<dyn FnOnce() + Send>,
}

/// Runs the cases on one thread, each under `catch_unwind`; this thread
/// watches the clock. Returns the failures.
fn run_cases(cases: Vec<Case>) -> Vec<String> {
    let verbose = std::env::var_os("ROBUSTNESS_VERBOSE").is_some();
    let (tx, rx) = mpsc::channel::<(String, Result<usize, String>, Duration)>();
    let n = cases.len();
    let worker = std::thread::spawn(move || {
        for c in cases {
            if verbose {
                eprintln!("case: {}", c.label);
            }
            LARGEST.with(|l| l.set(0));
            let t = Instant::now();
            let r = catch_unwind(AssertUnwindSafe(c.run)).map_err(|p| {
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            });
            let largest = LARGEST.with(|l| l.get());
            if tx.send((c.label, r.map(|()| largest), t.elapsed())).is_err() {
                return;
            }
        }
    });
    let mut failures = Vec::new();
    for _ in 0..n {
        match rx.recv_timeout(CASE_LIMIT) {
            Ok((label, Err(panic), _)) => failures.push(format!("{label}: panicked: {panic}")),
            Ok((label, Ok(largest), _)) if largest > MAX_ALLOCATION => {
                failures.push(format!("{label}: allocated {largest} bytes at once"))
            }
            Ok((label, Ok(_), took)) if took > CASE_LIMIT => failures.push(format!("{label}: took {took:?}")),
            Ok(_) => {}
            Err(_) => {
                failures.push(format!("a case ran longer than {CASE_LIMIT:?} (ROBUSTNESS_VERBOSE=1 names it)"));
                return failures;
            }
        }
    }
    worker.join().unwrap();
    failures
}

fn report(what: &str, n: usize, failures: Vec<String>, started: Instant) {
    eprintln!("{what}: {n} cases in {:?}, {} failed", started.elapsed(), failures.len());
    if !failures.is_empty() {
        let shown: Vec<&String> = failures.iter().take(20).collect();
        panic!(
            "{what}: {} of {n} cases failed:\n{}",
            failures.len(),
            shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
        );
    }
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sinkhole-robustness-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A scenario, however damaged, loads or is refused with problems that render.
fn load_scenario(text: &str, name: &str) {
    match sinkhole_scenario::from_str(text, name) {
        Ok(_) => {}
        Err(e) => {
            let shown = e.render();
            assert!(!shown.is_empty(), "an error says something");
        }
    }
}

#[test]
fn damaged_scenarios_are_errors_not_panics() {
    let started = Instant::now();
    let seeds = scenario_seeds();
    let mut cases = Vec::new();
    for (k, (name, text)) in seeds.iter().enumerate() {
        for i in 0..200u64 {
            let seed = 0x5CE7_0000 + (k as u64) * 1000 + i;
            let (bytes, how) = mutate(&mut Rng(seed), text.as_bytes());
            let damaged = String::from_utf8_lossy(&bytes).into_owned();
            let name = name.clone();
            cases.push(Case {
                label: format!("scenario {name} seed {seed:#x} ({})", how.join(", ")),
                run: Box::new(move || load_scenario(&damaged, &name)),
            });
        }
    }
    let n = cases.len();
    report("scenarios", n, run_cases(cases), started);
}

#[test]
fn damaged_histories_are_errors_not_panics() {
    let started = Instant::now();
    let events = history_seed();
    let text: String = events.iter().map(|e| serde_json::to_string(e).unwrap() + "\n").collect();
    // The seed itself reads back whole, and counts what it should.
    let h = sinkhole_history::parse(&text, Path::new("history.jsonl")).unwrap();
    assert_eq!(h.events, events);
    let (recs, parts) = drain_seed();
    let clean = sinkhole_checker::check(&expected(), &recs, &HistoryIndex::from_events(&h.events), &parts);
    assert_eq!((clean.counts.lost, clean.counts.duplicated, clean.counts.unexpected), (10, 2, 1), "{:?}", clean.counts);
    let recs = std::sync::Arc::new(recs);
    let parts = std::sync::Arc::new(parts);
    let check =
        |damaged: String, recs: std::sync::Arc<Vec<DrainedRecord>>, parts: std::sync::Arc<Vec<PartitionDrain>>| {
            move || match sinkhole_history::parse(&damaged, Path::new("history.jsonl")) {
                Ok(h) => {
                    let index = HistoryIndex::from_events(&h.events);
                    let r = sinkhole_checker::check(&expected(), &recs, &index, &parts);
                    assert_eq!(r.counts.expected, 2 * PER_SUBTASK);
                }
                Err(e) => assert!(e.to_string().starts_with("history.jsonl:"), "{e}"),
            }
        };
    let mut cases = Vec::new();
    // The edges, by hand: ranges over all of u64, reversed, past the source,
    // at the top of every integer, events about ids nobody opened.
    let pre = |s: u32, c: &str, first: &str, last: &str| {
        format!(
            r#"{{"wall_ms":1,"mono_us":1,"mode":"legacy","by":"worker","subtask":{s},"type":"txn-precommitted","committable":{{"checkpoint":{c},"transactional_id":"{}","producer_id":1,"producer_epoch":0,"protocol":"v2","records":1,"first_seq":{first},"last_seq":{last}}},"flush_us":1}}"#,
            tid(s.min(1), 1)
        )
    };
    let max = u64::MAX.to_string();
    let mut known = vec![
        pre(0, "1", "0", &max),
        pre(1, "1", &max, "0"),
        pre(0, "1", &max, &max),
        pre(0, &max, "0", &max),
        pre(1, "1", "39", "18446744073709551614"),
        pre(0, "1", "40", "41"),
        pre(u32::MAX, "1", "0", "5"),
        format!("{}\n{}", pre(0, "1", "0", "9"), pre(0, "1", "0", &max)),
        format!("{}\n{}\n{}", pre(0, "1", "0", &max), pre(0, "2", "5", &max), pre(0, "3", &max, "1")),
        r#"{"wall_ms":1,"mono_us":1,"mode":"legacy","by":"worker","subtask":0,"type":"commit-finished","transactional_id":"x","checkpoint":18446744073709551615,"restored":true,"outcome":"committed","latency_us":1}"#.to_string(),
        r#"{"wall_ms":1,"mono_us":1,"mode":"legacy","by":"coordinator","type":"txn-aborted","transactional_id":"-","producer_id":-1,"epoch":-32768,"reason":""}"#.to_string(),
        r#"{"wall_ms":1,"mono_us":1,"mode":"legacy","by":"fault","type":"lingering-aborted","transactional_id":"a-4294967296-1","epoch":32767}"#.to_string(),
        r#"{"wall_ms":1,"mono_us":1,"mode":"legacy","by":"coordinator","type":"job-finished","outcome":"","attempts":0}"#.to_string(),
    ];
    known.push(known[..9].join("\n") + "\n" + &text);
    for (i, k) in known.into_iter().enumerate() {
        let label = format!("history edge {i}: {}", k.chars().take(300).collect::<String>());
        cases.push(Case { label, run: Box::new(check(k, recs.clone(), parts.clone())) });
    }
    for i in 0..4000u64 {
        let seed = 0x4157_0000 + i;
        let rng = &mut Rng(seed);
        let (bytes, how) = if i % 2 == 0 { mutate(rng, text.as_bytes()) } else { mutate_field(rng, text.as_bytes()) };
        let damaged = String::from_utf8_lossy(&bytes).into_owned();
        cases.push(Case {
            label: format!("history seed {seed:#x} ({})", how.join(", ")),
            run: Box::new(check(damaged, recs.clone(), parts.clone())),
        });
    }
    // The real history, damaged, against its own drain.
    let real = real_run();
    let recs = std::sync::Arc::new(store::decode(&real.drained).unwrap());
    let parts = std::sync::Arc::new(real.partitions);
    let exp = real.expected;
    for i in 0..300u64 {
        let seed = 0x4E41_0000 + i;
        let rng = &mut Rng(seed);
        let bytes = real.history.as_bytes();
        let (bytes, how) = if i % 2 == 0 { mutate(rng, bytes) } else { mutate_field(rng, bytes) };
        let damaged = String::from_utf8_lossy(&bytes).into_owned();
        let (recs, parts, exp) = (recs.clone(), parts.clone(), exp.clone());
        cases.push(Case {
            label: format!("fixture history seed {seed:#x} ({})", how.join(", ")),
            run: Box::new(move || match sinkhole_history::parse(&damaged, Path::new("history.jsonl")) {
                Ok(h) => {
                    sinkhole_checker::check(&exp, &recs, &HistoryIndex::from_events(&h.events), &parts);
                }
                Err(e) => assert!(e.to_string().starts_with("history.jsonl:"), "{e}"),
            }),
        });
    }
    let n = cases.len();
    report("histories", n, run_cases(cases), started);
}

#[test]
fn damaged_drains_are_errors_not_panics() {
    let started = Instant::now();
    let (recs, parts) = drain_seed();
    let bytes = store::encode(&recs);
    assert_eq!(store::decode(&bytes).unwrap(), recs);
    let fields = length_fields(&bytes);
    assert_eq!(fields.len(), recs.len());
    let events = history_seed();
    let dir = scratch("drain");
    let hist = dir.join("history.jsonl");
    std::fs::write(&hist, events.iter().map(|e| serde_json::to_string(e).unwrap() + "\n").collect::<String>()).unwrap();
    store::write_partitions(&dir.join(store::PARTITIONS_FILE), &parts).unwrap();
    let index = std::sync::Arc::new(HistoryIndex::from_events(&events));
    let parts = std::sync::Arc::new(parts);
    let mut cases = Vec::new();
    for i in 0..2500u64 {
        let seed = 0xD8A1_0000 + i;
        let (damaged, how) = mutate_drain(&mut Rng(seed), &bytes, &fields);
        let (dir, hist, index, parts) = (dir.clone(), hist.clone(), index.clone(), parts.clone());
        cases.push(Case {
            label: format!("drained.bin seed {seed:#x} ({})", how.join(", ")),
            run: Box::new(move || {
                let in_memory = store::decode(&damaged);
                if let Ok(recs) = &in_memory {
                    sinkhole_checker::check(&expected(), recs, &index, &parts);
                }
                let path = dir.join(store::FILE_NAME);
                std::fs::write(&path, &damaged).unwrap();
                let read = store::read(&path);
                assert_eq!(read.is_ok(), in_memory.is_ok());
                if let Err(e) = &read {
                    let e = e.to_string();
                    assert!(e.starts_with(&path.display().to_string()), "{e}");
                    assert!(e.contains(store::BAD_MAGIC) || e.contains(" at byte "), "names the offset: {e}");
                }
                let mut n = 0u64;
                let streamed = store::for_each(&path, None, |_, _| n += 1);
                // The streaming reader refuses a tid that is not UTF-8; the
                // whole-file one reads it lossily. Otherwise they agree.
                if let (Ok(a), Ok(b)) = (&streamed, &read) {
                    assert_eq!(*a as usize, b.len());
                }
                if let Err(e) = &streamed {
                    let e = e.to_string();
                    assert!(e.contains(store::BAD_MAGIC) || e.contains(" at byte "), "names the offset: {e}");
                }
                let _ = sinkhole_checker::recheck(&ModeDir::at(&dir), &expected(), Some(&hist));
            }),
        });
    }
    // The real drain, damaged.
    let real = real_run();
    let real_fields = length_fields(&real.drained);
    let real_index = std::sync::Arc::new(HistoryIndex::from_events(
        &sinkhole_history::parse(&real.history, Path::new("history.jsonl")).unwrap().events,
    ));
    let real_parts = std::sync::Arc::new(real.partitions);
    for i in 0..300u64 {
        let seed = 0xD8A2_0000 + i;
        let (damaged, how) = mutate_drain(&mut Rng(seed), &real.drained, &real_fields);
        let (index, parts, exp) = (real_index.clone(), real_parts.clone(), real.expected.clone());
        cases.push(Case {
            label: format!("fixture drained.bin seed {seed:#x} ({})", how.join(", ")),
            run: Box::new(move || {
                if let Ok(recs) = store::decode(&damaged) {
                    sinkhole_checker::check(&exp, &recs, &index, &parts);
                }
            }),
        });
    }
    let n = cases.len();
    let failures = run_cases(cases);
    let _ = std::fs::remove_dir_all(&dir);
    report("drains", n, failures, started);
}

#[test]
fn damaged_drain_positions_are_errors_not_panics() {
    let started = Instant::now();
    let (recs, parts) = drain_seed();
    let events = history_seed();
    let dir = scratch("positions");
    let hist = dir.join("history.jsonl");
    std::fs::write(&hist, events.iter().map(|e| serde_json::to_string(e).unwrap() + "\n").collect::<String>()).unwrap();
    store::write(&dir.join(store::FILE_NAME), &recs).unwrap();
    let ppath = dir.join(store::PARTITIONS_FILE);
    store::write_partitions(&ppath, &parts).unwrap();
    let text = std::fs::read(&ppath).unwrap();
    let clean = sinkhole_checker::recheck(&ModeDir::at(&dir), &expected(), Some(&hist)).unwrap();
    assert_eq!(clean.counts.uncommitted_tail, 1);
    let mut cases = Vec::new();
    for i in 0..600u64 {
        let seed = 0x9A27_0000 + i;
        let rng = &mut Rng(seed);
        let (damaged, how) = if i % 2 == 0 { mutate(rng, &text) } else { mutate_field(rng, &text) };
        let (dir, hist, ppath) = (dir.clone(), hist.clone(), ppath.clone());
        cases.push(Case {
            label: format!("drained.partitions.json seed {seed:#x} ({})", how.join(", ")),
            run: Box::new(move || {
                std::fs::write(&ppath, &damaged).unwrap();
                match sinkhole_checker::recheck(&ModeDir::at(&dir), &expected(), Some(&hist)) {
                    Ok(r) => assert_eq!(r.records_read, 73),
                    Err(e) => assert!(e.to_string().contains(store::PARTITIONS_FILE), "names the file: {e}"),
                }
            }),
        });
    }
    let n = cases.len();
    let failures = run_cases(cases);
    let _ = std::fs::remove_dir_all(&dir);
    report("drain positions", n, failures, started);
}

/// Found by the mutator (seed 0x5ce74682): `random-mix.yaml` with `end_ms`
/// swapped for 4294967295 used to load, and `schedule::resolve` then
/// generated 1.3 million faults (a 637 MB vector); `end_ms:
/// 18446744073709551615` exhausted memory. A random schedule's times are now
/// bounded by validation, and `resolve` stops at a bounded number of faults.
#[test]
fn a_huge_random_schedule_window_is_refused_or_stays_small() {
    let text = std::fs::read_to_string(repo().join("scenarios/random-mix.yaml"))
        .unwrap()
        .replace("end_ms: 30000", "end_ms: 4294967295");
    assert!(text.contains("end_ms: 4294967295"));
    let failures = run_cases(vec![Case {
        label: "random-mix.yaml with end_ms: 4294967295".into(),
        run: Box::new(move || {
            if let Ok(s) = sinkhole_scenario::from_str(&text, "random-mix.yaml") {
                let r = sinkhole_scenario::schedule::resolve(&s, 7);
                assert!(r.faults.len() <= 10_000, "{} faults generated", r.faults.len());
            }
        }),
    }]);
    assert!(failures.is_empty(), "{failures:?}");
}
