//! The coordinator's job state machine, driven by in-process fake workers that
//! speak the real control protocol (`Channel` over the Unix socket) but write
//! nothing to Kafka: each fake "emits" records by advancing its sequence,
//! pre-commits at every barrier, commits on notification, and restores from
//! the state the coordinator hands it. Broker faults need a cluster and are
//! tested elsewhere; worker faults are exercised here through the fake
//! launcher's signals.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::Signal;
use sinkhole_base::rundir::ModeDir;
use sinkhole_faults::process::{RunState, SignalEffect};
use sinkhole_model::{
    CommitOutcome, Committable, Event, EventKind, FromWorker, Partitioning, SinkMode, Source, SubtaskState, ToWorker,
    TxnProtocol, WorkerConfig,
};
use sinkhole_workloads::control::Channel;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::subject::rig_job::checkpoints::CheckpointStore;
use crate::subject::rig_job::{JobConfig, LaunchSpec, Launcher};
use sinkhole_cluster::{BoxFuture, Cluster, ClusterError, ClusterFuture, ClusterNodes, NodeAction, NodeEffect, OnDown};
use sinkhole_history::{JobOutcome, ModeOutcome};
use sinkhole_scenario::{
    Brokers as Nodes, Fault, FaultSpec, FramesDelay, JobSpec, NoParams, Notification, NotificationDelay, Outage,
    Partition, Rolling, Target, When, Workers,
};

/// How the fakes misbehave.
#[derive(Debug, Clone, Default)]
struct Behavior {
    /// (subtask, attempt, checkpoint): exit with an error right after acking it.
    crash_after_ack: Vec<(u32, u32, u64)>,
    /// Every worker reports `Failed` as soon as it is connected.
    always_fail: bool,
    /// Subtask 0 never acks this checkpoint.
    ignore_checkpoint: Option<u64>,
    /// Workers report the mode unsupported, then fail.
    unsupported: Option<String>,
    /// Restored committables are dropped (as legacy does after a timeout abort).
    drop_restored: bool,
    /// Records per 5 ms step.
    step: u64,
    /// Acks are sent this long after the barrier (checkpoints then overlap).
    ack_delay_ms: u64,
}

struct FakeLauncher {
    behavior: Arc<Behavior>,
    next_pid: u32,
    tasks: BTreeMap<u32, (JoinHandle<()>, watch::Sender<bool>)>,
    statuses: Arc<Mutex<BTreeMap<u32, String>>>,
    configs: Arc<Mutex<Vec<WorkerConfig>>>,
}

impl FakeLauncher {
    fn new(behavior: Behavior) -> (FakeLauncher, Arc<Mutex<Vec<WorkerConfig>>>) {
        let configs = Arc::new(Mutex::new(vec![]));
        let l = FakeLauncher {
            behavior: Arc::new(behavior),
            next_pid: 4_000_000,
            tasks: BTreeMap::new(),
            statuses: Default::default(),
            configs: configs.clone(),
        };
        (l, configs)
    }
}

fn effect(pid: u32, signal: Signal, observed: RunState) -> SignalEffect {
    SignalEffect { pid: pid as i32, signal: signal.as_str().into(), confirmed: true, observed, after_ms: 0 }
}

impl Launcher for FakeLauncher {
    fn launch(&mut self, spec: LaunchSpec<'_>) -> anyhow::Result<u32> {
        // The coordinator wrote the configuration it hands the worker.
        let on_disk: WorkerConfig = serde_json::from_slice(&std::fs::read(spec.config_path)?)?;
        assert_eq!(&on_disk, spec.config);
        self.configs.lock().unwrap().push(on_disk.clone());
        let pid = self.next_pid;
        self.next_pid += 1;
        let (tx, rx) = watch::channel(false);
        let behavior = self.behavior.clone();
        let control = spec.control.to_path_buf();
        let statuses = self.statuses.clone();
        let task = tokio::spawn(async move {
            let r = fake_worker(on_disk, &control, pid, &behavior, rx).await;
            let status = match r {
                Ok(()) => "exit status: 0".to_string(),
                Err(e) => format!("exit status: 1 ({e})"),
            };
            statuses.lock().unwrap().insert(pid, status);
        });
        self.tasks.insert(pid, (task, tx));
        Ok(pid)
    }

    fn signal(&mut self, pid: u32, signal: Signal) -> Result<SignalEffect, String> {
        let Some((task, paused)) = self.tasks.get(&pid) else { return Err(format!("no worker {pid}")) };
        match signal {
            Signal::SIGKILL => {
                task.abort();
                self.tasks.remove(&pid);
                Ok(effect(pid, signal, RunState::Gone))
            }
            Signal::SIGSTOP => {
                paused.send_replace(true);
                Ok(effect(pid, signal, RunState::Stopped))
            }
            Signal::SIGCONT => {
                paused.send_replace(false);
                Ok(effect(pid, signal, RunState::Running))
            }
            other => Err(format!("the fake does not simulate {other}")),
        }
    }

    fn exited(&mut self) -> Vec<(u32, String)> {
        let mut statuses = self.statuses.lock().unwrap();
        let done: Vec<u32> = self.tasks.iter().filter(|(_, (t, _))| t.is_finished()).map(|(&p, _)| p).collect();
        done.into_iter()
            .filter_map(|pid| {
                let status = statuses.remove(&pid)?;
                self.tasks.remove(&pid);
                Some((pid, status))
            })
            .collect()
    }

    fn alive(&mut self, pid: u32) -> bool {
        self.tasks.get(&pid).is_some_and(|(t, _)| !t.is_finished())
    }
}

/// A subtask that writes nothing but keeps the books a real sink keeps.
async fn fake_worker(
    cfg: WorkerConfig,
    control: &Path,
    pid: u32,
    b: &Behavior,
    mut paused: watch::Receiver<bool>,
) -> Result<(), String> {
    let s = cfg.subtask;
    let (mut rd, mut wr) = Channel::connect(control).await.map_err(|e| e.to_string())?.into_split();
    macro_rules! send {
        ($m:expr) => {
            wr.send(&$m).await.map_err(|e| e.to_string())?
        };
    }
    let (mut next_seq, restored) = match &cfg.restore {
        Some((_, st)) => (st.next_seq, st.committables.clone()),
        None => (0, vec![]),
    };
    // Restore: settle the committables the checkpoint carries (Flink commits
    // them at once on recovery).
    for c in restored {
        let outcome = if b.drop_restored {
            CommitOutcome::Dropped { error: "PRODUCER_FENCED (90)".into() }
        } else {
            CommitOutcome::Committed
        };
        send!(FromWorker::Event {
            event: EventKind::CommitFinished {
                transactional_id: c.transactional_id,
                checkpoint: c.checkpoint,
                restored: true,
                outcome,
                latency_us: 1,
            }
        });
    }
    if let Some(error) = &b.unsupported {
        send!(FromWorker::Event {
            event: EventKind::Unsupported { what: "keepPreparedTxn".into(), error: error.clone() }
        });
        send!(FromWorker::Failed { subtask: s, error: error.clone() });
        return Err(error.clone());
    }
    send!(FromWorker::Ready { subtask: s, pid });
    if b.always_fail {
        send!(FromWorker::Failed { subtask: s, error: "always failing".into() });
        return Err("always failing".into());
    }
    let mut pending: Vec<Committable> = vec![];
    let mut acks: std::collections::VecDeque<(tokio::time::Instant, FromWorker)> = Default::default();
    let mut txn_first: Option<u64> = None;
    let mut eoi = false;
    let mut tick = tokio::time::interval(Duration::from_millis(5));
    let mut last_heartbeat = tokio::time::Instant::now();
    loop {
        if *paused.borrow() {
            // SIGSTOP: nothing runs, nothing is read, no heartbeat.
            paused.wait_for(|p| !*p).await.map_err(|e| e.to_string())?;
            continue;
        }
        tokio::select! {
            _ = paused.changed() => {}
            msg = rd.recv::<ToWorker>() => match msg.map_err(|e| e.to_string())? {
                None => return Err("the coordinator closed the channel".into()),
                Some(ToWorker::Stop) => return Ok(()),
                Some(ToWorker::Acknowledge { .. }) => {}
                Some(ToWorker::Checkpoint { id }) => {
                    if s == 0 && b.ignore_checkpoint == Some(id) {
                        continue;
                    }
                    if let Some(first) = txn_first.take() {
                        pending.push(Committable {
                            checkpoint: id,
                            transactional_id: format!("{}-{s}-{id}", cfg.tid_prefix),
                            producer_id: 1000 + s as i64,
                            producer_epoch: 0,
                            protocol: TxnProtocol::V1,
                            records: next_seq - first,
                            first_seq: Some(first),
                            last_seq: Some(next_seq - 1),
                        });
                    }
                    // The next transaction, under the id of the checkpoint that will carry it.
                    send!(FromWorker::Event { event: EventKind::TxnOpened {
                        transactional_id: format!("{}-{s}-{}", cfg.tid_prefix, id + 1),
                        checkpoint: id + 1,
                    }});
                    let ack = FromWorker::Ack { subtask: s, id, state: SubtaskState { next_seq, committables: pending.clone() } };
                    if b.ack_delay_ms > 0 {
                        acks.push_back((tokio::time::Instant::now() + Duration::from_millis(b.ack_delay_ms), ack));
                        continue;
                    }
                    send!(ack);
                    if b.crash_after_ack.contains(&(s, cfg.attempt, id)) {
                        return Err(format!("crash after acking {id}"));
                    }
                }
                Some(ToWorker::Complete { id }) => {
                    for c in pending.iter().filter(|c| c.checkpoint <= id) {
                        send!(FromWorker::Event { event: EventKind::CommitStarted {
                            transactional_id: c.transactional_id.clone(),
                            checkpoint: c.checkpoint,
                            restored: false,
                        }});
                        send!(FromWorker::Event { event: EventKind::CommitFinished {
                            transactional_id: c.transactional_id.clone(),
                            checkpoint: c.checkpoint,
                            restored: false,
                            outcome: CommitOutcome::Committed,
                            latency_us: 1,
                        }});
                    }
                    pending.retain(|c| c.checkpoint > id);
                    send!(FromWorker::Committed { subtask: s, id });
                }
            },
            _ = tick.tick() => {
                while acks.front().is_some_and(|(due, _)| *due <= tokio::time::Instant::now()) {
                    let (_, ack) = acks.pop_front().expect("checked");
                    send!(ack);
                }
                if next_seq < cfg.records {
                    txn_first.get_or_insert(next_seq);
                    next_seq = (next_seq + b.step.max(1)).min(cfg.records);
                } else if !eoi {
                    eoi = true;
                    send!(FromWorker::EndOfInput { subtask: s });
                }
                if last_heartbeat.elapsed() >= Duration::from_millis(cfg.heartbeat_ms) {
                    last_heartbeat = tokio::time::Instant::now();
                    send!(FromWorker::Heartbeat { subtask: s, next_seq });
                }
            }
        }
    }
}

fn job(parallelism: u32, records: u64) -> JobSpec {
    JobSpec {
        register_partitions: Default::default(),
        force_transactions_v1: false,
        parallelism,
        records_per_subtask: records,
        rate_per_subtask: 0,
        checkpoint_interval_ms: 30,
        checkpoint_timeout_ms: 2_000,
        max_concurrent_checkpoints: 1,
        transaction_timeout_ms: 60_000,
        restart_delay_ms: 20,
        restart_limit: 3,
        heartbeat_timeout_ms: 1_000,
        linger_ms: 5,
        batch_size: 16 * 1024,
        partitioning: Partitioning::RoundRobin,
    }
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sinkhole-runner-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A fault record with its effect as the JSON verdict.json holds.
#[derive(Debug)]
struct Rec {
    name: String,
    fired: bool,
    confirmed: bool,
    effect: serde_json::Value,
}

struct Ran {
    outcome: ModeOutcome,
    faults: Vec<Rec>,
    events: Vec<Event>,
    configs: Vec<WorkerConfig>,
    dir: PathBuf,
}

impl Ran {
    fn coordinator(&self) -> Vec<&EventKind> {
        self.events.iter().filter(|e| e.source == Source::Coordinator).map(|e| &e.kind).collect()
    }
    fn count(&self, f: impl Fn(&EventKind) -> bool) -> usize {
        self.events.iter().filter(|e| f(&e.kind)).count()
    }
    fn position(&self, f: impl Fn(&EventKind) -> bool) -> Option<usize> {
        self.events.iter().position(|e| f(&e.kind))
    }
    fn persisted(&self) -> Vec<u64> {
        self.events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::CheckpointPersisted { id, .. } => Some(id),
                _ => None,
            })
            .collect()
    }
    fn cleanup(self) {
        std::fs::remove_dir_all(&self.dir).unwrap();
    }
}

/// A cluster with no nodes, for running the coordinator without brokers
/// (tests of its state machine): every broker fault fails, visibly.
#[derive(Debug, Default)]
struct NoBrokers;

impl ClusterNodes for NoBrokers {
    fn node_ids(&self) -> Vec<i32> {
        vec![]
    }
    fn bootstrap_list(&self) -> Vec<String> {
        vec!["127.0.0.1:9".into()]
    }
    fn bootstrap(&self) -> String {
        "127.0.0.1:9".into()
    }
    fn act_with(
        &mut self,
        node: i32,
        action: NodeAction,
        _timeout: Duration,
        _on_down: Option<OnDown>,
    ) -> ClusterFuture<'_, NodeEffect> {
        Box::pin(async move { Err(ClusterError::Unsupported(format!("no cluster: cannot {action:?} node {node}"))) })
    }
    fn wait_ready(&mut self, _timeout: Duration) -> ClusterFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }
}

impl Cluster for NoBrokers {
    fn backend(&self) -> &'static str {
        "none"
    }
    fn teardown(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn find_coordinator(&mut self, transactional_id: &str) -> ClusterFuture<'_, i32> {
        let e = ClusterError::Unsupported(format!("no cluster: no coordinator for {transactional_id}"));
        Box::pin(async move { Err(e) })
    }
    fn controller(&mut self) -> ClusterFuture<'_, i32> {
        Box::pin(async { Err(ClusterError::Unsupported("no cluster: no controller".into())) })
    }
    fn leader_of(&mut self, topic: &str, partition: i32) -> ClusterFuture<'_, i32> {
        let e = ClusterError::Unsupported(format!("no cluster: no leader of {topic}-{partition}"));
        Box::pin(async move { Err(e) })
    }
    fn under_replicated(&mut self) -> ClusterFuture<'_, usize> {
        Box::pin(async { Err(ClusterError::Unsupported("no cluster: nothing to count".into())) })
    }
}

async fn run(name: &str, job: JobSpec, behavior: Behavior, faults: Vec<FaultSpec>) -> Ran {
    run_with(name, job, behavior, faults, &mut NoBrokers).await
}

async fn run_with<B: Cluster>(
    name: &str,
    job: JobSpec,
    behavior: Behavior,
    faults: Vec<FaultSpec>,
    brokers: &mut B,
) -> Ran {
    let dir = dir(name);
    let (launcher, configs) = FakeLauncher::new(Behavior { step: behavior.step.max(10), ..behavior });
    let cfg = JobConfig {
        run_id: format!("test-{name}"),
        mode: SinkMode::Legacy,
        dir: ModeDir::at(dir.clone()),
        job,
        topic: "out".into(),
        partitions: 3,
        tid_prefix: format!("t-{name}"),
        progress: false,
        sink_listener: None,
        share: None,
        security: None,
    };
    let outcome = tokio::time::timeout(Duration::from_secs(30), super::run_job(cfg, launcher, faults, brokers))
        .await
        .expect("the job ended within 30 s")
        .unwrap();
    let events = sinkhole_history::read(&outcome.history).unwrap().events;
    let configs = configs.lock().unwrap().clone();
    let faults = outcome
        .faults
        .iter()
        .map(|f| Rec { name: f.name.clone(), fired: f.fired, confirmed: f.confirmed, effect: f.effect.to_value() })
        .collect();
    Ran { outcome, faults, events, configs, dir }
}

/// Every committable that any checkpoint carried was committed (or dropped)
/// at least once, and the committed ones together cover every record.
fn assert_everything_committed(r: &Ran, parallelism: u32, records: u64) {
    let mut covered = vec![0u64; parallelism as usize];
    let store = CheckpointStore::open(r.dir.join("checkpoints")).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for id in store.ids().unwrap() {
        for (s, st) in store.load(id).unwrap().subtasks.iter().enumerate() {
            for c in &st.committables {
                if seen.insert(c.transactional_id.clone()) {
                    covered[s] += c.records;
                }
                let settled = r.count(|k| {
                    matches!(k, EventKind::CommitFinished { transactional_id, .. } if *transactional_id == c.transactional_id)
                });
                assert!(settled >= 1, "{} of checkpoint {id} never settled", c.transactional_id);
            }
        }
    }
    // Restores replay from the stored offset, so a crash can only lose
    // uncheckpointed work, which is then redone: coverage ≥ the input.
    for (s, n) in covered.iter().enumerate() {
        assert!(*n >= records, "subtask {s}: committables cover {n} of {records} records");
    }
}

#[tokio::test]
async fn a_normal_run_checkpoints_commits_and_finishes_with_a_final_checkpoint() {
    let r = run("normal", job(2, 300), Behavior::default(), vec![]).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    assert_eq!(r.outcome.attempts, 1);
    let persisted = r.persisted();
    assert!(persisted.len() >= 2, "periodic checkpoints and the final one: {persisted:?}");
    assert_eq!(r.outcome.checkpoints_completed, persisted.len() as u64);
    // Ids ascend from 1 and none was aborted.
    assert_eq!(persisted, (1..=persisted.len() as u64).collect::<Vec<_>>());
    assert_eq!(r.count(|k| matches!(k, EventKind::CheckpointAborted { .. })), 0);
    // Each one: triggered, acked by both, persisted (a file), then notified.
    let store = CheckpointStore::open(r.dir.join("checkpoints")).unwrap();
    for &id in &persisted {
        let t = r.position(|k| *k == EventKind::CheckpointTriggered { id }).unwrap();
        let p = r.position(|k| matches!(k, EventKind::CheckpointPersisted { id: i, .. } if *i == id)).unwrap();
        let n = r.position(|k| *k == EventKind::CheckpointNotified { id }).unwrap();
        assert!(t < p && p < n, "checkpoint {id}: triggered {t}, persisted {p}, notified {n}");
        assert_eq!(r.count(|k| matches!(k, EventKind::CheckpointAcked { id: i, .. } if *i == id)), 2);
        assert_eq!(store.load(id).unwrap().subtasks.len(), 2);
    }
    // The final checkpoint holds the end of the input of every subtask; the
    // job finished after its notification, with both workers stopped on request.
    let last = *persisted.last().unwrap();
    let fin = store.load(last).unwrap();
    assert!(fin.subtasks.iter().all(|s| s.next_seq == 300), "{fin:?}");
    let notified = r.position(|k| *k == EventKind::CheckpointNotified { id: last }).unwrap();
    let finished = r.position(|k| matches!(k, EventKind::JobFinished { .. })).unwrap();
    assert!(notified < finished);
    assert_eq!(finished, r.events.len() - 1, "JobFinished is the last event");
    assert_eq!(r.count(|k| matches!(k, EventKind::WorkerExited { expected: true, .. })), 2);
    assert_eq!(r.count(|k| matches!(k, EventKind::WorkerExited { expected: false, .. })), 0);
    assert_everything_committed(&r, 2, 300);
    assert_eq!(r.outcome.committables_dropped, 0);
    // Worker events are in the history under their subtask.
    assert!(r
        .events
        .iter()
        .any(|e| e.source == Source::Worker { subtask: 1 } && matches!(e.kind, EventKind::CommitFinished { .. })));
    // Monotonic time stamps.
    assert!(r.events.windows(2).all(|w| w[0].mono_us <= w[1].mono_us || w[1].source != Source::Coordinator));
    // Configs: one attempt, ids prefix, no restore.
    assert_eq!(r.configs.len(), 2);
    assert!(r.configs.iter().all(|c| c.attempt == 0 && c.restore.is_none() && c.tid_prefix == "t-normal"));
    assert!(r.dir.join("workers/worker-1-attempt-0.json").exists());
    assert!(!r.dir.join("control.sock").exists(), "the socket is removed at the end");
    r.cleanup();
}

#[tokio::test]
async fn a_worker_failure_restores_every_subtask_from_the_latest_persisted_checkpoint() {
    let behavior = Behavior { crash_after_ack: vec![(1, 0, 2)], ..Behavior::default() };
    let r = run("failover", job(2, 400), behavior, vec![]).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    assert_eq!(r.outcome.attempts, 2);
    let failure = r.events.iter().find_map(|e| match &e.kind {
        EventKind::FailureDetected { subtask, reason } => Some((*subtask, reason.clone())),
        _ => None,
    });
    let (subtask, reason) = failure.expect("a failure was detected");
    assert_eq!(subtask, Some(1), "{reason}");
    assert!(reason.contains("exited") || reason.contains("closed"), "{reason}");
    let from = r
        .events
        .iter()
        .find_map(|e| match e.kind {
            EventKind::Restarting { attempt: 1, from_checkpoint, delay_ms } => {
                assert_eq!(delay_ms, 20);
                Some(from_checkpoint)
            }
            _ => None,
        })
        .expect("restarting");
    // Checkpoint 1 completed before the crash; 2 was acked by the crashing
    // subtask, so it may have completed too: the restore is from whichever is
    // the latest persisted when the failure was handled.
    let from = from.expect("a checkpoint was complete");
    let failed_at = r.position(|k| matches!(k, EventKind::FailureDetected { .. })).unwrap();
    let latest_before = r.events[..failed_at]
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::CheckpointPersisted { id, .. } => Some(id),
            _ => None,
        })
        .max();
    assert_eq!(Some(from), latest_before);
    // Every subtask of attempt 1 got exactly its part of that checkpoint.
    let stored = CheckpointStore::open(r.dir.join("checkpoints")).unwrap().load(from).unwrap();
    let attempt1: Vec<&WorkerConfig> = r.configs.iter().filter(|c| c.attempt == 1).collect();
    assert_eq!(attempt1.len(), 2);
    for c in attempt1 {
        assert_eq!(c.restore, Some((from, stored.subtasks[c.subtask as usize].clone())), "subtask {}", c.subtask);
    }
    assert_eq!(r.count(|k| *k == EventKind::JobStarted { attempt: 1, restored_from: Some(from) }), 1);
    // The survivor was killed by the failover (expected), the crash was not.
    assert!(r.count(|k| matches!(k, EventKind::WorkerExited { subtask: 1, expected: false, .. })) == 1);
    assert!(r.count(|k| matches!(k, EventKind::WorkerExited { subtask: 0, expected: true, .. })) >= 1);
    // Ids continue after the restore: none is reused.
    let triggered: Vec<u64> = r
        .events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::CheckpointTriggered { id } => Some(id),
            _ => None,
        })
        .collect();
    assert!(triggered.windows(2).all(|w| w[0] < w[1]), "{triggered:?}");
    assert_everything_committed(&r, 2, 400);
    r.cleanup();
}

#[tokio::test]
async fn more_failures_than_the_restart_limit_fail_the_job() {
    let mut j = job(2, 100);
    j.restart_limit = 2;
    let r = run("limit", j, Behavior { always_fail: true, ..Behavior::default() }, vec![]).await;
    match &r.outcome.job {
        JobOutcome::Failed { reason } => {
            assert!(reason.contains("restart_limit 2") && reason.contains("always failing"), "{reason}")
        }
        other => panic!("expected a failed job, got {other:?}"),
    }
    assert_eq!(r.outcome.attempts, 3, "the first start and two restarts");
    assert_eq!(r.count(|k| matches!(k, EventKind::FailureDetected { .. })), 3);
    assert_eq!(r.count(|k| matches!(k, EventKind::Restarting { .. })), 2);
    assert_eq!(r.count(|k| matches!(k, EventKind::JobStarted { .. })), 3);
    assert!(
        matches!(r.events.last().unwrap().kind, EventKind::JobFinished { ref outcome, attempts: 3 } if outcome.starts_with("failed"))
    );
    r.cleanup();
}

#[tokio::test]
async fn a_checkpoint_that_is_not_acked_in_time_is_aborted_and_the_next_one_completes() {
    let mut j = job(2, 600);
    j.checkpoint_interval_ms = 20;
    j.checkpoint_timeout_ms = 150;
    let r = run("timeout", j, Behavior { ignore_checkpoint: Some(1), step: 5, ..Behavior::default() }, vec![]).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    let aborted = r
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::CheckpointAborted { id: 1, reason } => Some(reason.clone()),
            _ => None,
        })
        .expect("checkpoint 1 aborted");
    assert!(aborted.contains("expired after 150 ms") && aborted.contains("[0]"), "{aborted}");
    let persisted = r.persisted();
    assert!(!persisted.contains(&1) && persisted.contains(&2), "{persisted:?}");
    assert!(!r.dir.join("checkpoints/chk-1.json").exists());
    // With one checkpoint at a time, 2 was triggered only after 1 expired.
    let abort_pos = r.position(|k| matches!(k, EventKind::CheckpointAborted { id: 1, .. })).unwrap();
    let trig2 = r.position(|k| *k == EventKind::CheckpointTriggered { id: 2 }).unwrap();
    assert!(abort_pos < trig2);
    assert_eq!(r.outcome.attempts, 1, "an expired checkpoint is not a failover");
    assert_everything_committed(&r, 2, 600);
    r.cleanup();
}

#[tokio::test]
async fn unsupported_ends_the_job_at_once_with_the_exact_error() {
    let error = "InitProducerId v6 keepPreparedTxn=true: UNSUPPORTED_VERSION (35)".to_string();
    let r =
        run("unsupported", job(2, 100), Behavior { unsupported: Some(error.clone()), ..Behavior::default() }, vec![])
            .await;
    // What was refused, then the broker's exact answer.
    assert_eq!(r.outcome.job, JobOutcome::Unsupported { error: format!("keepPreparedTxn → {error}") });
    assert_eq!(r.outcome.attempts, 1);
    assert_eq!(r.count(|k| matches!(k, EventKind::Restarting { .. })), 0);
    assert!(r.count(|k| matches!(k, EventKind::Unsupported { .. })) >= 1);
    r.cleanup();
}

#[tokio::test]
async fn a_kill_between_persist_and_notify_skips_the_notification_and_restores_the_committables() {
    let faults = vec![FaultSpec {
        name: Some("crash in the window".into()),
        kind: Fault::KillWorkers(Workers { target: Some(Target::Ids(vec![0])) }),
        when: When::CheckpointPersisted(2),
        duration_ms: None,
        times: None,
        after_ms: None,
    }];
    let r = run("window", job(2, 400), Behavior { drop_restored: true, ..Behavior::default() }, faults).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    assert_eq!(r.outcome.attempts, 2);
    let f = &r.faults[0];
    assert!(f.fired && f.confirmed, "{f:?}");
    assert_eq!(f.effect["start"]["trigger"]["after_checkpoint_persisted"], 2);
    assert_eq!(f.effect["start"]["workers"][0]["signal"]["signal"], "SIGKILL");
    // Persisted, fault, no notification of 2, failover, restore from 2.
    let persisted = r.position(|k| matches!(k, EventKind::CheckpointPersisted { id: 2, .. })).unwrap();
    let fault = r.position(|k| matches!(k, EventKind::FaultStarted { .. })).unwrap();
    assert!(persisted < fault);
    assert_eq!(r.count(|k| *k == EventKind::CheckpointNotified { id: 2 }), 0);
    assert_eq!(r.count(|k| *k == EventKind::Restarting { attempt: 1, from_checkpoint: Some(2), delay_ms: 20 }), 1);
    // The restored workers settled checkpoint 2's committables: dropped here,
    // as legacy does after a timeout abort, and counted.
    let chk2 = CheckpointStore::open(r.dir.join("checkpoints")).unwrap().load(2).unwrap();
    let carried: u64 = chk2.subtasks.iter().map(|s| s.committables.len() as u64).sum();
    assert!(carried >= 2, "{chk2:?}");
    assert_eq!(r.outcome.committables_dropped, carried);
    r.cleanup();
}

#[tokio::test]
async fn a_long_pause_trips_the_heartbeat_timeout_and_a_late_fault_is_skipped() {
    let mut j = job(2, 600);
    j.heartbeat_timeout_ms = 120;
    let faults = vec![
        FaultSpec {
            name: None,
            kind: Fault::PauseWorkers(Workers { target: Some(Target::Ids(vec![1])) }),
            when: When::AtMs(40),
            duration_ms: Some(400),
            times: None,
            after_ms: None,
        },
        FaultSpec {
            name: None,
            kind: Fault::KillWorkers(Workers { target: None }),
            when: When::AtMs(600_000),
            duration_ms: None,
            times: None,
            after_ms: None,
        },
    ];
    let r = run("pause", j, Behavior { step: 5, ..Behavior::default() }, faults).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    let pause = &r.faults[0];
    assert_eq!(pause.name, "pause-workers-0");
    assert!(pause.fired && pause.confirmed, "{pause:?}");
    let reason = r
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::FailureDetected { subtask: Some(1), reason } => Some(reason.clone()),
            _ => None,
        })
        .expect("the paused worker was declared failed");
    assert!(reason.contains("heartbeat_timeout_ms 120"), "{reason}");
    // The pause ended (the failover had killed the paused worker by then).
    assert_eq!(r.count(|k| matches!(k, EventKind::FaultEnded { name, .. } if name == "pause-workers-0")), 1);
    let late = &r.faults[1];
    assert!(!late.fired && !late.confirmed, "{late:?}");
    assert_eq!(r.count(|k| matches!(k, EventKind::FaultSkipped { name, .. } if name == "kill-workers-1")), 1);
    r.cleanup();
}

#[tokio::test]
async fn a_job_outage_keeps_the_job_down_for_its_duration() {
    let faults = vec![FaultSpec {
        name: Some("outage".into()),
        kind: Fault::JobOutage(Outage { target: None }),
        when: When::CheckpointPersisted(1),
        duration_ms: Some(250),
        times: None,
        after_ms: None,
    }];
    let r = run("outage", job(2, 300), Behavior::default(), faults).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    assert_eq!(r.count(|k| *k == EventKind::Restarting { attempt: 1, from_checkpoint: Some(1), delay_ms: 250 }), 1);
    let f = &r.faults[0];
    assert!(f.fired && f.confirmed, "{f:?}");
    let down = f.effect["end"]["down_ms"].as_u64().unwrap();
    assert!(down >= 250, "{f:?}");
    let killed =
        r.count(|k| matches!(k, EventKind::WorkerExited { expected: false, status, .. } if status.contains("outage")));
    assert_eq!(killed, 2);
    r.cleanup();
}

fn outage_after(after_ms: u64) -> Vec<FaultSpec> {
    vec![FaultSpec {
        after_ms: Some(after_ms),
        duration_ms: Some(100),
        ..fault("outage", Fault::JobOutage(Outage { target: None }), When::CheckpointPersisted(1))
    }]
}

#[tokio::test]
async fn after_ms_fires_an_event_triggered_fault_that_long_after_its_event() {
    let r = run("after-ms", job(2, 3000), Behavior::default(), outage_after(100)).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    let f = &r.faults[0];
    assert!(f.fired && f.confirmed, "{f:?}");
    assert_eq!(f.effect["start"]["trigger"]["after_ms"], 100, "{f:?}");
    let at = |m: &dyn Fn(&EventKind) -> bool| r.events.iter().find(|e| m(&e.kind)).map(|e| e.mono_us).unwrap();
    let persisted = at(&|k| matches!(k, EventKind::CheckpointPersisted { id: 1, .. }));
    let started = at(&|k| matches!(k, EventKind::FaultStarted { name, .. } if name == "outage"));
    assert!(started >= persisted + 100_000, "fired {} µs after checkpoint 1 was persisted", started - persisted);
    // The job was not held for it: checkpoint 2 came in between.
    let second = at(&|k| matches!(k, EventKind::CheckpointTriggered { id: 2 }));
    assert!(second < started, "checkpoint 2 triggered at {second}, the fault at {started}");
    r.cleanup();
}

#[tokio::test]
async fn a_fault_whose_job_ends_within_its_after_ms_did_not_fire_and_says_why() {
    let r = run("after-ms-late", job(2, 300), Behavior::default(), outage_after(60_000)).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    let f = &r.faults[0];
    assert!(!f.fired && !f.confirmed, "{f:?}");
    let why = f.effect["skipped"].as_str().unwrap();
    assert!(why.contains("its event came, but the job ended") && why.contains("after_ms (60000 ms)"), "{why}");
    r.cleanup();
}

#[test]
fn progress_numbers_are_grouped_by_thousands() {
    use crate::subject::rig_job::coordinator::group_digits;
    assert_eq!(group_digits(0), "0");
    assert_eq!(group_digits(400), "400");
    assert_eq!(group_digits(12_400), "12 400");
    assert_eq!(group_digits(1_040_000), "1 040 000");
}

/// A cluster of three nodes that only keeps a log of what was done to it;
/// starts and restarts take a while, like a JVM that must become ready.
#[derive(Default)]
struct FakeBrokers {
    log: Vec<(std::time::Instant, i32, NodeAction)>,
    lookups: Vec<String>,
    ready_checks: usize,
    urp_polls: usize,
    /// (stop, start) ms: a cluster whose stops and starts take that long
    /// (a restart both); None: starts and restarts take 300 ms, the rest nothing.
    slow: Option<(u64, u64)>,
    /// Node 1 alone instead of three.
    one: bool,
}

impl ClusterNodes for FakeBrokers {
    fn node_ids(&self) -> Vec<i32> {
        if self.one {
            vec![1]
        } else {
            vec![1, 2, 3]
        }
    }
    fn bootstrap_list(&self) -> Vec<String> {
        vec!["127.0.0.1:1".into()]
    }
    fn bootstrap(&self) -> String {
        "127.0.0.1:1".into()
    }
    fn act_with(
        &mut self,
        node: i32,
        action: NodeAction,
        _timeout: Duration,
        on_down: Option<OnDown>,
    ) -> ClusterFuture<'_, NodeEffect> {
        Box::pin(async move {
            let slow = matches!(action, NodeAction::Restart | NodeAction::Start);
            // How long the stop half and the start half take.
            let (stop_ms, start_ms) = match (self.slow, action) {
                (Some((stop, _)), NodeAction::Stop) => (stop, 0),
                (Some((_, start)), NodeAction::Start) => (0, start),
                (Some((stop, start)), NodeAction::Restart) => (stop, start),
                (Some(_), _) => (0, 0),
                (None, _) if slow => (0, 300),
                (None, _) => (0, 0),
            };
            let signal = match action {
                NodeAction::Kill => Some(Signal::SIGKILL),
                NodeAction::Pause => Some(Signal::SIGSTOP),
                NodeAction::Resume => Some(Signal::SIGCONT),
                _ => Some(Signal::SIGTERM),
            };
            let signals: Vec<SignalEffect> = signal.map(|s| effect(1, s, RunState::Gone)).into_iter().collect();
            tokio::time::sleep(Duration::from_millis(stop_ms)).await;
            if let Some(tx) = on_down {
                // Down now; the start half is what takes a while.
                let down = NodeEffect { signals: signals.clone(), ..NodeEffect::new(node, action) };
                let _ = tx.send(down);
            }
            tokio::time::sleep(Duration::from_millis(start_ms)).await;
            self.log.push((std::time::Instant::now(), node, action));
            Ok(NodeEffect {
                node_id: node,
                action,
                signals,
                new_pid: slow.then_some(2),
                ready: slow.then_some(true),
                elapsed_ms: stop_ms + start_ms,
                commands: vec![],
            })
        })
    }
    fn wait_ready(&mut self, _timeout: Duration) -> ClusterFuture<'_, ()> {
        self.ready_checks += 1;
        Box::pin(async { Ok(()) })
    }
}

impl Cluster for FakeBrokers {
    fn backend(&self) -> &'static str {
        "fake"
    }
    fn teardown(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn find_coordinator(&mut self, transactional_id: &str) -> ClusterFuture<'_, i32> {
        self.lookups.push(transactional_id.to_string());
        Box::pin(async { Ok(3) })
    }
    fn controller(&mut self) -> ClusterFuture<'_, i32> {
        self.lookups.push("controller".into());
        Box::pin(async { Ok(2) })
    }
    fn leader_of(&mut self, topic: &str, partition: i32) -> ClusterFuture<'_, i32> {
        self.lookups.push(format!("leader {topic}-{partition}"));
        Box::pin(async { Ok(1) })
    }
    fn under_replicated(&mut self) -> ClusterFuture<'_, usize> {
        // Right after a restart one partition is still catching up.
        let restarts = self.log.iter().filter(|(_, _, a)| *a == NodeAction::Restart).count();
        self.urp_polls += 1;
        let n = usize::from(self.urp_polls % 2 == 1 && restarts > 0);
        Box::pin(async move { Ok(n) })
    }
}

#[tokio::test]
async fn the_fake_cluster_tells_a_restart_down_before_it_ends() {
    let mut brokers = FakeBrokers::default();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let act = async { brokers.act_with(2, NodeAction::Restart, Duration::from_secs(1), Some(tx)).await.unwrap() };
    let watch = async { (rx.await.unwrap(), std::time::Instant::now()) };
    let (done, (down, down_at)) = tokio::join!(act, watch);
    assert_eq!((down.node_id, down.action, down.new_pid, down.ready), (2, NodeAction::Restart, None, None));
    assert_eq!(done.new_pid, Some(2));
    let (restarted_at, _, _) = brokers.log[0];
    assert!(down_at < restarted_at, "down is told before the restart ends");
}

#[tokio::test]
async fn broker_faults_run_beside_the_job_and_everything_is_healed_at_the_end() {
    let faults = vec![
        FaultSpec {
            name: Some("restart".into()),
            kind: Fault::BrokerRestart(Nodes { target: Target::Named(sinkhole_scenario::NamedTarget::TxnCoordinator) }),
            when: When::AtMs(150),
            duration_ms: None,
            times: None,
            after_ms: None,
        },
        FaultSpec {
            name: Some("kill-2".into()),
            kind: Fault::BrokerKill(Nodes { target: Target::Ids(vec![2]) }),
            when: When::CheckpointPersisted(1),
            duration_ms: Some(100),
            times: None,
            after_ms: None,
        },
        FaultSpec {
            name: Some("pause-coordinator-of-1".into()),
            kind: Fault::BrokerPause(Nodes { target: Target::Coordinator { txn_coordinator: 1 } }),
            when: When::AtMs(160),
            duration_ms: None,
            times: None,
            after_ms: None,
        },
    ];
    let mut brokers = FakeBrokers::default();
    let r =
        run_with("brokers", job(2, 1_500), Behavior { step: 10, ..Behavior::default() }, faults, &mut brokers).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    for f in &r.faults {
        assert!(f.fired && f.confirmed, "{f:?}");
    }
    // The restart took 300 ms and the job went on meanwhile.
    let started = r.position(|k| matches!(k, EventKind::FaultStarted { name, .. } if name == "restart")).unwrap();
    let ended = r.position(|k| matches!(k, EventKind::FaultEnded { name, .. } if name == "restart")).unwrap();
    let during =
        r.events[started..ended].iter().filter(|e| matches!(e.kind, EventKind::CheckpointPersisted { .. })).count();
    assert!(during >= 2, "{during} checkpoints completed during the restart");
    // The coordinator targets were looked up by the ids open at that moment.
    assert_eq!(brokers.lookups.len(), 2, "{:?}", brokers.lookups);
    assert!(brokers.lookups[0].starts_with("t-brokers-0-"), "{:?}", brokers.lookups);
    assert!(brokers.lookups[1].starts_with("t-brokers-1-"), "{:?}", brokers.lookups);
    let restart = &r.faults[0];
    assert_eq!(restart.effect["end"]["coordinator"]["node"], 3);
    assert_eq!(restart.effect["end"]["coordinator"]["was_coordinator"], true);
    // Kill 2 (inside the window of checkpoint 1), start it 100 ms later; the
    // pause without a duration is resumed when the job ends; then the
    // cluster is waited for.
    let actions: Vec<(i32, NodeAction)> = brokers.log.iter().map(|(_, n, a)| (*n, *a)).collect();
    for want in [
        (3, NodeAction::Restart),
        (2, NodeAction::Kill),
        (2, NodeAction::Start),
        (3, NodeAction::Pause),
        (3, NodeAction::Resume),
    ] {
        assert_eq!(actions.iter().filter(|a| **a == want).count(), 1, "{want:?} in {actions:?}");
    }
    let at = |want: (i32, NodeAction)| brokers.log.iter().find(|(_, n, a)| (*n, *a) == want).unwrap().0;
    assert!(at((2, NodeAction::Start)).duration_since(at((2, NodeAction::Kill))) >= Duration::from_millis(100));
    assert_eq!(actions.last(), Some(&(3, NodeAction::Resume)), "{actions:?}");
    assert_eq!(brokers.ready_checks, 1);
    let kill_persisted = r.position(|k| matches!(k, EventKind::CheckpointPersisted { id: 1, .. })).unwrap();
    let kill = r.position(|k| matches!(k, EventKind::FaultStarted { name, .. } if name == "kill-2")).unwrap();
    let notified = r.position(|k| *k == EventKind::CheckpointNotified { id: 1 }).unwrap();
    assert!(kill_persisted < kill && kill < notified, "the kill is inside the window");
    let resumed =
        r.position(|k| matches!(k, EventKind::FaultEnded { name, .. } if name == "pause-coordinator-of-1")).unwrap();
    let finished = r.position(|k| matches!(k, EventKind::JobFinished { .. })).unwrap();
    assert!(finished < resumed);
    r.cleanup();
}

/// A protocol fault that falls due while the only broker is down (killed or stopped) waits for
/// it to be back (it would meet no frame), and says when it was due; on three brokers it does
/// not wait.
#[tokio::test]
async fn a_frame_fault_due_while_the_only_broker_is_down_waits_for_its_return() {
    let down = |stop: bool| {
        let nodes = Nodes { target: Target::Ids(vec![1]) };
        if stop {
            Fault::BrokerStop(nodes)
        } else {
            Fault::BrokerKill(nodes)
        }
    };
    for (one, stop) in [(true, false), (true, true), (false, false)] {
        let faults = vec![
            FaultSpec { duration_ms: Some(50), ..fault("kill-1", down(stop), When::AtMs(50)) },
            fault(
                "delay",
                Fault::ProtocolDelay(FramesDelay {
                    from: None,
                    to: None,
                    delay_ms: 10,
                    jitter_ms: None,
                    probability: None,
                    apis: vec!["Produce".into()],
                    frames: None,
                    transactional_id: None,
                    nth: None,
                }),
                When::AtMs(150),
            ),
        ];
        // The broker is back 500 ms after its kill: its start takes 450 ms.
        let mut brokers = FakeBrokers { slow: Some((0, 450)), one, ..FakeBrokers::default() };
        let name = match (one, stop) {
            (true, false) => "one-broker",
            (true, true) => "one-broker-stopped",
            _ => "three-brokers",
        };
        let r = run_with(name, job(1, 3_000), Behavior { step: 10, ..Behavior::default() }, faults, &mut brokers).await;
        let back = r.position(|k| matches!(k, EventKind::FaultEnded { name, .. } if name == "kill-1")).unwrap();
        let delay = r.position(|k| matches!(k, EventKind::FaultStarted { name, .. } if name == "delay"));
        let delay = delay.unwrap_or_else(|| panic!("{name}: the delay never fired: {:#?}", r.faults));
        let EventKind::FaultStarted { effect, .. } = &r.events[delay].kind else { unreachable!() };
        let trigger = &effect["trigger"];
        if one {
            assert!(back < delay, "{name}: the delay fired before the broker was back");
            assert_eq!(trigger["deferred_from_ms"], 150, "{name}: {trigger}");
            assert!(trigger["at_ms"].as_u64().unwrap() >= 500, "{name}: {trigger}");
        } else {
            assert!(delay < back, "{name}: the delay waited for one broker of three");
            assert!(trigger.get("deferred_from_ms").is_none(), "{name}: {trigger}");
        }
        r.cleanup();
    }
}

/// `run_mode` must be usable from a spawned task.
#[allow(dead_code)]
fn run_mode_is_send(run: super::ModeRun<'static>, cluster: &'static mut dyn Cluster) {
    fn is_send<T: Send>(_: &T) {}
    is_send(&super::run_mode(run, cluster));
}

fn fault(name: &str, kind: Fault, when: When) -> FaultSpec {
    FaultSpec { name: Some(name.into()), ..FaultSpec::new(kind, when) }
}

fn committed_at(r: &Ran, subtask: u32, tid: &str) -> Option<usize> {
    r.events.iter().position(|e| {
        e.source == Source::Worker { subtask }
            && matches!(&e.kind, EventKind::CommitFinished { transactional_id, .. } if transactional_id == tid)
    })
}

#[tokio::test]
async fn a_dropped_notification_is_covered_by_the_next_one() {
    let target = Some(Target::Ids(vec![1]));
    let f =
        fault("drop", Fault::DropNotification(Notification { target, checkpoint: None }), When::CheckpointPersisted(2));
    let r = run("dropnote", job(2, 600), Behavior { step: 5, ..Behavior::default() }, vec![f]).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    let rec = &r.faults[0];
    assert!(rec.fired && rec.confirmed, "{rec:?}");
    assert_eq!(rec.effect["end"]["checkpoint"], 2);
    assert_eq!(rec.effect["end"]["withheld_from"], serde_json::json!([1]));
    assert_eq!(rec.effect["end"]["missed"][0]["subtask"], 1);
    // Subtask 0 was sent checkpoint 2's notification (the fault withheld it
    // from subtask 1 alone, above) and committed after it; subtask 1 could
    // commit 2 only after the notification of 3, which covers 2. When subtask
    // 0's commit lands relative to the notification of 3 is not ordered: as in
    // Flink, the barrier of 3 may reach it before the notification of 2 does.
    let notified2 = r.position(|k| *k == EventKind::CheckpointNotified { id: 2 }).unwrap();
    let notified3 = r.position(|k| *k == EventKind::CheckpointNotified { id: 3 }).unwrap();
    let c0 = committed_at(&r, 0, "t-dropnote-0-2").expect("subtask 0 committed 2");
    let c1 = committed_at(&r, 1, "t-dropnote-1-2").expect("subtask 1 committed 2 later");
    assert!(c0 > notified2, "{c0} {notified2}");
    assert!(c1 > notified3, "subtask 1 committed 2 at {c1}, the notification of 3 is at {notified3}");
    assert_eq!(r.outcome.attempts, 1);
    assert_everything_committed(&r, 2, 600);
    r.cleanup();
}

#[tokio::test]
async fn a_delayed_notification_arrives_late_while_the_job_goes_on() {
    let late = NotificationDelay { target: Some(Target::Ids(vec![0])), checkpoint: Some(2), delay_ms: 200 };
    let f = fault("late", Fault::DelayNotification(late), When::AtMs(0));
    let r = run("delaynote", job(2, 900), Behavior { step: 5, ..Behavior::default() }, vec![f]).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    let rec = &r.faults[0];
    assert!(rec.fired && rec.confirmed, "{rec:?}");
    assert_eq!(rec.effect["end"]["late_notifications"][0]["sent"], true);
    let at = |i: usize| r.events[i].mono_us;
    let notified2 = r.position(|k| *k == EventKind::CheckpointNotified { id: 2 }).unwrap();
    let notified3 = r.position(|k| *k == EventKind::CheckpointNotified { id: 3 }).unwrap();
    let sent_late = r.position(|k| matches!(k, EventKind::FaultEnded { name, .. } if name == "late")).unwrap();
    assert!(at(sent_late) - at(notified2) >= 200_000, "sent {} µs after", at(sent_late) - at(notified2));
    // Subtask 1 committed 2 after its notification; subtask 0 had none for 2
    // in time and committed it only with a later one (3 covers 2). Subtask 1's
    // commit is not ordered against the notification of 3 (see the test above).
    let c0 = committed_at(&r, 0, "t-delaynote-0-2").unwrap();
    let c1 = committed_at(&r, 1, "t-delaynote-1-2").unwrap();
    assert!(c1 > notified2, "{c1} {notified2}");
    assert!(c0 > notified3, "{c0} {notified3}");
    // The coordinator kept checkpointing while the notification was held.
    let persisted_meanwhile = r.events[notified2..sent_late]
        .iter()
        .filter(|e| matches!(e.kind, EventKind::CheckpointPersisted { .. }))
        .count();
    assert!(persisted_meanwhile >= 2, "{persisted_meanwhile}");
    assert_everything_committed(&r, 2, 900);
    r.cleanup();
}

#[tokio::test]
async fn a_coordinator_crash_after_persist_restores_and_commits_the_unnotified_checkpoint() {
    let f = fault("crash", Fault::CoordinatorCrash(NoParams {}), When::CheckpointPersisted(2));
    let r = run("crash", job(2, 500), Behavior::default(), vec![f]).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    let rec = &r.faults[0];
    assert!(rec.fired && rec.confirmed, "{rec:?}");
    assert_eq!(rec.effect["start"]["persisted_not_notified"], 2);
    assert_eq!(rec.effect["start"]["workers"].as_array().unwrap().len(), 2);
    assert_eq!(rec.effect["end"]["notified"], false);
    assert_eq!(r.count(|k| *k == EventKind::CheckpointNotified { id: 2 }), 0);
    assert_eq!(r.count(|k| matches!(k, EventKind::Restarting { from_checkpoint: Some(2), .. })), 1);
    // The restore committed every committable checkpoint 2 carried.
    let chk2 = CheckpointStore::open(r.dir.join("checkpoints")).unwrap().load(2).unwrap();
    for st in &chk2.subtasks {
        for c in &st.committables {
            let restored = r.count(|k| {
                matches!(k, EventKind::CommitFinished { transactional_id, restored: true, outcome: CommitOutcome::Committed, .. }
                    if *transactional_id == c.transactional_id)
            });
            assert_eq!(restored, 1, "{} committed on restore", c.transactional_id);
        }
    }
    assert_everything_committed(&r, 2, 500);
    r.cleanup();
}

#[tokio::test]
async fn a_declined_checkpoint_is_aborted_and_the_next_one_carries_its_committables() {
    let decline = Notification { target: Some(Target::Ids(vec![1])), checkpoint: Some(2) };
    let f = fault("decline", Fault::DeclineCheckpoint(decline), When::AtMs(0));
    let r = run("decline", job(2, 600), Behavior { step: 5, ..Behavior::default() }, vec![f]).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    let rec = &r.faults[0];
    assert!(rec.fired && rec.confirmed, "{rec:?}");
    let reason = r
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::CheckpointAborted { id: 2, reason } => Some(reason.clone()),
            _ => None,
        })
        .expect("checkpoint 2 aborted");
    assert!(reason.contains("declined by subtask 1"), "{reason}");
    assert!(!r.persisted().contains(&2));
    assert_eq!(r.outcome.attempts, 1);
    assert_everything_committed(&r, 2, 600);
    r.cleanup();
}

/// The most checkpoints pending at one time, from the history.
fn max_pending(r: &Ran) -> usize {
    let mut pending = std::collections::BTreeSet::new();
    let mut max = 0;
    for e in &r.events {
        match e.kind {
            EventKind::CheckpointTriggered { id } => {
                pending.insert(id);
            }
            EventKind::CheckpointPersisted { id, .. } | EventKind::CheckpointAborted { id, .. } => {
                pending.remove(&id);
            }
            _ => {}
        }
        max = max.max(pending.len());
    }
    max
}

#[tokio::test]
async fn max_concurrent_checkpoints_lets_checkpoints_overlap() {
    let mut j = job(2, 1_200);
    j.max_concurrent_checkpoints = 3;
    j.checkpoint_interval_ms = 30;
    let behavior = Behavior { ack_delay_ms: 100, step: 5, ..Behavior::default() };
    let r = run("concurrent", j.clone(), behavior.clone(), vec![]).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    let overlap = max_pending(&r);
    assert!((2..=3).contains(&overlap), "{overlap} pending at once");
    assert_eq!(r.count(|k| matches!(k, EventKind::CheckpointAborted { .. })), 0);
    assert_everything_committed(&r, 2, 1_200);
    r.cleanup();
    // The same job with one at a time never overlaps.
    j.max_concurrent_checkpoints = 1;
    let r = run("serial", j, behavior, vec![]).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished);
    assert_eq!(max_pending(&r), 1);
    r.cleanup();
}

#[tokio::test]
async fn every_ms_repeats_a_fault_and_records_each_firing() {
    let target = Some(Target::Ids(vec![0]));
    let mut f = fault("pauses", Fault::PauseWorkers(Workers { target }), When::EveryMs(60));
    f.times = Some(3);
    f.duration_ms = Some(20);
    let r = run("every", job(2, 1_500), Behavior { step: 5, ..Behavior::default() }, vec![f]).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    let rec = &r.faults[0];
    assert!(rec.fired && rec.confirmed, "{rec:?}");
    assert_eq!(rec.effect["firings"].as_array().unwrap().len(), 3, "{rec:?}");
    assert_eq!(r.count(|k| matches!(k, EventKind::FaultStarted { name, .. } if name == "pauses")), 3);
    assert_eq!(r.count(|k| matches!(k, EventKind::FaultEnded { name, .. } if name == "pauses")), 3);
    for (k, firing) in rec.effect["firings"].as_array().unwrap().iter().enumerate() {
        assert_eq!(firing["start"]["trigger"]["firing"], k as u64 + 1);
        assert!(firing["end"].is_object());
    }
    r.cleanup();
}

#[tokio::test]
async fn worker_event_triggers_fire_at_the_commit_or_transaction_they_name() {
    let target = Some(Target::Ids(vec![0]));
    let kill = fault("kill-at-commit", Fault::KillWorkers(Workers { target }), When::CommitStarted(2));
    let decline = {
        let d = Fault::DeclineCheckpoint(Notification { target: Some(Target::Ids(vec![1])), checkpoint: None });
        fault("decline-at-open", d, When::TxnOpened { subtask: 1, checkpoint: Some(5) })
    };
    let r = run("events", job(2, 900), Behavior { step: 5, ..Behavior::default() }, vec![kill, decline]).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    let k = &r.faults[0];
    assert!(k.fired && k.confirmed, "{k:?}");
    assert_eq!(k.effect["start"]["trigger"]["commit_started"]["checkpoint"], 2);
    let started =
        r.position(|e| matches!(e, EventKind::CommitStarted { checkpoint: 2, .. })).expect("a commit of 2 started");
    let fired = r.position(|e| matches!(e, EventKind::FaultStarted { name, .. } if name == "kill-at-commit")).unwrap();
    assert!(started < fired);
    // The transaction of checkpoint 5 opens at the barrier of 4: the decline is armed for 5
    // (the trigger's checkpoint), so subtask 1's ack of 5 is the one declined.
    let d = &r.faults[1];
    assert!(d.fired && d.confirmed, "{d:?}");
    assert_eq!(d.effect["start"]["trigger"]["txn_opened"]["subtask"], 1);
    assert!(d.effect["end"]["checkpoint"].as_u64().unwrap() >= 5, "{d:?}");
    r.cleanup();
}

#[tokio::test]
async fn role_targets_are_looked_up_when_the_fault_fires_and_the_rolling_restart_goes_controller_last() {
    let controller = Nodes { target: Target::Named(sinkhole_scenario::NamedTarget::Controller) };
    let mut stop = fault("stop-controller", Fault::BrokerStop(controller), When::AtMs(50));
    stop.duration_ms = Some(50);
    let leader = Nodes { target: Target::Leader { leader: 2 } };
    let leader = fault("restart-leader", Fault::BrokerRestart(leader), When::CheckpointPersisted(2));
    let rolling = fault("rolling", Fault::RollingRestart(Rolling::default()), When::AtMs(400));
    let cut = Partition {
        from: vec![sinkhole_scenario::Group::Workers],
        to: vec![sinkhole_scenario::Group::Brokers],
        direction: None,
    };
    let no_proxy = fault("cut", Fault::NetPartition(cut), When::AtMs(10));
    let mut brokers = FakeBrokers::default();
    let r = run_with(
        "roles",
        job(2, 3_000),
        Behavior { step: 5, ..Behavior::default() },
        vec![stop, leader, rolling, no_proxy],
        &mut brokers,
    )
    .await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    let [stop, leader, rolling, cut] = &r.faults[..] else { panic!("{:?}", r.faults) };
    assert!(stop.confirmed, "{stop:?}");
    assert_eq!(stop.effect["start"]["role"]["role"], "controller");
    assert_eq!(stop.effect["start"]["role"]["node"], 2);
    assert!(stop.effect["start"]["role"]["statement"].as_str().unwrap().starts_with("node 2 was the controller at "));
    assert!(leader.confirmed, "{leader:?}");
    assert_eq!(leader.effect["end"]["role"]["of"], "out-2");
    assert_eq!(leader.effect["end"]["role"]["node"], 1);
    assert!(rolling.confirmed, "{rolling:?}");
    let nodes: Vec<i64> =
        rolling.effect["end"]["nodes"].as_array().unwrap().iter().map(|n| n["node"].as_i64().unwrap()).collect();
    assert_eq!(nodes, vec![1, 3, 2], "id order, the controller (2) last");
    for n in rolling.effect["end"]["nodes"].as_array().unwrap() {
        assert!(n["ms_until_ready"].is_u64() && n["ms_until_urp_0"].is_u64(), "{n}");
    }
    // No proxy on this cluster: fired, visibly unconfirmed, with the reason.
    assert!(cut.fired && !cut.confirmed, "{cut:?}");
    assert!(cut.effect["start"]["error"].as_str().unwrap().contains("set cluster.proxy"), "{cut:?}");
    let actions: Vec<(i32, NodeAction)> = brokers.log.iter().map(|(_, n, a)| (*n, *a)).collect();
    assert!(actions.contains(&(2, NodeAction::Stop)) && actions.contains(&(2, NodeAction::Start)), "{actions:?}");
    assert!(brokers.lookups.contains(&"leader out-2".to_string()), "{:?}", brokers.lookups);
    r.cleanup();
}

fn mono(r: &Ran, f: impl Fn(&EventKind) -> bool) -> u64 {
    r.events.iter().find(|e| f(&e.kind)).map(|e| e.mono_us).unwrap()
}

/// The nemesis never stalls the job: a broker restart triggered inside
/// checkpoint 2's persist→notify window holds that notification only until
/// the node is down, not until it is back; checkpoints go on during the
/// restart, and the time-triggered faults meanwhile fire on time.
#[tokio::test]
async fn an_event_triggered_restart_holds_only_its_window_and_the_other_faults_fire_on_time() {
    let ids = |n: i64| Some(Target::Ids(vec![n]));
    let faults = vec![
        fault("restart", Fault::BrokerRestart(Nodes { target: Target::Ids(vec![3]) }), When::CheckpointPersisted(2)),
        FaultSpec {
            duration_ms: Some(100),
            ..fault("pause", Fault::PauseWorkers(Workers { target: ids(1) }), When::AtMs(600))
        },
        fault("kill", Fault::KillWorkers(Workers { target: ids(0) }), When::AtMs(1_000)),
    ];
    let mut brokers = FakeBrokers { slow: Some((300, 1_500)), ..FakeBrokers::default() };
    let r =
        run_with("nostall", job(2, 5_000), Behavior { step: 10, ..Behavior::default() }, faults, &mut brokers).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    for f in &r.faults {
        assert!(f.fired && f.confirmed, "{f:?}");
    }
    // One restart; the notification of 2 came between its stop and its start.
    let actions: Vec<(i32, NodeAction)> = brokers.log.iter().map(|(_, n, a)| (*n, *a)).collect();
    assert_eq!(actions, vec![(3, NodeAction::Restart)]);
    let persisted = mono(&r, |k| matches!(k, EventKind::CheckpointPersisted { id: 2, .. }));
    let notified = mono(&r, |k| *k == EventKind::CheckpointNotified { id: 2 });
    let restarted = mono(&r, |k| matches!(k, EventKind::FaultEnded { name, .. } if name == "restart"));
    assert!(notified >= persisted + 300_000, "held until the node was down: {persisted} → {notified}");
    assert!(notified + 1_000_000 < restarted, "not until it was back: notified {notified}, back {restarted}");
    // Checkpoints went on while the node was away.
    let during = r
        .events
        .iter()
        .filter(|e| {
            matches!(e.kind, EventKind::CheckpointPersisted { .. }) && e.mono_us > notified && e.mono_us < restarted
        })
        .count();
    assert!(during >= 3, "{during} checkpoints completed during the restart");
    // The time faults fired at their time, not after the restart.
    let started = mono(&r, |k| matches!(k, EventKind::JobStarted { attempt: 0, .. }));
    for (name, at_ms) in [("pause", 600_u64), ("kill", 1_000)] {
        let fired = mono(&r, |k| matches!(k, EventKind::FaultStarted { name: n, .. } if n == name));
        let late_us = fired.saturating_sub(started + at_ms * 1_000);
        assert!(late_us < 300_000, "{name} fired {late_us} µs late");
        let rec = r.faults.iter().find(|f| f.name == name).unwrap();
        assert!(rec.effect["start"]["trigger"].get("late_ms").is_none(), "{rec:?}");
        assert!(fired < restarted, "{name} fired during the restart");
    }
    r.cleanup();
}

/// A fault the nemesis could only fire late (the cluster was busy with
/// another fault's restart) says so, and the verdict is inconclusive.
#[tokio::test]
async fn a_fault_that_had_to_wait_for_the_cluster_is_late_and_the_verdict_inconclusive() {
    let faults = vec![
        fault("restart", Fault::BrokerRestart(Nodes { target: Target::Ids(vec![3]) }), When::AtMs(100)),
        FaultSpec {
            duration_ms: Some(50),
            ..fault("kill-2", Fault::BrokerKill(Nodes { target: Target::Ids(vec![2]) }), When::AtMs(200))
        },
    ];
    let mut brokers = FakeBrokers { slow: Some((300, 1_500)), ..FakeBrokers::default() };
    let r = run_with("late", job(2, 5_000), Behavior { step: 10, ..Behavior::default() }, faults, &mut brokers).await;
    assert_eq!(r.outcome.job, JobOutcome::Finished, "{:#?}", r.coordinator());
    let kill = r.faults.iter().find(|f| f.name == "kill-2").unwrap();
    let trigger = &kill.effect["start"]["trigger"];
    let late = trigger["late_ms"].as_u64().unwrap_or(0);
    assert!(late > 1_000, "{trigger}");
    assert_eq!(trigger["late_because"], "the cluster was busy with fault restart");
    let report = sinkhole_checker::CheckReport::default();
    let clean = sinkhole_scenario::Expectation::Word(sinkhole_scenario::ExpectWord::Clean);
    let j = sinkhole_checker::verdict::judge(Some(&clean), &r.outcome.job, &r.outcome.faults, Some(&report));
    assert_eq!(j.outcome, sinkhole_checker::verdict::Outcome::Inconclusive, "{}", j.reason);
    assert!(
        j.reason.contains("fault kill-2 (broker-kill) fired") && j.reason.contains("ms after its time"),
        "{}",
        j.reason
    );
    r.cleanup();
}

/// Several modes' jobs side by side under one nemesis, as `sinkhole run` runs them.
async fn run_side_by_side<B: Cluster>(
    name: &str,
    modes: &[SinkMode],
    faults: Vec<FaultSpec>,
    lead: super::Lead,
    brokers: &mut B,
) -> Vec<Ran> {
    let dir = dir(name);
    let mut jobs = vec![];
    let mut all_configs = vec![];
    for &mode in modes {
        let (launcher, configs) = FakeLauncher::new(Behavior { step: 10, ..Behavior::default() });
        let cfg = JobConfig {
            run_id: format!("test-{name}"),
            mode,
            dir: ModeDir::at(dir.join(mode.name())),
            job: job(2, 3_000),
            topic: format!("out-{mode}"),
            partitions: 3,
            tid_prefix: format!("t-{name}-{mode}"),
            progress: false,
            sink_listener: None,
            share: None,
            security: None,
        };
        jobs.push((cfg, launcher));
        all_configs.push(configs);
    }
    let outcomes = tokio::time::timeout(Duration::from_secs(30), super::run_jobs(jobs, faults, lead, brokers))
        .await
        .expect("the jobs ended within 30 s");
    outcomes
        .into_iter()
        .zip(all_configs)
        .map(|(o, configs)| {
            let outcome = o.unwrap();
            let events = sinkhole_history::read(&outcome.history).unwrap().events;
            let faults = outcome
                .faults
                .iter()
                .map(|f| Rec {
                    name: f.name.clone(),
                    fired: f.fired,
                    confirmed: f.confirmed,
                    effect: f.effect.to_value(),
                })
                .collect();
            let configs = configs.lock().unwrap().clone();
            Ran { outcome, faults, events, configs, dir: dir.clone() }
        })
        .collect()
}

fn started_of<'r>(r: &'r Ran, name: &str) -> Vec<&'r Event> {
    r.events.iter().filter(|e| matches!(&e.kind, EventKind::FaultStarted { name: n, .. } if n == name)).collect()
}

/// Side by side, a fault on a job fires once per mode on that mode's own
/// event, and a fault on the cluster fires once for all: one broker action,
/// recorded in every mode's history with the same firing, which mode set
/// it off and where each mode was at that moment.
#[tokio::test]
async fn side_by_side_a_job_fault_fires_per_mode_and_a_cluster_fault_once_for_all() {
    let modes = [SinkMode::Legacy, SinkMode::TwopcInject];
    let faults = vec![
        fault(
            "kill-0",
            Fault::KillWorkers(Workers { target: Some(Target::Ids(vec![0])) }),
            When::CheckpointPersisted(2),
        ),
        fault("restart", Fault::BrokerRestart(Nodes { target: Target::Ids(vec![3]) }), When::CheckpointPersisted(4)),
        FaultSpec {
            duration_ms: Some(100),
            ..fault("pause-2", Fault::BrokerPause(Nodes { target: Target::Ids(vec![2]) }), When::AtMs(300))
        },
    ];
    let mut brokers = FakeBrokers::default();
    let runs = run_side_by_side("sbs", &modes, faults, super::Lead::First, &mut brokers).await;
    let actions: Vec<(i32, NodeAction)> = brokers.log.iter().map(|(_, n, a)| (*n, *a)).collect();
    for want in [(3, NodeAction::Restart), (2, NodeAction::Pause), (2, NodeAction::Resume)] {
        assert_eq!(actions.iter().filter(|a| **a == want).count(), 1, "once for both modes: {want:?} in {actions:?}");
    }
    let mut views = vec![];
    for (r, mode) in runs.iter().zip(modes) {
        assert_eq!(r.outcome.job, JobOutcome::Finished, "{mode}: {:#?}", r.coordinator());
        assert!(r.outcome.attempts >= 2, "{mode}: its own kill made it fail over");
        for f in &r.faults {
            assert!(f.fired && f.confirmed, "{mode}: {f:?}");
        }
        // Its own kill, after its own checkpoint 2 was persisted.
        let kill = started_of(r, "kill-0");
        assert_eq!(kill.len(), 1, "{mode}");
        let persisted = mono(r, |k| matches!(k, EventKind::CheckpointPersisted { id: 2, .. }));
        assert!(kill[0].mono_us >= persisted, "{mode}: the kill came on its own event");
        // Every worker the kill hit was this mode's.
        let hit = r.faults.iter().find(|f| f.name == "kill-0").unwrap();
        assert_eq!(hit.effect["start"]["attempt"], 0, "{mode}: {hit:?}");
        // The cluster faults, once each in this history.
        for name in ["restart", "pause-2"] {
            assert_eq!(started_of(r, name).len(), 1, "{mode}: {name}");
        }
        let restart = r.faults.iter().find(|f| f.name == "restart").unwrap();
        let trigger = &restart.effect["start"]["trigger"];
        assert!(modes.iter().any(|m| trigger["mode"] == m.name()), "which mode set it off: {trigger}");
        let modes_view = trigger["modes"].as_array().unwrap();
        assert_eq!(modes_view.len(), 2, "{trigger}");
        assert_eq!(modes_view[0]["mode"], "legacy");
        assert_eq!(modes_view[1]["mode"], "twopc-inject");
        views.push(restart.effect.clone());
    }
    // The same firing, the same view, in both histories.
    assert_eq!(views[0], views[1]);
    // Each mode's workers wrote under its own prefix only.
    for (r, mode) in runs.iter().zip(modes) {
        assert!(r.configs.iter().all(|c| c.tid_prefix.ends_with(mode.name())), "{mode}");
    }
    std::fs::remove_dir_all(&runs[0].dir).unwrap();
}

/// With a lead, an event-triggered cluster fault fires on the lead's event
/// alone: inside the lead's persist→notify window of that checkpoint.
#[tokio::test]
async fn side_by_side_a_lead_mode_sets_off_the_cluster_faults() {
    let modes = [SinkMode::Legacy, SinkMode::TwopcInject];
    let faults = vec![fault(
        "restart",
        Fault::BrokerRestart(Nodes { target: Target::Ids(vec![3]) }),
        When::CheckpointPersisted(3),
    )];
    let mut brokers = FakeBrokers::default();
    let runs = run_side_by_side("lead", &modes, faults, super::Lead::Member(1), &mut brokers).await;
    let lead = &runs[1];
    let restart = lead.faults.iter().find(|f| f.name == "restart").unwrap();
    assert_eq!(restart.effect["start"]["trigger"]["mode"], "twopc-inject", "{restart:?}");
    let fired = started_of(lead, "restart")[0].mono_us;
    let persisted = mono(lead, |k| matches!(k, EventKind::CheckpointPersisted { id: 3, .. }));
    let notified = mono(lead, |k| *k == EventKind::CheckpointNotified { id: 3 });
    assert!(persisted <= fired && fired <= notified, "in the lead's window: {persisted} {fired} {notified}");
    // The other mode's history has it too, at the same wall-clock moment.
    let other = started_of(&runs[0], "restart");
    assert_eq!(other.len(), 1);
    assert!(other[0].wall_ms.abs_diff(started_of(lead, "restart")[0].wall_ms) <= 5);
    std::fs::remove_dir_all(&lead.dir).unwrap();
}
