//! Workers against a real broker: a 1-node Kafka 4.4.0 cluster with 2PC and
//! unstable API versions enabled and a 500 ms timeout-abort scan (or the
//! cluster named by `SINKHOLE_TEST_BOOTSTRAP`). The test plays the
//! coordinator: it binds a Unix socket per worker, spawns real
//! `sinkhole worker` processes, drives checkpoints (trigger → every ack →
//! complete → every committed) and finally reads the topic with a
//! read_committed consumer: every source record must be there exactly once.
//!
//! The restore tests kill a worker with SIGKILL after it acked a checkpoint
//! and before that checkpoint's Complete (the window where the checkpoint is
//! persisted but not committed, with records of the next transaction in
//! flight), restart it from that checkpoint and check that the stored
//! committable is committed, the lingering transaction aborted, and the
//! output exactly once.
//!
//! Run with `--nocapture` to see the per-case figures.
// Each #[tokio::test] runs on a runtime of its own thread, so holding the
// std mutex that serialises cluster tests across awaits cannot deadlock.
#![allow(clippy::await_holding_lock)]
use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers, Message};
use rdkafka::{ClientConfig as RdConfig, Offset, TopicPartitionList};
use sinkhole_client::wire::{Client, ClientConfig};
use sinkhole_cluster::local::LocalCluster;
use sinkhole_cluster::ClusterNodes;
use sinkhole_model::{
    record, CommitOutcome, EventKind, FromWorker, PartitionRegistration, Partitioning, SinkMode, SubtaskState,
    ToWorker, WorkerConfig,
};
use sinkhole_workloads::control::{Channel, ChannelReader, ChannelWriter};
use tokio::net::UnixListener;
use tokio::process::{Child, Command};

const PARTITIONS: u32 = 3;

// ----- the shared cluster ---------------------------------------------------

/// One cluster for every test of this file (they take turns through
/// `common::serial()`): starting a JVM broker is the slow part. It is torn
/// down at process exit (and its JVM dies with the test process anyway: the
/// rig forks brokers with a parent-death signal).
static CLUSTER: OnceLock<Mutex<Option<LocalCluster>>> = OnceLock::new();
static BOOTSTRAP: OnceLock<Vec<String>> = OnceLock::new();

extern "C" fn teardown_cluster() {
    if let Some(m) = CLUSTER.get() {
        if let Ok(mut g) = m.lock() {
            if let Some(mut c) = g.take() {
                c.teardown();
            }
        }
    }
}

async fn bootstrap() -> Vec<String> {
    if let Some(b) = BOOTSTRAP.get() {
        return b.clone();
    }
    if let Ok(v) = std::env::var("SINKHOLE_TEST_BOOTSTRAP") {
        let list: Vec<String> = v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect();
        if !list.is_empty() {
            return BOOTSTRAP.get_or_init(|| list).clone();
        }
    }
    let cluster = LocalCluster::start(common::two_pc_spec("worker")).await.expect("1-node cluster starts");
    let list = cluster.bootstrap_list();
    CLUSTER.get_or_init(|| Mutex::new(None)).lock().unwrap().replace(cluster);
    // SAFETY: registers a plain extern "C" function without captured state.
    unsafe {
        libc::atexit(teardown_cluster);
    }
    BOOTSTRAP.get_or_init(|| list).clone()
}

fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{prefix}-{}-{}", std::process::id(), nanos % 1_000_000_000)
}

async fn create_topic(servers: &[String], topic: &str) {
    let mut client = Client::connect(servers, ClientConfig::default()).await.expect("bootstrap");
    client.create_topic(topic, PARTITIONS as i32, 1, &[]).await.expect("create topic");
}

// ----- playing the coordinator ----------------------------------------------

struct Job {
    dir: PathBuf,
    base: WorkerConfig,
    workers: Vec<Worker>,
    next_checkpoint: u64,
    /// Every event any worker sent, in arrival order.
    events: Vec<(u32, EventKind)>,
    /// The last checkpoint every subtask acked, with the subtasks' states.
    last_acked: Option<(u64, Vec<SubtaskState>)>,
    checkpoints: u64,
}

struct Worker {
    subtask: u32,
    child: Child,
    rx: ChannelReader,
    tx: ChannelWriter,
    log: PathBuf,
    end_of_input: bool,
}

impl Job {
    fn new(mode: SinkMode, servers: Vec<String>, topic: &str, parallelism: u32, records: u64, rate: u64) -> Job {
        let run_id = unique(&format!("w-{mode}"));
        let dir = std::env::temp_dir().join(format!("sinkhole-it-{run_id}"));
        std::fs::create_dir_all(&dir).unwrap();
        let base = WorkerConfig {
            run_id: run_id.clone(),
            mode,
            subtask: 0,
            parallelism,
            attempt: 0,
            bootstrap: servers,
            topic: topic.to_string(),
            partitions: PARTITIONS,
            partitioning: Partitioning::RoundRobin,
            records,
            rate_per_sec: rate,
            transaction_timeout_ms: 60_000,
            tid_prefix: format!("sh-{run_id}"),
            linger_ms: 5,
            batch_size: 16 * 1024,
            restore: None,
            heartbeat_ms: 200,
            register_partitions: Default::default(),
            force_transactions_v1: false,
            sasl: None,
            share: None,
            security: None,
        };
        Job { dir, base, workers: Vec::new(), next_checkpoint: 1, events: Vec::new(), last_acked: None, checkpoints: 0 }
    }

    /// Starts one `sinkhole worker` process per subtask for `attempt`,
    /// restoring from `restore` if given, and waits for every Ready.
    async fn start(&mut self, attempt: u32, restore: Option<(u64, Vec<SubtaskState>)>) -> Result<(), String> {
        self.workers.clear();
        for s in 0..self.base.parallelism {
            let mut cfg = self.base.clone();
            cfg.subtask = s;
            cfg.attempt = attempt;
            cfg.restore = restore.as_ref().map(|(id, states)| (*id, states[s as usize].clone()));
            let sock = self.dir.join(format!("w{s}-a{attempt}.sock"));
            let cfg_path = self.dir.join(format!("w{s}-a{attempt}.json"));
            let log = self.dir.join(format!("w{s}-a{attempt}.log"));
            std::fs::write(&cfg_path, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
            let listener = UnixListener::bind(&sock).map_err(|e| format!("bind {}: {e}", sock.display()))?;
            let child = Command::new(common::bin())
                .arg("worker")
                .arg("--config")
                .arg(&cfg_path)
                .arg("--control")
                .arg(&sock)
                .env("RUST_LOG", "info,sinkhole_workloads=debug")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| format!("spawn worker: {e}"))?;
            let (stream, _) = tokio::time::timeout(Duration::from_secs(30), listener.accept())
                .await
                .map_err(|_| format!("worker {s} never connected; log:\n{}", tail(&log)))?
                .map_err(|e| e.to_string())?;
            let (rx, tx) = Channel::from_stream(stream).into_split();
            self.workers.push(Worker { subtask: s, child, rx, tx, log, end_of_input: false });
        }
        for i in 0..self.workers.len() {
            self.until(i, |m| matches!(m, FromWorker::Ready { .. }).then_some(())).await?;
        }
        Ok(())
    }

    /// Reads worker `i`'s messages until `pick` accepts one. Events are
    /// kept; a Failed message or an end of stream is an error.
    async fn until<T>(&mut self, i: usize, mut pick: impl FnMut(&FromWorker) -> Option<T>) -> Result<T, String> {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let w = &mut self.workers[i];
            let left = deadline.saturating_duration_since(Instant::now());
            let msg = match tokio::time::timeout(left, w.rx.recv::<FromWorker>()).await {
                Err(_) => return Err(format!("worker {} timed out; log:\n{}", w.subtask, tail(&w.log))),
                Ok(Err(e)) => return Err(format!("worker {} channel: {e}; log:\n{}", w.subtask, tail(&w.log))),
                Ok(Ok(None)) => return Err(format!("worker {} hung up; log:\n{}", w.subtask, tail(&w.log))),
                Ok(Ok(Some(m))) => m,
            };
            match &msg {
                FromWorker::Event { event } => self.events.push((w.subtask, event.clone())),
                FromWorker::EndOfInput { .. } => w.end_of_input = true,
                FromWorker::Failed { error, .. } => {
                    return Err(format!("worker {} failed: {error}; log:\n{}", w.subtask, tail(&w.log)))
                }
                _ => {}
            }
            if let Some(t) = pick(&msg) {
                return Ok(t);
            }
        }
    }

    /// Triggers the next checkpoint and collects every ack.
    async fn checkpoint(&mut self) -> Result<u64, String> {
        let id = self.next_checkpoint;
        self.next_checkpoint += 1;
        for w in &mut self.workers {
            w.tx.send(&ToWorker::Checkpoint { id }).await.map_err(|e| e.to_string())?;
        }
        let mut states = Vec::new();
        for i in 0..self.workers.len() {
            let st = self
                .until(i, |m| match m {
                    FromWorker::Ack { id: a, state, .. } if *a == id => Some(state.clone()),
                    _ => None,
                })
                .await?;
            states.push(st);
        }
        self.last_acked = Some((id, states));
        self.checkpoints += 1;
        Ok(id)
    }

    async fn complete(&mut self, id: u64) -> Result<(), String> {
        for w in &mut self.workers {
            w.tx.send(&ToWorker::Complete { id }).await.map_err(|e| e.to_string())?;
        }
        for i in 0..self.workers.len() {
            self.until(i, |m| matches!(m, FromWorker::Committed { id: c, .. } if *c == id).then_some(())).await?;
        }
        Ok(())
    }

    /// Checkpoints every `interval` until a checkpoint taken after every
    /// subtask reported the end of input has completed; then Stop.
    async fn run_to_end(&mut self, interval: Duration) -> Result<(), String> {
        self.run_to_end_then(interval, 0).await
    }

    /// As [`Job::run_to_end`], with `extra` checkpoints after the final one
    /// (each finds the transaction opened after the last one empty).
    async fn run_to_end_then(&mut self, interval: Duration, extra: usize) -> Result<(), String> {
        loop {
            // Let messages (EndOfInput, heartbeats) arrive while waiting.
            let until = Instant::now() + interval;
            while Instant::now() < until {
                for i in 0..self.workers.len() {
                    let left = until.saturating_duration_since(Instant::now()).min(Duration::from_millis(20));
                    if let Ok(Err(e)) = tokio::time::timeout(left, self.until(i, |_| Some(()))).await {
                        return Err(e);
                    }
                }
            }
            let last = self.workers.iter().all(|w| w.end_of_input);
            let id = self.checkpoint().await?;
            self.complete(id).await?;
            if last {
                break;
            }
        }
        for _ in 0..extra {
            let id = self.checkpoint().await?;
            self.complete(id).await?;
        }
        self.stop().await
    }

    async fn stop(&mut self) -> Result<(), String> {
        for w in &mut self.workers {
            w.tx.send(&ToWorker::Stop).await.map_err(|e| e.to_string())?;
        }
        for i in 0..self.workers.len() {
            // Drain what is left (events of the close).
            while let Ok(Ok(Some(m))) =
                tokio::time::timeout(Duration::from_secs(30), self.workers[i].rx.recv::<FromWorker>()).await
            {
                if let FromWorker::Event { event } = m {
                    self.events.push((self.workers[i].subtask, event));
                }
            }
            let w = &mut self.workers[i];
            let status = tokio::time::timeout(Duration::from_secs(30), w.child.wait())
                .await
                .map_err(|_| format!("worker {} did not exit after Stop", w.subtask))?
                .map_err(|e| e.to_string())?;
            if !status.success() {
                return Err(format!("worker {} exited with {status}; log:\n{}", w.subtask, tail(&w.log)));
            }
        }
        Ok(())
    }

    /// SIGKILL every worker (a crash: nothing is closed or aborted).
    async fn kill_all(&mut self) {
        for w in &mut self.workers {
            let _ = w.child.start_kill();
            let _ = w.child.wait().await;
        }
        self.workers.clear();
    }

    fn commits(&self, restored: bool) -> Vec<(String, CommitOutcome)> {
        self.events
            .iter()
            .filter_map(|(_, e)| match e {
                EventKind::CommitFinished { transactional_id, restored: r, outcome, .. } if *r == restored => {
                    Some((transactional_id.clone(), outcome.clone()))
                }
                _ => None,
            })
            .collect()
    }
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

// ----- reading the output ---------------------------------------------------

struct Output {
    /// (subtask, seq) → copies seen.
    counts: BTreeMap<(u32, u64), u32>,
    /// (subtask, seq) → transactional id header of the first copy.
    tids: BTreeMap<(u32, u64), Option<String>>,
    foreign: u64,
}

/// Reads the whole topic with read_committed, to the end (the last stable
/// offset) of every partition.
fn read_committed(servers: &[String], topic: &str, run_id: &str) -> Output {
    let consumer: BaseConsumer = RdConfig::new()
        .set("bootstrap.servers", servers.join(","))
        .set("group.id", unique("verify"))
        .set("isolation.level", "read_committed")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS as i32 {
        tpl.add_partition_offset(topic, p, Offset::Beginning).unwrap();
    }
    consumer.assign(&tpl).expect("assign");
    let mut out = Output { counts: BTreeMap::new(), tids: BTreeMap::new(), foreign: 0 };
    let mut at_end = vec![false; PARTITIONS as usize];
    let deadline = Instant::now() + Duration::from_secs(60);
    while at_end.iter().any(|e| !e) {
        assert!(Instant::now() < deadline, "read_committed did not reach the end of {topic}");
        match consumer.poll(Duration::from_millis(500)) {
            None => {}
            Some(Err(KafkaError::PartitionEOF(p))) => at_end[p as usize] = true,
            Some(Err(e)) => panic!("consumer: {e}"),
            Some(Ok(m)) => {
                at_end[m.partition() as usize] = false;
                let Some((run, s, seq)) = m.payload().and_then(record::parse_value) else {
                    out.foreign += 1;
                    continue;
                };
                if run != run_id {
                    out.foreign += 1;
                    continue;
                }
                assert_eq!(m.key(), Some(record::key(s, seq).as_bytes()), "key of {s}-{seq}");
                let tid = m.headers().and_then(|h| {
                    h.iter()
                        .find(|h| h.key == record::H_TID)
                        .and_then(|h| h.value.map(|v| String::from_utf8_lossy(v).into_owned()))
                });
                *out.counts.entry((s, seq)).or_default() += 1;
                out.tids.entry((s, seq)).or_insert(tid);
            }
        }
    }
    out
}

/// Every record of every subtask exactly once: the failures, if any.
fn exactly_once(out: &Output, parallelism: u32, records: u64) -> Vec<String> {
    let mut problems = Vec::new();
    let (mut lost, mut dup) = (0u64, 0u64);
    for s in 0..parallelism {
        for seq in 0..records {
            match out.counts.get(&(s, seq)).copied().unwrap_or(0) {
                1 => {}
                0 => {
                    lost += 1;
                    if lost <= 5 {
                        problems.push(format!("lost {s}-{seq}"));
                    }
                }
                n => {
                    dup += 1;
                    if dup <= 5 {
                        problems.push(format!("{s}-{seq} seen {n} times"));
                    }
                }
            }
        }
    }
    let unexpected = out.counts.keys().filter(|(s, seq)| *s >= parallelism || *seq >= records).count();
    if lost + dup > 0 || unexpected > 0 || out.foreign > 0 {
        problems.push(format!("lost {lost}, duplicated {dup}, unexpected {unexpected}, foreign {}", out.foreign));
    }
    problems
}

// ----- the cases ------------------------------------------------------------

/// A clean run of `mode`: 2 subtasks, checkpoints every 300 ms until the
/// end of input, then exactly once in the output.
async fn clean_run(mode: SinkMode) {
    let _turn = common::serial();
    let servers = bootstrap().await;
    let topic = unique(&format!("out-{mode}"));
    create_topic(&servers, &topic).await;
    let (parallelism, records) = (2, 3000);
    let mut job = Job::new(mode, servers.clone(), &topic, parallelism, records, 2000);
    let started = Instant::now();
    let result = async {
        job.start(0, None).await?;
        job.run_to_end(Duration::from_millis(300)).await
    }
    .await;
    if let Err(e) = result {
        job.kill_all().await;
        panic!("{mode}: {e}");
    }
    let wall = started.elapsed();
    let out = read_committed(&servers, &topic, &job.base.run_id);
    let problems = exactly_once(&out, parallelism, records);
    let commits = job.commits(false);
    println!(
        "{mode}: {} records in {:.1} s, {} checkpoints, {} live commits ({} committed), {} events",
        out.counts.len(),
        wall.as_secs_f64(),
        job.checkpoints,
        commits.len(),
        commits.iter().filter(|(_, o)| *o == CommitOutcome::Committed).count(),
        job.events.len()
    );
    assert!(problems.is_empty(), "{mode}: {problems:?}");
    // Records carry the id of the transaction that wrote them.
    for ((s, _), tid) in &out.tids {
        match mode {
            SinkMode::AtLeastOnce => assert_eq!(tid, &None),
            SinkMode::RdkafkaTxn => assert_eq!(tid.as_deref(), Some(format!("{}-{s}", job.base.tid_prefix).as_str())),
            _ => assert!(
                tid.as_deref().is_some_and(|t| t.starts_with(&format!("{}-{s}-", job.base.tid_prefix))),
                "{tid:?}"
            ),
        }
    }
    if mode.transactional() {
        assert!(commits.len() >= 2, "{mode}: at least one commit per subtask: {commits:?}");
        assert!(commits.iter().all(|(_, o)| *o == CommitOutcome::Committed), "{mode}: {commits:?}");
    }
    if mode.two_phase() {
        let precommitted = job.events.iter().filter(|(_, e)| matches!(e, EventKind::TxnPrecommitted { .. })).count();
        assert_eq!(precommitted, commits.len(), "every pre-committed transaction committed once");
        let inits: Vec<_> = job
            .events
            .iter()
            .filter_map(|(_, e)| match e {
                EventKind::ProducerInit { enable_2pc, .. } => Some(*enable_2pc),
                _ => None,
            })
            .collect();
        assert!(!inits.is_empty());
        assert!(inits.iter().all(|e| *e == (mode != SinkMode::Legacy)), "{mode}: Enable2Pc flags {inits:?}");
    }
    let _ = std::fs::remove_dir_all(&job.dir);
}

/// Crash after an ack, before Complete; restore from the acked checkpoint.
async fn crash_and_restore(mode: SinkMode) {
    let _turn = common::serial();
    let servers = bootstrap().await;
    let topic = unique(&format!("out-{mode}-restore"));
    create_topic(&servers, &topic).await;
    let (parallelism, records) = (1, 3000);
    let mut job = Job::new(mode, servers.clone(), &topic, parallelism, records, 2000);
    let result: Result<(u64, SubtaskState), String> = async {
        job.start(0, None).await?;
        for _ in 0..2 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let id = job.checkpoint().await?;
            job.complete(id).await?;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        // Acked by every subtask = persisted; the Complete never goes out.
        let id = job.checkpoint().await?;
        // Let records of the next transaction reach the broker: they are
        // the lingering transaction the restore must abort.
        tokio::time::sleep(Duration::from_millis(400)).await;
        let (_, states) = job.last_acked.clone().unwrap();
        Ok((id, states[0].clone()))
    }
    .await;
    let (id, state) = match result {
        Ok(r) => r,
        Err(e) => {
            job.kill_all().await;
            panic!("{mode}: before the crash: {e}");
        }
    };
    assert_eq!(state.committables.len(), 1, "the acked checkpoint holds its uncommitted transaction: {state:?}");
    let stored = state.committables[0].clone();
    assert!(state.next_seq > 0 && state.next_seq < records, "{state:?}");
    job.kill_all().await;
    let events_before = job.events.len();

    let result = async {
        job.start(1, Some((id, vec![state.clone()]))).await?;
        job.run_to_end(Duration::from_millis(300)).await
    }
    .await;
    if let Err(e) = result {
        let unsupported: Vec<_> = job.events[events_before..]
            .iter()
            .filter_map(|(_, e)| match e {
                EventKind::Unsupported { what, error } => Some((what.clone(), error.clone())),
                _ => None,
            })
            .collect();
        if mode == SinkMode::Kip939 && !unsupported.is_empty() {
            // The contract for a broker that cannot recover a prepared
            // transaction: the exact refusal, then Failed and a non-zero exit.
            for w in &mut job.workers {
                let status = tokio::time::timeout(Duration::from_secs(30), w.child.wait()).await;
                assert!(matches!(status, Ok(Ok(s)) if !s.success()), "{mode}: exits non-zero: {status:?}");
            }
            assert!(unsupported.iter().all(|(w, e)| w.contains("KeepPreparedTxn") && !e.is_empty()), "{unsupported:?}");
            println!("{mode} restore: the broker cannot run it: {unsupported:?}");
            let _ = std::fs::remove_dir_all(&job.dir);
            return;
        }
        job.kill_all().await;
        panic!("{mode}: after the restore: {e}");
    }
    let after = &job.events[events_before..];
    let restored: Vec<_> = job.commits(true);
    let lingering: Vec<_> = after
        .iter()
        .filter_map(|(_, e)| match e {
            EventKind::LingeringAborted { transactional_id, epoch } => Some((transactional_id.clone(), *epoch)),
            _ => None,
        })
        .collect();
    let out = read_committed(&servers, &topic, &job.base.run_id);
    let problems = exactly_once(&out, parallelism, records);
    println!(
        "{mode} restore: checkpoint {id} (next_seq {}, committable {} with {} records, {:?}), restored commits \
         {restored:?}, lingering aborted {lingering:?}, {} records read, {} checkpoints in all",
        state.next_seq,
        stored.transactional_id,
        stored.records,
        stored.protocol,
        out.counts.len(),
        job.checkpoints
    );
    assert_eq!(restored, vec![(stored.transactional_id.clone(), CommitOutcome::Committed)], "{mode}");
    let expected_lingering = format!("{}-0-{}", job.base.tid_prefix, id + 1);
    assert!(
        lingering.iter().any(|(t, e)| *t == expected_lingering && *e > 0),
        "{mode}: the open transaction {expected_lingering} is found and aborted: {lingering:?}"
    );
    assert!(problems.is_empty(), "{mode}: {problems:?}");
    let _ = std::fs::remove_dir_all(&job.dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_exactly_once() {
    clean_run(SinkMode::Legacy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kip939_exactly_once() {
    clean_run(SinkMode::Kip939).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twopc_inject_exactly_once() {
    clean_run(SinkMode::TwopcInject).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rdkafka_txn_exactly_once_without_faults() {
    clean_run(SinkMode::RdkafkaTxn).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_least_once_exactly_once_without_faults() {
    clean_run(SinkMode::AtLeastOnce).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_restore_commits_the_checkpoint_and_aborts_the_lingering_transaction() {
    crash_and_restore(SinkMode::Legacy).await;
}

/// KIP-939 recovery (KeepPreparedTxn=true): exactly once where the broker
/// supports it; otherwise the worker must report the broker's exact refusal
/// (an inconclusive run, never a pass).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kip939_restore_commits_the_prepared_transaction_or_reports_unsupported() {
    crash_and_restore(SinkMode::Kip939).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twopc_inject_restore_commits_the_checkpoint_and_aborts_the_lingering_transaction() {
    crash_and_restore(SinkMode::TwopcInject).await;
}

/// A job that registers its partitions at transaction begin ends with no
/// transaction left open on the broker. Such a transaction is known to the
/// broker (Ongoing) before it holds a record: one found empty at a barrier
/// (the checkpoint after the final one here) is aborted there, and the one
/// open at the end is aborted on close, as Flink's `KafkaWriter` does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eager_job_leaves_no_transaction_open_when_it_ends() {
    let _turn = common::serial();
    let servers = bootstrap().await;
    let topic = unique("out-eager");
    create_topic(&servers, &topic).await;
    let mut job = Job::new(SinkMode::Legacy, servers.clone(), &topic, 1, 1000, 2000);
    job.base.register_partitions = PartitionRegistration::Eager;
    let result = async {
        job.start(0, None).await?;
        job.run_to_end_then(Duration::from_millis(200), 1).await
    }
    .await;
    if let Err(e) = result {
        job.kill_all().await;
        panic!("eager legacy: {e}");
    }
    let empty_aborted = job
        .events
        .iter()
        .filter(
            |(_, e)| matches!(e, EventKind::TxnAborted { reason, .. } if reason.starts_with("empty at the barrier")),
        )
        .count();
    assert_eq!(empty_aborted, 1, "the transaction the extra checkpoint found empty is aborted at its barrier");
    let opened = job.events.iter().filter(|(_, e)| matches!(e, EventKind::TxnOpened { .. })).count();
    assert!(opened >= 2, "a transaction per checkpoint, and one after the last: {opened}");
    let mut client = Client::connect(&servers, ClientConfig::default()).await.expect("bootstrap");
    let states: Vec<String> = ["Ongoing", "PrepareCommit", "PrepareAbort"].iter().map(|s| s.to_string()).collect();
    let open: Vec<_> = client
        .list_transactions(&states, &[])
        .await
        .expect("ListTransactions")
        .into_iter()
        .filter(|t| t.transactional_id.starts_with(&job.base.tid_prefix))
        .collect();
    assert!(open.is_empty(), "transactions left open: {open:?}");
    let _ = std::fs::remove_dir_all(&job.dir);
}
