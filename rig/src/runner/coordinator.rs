//! The checkpoint coordinator and the job's failover: Flink's JobManager in
//! miniature.
//!
//! - Checkpoints mirror Flink's `CheckpointCoordinator`: periodic triggers with
//!   ids from one counter that never goes back (`CheckpointIDCounter`, so ids
//!   continue across restores and an aborted id is never reused), at most
//!   `max_concurrent_checkpoints` pending, a pending checkpoint expires after
//!   `checkpoint_timeout_ms`, a checkpoint is complete only once its metadata
//!   is durably stored, completing n subsumes the pending ones below it, and
//!   only then is "n complete" sent to every task (`notifyCheckpointComplete`).
//! - Failover mirrors Flink's full restart (`RestartAllFailoverStrategy` with
//!   the fixed-delay restart strategy): any task failure cancels every task,
//!   pending checkpoints are aborted, and after the delay every task is
//!   redeployed with its state from the latest complete checkpoint; more than
//!   `restart_limit` restarts fail the job (`FixedDelayRestartBackoffTimeStrategy`).
//!   Failures are detected from a worker's exit, a `Failed` message, a closed
//!   control connection, or silence longer than `heartbeat_timeout_ms`
//!   (Flink's heartbeat timeout between JobManager and TaskManagers).
//! - The end of a bounded job mirrors FLIP-147: once every task reached the end
//!   of its input, one more (final) checkpoint commits the rest, and the job
//!   finishes when every task confirmed its commits.
//!
//! The loop is a single task that owns all state; worker connections are read
//! by small tasks that stamp each message with its arrival time and forward it,
//! so heartbeats are judged by when they arrived even if the loop was busy (a
//! broker restart blocks it for seconds).
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use nix::sys::signal::Signal;
use serde_json::json;
use sinkhole_workloads::control::{Channel, ChannelWriter};
use sinkhole_workloads::model::{
    CheckpointRecord, CommitOutcome, EventKind, FromWorker, SinkMode, Source, SubtaskState, ToWorker, WorkerConfig,
};
use tokio::net::UnixListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::checkpoints::CheckpointStore;
use super::faults::{self, BrokerTarget, FaultSlot, Heal, HealAction};
use super::history::History;
use super::workers::{LaunchSpec, Launcher};
use super::{FaultRecord, JobOutcome, ModeOutcome};
use crate::cluster::{Cluster, NodeAction, NodeEffect};
use crate::scenario::{FaultKind, FaultSpec, JobSpec, TidSelector, When};
use sinkhole_faults::proxy::Proxy;

/// Everything the coordinator needs besides its launcher and cluster.
#[derive(Debug, Clone)]
pub struct JobConfig {
    pub run_id: String,
    pub mode: SinkMode,
    /// `results/<run-id>/<mode>/`.
    pub dir: PathBuf,
    pub job: JobSpec,
    pub topic: String,
    pub partitions: u32,
    pub tid_prefix: String,
    pub faults: Vec<FaultSpec>,
    pub progress: bool,
    /// Workers bootstrap from this listener with its credentials instead of
    /// the cluster's bootstrap (ACL scenarios: the sink's own principal).
    pub sink_listener: Option<crate::cluster::SinkListener>,
}

/// After a worker exits (or its connection closes) the other signal usually
/// follows within milliseconds; waiting this long lets the messages it sent
/// before dying (an `Unsupported` event, a `Failed` reason) be read first.
const EXIT_GRACE: Duration = Duration::from_millis(300);
/// A send to a worker that takes longer than this means the worker is gone
/// or wedged; the connection is then out of step and treated as closed.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);
/// How long workers get to exit after `Stop`.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
const TICK: Duration = Duration::from_millis(10);

/// A broker action running beside the loop; it hands the cluster back.
type BrokerOp<'a, B> = Pin<Box<dyn Future<Output = (&'a mut B, BrokerDone)> + Send + 'a>>;

/// A cluster action a fault takes (or undoes).
#[derive(Debug, Clone)]
enum BrokerJob {
    Fire {
        fault: usize,
        trigger: serde_json::Value,
        kind: FaultKind,
        duration: Option<u64>,
        target: Aim,
    },
    Heal {
        fault: usize,
        node: i32,
        action: NodeAction,
    },
    /// Restart every node in turn, each time waiting until no partition is
    /// under-replicated.
    Rolling {
        fault: usize,
        trigger: serde_json::Value,
    },
}

impl BrokerJob {
    fn fault(&self) -> usize {
        match self {
            BrokerJob::Fire { fault, .. } | BrokerJob::Heal { fault, .. } | BrokerJob::Rolling { fault, .. } => *fault,
        }
    }
}

/// A broker fault's resolved target.
#[derive(Debug, Clone)]
enum Aim {
    Nodes(Vec<i32>),
    /// The node coordinating this id, looked up when the action starts.
    CoordinatorOf {
        subtask: u32,
        transactional_id: String,
    },
    /// The KRaft quorum leader, looked up when the action starts.
    Controller,
    /// The leader of a partition, looked up when the action starts.
    LeaderOf {
        topic: String,
        partition: i32,
    },
}

struct BrokerDone {
    job: BrokerJob,
    /// Evidence of the role the target had when it was hit (coordinator,
    /// controller, leader), or Null for nodes named by id.
    coordinator: serde_json::Value,
    results: Vec<(i32, Result<NodeEffect, String>)>,
    error: Option<String>,
    /// Rolling restarts: per node, the restart effect and the waits after it.
    rolling: Vec<serde_json::Value>,
    rolling_ok: bool,
}

fn node_action(kind: FaultKind) -> NodeAction {
    match kind {
        FaultKind::BrokerKill => NodeAction::Kill,
        FaultKind::BrokerStop => NodeAction::Stop,
        FaultKind::BrokerPause => NodeAction::Pause,
        _ => NodeAction::Restart,
    }
}

/// How long a rolling restart waits, per node, for no under-replicated partition.
const URP_TIMEOUT: Duration = Duration::from_secs(60);

/// Evidence that `node` had `role` at this moment.
fn role_evidence(role: &str, of: &str, node: i32, found_by: &str) -> serde_json::Value {
    let at = now_wall_ms();
    let of_text = if of.is_empty() { String::new() } else { format!(" of {of}") };
    let when = format!("{}.{:03}", crate::utc::Utc::from_unix(at / 1000).rfc3339().trim_end_matches('Z'), at % 1000);
    json!({"role": role, "of": of, "node": node, "found_by": found_by, "at_wall_ms": at,
           "statement": format!("node {node} was the {role}{of_text} at {when}Z")})
}

/// Runs one broker job to its end (a restart includes the wait until the
/// node answers again).
async fn run_broker_job<B: Cluster + ?Sized>(brokers: &mut B, job: BrokerJob) -> BrokerDone {
    let mut done = BrokerDone {
        job: job.clone(),
        coordinator: serde_json::Value::Null,
        results: vec![],
        error: None,
        rolling: vec![],
        rolling_ok: false,
    };
    let (nodes, action) = match job {
        BrokerJob::Heal { node, action, .. } => (vec![node], action),
        BrokerJob::Rolling { .. } => {
            rolling_restart(brokers, &mut done).await;
            return done;
        }
        BrokerJob::Fire { kind, target, .. } => {
            let nodes = match target {
                Aim::Nodes(n) => n,
                Aim::CoordinatorOf { subtask, transactional_id } => {
                    match brokers.find_coordinator(&transactional_id).await {
                        Ok(node) => {
                            let mut e = role_evidence(
                                "txn-coordinator",
                                &transactional_id,
                                node,
                                "FindCoordinator (key type 1) at the moment of the fault",
                            );
                            e["subtask"] = json!(subtask);
                            e["transactional_id"] = json!(transactional_id);
                            e["was_coordinator"] = json!(true);
                            done.coordinator = e;
                            vec![node]
                        }
                        Err(e) => {
                            done.error = Some(format!("finding the coordinator of {transactional_id}: {e}"));
                            return done;
                        }
                    }
                }
                Aim::Controller => match brokers.controller().await {
                    Ok(node) => {
                        done.coordinator = role_evidence(
                            "controller",
                            "",
                            node,
                            "DescribeQuorum (API 55): the leader of __cluster_metadata-0",
                        );
                        vec![node]
                    }
                    Err(e) => {
                        done.error = Some(format!("finding the controller: {e}"));
                        return done;
                    }
                },
                Aim::LeaderOf { topic, partition } => match brokers.leader_of(&topic, partition).await {
                    Ok(node) => {
                        done.coordinator =
                            role_evidence("leader", &format!("{topic}-{partition}"), node, "Metadata (API 3)");
                        vec![node]
                    }
                    Err(e) => {
                        done.error = Some(format!("finding the leader of {topic}-{partition}: {e}"));
                        return done;
                    }
                },
            };
            (nodes, node_action(kind))
        }
    };
    for node in nodes {
        let r = brokers.act(node, action, faults::NODE_ACTION_TIMEOUT).await.map_err(|e| e.to_string());
        done.results.push((node, r));
    }
    done
}

/// Kafka's rolling restart, as its transactions system test and its upgrade
/// notes do it: one node at a time, and the next only once the restarted
/// node answers and no partition is under-replicated. Nodes go in id order
/// with the active controller last, so the quorum elects a new leader once,
/// at the end, instead of while other nodes are down.
async fn rolling_restart<B: Cluster + ?Sized>(brokers: &mut B, done: &mut BrokerDone) {
    let mut order = brokers.node_ids();
    order.sort_unstable();
    let controller = brokers.controller().await.map_err(|e| e.to_string());
    if let Ok(c) = controller {
        if let Some(i) = order.iter().position(|&n| n == c) {
            let n = order.remove(i);
            order.push(n);
        }
    }
    let mut ok = true;
    for node in order {
        let started = Instant::now();
        let r = brokers.act(node, NodeAction::Restart, faults::NODE_ACTION_TIMEOUT).await.map_err(|e| e.to_string());
        let ready_ms = started.elapsed().as_millis() as u64;
        let restarted = r.as_ref().is_ok_and(faults::node_effect_confirmed);
        let mut entry = faults::node_effect_json(node, &r);
        entry["ms_until_ready"] = json!(ready_ms);
        let mut urp_last = None;
        if restarted {
            let waited = Instant::now();
            loop {
                let u = brokers.under_replicated().await.map_err(|e| e.to_string());
                let zero = matches!(u, Ok(0));
                urp_last = Some(u.clone());
                if zero || waited.elapsed() >= URP_TIMEOUT {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            entry["ms_until_urp_0"] = match &urp_last {
                Some(Ok(0)) => json!(waited.elapsed().as_millis() as u64),
                _ => serde_json::Value::Null,
            };
        }
        let urp_zero = matches!(urp_last, Some(Ok(0)));
        entry["under_replicated_last"] = match urp_last {
            Some(Ok(n)) => json!(n),
            Some(Err(e)) => json!({"error": e}),
            None => serde_json::Value::Null,
        };
        ok &= restarted && urp_zero;
        done.rolling.push(entry);
        done.results.push((node, r));
        if !restarted {
            // A node that did not come back: going on would take a second one down.
            done.error = Some(format!("node {node} did not come back; the rolling restart stopped there"));
            break;
        }
    }
    done.coordinator = match controller {
        Ok(c) => json!({"controller_before": c, "order": "id order, the controller last"}),
        Err(e) => json!({"controller_before": null, "error": e, "order": "id order"}),
    };
    done.rolling_ok = ok && done.error.is_none();
}

struct Inbound {
    conn: u64,
    at: Instant,
    what: ConnEvent,
}

enum ConnEvent {
    Hello { peer_pid: Option<u32>, writer: ChannelWriter },
    Msg(Box<FromWorker>),
    Closed(Option<String>),
}

/// A control connection not yet tied to a subtask (it is tied by the peer's
/// pid, or by its `Ready`); messages before that are kept in order.
struct Conn {
    peer_pid: Option<u32>,
    writer: Option<ChannelWriter>,
    subtask: Option<u32>,
    buffered: Vec<(Instant, FromWorker)>,
}

/// One subtask in the current attempt.
struct Slot {
    pid: u32,
    launched: Instant,
    conn: Option<u64>,
    writer: Option<ChannelWriter>,
    ready: bool,
    last_heard: Instant,
    end_of_input: bool,
    committed: u64,
    next_seq: u64,
    /// When the worker exited, and how.
    exit: Option<(Instant, String)>,
    /// When its control connection closed, and why.
    closed: Option<(Instant, String)>,
    /// The coordinator asked for the exit (Stop, or the failover kill).
    expected_exit: bool,
    /// A fault killed it (between persist and notify: no notification).
    killed_by_fault: bool,
}

struct Attempt {
    number: u32,
    restored_from: Option<u64>,
    slots: Vec<Slot>,
    all_ready_at: Option<Instant>,
    last_triggered: Option<u64>,
}

struct Pending {
    triggered: Instant,
    acks: Vec<Option<SubtaskState>>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Running,
    /// Between the failover kill and the restart.
    Down {
        until: Instant,
    },
    Stopping {
        since: Instant,
    },
    Done,
}

pub struct Coordinator<'a, L: Launcher, B: Cluster + ?Sized> {
    cfg: JobConfig,
    launcher: L,
    /// None while a broker action runs beside the loop (it holds the cluster).
    brokers: Option<&'a mut B>,
    broker_op: Option<BrokerOp<'a, B>>,
    broker_queue: VecDeque<BrokerJob>,
    node_ids: Vec<i32>,
    /// The bootstrap servers last seen running (workers started while a
    /// broker action is in flight get these).
    bootstrap: Vec<String>,
    history: History,
    store: CheckpointStore,
    socket: PathBuf,
    start: Instant,
    inbox: mpsc::UnboundedReceiver<Inbound>,
    inbox_tx: mpsc::UnboundedSender<Inbound>,
    conn_counter: Arc<AtomicU64>,
    /// Connections numbered below this belong to killed attempts.
    min_conn: u64,
    conns: HashMap<u64, Conn>,
    accept_task: Option<JoinHandle<()>>,
    phase: Phase,
    attempt: Attempt,
    failures: u32,
    next_id: u64,
    pending: BTreeMap<u64, Pending>,
    next_trigger: Option<Instant>,
    final_id: Option<u64>,
    final_complete: Option<(u64, Instant)>,
    completed: u64,
    latest_complete: Option<u64>,
    job_started: Option<Instant>,
    outage: Option<(usize, Instant, u64)>,
    faults: Vec<FaultSlot>,
    heals: Vec<Heal>,
    committables_dropped: u64,
    outcome: Option<JobOutcome>,
    /// The cluster's proxy (network and protocol faults), if it has one.
    proxy: Option<Proxy>,
    /// Coordinator faults waiting for the notification or ack they act on.
    armed: Vec<Armed>,
    /// Notifications held back by delay-notification: (due, subtask, checkpoint, attempt, fault).
    delayed: Vec<(Instant, u32, u64, u32, usize)>,
    /// A coordinator-crash fired in this checkpoint's persist→notify window.
    crash_in_window: Option<(usize, u64)>,
    /// The fault whose broker job is in flight.
    op_fault: Option<usize>,
}

/// A coordinator fault that acts on a later notification or ack.
#[derive(Debug, Clone)]
struct Armed {
    fault: usize,
    kind: FaultKind,
    /// The checkpoint acted on (or the first later one); None: the next.
    checkpoint: Option<u64>,
    targets: Vec<u32>,
    delay_ms: u64,
}

impl Armed {
    fn applies_to(&self, id: u64) -> bool {
        self.checkpoint.is_none_or(|c| c <= id)
    }
}

fn now_wall_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64
}

/// `12400` → `12 400`.
pub fn group_digits(n: u64) -> String {
    let digits: Vec<char> = n.to_string().chars().collect();
    let groups: Vec<String> = digits.rchunks(3).rev().map(|g| g.iter().collect()).collect();
    groups.join(" ")
}

/// The control socket: `<dir>/control.sock`, unless that path is too long for
/// a Unix socket address (108 bytes on Linux), then a short one in the temp dir.
fn socket_path(dir: &Path, run_id: &str, mode: SinkMode) -> PathBuf {
    let p = dir.join("control.sock");
    if p.as_os_str().len() < 100 {
        return p;
    }
    let tag: String = run_id.chars().filter(|c| c.is_ascii_alphanumeric()).take(16).collect();
    std::env::temp_dir().join(format!("sinkhole-{}-{tag}-{}.sock", std::process::id(), mode.name()))
}

impl<'a, L: Launcher, B: Cluster + ?Sized> Coordinator<'a, L, B> {
    pub fn new(cfg: JobConfig, launcher: L, brokers: &'a mut B) -> anyhow::Result<Self> {
        for sub in ["workers", "logs"] {
            std::fs::create_dir_all(cfg.dir.join(sub)).with_context(|| format!("creating {}", cfg.dir.display()))?;
        }
        let store = CheckpointStore::open(cfg.dir.join("checkpoints"))?;
        let start = Instant::now();
        let history_path = cfg.dir.join("history.jsonl");
        let history = History::create(&history_path, cfg.mode, start)
            .with_context(|| format!("creating {}", history_path.display()))?;
        let socket = socket_path(&cfg.dir, &cfg.run_id, cfg.mode);
        let (inbox_tx, inbox) = mpsc::unbounded_channel();
        let faults = cfg.faults.iter().cloned().enumerate().map(|(i, s)| FaultSlot::new(s, i)).collect();
        let proxy = brokers.proxy();
        Ok(Coordinator {
            cfg,
            launcher,
            node_ids: brokers.node_ids(),
            bootstrap: brokers.client_bootstrap(),
            brokers: Some(brokers),
            broker_op: None,
            broker_queue: VecDeque::new(),
            history,
            store,
            socket,
            start,
            inbox,
            inbox_tx,
            conn_counter: Arc::new(AtomicU64::new(0)),
            min_conn: 0,
            conns: HashMap::new(),
            accept_task: None,
            phase: Phase::Down { until: start },
            attempt: Attempt {
                number: 0,
                restored_from: None,
                slots: vec![],
                all_ready_at: None,
                last_triggered: None,
            },
            failures: 0,
            next_id: 1,
            pending: BTreeMap::new(),
            next_trigger: None,
            final_id: None,
            final_complete: None,
            completed: 0,
            latest_complete: None,
            job_started: None,
            outage: None,
            faults,
            heals: vec![],
            committables_dropped: 0,
            outcome: None,
            proxy,
            armed: vec![],
            delayed: vec![],
            crash_in_window: None,
            op_fault: None,
        })
    }

    fn parallelism(&self) -> u32 {
        self.cfg.job.parallelism
    }

    fn record(&mut self, source: Source, kind: EventKind) -> anyhow::Result<()> {
        self.history.record(source, kind).context("writing the history")?;
        Ok(())
    }

    fn coord(&mut self, kind: EventKind) -> anyhow::Result<()> {
        self.record(Source::Coordinator, kind)
    }

    fn progress(&self, line: &str) {
        if self.cfg.progress {
            eprintln!("{}  {line}", self.cfg.mode.name());
        }
    }

    /// Runs the job to its end and returns what happened.
    pub async fn run(mut self) -> anyhow::Result<ModeOutcome> {
        let _ = std::fs::remove_file(&self.socket);
        let listener =
            UnixListener::bind(&self.socket).with_context(|| format!("binding {}", self.socket.display()))?;
        self.accept_task = Some(tokio::spawn(accept_loop(listener, self.inbox_tx.clone(), self.conn_counter.clone())));

        let result = self.drive().await;
        let finish = self.finish().await;
        result?;
        finish
    }

    async fn drive(&mut self) -> anyhow::Result<()> {
        enum Wake<'b, B: ?Sized> {
            Msg(Option<Inbound>),
            Op((&'b mut B, BrokerDone)),
            Tick,
        }
        self.launch(0).await?;
        while self.outcome.is_none() {
            let wake = {
                let (inbox, op) = (&mut self.inbox, &mut self.broker_op);
                tokio::select! {
                    m = inbox.recv() => Wake::Msg(m),
                    d = async { op.as_mut().expect("guarded by the precondition").await }, if op.is_some() => Wake::Op(d),
                    _ = tokio::time::sleep(TICK) => Wake::Tick,
                }
            };
            match wake {
                Wake::Msg(Some(inb)) => {
                    self.on_inbound(inb).await?;
                    while self.outcome.is_none() {
                        match self.inbox.try_recv() {
                            Ok(inb) => self.on_inbound(inb).await?,
                            Err(_) => break,
                        }
                    }
                }
                Wake::Msg(None) => anyhow::bail!("the control socket's accept loop ended"),
                Wake::Op((brokers, done)) => {
                    self.broker_op = None;
                    self.brokers = Some(brokers);
                    self.broker_job_done(done)?;
                    self.pump_broker_jobs()?;
                }
                Wake::Tick => {}
            }
            if self.outcome.is_none() {
                self.on_tick().await?;
            }
        }
        Ok(())
    }

    // ----- workers -------------------------------------------------------

    /// Starts every subtask of attempt `number` from the latest complete checkpoint.
    async fn launch(&mut self, number: u32) -> anyhow::Result<()> {
        let restore = self.store.latest()?;
        let p = self.parallelism();
        if let Some(r) = &restore {
            anyhow::ensure!(
                r.subtasks.len() == p as usize,
                "checkpoint {} has {} subtasks, the job has {p}",
                r.id,
                r.subtasks.len()
            );
        }
        let restored_from = restore.as_ref().map(|r| r.id);
        let now = Instant::now();
        self.attempt = Attempt { number, restored_from, slots: vec![], all_ready_at: None, last_triggered: None };
        self.final_id = None;
        self.final_complete = None;
        self.next_trigger = None;
        self.phase = Phase::Running;
        if self.job_started.is_none() {
            self.job_started = Some(now);
        }
        self.coord(EventKind::JobStarted { attempt: number, restored_from })?;
        if let Some((fault, since, planned)) = self.outage.take() {
            let effect = json!({"planned_ms": planned, "down_ms": since.elapsed().as_millis() as u64,
                                "restored_from": restored_from});
            self.fault_ended(fault, effect)?;
        }
        if number > 0 {
            self.progress(&format!(
                "restore: attempt {number} from {}",
                restored_from.map(|i| format!("checkpoint {i}")).unwrap_or_else(|| "the beginning".into())
            ));
        }
        let j = self.cfg.job.clone();
        let heartbeat_ms = (j.heartbeat_timeout_ms / 4).clamp(20, 1000);
        if let Some(b) = self.brokers.as_deref() {
            self.bootstrap = b.client_bootstrap();
        }
        let (bootstrap, sasl) = match &self.cfg.sink_listener {
            Some(l) => (l.bootstrap.clone(), Some(l.sasl.clone())),
            None => (self.bootstrap.clone(), None),
        };
        let register_partitions = match j.register_partitions {
            crate::scenario::Registration::Lazy => sinkhole_workloads::model::PartitionRegistration::Lazy,
            crate::scenario::Registration::Eager => sinkhole_workloads::model::PartitionRegistration::Eager,
        };
        for s in 0..p {
            let config = WorkerConfig {
                run_id: self.cfg.run_id.clone(),
                mode: self.cfg.mode,
                subtask: s,
                parallelism: p,
                attempt: number,
                bootstrap: bootstrap.clone(),
                topic: self.cfg.topic.clone(),
                partitions: self.cfg.partitions,
                partitioning: j.partitioning,
                records: j.records_per_subtask,
                rate_per_sec: j.rate_per_subtask,
                transaction_timeout_ms: j.transaction_timeout_ms,
                tid_prefix: self.cfg.tid_prefix.clone(),
                linger_ms: j.linger_ms,
                batch_size: j.batch_size,
                restore: restore.as_ref().map(|r| (r.id, r.subtasks[s as usize].clone())),
                heartbeat_ms,
                register_partitions,
                force_transactions_v1: j.force_transactions_v1,
                sasl: sasl.clone(),
            };
            let config_path = self.cfg.dir.join("workers").join(format!("worker-{s}-attempt-{number}.json"));
            std::fs::write(&config_path, serde_json::to_vec_pretty(&config)?)
                .with_context(|| format!("writing {}", config_path.display()))?;
            let log = self.cfg.dir.join("logs").join(format!("worker-{s}.log"));
            let launched = self.launcher.launch(LaunchSpec {
                config: &config,
                config_path: &config_path,
                control: &self.socket,
                log: &log,
            });
            match launched {
                Ok(pid) => {
                    self.attempt.slots.push(Slot {
                        pid,
                        launched: now,
                        conn: None,
                        writer: None,
                        ready: false,
                        last_heard: now,
                        end_of_input: false,
                        committed: 0,
                        next_seq: config.restore.as_ref().map(|(_, st)| st.next_seq).unwrap_or(0),
                        exit: None,
                        closed: None,
                        expected_exit: false,
                        killed_by_fault: false,
                    });
                    self.coord(EventKind::WorkerStarted { subtask: s, pid, attempt: number })?;
                }
                Err(e) => {
                    // The slots started so far are killed by the failover.
                    self.fail_over(Some(s), format!("could not start the worker of subtask {s}: {e:#}")).await?;
                    return Ok(());
                }
            }
        }
        // Connections that arrived before the slots existed can be tied now.
        let unbound: Vec<u64> = self.conns.iter().filter(|(_, c)| c.subtask.is_none()).map(|(&id, _)| id).collect();
        for id in unbound {
            self.try_bind_by_peer(id).await?;
        }
        Ok(())
    }

    fn slot_of_pid(&self, pid: u32) -> Option<usize> {
        self.attempt.slots.iter().position(|s| s.pid == pid)
    }

    async fn on_inbound(&mut self, inb: Inbound) -> anyhow::Result<()> {
        if inb.conn < self.min_conn {
            return Ok(()); // a killed attempt's connection: its last words do not count
        }
        match inb.what {
            ConnEvent::Hello { peer_pid, writer } => {
                self.conns.insert(inb.conn, Conn { peer_pid, writer: Some(writer), subtask: None, buffered: vec![] });
                self.try_bind_by_peer(inb.conn).await?;
            }
            ConnEvent::Msg(msg) => {
                let Some(bound) = self.conns.get(&inb.conn).map(|c| c.subtask) else { return Ok(()) };
                match bound {
                    Some(s) => self.on_message(s, inb.at, *msg).await?,
                    None => {
                        // Tied by the pid a Ready reports, else by the subtask
                        // a message names (connections of killed attempts were
                        // dropped above, so a claim is from this attempt).
                        let target = match &*msg {
                            FromWorker::Ready { pid, .. } if self.slot_of_pid(*pid).is_some() => self.slot_of_pid(*pid),
                            other => claimed_subtask(other)
                                .map(|s| s as usize)
                                .filter(|&s| self.attempt.slots.get(s).is_some_and(|sl| sl.conn.is_none())),
                        };
                        if let Some(conn) = self.conns.get_mut(&inb.conn) {
                            conn.buffered.push((inb.at, *msg));
                        }
                        if let Some(s) = target {
                            self.bind(inb.conn, s).await?;
                        }
                    }
                }
            }
            ConnEvent::Closed(err) => {
                let Some(conn) = self.conns.remove(&inb.conn) else { return Ok(()) };
                if let Some(s) = conn.subtask {
                    let slot = &mut self.attempt.slots[s as usize];
                    if slot.conn == Some(inb.conn) {
                        slot.writer = None;
                        slot.closed = Some((inb.at, err.unwrap_or_else(|| "closed by the worker".into())));
                    }
                }
            }
        }
        Ok(())
    }

    async fn try_bind_by_peer(&mut self, conn: u64) -> anyhow::Result<()> {
        let Some(peer) = self.conns.get(&conn).and_then(|c| c.peer_pid) else { return Ok(()) };
        if let Some(s) = self.slot_of_pid(peer) {
            self.bind(conn, s).await?;
        }
        Ok(())
    }

    /// Ties connection `conn` to slot `s` and replays what it sent so far.
    async fn bind(&mut self, conn: u64, s: usize) -> anyhow::Result<()> {
        if self.attempt.slots[s].conn.is_some() {
            return Ok(()); // one connection per worker; a second one stays unbound
        }
        let Some(c) = self.conns.get_mut(&conn) else { return Ok(()) };
        c.subtask = Some(s as u32);
        let writer = c.writer.take();
        let buffered = std::mem::take(&mut c.buffered);
        let slot = &mut self.attempt.slots[s];
        slot.conn = Some(conn);
        slot.writer = writer;
        for (at, msg) in buffered {
            self.on_message(s as u32, at, msg).await?;
        }
        Ok(())
    }

    async fn on_message(&mut self, s: u32, at: Instant, msg: FromWorker) -> anyhow::Result<()> {
        if self.phase == Phase::Done {
            return Ok(());
        }
        let i = s as usize;
        {
            let slot = &mut self.attempt.slots[i];
            if at > slot.last_heard {
                slot.last_heard = at;
            }
        }
        match msg {
            FromWorker::Ready { .. } => {
                self.attempt.slots[i].ready = true;
                if self.attempt.all_ready_at.is_none() && self.attempt.slots.iter().all(|s| s.ready) {
                    let now = Instant::now();
                    self.attempt.all_ready_at = Some(now);
                    self.next_trigger = Some(now + Duration::from_millis(self.cfg.job.checkpoint_interval_ms));
                }
            }
            FromWorker::Heartbeat { next_seq, .. } => self.attempt.slots[i].next_seq = next_seq,
            FromWorker::Ack { id, state, .. } => {
                let p = self.parallelism() as usize;
                if self.pending.contains_key(&id) {
                    let decline = self.armed.iter().position(|a| {
                        a.kind == FaultKind::DeclineCheckpoint && a.targets.contains(&s) && a.applies_to(id)
                    });
                    if let Some(k) = decline {
                        return self.decline(k, id, s);
                    }
                }
                let Some(pending) = self.pending.get_mut(&id) else { return Ok(()) }; // aborted meanwhile
                if pending.acks[i].is_some() {
                    return Ok(());
                }
                self.attempt.slots[i].next_seq = state.next_seq;
                pending.acks[i] = Some(state);
                let all = pending.acks.iter().filter(|a| a.is_some()).count() == p;
                self.history
                    .record_at(at, Source::Coordinator, EventKind::CheckpointAcked { id, subtask: s })
                    .context("writing the history")?;
                self.on_event(Source::Coordinator, &EventKind::CheckpointAcked { id, subtask: s }).await?;
                if all && self.pending.contains_key(&id) {
                    self.complete(id).await?;
                }
            }
            FromWorker::Committed { id, .. } => {
                let slot = &mut self.attempt.slots[i];
                slot.committed = slot.committed.max(id);
            }
            FromWorker::EndOfInput { .. } => {
                let slot = &mut self.attempt.slots[i];
                slot.end_of_input = true;
                slot.next_seq = self.cfg.job.records_per_subtask;
            }
            FromWorker::Event { event } => {
                if let EventKind::CommitFinished { outcome: CommitOutcome::Dropped { .. }, .. } = &event {
                    self.committables_dropped += 1;
                }
                let unsupported = match &event {
                    EventKind::Unsupported { what, error } => Some(format!("{what} → {error}")),
                    _ => None,
                };
                let hook = matches!(event, EventKind::CommitStarted { .. } | EventKind::TxnOpened { .. })
                    .then(|| event.clone());
                self.history.record_at(at, Source::Worker { subtask: s }, event).context("writing the history")?;
                if let Some(e) = hook {
                    self.on_event(Source::Worker { subtask: s }, &e).await?;
                }
                if let Some(error) = unsupported {
                    self.progress(&format!("unsupported on this broker: {error}"));
                    self.end(JobOutcome::Unsupported { error }).await?;
                }
            }
            FromWorker::Failed { error, .. } => {
                self.fail_over(Some(s), format!("subtask {s} failed: {error}")).await?;
            }
        }
        Ok(())
    }

    async fn send(&mut self, s: usize, msg: &ToWorker) -> bool {
        let Some(w) = self.attempt.slots[s].writer.as_mut() else { return false };
        let err = match tokio::time::timeout(SEND_TIMEOUT, w.send(msg)).await {
            Ok(Ok(())) => return true,
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("a send took longer than {SEND_TIMEOUT:?}"),
        };
        let slot = &mut self.attempt.slots[s];
        slot.writer = None;
        if slot.closed.is_none() {
            slot.closed = Some((Instant::now(), format!("sending {msg:?}: {err}")));
        }
        false
    }

    /// Kills every worker of the attempt that is still alive (and reaps it).
    fn kill_all(&mut self, why: &str) -> anyhow::Result<()> {
        for i in 0..self.attempt.slots.len() {
            if self.attempt.slots[i].exit.is_some() {
                continue;
            }
            let pid = self.attempt.slots[i].pid;
            self.attempt.slots[i].expected_exit = true;
            let status = match self.launcher.signal(pid, Signal::SIGKILL) {
                Ok(e) => format!("killed by the coordinator ({why}): SIGKILL, observed {:?}", e.observed),
                Err(e) => format!("already gone ({e})"),
            };
            self.attempt.slots[i].exit = Some((Instant::now(), status.clone()));
            self.coord(EventKind::WorkerExited { subtask: i as u32, status, expected: true })?;
        }
        // Whatever the killed workers still had in flight is void.
        self.min_conn = self.conn_counter.load(Ordering::SeqCst);
        self.conns.clear();
        for slot in &mut self.attempt.slots {
            slot.writer = None;
        }
        Ok(())
    }

    // ----- failover ------------------------------------------------------

    async fn fail_over(&mut self, subtask: Option<u32>, reason: String) -> anyhow::Result<()> {
        if self.phase != Phase::Running {
            return Ok(());
        }
        self.coord(EventKind::FailureDetected { subtask, reason: reason.clone() })?;
        self.progress(&format!("failure (attempt {}): {reason}", self.attempt.number));
        self.kill_all("failover")?;
        self.abort_all("the job is failing over")?;
        self.failures += 1;
        let limit = self.cfg.job.restart_limit;
        if self.failures > limit {
            return self
                .end(JobOutcome::Failed {
                    reason: format!(
                        "the job failed {} times, more than restart_limit {limit}; last: {reason}",
                        self.failures
                    ),
                })
                .await;
        }
        let delay_ms = match &self.outage {
            Some((_, _, planned)) => *planned,
            None => self.cfg.job.restart_delay_ms,
        };
        let from_checkpoint = self.store.latest()?.map(|c| c.id);
        let attempt = self.attempt.number + 1;
        self.coord(EventKind::Restarting { attempt, from_checkpoint, delay_ms })?;
        self.phase = Phase::Down { until: Instant::now() + Duration::from_millis(delay_ms) };
        Ok(())
    }

    /// Ends the job: kills what is left, records `JobFinished`.
    async fn end(&mut self, outcome: JobOutcome) -> anyhow::Result<()> {
        if self.phase == Phase::Done {
            return Ok(());
        }
        if !matches!(outcome, JobOutcome::Finished) {
            self.kill_all("the job ended")?;
        }
        self.abort_all("the job ended")?;
        let text = match &outcome {
            JobOutcome::Finished => "finished".to_string(),
            JobOutcome::Failed { reason } => format!("failed: {reason}"),
            JobOutcome::Unsupported { error } => format!("unsupported: {error}"),
        };
        self.coord(EventKind::JobFinished { outcome: text.clone(), attempts: self.attempt.number + 1 })?;
        self.progress(&format!("job {text} ({} checkpoints, {} attempts)", self.completed, self.attempt.number + 1));
        self.phase = Phase::Done;
        self.outcome = Some(outcome);
        Ok(())
    }

    // ----- checkpoints ---------------------------------------------------

    async fn trigger(&mut self, is_final: bool) -> anyhow::Result<()> {
        let id = self.next_id;
        self.next_id += 1;
        let p = self.parallelism() as usize;
        self.pending.insert(id, Pending { triggered: Instant::now(), acks: vec![None; p] });
        self.attempt.last_triggered = Some(id);
        if is_final {
            self.final_id = Some(id);
        }
        self.coord(EventKind::CheckpointTriggered { id })?;
        for s in 0..p {
            self.send(s, &ToWorker::Checkpoint { id }).await;
        }
        // Faults waiting for this trigger act while the barriers are being taken.
        self.on_event(Source::Coordinator, &EventKind::CheckpointTriggered { id }).await
    }

    fn abort(&mut self, id: u64, reason: String) -> anyhow::Result<()> {
        if self.pending.remove(&id).is_some() {
            if self.final_id == Some(id) {
                self.final_id = None; // a new final checkpoint is triggered
            }
            self.coord(EventKind::CheckpointAborted { id, reason })?;
        }
        Ok(())
    }

    fn abort_all(&mut self, reason: &str) -> anyhow::Result<()> {
        let ids: Vec<u64> = self.pending.keys().copied().collect();
        for id in ids {
            self.abort(id, reason.to_string())?;
        }
        Ok(())
    }

    /// Every subtask acked `id`: persist, fire the faults of the window, notify.
    async fn complete(&mut self, id: u64) -> anyhow::Result<()> {
        let Some(pending) = self.pending.remove(&id) else { return Ok(()) };
        let subtasks: Vec<SubtaskState> = pending.acks.into_iter().map(|a| a.unwrap_or_default()).collect();
        let records: u64 = subtasks.iter().map(|s| s.next_seq).sum();
        let record = CheckpointRecord { id, subtasks, persisted_wall_ms: now_wall_ms() };
        let path = self.store.persist(&record)?;
        self.coord(EventKind::CheckpointPersisted { id, path: path.display().to_string() })?;
        self.completed += 1;
        self.latest_complete = Some(id);
        let older: Vec<u64> = self.pending.range(..id).map(|(&k, _)| k).collect();
        for old in older {
            self.abort(old, format!("subsumed by checkpoint {id}"))?;
        }
        let total = self.cfg.job.records_per_subtask * self.parallelism() as u64;
        self.progress(&format!(
            "checkpoint {id} complete ({}/{} records, attempt {}){}",
            group_digits(records),
            group_digits(total),
            self.attempt.number,
            if self.final_id == Some(id) { ", final" } else { "" }
        ));

        // The dangerous window: complete, not yet notified.
        let persisted = EventKind::CheckpointPersisted { id, path: path.display().to_string() };
        self.on_event(Source::Coordinator, &persisted).await?;
        let crashed = self.crash_in_window.take().filter(|(_, c)| *c == id);

        let killed = self.attempt.slots.iter().position(|s| s.killed_by_fault);
        if self.phase != Phase::Running || killed.is_some() {
            if let Some(s) = killed {
                // Deterministic window: a job that is failing over notifies no one.
                self.coord(EventKind::Note {
                    text: format!("checkpoint {id} not notified: subtask {s} was killed before the notification"),
                })?;
            }
            if let Some((f, _)) = crashed {
                let effect = json!({"checkpoint": id, "notified": false,
                                    "statement": format!("checkpoint {id} was persisted and never notified")});
                self.fault_ended(f, effect)?;
            }
            return Ok(());
        }

        // Notification faults armed for this checkpoint (or an earlier one
        // that was never notified). The final checkpoint's notification is
        // never withheld: nothing would follow to cover it.
        let mut withheld: BTreeMap<u32, (usize, FaultKind, u64)> = BTreeMap::new();
        let mut acting = vec![];
        let mut k = 0;
        while k < self.armed.len() {
            let a = &self.armed[k];
            let notification = matches!(a.kind, FaultKind::DropNotification | FaultKind::DelayNotification);
            let final_drop = a.kind == FaultKind::DropNotification && self.final_id == Some(id);
            if notification && a.applies_to(id) && !final_drop {
                let a = self.armed.remove(k);
                for &t in &a.targets {
                    withheld.entry(t).or_insert((a.fault, a.kind, a.delay_ms));
                }
                acting.push(a);
            } else {
                k += 1;
            }
        }
        let now = Instant::now();
        for s in 0..self.attempt.slots.len() {
            match withheld.get(&(s as u32)) {
                None => {
                    self.send(s, &ToWorker::Complete { id }).await;
                }
                Some((_, FaultKind::DelayNotification, d)) => {
                    let f = withheld[&(s as u32)].0;
                    self.delayed.push((now + Duration::from_millis(*d), s as u32, id, self.attempt.number, f));
                }
                Some(_) => {}
            }
        }
        self.coord(EventKind::CheckpointNotified { id })?;
        for a in acting {
            let hit: Vec<u32> =
                a.targets.iter().copied().filter(|&t| (t as usize) < self.attempt.slots.len()).collect();
            let name = self.faults[a.fault].name.clone();
            if a.kind == FaultKind::DropNotification {
                // Flink's CommitterOperator commits every checkpoint up to
                // the one notified, so the next notification covers this one.
                self.coord(EventKind::Note {
                    text: format!("notification of checkpoint {id} withheld from subtasks {hit:?} by fault {name}"),
                })?;
                let missed: Vec<serde_json::Value> =
                    hit.iter().map(|&t| json!({"subtask": t, "checkpoint": id})).collect();
                let effect = json!({"checkpoint": id, "withheld_from": hit, "missed": missed,
                                    "covered_by": "the next notification (commits every checkpoint up to it)"});
                self.fault_ended_with(a.fault, effect, Some(!hit.is_empty()))?;
            } else {
                self.coord(EventKind::Note {
                    text: format!(
                        "notification of checkpoint {id} to subtasks {hit:?} held {} ms by fault {name}",
                        a.delay_ms
                    ),
                })?;
            }
        }
        if let Some((f, _)) = crashed {
            // Cannot happen while the crash's kills are in place; said if it does.
            self.fault_ended_with(f, json!({"checkpoint": id, "notified": true}), Some(false))?;
        }
        self.on_event(Source::Coordinator, &EventKind::CheckpointNotified { id }).await?;
        if self.final_id == Some(id) {
            self.final_complete = Some((id, Instant::now()));
        }
        Ok(())
    }

    /// Target subtask `s` declines checkpoint `id` (armed fault `k`): the
    /// checkpoint is aborted, as Flink's `CheckpointCoordinator` aborts a
    /// pending checkpoint on a task's decline message (CHECKPOINT_DECLINED).
    /// The subtask keeps its committables; the next checkpoint carries them.
    fn decline(&mut self, k: usize, id: u64, s: u32) -> anyhow::Result<()> {
        let a = self.armed.remove(k);
        let name = self.faults[a.fault].name.clone();
        self.abort(id, format!("declined by subtask {s} (fault {name})"))?;
        let aborted = !self.pending.contains_key(&id);
        let effect = json!({"checkpoint": id, "declined_by": s, "aborted": aborted});
        self.fault_ended_with(a.fault, effect, Some(aborted))
    }

    /// Sends the notifications delay-notification held back, once due.
    async fn send_delayed_notifications(&mut self, now: Instant) -> anyhow::Result<()> {
        if self.delayed.is_empty() {
            return Ok(());
        }
        let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.delayed).into_iter().partition(|d| d.0 <= now);
        self.delayed = keep;
        let mut per_fault: BTreeMap<usize, (u64, Vec<serde_json::Value>, bool)> = BTreeMap::new();
        for (_, s, id, attempt, f) in due {
            let same_attempt = attempt == self.attempt.number && self.phase == Phase::Running;
            let sent = same_attempt && self.send(s as usize, &ToWorker::Complete { id }).await;
            let e = per_fault.entry(f).or_insert((id, vec![], true));
            e.1.push(json!({"subtask": s, "sent": sent,
                            "why_not": (!same_attempt).then_some("the job failed over before it was due")}));
            e.2 &= sent;
        }
        for (f, (id, subtasks, all)) in per_fault {
            if self.delayed.iter().any(|d| d.4 == f) {
                continue;
            }
            let d = self.faults[f].spec.delay_ms.unwrap_or(0);
            let effect = json!({"checkpoint": id, "delay_ms": d, "late_notifications": subtasks});
            self.fault_ended_with(f, effect, Some(all))?;
        }
        Ok(())
    }

    // ----- the clock -----------------------------------------------------

    async fn on_tick(&mut self) -> anyhow::Result<()> {
        let now = Instant::now();
        for (pid, status) in self.launcher.exited() {
            let Some(i) = self.slot_of_pid(pid) else { continue };
            let slot = &mut self.attempt.slots[i];
            if slot.exit.is_some() {
                continue;
            }
            slot.exit = Some((now, status.clone()));
            let expected = slot.expected_exit;
            self.coord(EventKind::WorkerExited { subtask: i as u32, status, expected })?;
        }

        match self.phase {
            Phase::Down { until } if now >= until => {
                let next = self.attempt.number + 1;
                self.launch(next).await?;
            }
            Phase::Running => self.tick_running(now).await?,
            Phase::Stopping { since } => {
                if self.attempt.slots.iter().all(|s| s.exit.is_some()) {
                    self.end(JobOutcome::Finished).await?;
                } else if now.duration_since(since) > STOP_TIMEOUT {
                    self.coord(EventKind::Note {
                        text: format!("workers did not exit within {STOP_TIMEOUT:?} of Stop: killed"),
                    })?;
                    self.kill_all("no exit after Stop")?;
                    self.end(JobOutcome::Finished).await?;
                }
            }
            _ => {}
        }
        if self.phase == Phase::Done {
            return Ok(());
        }

        if let Some(started) = self.job_started {
            let elapsed = now.saturating_duration_since(started).as_millis() as u64;
            // A kill or pause of workers that falls due while the job is
            // restoring (no worker, or not all ready yet) waits until the
            // workers are up: signalling nobody would prove nothing, and the
            // fault would come out unconfirmed by bad luck of timing.
            let workers_up = self.phase == Phase::Running && self.attempt.all_ready_at.is_some();
            let waits =
                |spec: &FaultSpec| !workers_up && matches!(spec.kind, FaultKind::KillWorkers | FaultKind::PauseWorkers);
            for f in faults::due_at(&self.cfg.faults, &self.fired(), elapsed) {
                if waits(&self.cfg.faults[f]) {
                    continue;
                }
                let mut trigger = json!({"at_ms": elapsed});
                if let When::AtMs(t) = self.cfg.faults[f].when {
                    if elapsed > t + 250 {
                        trigger["deferred_from_ms"] = json!(t);
                    }
                }
                self.fire(f, trigger, None).await?;
            }
            let counts: Vec<u32> = self.faults.iter().map(|f| f.count).collect();
            let busy: Vec<bool> =
                (0..self.faults.len()).map(|f| self.fault_busy(f) || waits(&self.cfg.faults[f])).collect();
            for f in faults::due_every(&self.cfg.faults, &counts, &busy, elapsed) {
                let period = match self.faults[f].spec.when {
                    When::EveryMs(p) => p,
                    _ => 0,
                };
                let trigger = json!({"every_ms": period, "firing": counts[f] + 1, "at_ms": elapsed});
                self.fire(f, trigger, None).await?;
            }
            self.send_delayed_notifications(now).await?;
        }
        let due: Vec<Heal> = {
            let (due, keep) = std::mem::take(&mut self.heals).into_iter().partition(|h| h.at.is_some_and(|t| t <= now));
            self.heals = keep;
            due
        };
        for h in due {
            self.heal(h).await?;
        }
        Ok(())
    }

    async fn tick_running(&mut self, now: Instant) -> anyhow::Result<()> {
        let j = self.cfg.job.clone();
        // Failure detection.
        let startup = Duration::from_millis(j.heartbeat_timeout_ms.max(j.checkpoint_timeout_ms));
        let heartbeat = Duration::from_millis(j.heartbeat_timeout_ms);
        let mut failure = None;
        for (i, slot) in self.attempt.slots.iter().enumerate() {
            let s = i as u32;
            let conn_gone = slot.conn.is_none() || slot.closed.is_some();
            if let Some((at, status)) = &slot.exit {
                if !slot.expected_exit && (conn_gone || now.duration_since(*at) >= EXIT_GRACE) {
                    failure = Some((s, format!("the worker of subtask {s} exited: {status}")));
                    break;
                }
            } else if let Some((at, why)) = &slot.closed {
                if now.duration_since(*at) >= EXIT_GRACE {
                    failure = Some((s, format!("the control connection of subtask {s} closed: {why}")));
                    break;
                }
            } else if !slot.ready && now.duration_since(slot.launched) > startup {
                failure = Some((s, format!("subtask {s} was not ready {} ms after its start", startup.as_millis())));
                break;
            } else if slot.ready && now.saturating_duration_since(slot.last_heard) > heartbeat {
                let silent = now.saturating_duration_since(slot.last_heard).as_millis();
                failure = Some((
                    s,
                    format!(
                        "no message from subtask {s} for {silent} ms (heartbeat_timeout_ms {})",
                        j.heartbeat_timeout_ms
                    ),
                ));
                break;
            }
        }
        if let Some((s, reason)) = failure {
            return self.fail_over(Some(s), reason).await;
        }

        // Expired checkpoints (Flink: the checkpoint canceller after checkpointTimeout).
        let timeout = Duration::from_millis(j.checkpoint_timeout_ms);
        let expired: Vec<(u64, Vec<u32>)> = self
            .pending
            .iter()
            .filter(|(_, p)| now.duration_since(p.triggered) >= timeout)
            .map(|(&id, p)| (id, (0..p.acks.len() as u32).filter(|&s| p.acks[s as usize].is_none()).collect()))
            .collect();
        for (id, missing) in expired {
            self.abort(id, format!("expired after {} ms: no ack from subtasks {missing:?}", j.checkpoint_timeout_ms))?;
        }

        // The end of the job: the final checkpoint's commits, then Stop.
        if let Some((fid, at)) = self.final_complete {
            if self.attempt.slots.iter().all(|s| s.committed >= fid) {
                for s in 0..self.attempt.slots.len() {
                    self.attempt.slots[s].expected_exit = true;
                    self.send(s, &ToWorker::Stop).await;
                }
                self.phase = Phase::Stopping { since: now };
            } else if now.duration_since(at) >= timeout {
                let missing: Vec<usize> =
                    (0..self.attempt.slots.len()).filter(|&s| self.attempt.slots[s].committed < fid).collect();
                return self
                    .end(JobOutcome::Failed {
                        reason: format!(
                            "subtasks {missing:?} did not confirm the commits of the final checkpoint {fid} within {} ms",
                            j.checkpoint_timeout_ms
                        ),
                    })
                    .await;
            }
            return Ok(());
        }

        // Triggers.
        if self.attempt.all_ready_at.is_none() || self.pending.len() >= j.max_concurrent_checkpoints.max(1) as usize {
            return Ok(());
        }
        if self.attempt.slots.iter().all(|s| s.end_of_input) {
            if self.final_id.is_none() {
                self.trigger(true).await?;
            }
        } else if self.next_trigger.is_some_and(|t| now >= t) {
            self.next_trigger = Some(now + Duration::from_millis(j.checkpoint_interval_ms));
            self.trigger(false).await?;
        }
        Ok(())
    }

    // ----- faults --------------------------------------------------------

    fn fired(&self) -> Vec<bool> {
        self.faults.iter().map(|f| f.fired()).collect()
    }

    /// Whether fault `f`'s latest firing is still in effect (to be healed,
    /// queued, armed or in flight): a repeated fault waits for it.
    fn fault_busy(&self, f: usize) -> bool {
        self.heals.iter().any(|h| h.fault == f)
            || self.broker_queue.iter().any(|j| j.fault() == f)
            || self.op_fault == Some(f)
            || self.armed.iter().any(|a| a.fault == f)
            || self.delayed.iter().any(|d| d.4 == f)
            || self.outage.is_some_and(|(o, _, _)| o == f)
    }

    /// Fires, right here, the one-shot faults this event triggers (recorded
    /// by `source` just before).
    async fn on_event(&mut self, source: Source, event: &EventKind) -> anyhow::Result<()> {
        let due = faults::due_on_event(&self.cfg.faults, &self.fired(), event, &source);
        for f in due {
            let (trigger, at) = event_trigger(&source, event);
            self.fire(f, trigger, at).await?;
        }
        Ok(())
    }

    fn fault_event(&mut self, kind: EventKind) -> anyhow::Result<()> {
        self.record(Source::Fault, kind)
    }

    fn fault_started(&mut self, f: usize, confirmed: bool, effect: serde_json::Value) -> anyhow::Result<()> {
        let (name, fault) = (self.faults[f].name.clone(), self.faults[f].kind.clone());
        self.progress(&format!("fault {name} ({fault}) started, confirmed: {confirmed}"));
        self.fault_event(EventKind::FaultStarted { name, fault, effect: effect.clone() })?;
        self.faults[f].start_firing(confirmed, effect);
        Ok(())
    }

    fn fault_ended(&mut self, f: usize, effect: serde_json::Value) -> anyhow::Result<()> {
        self.fault_ended_with(f, effect, None)
    }

    /// Ends the fault's latest firing; `confirmed` settles its confirmation
    /// when that is known only now.
    fn fault_ended_with(&mut self, f: usize, effect: serde_json::Value, confirmed: Option<bool>) -> anyhow::Result<()> {
        let (name, fault) = (self.faults[f].name.clone(), self.faults[f].kind.clone());
        match confirmed {
            Some(c) => self.progress(&format!("fault {name} ({fault}) ended, confirmed: {c}")),
            None => self.progress(&format!("fault {name} ({fault}) ended")),
        }
        self.fault_event(EventKind::FaultEnded { name, fault, effect: effect.clone() })?;
        self.faults[f].end_firing(effect, confirmed);
        Ok(())
    }

    /// A fault that could not be aimed (bad target, nothing to act on): fired,
    /// not confirmed, and said so.
    fn fault_failed(&mut self, f: usize, trigger: serde_json::Value, error: String) -> anyhow::Result<()> {
        self.fault_started(f, false, json!({"trigger": trigger, "error": error}))
    }

    /// Fires fault `f`. `at_checkpoint` is the checkpoint of the event that
    /// triggered it, if an event did; event-triggered broker actions run
    /// inline (the coordinator's next step waits for them, so the window the
    /// event opens is the one hit), time-triggered ones beside the loop.
    async fn fire(&mut self, f: usize, trigger: serde_json::Value, at_checkpoint: Option<u64>) -> anyhow::Result<()> {
        let spec = self.faults[f].spec.clone();
        let duration = spec.duration_ms;
        self.faults[f].count += 1;
        let inline = !matches!(spec.when, When::AtMs(_) | When::EveryMs(_));
        match spec.kind {
            FaultKind::KillWorkers | FaultKind::PauseWorkers | FaultKind::JobOutage => {
                let targets = if spec.kind == FaultKind::JobOutage {
                    Ok((0..self.parallelism()).collect())
                } else {
                    faults::worker_targets(&spec.target, self.parallelism())
                };
                let targets = match targets {
                    Ok(t) => t,
                    Err(e) => return self.fault_failed(f, trigger, e),
                };
                if spec.kind == FaultKind::PauseWorkers && duration.is_none() {
                    return self.fault_failed(f, trigger, "pause-workers needs duration_ms".into());
                }
                let signal = if spec.kind == FaultKind::PauseWorkers { Signal::SIGSTOP } else { Signal::SIGKILL };
                let (effects, all_confirmed, hit) = self.signal_workers(f, &targets, signal)?;
                let mut effect = json!({"trigger": trigger, "attempt": self.attempt.number, "workers": effects});
                match spec.kind {
                    FaultKind::PauseWorkers => {
                        let d = duration.unwrap_or(0);
                        effect["duration_ms"] = json!(d);
                        // The transactions the frozen workers hold open: at the
                        // resume, the broker's view of them is the evidence of
                        // what a pause past the transaction timeout did.
                        let open: Vec<String> = hit.iter().map(|(s, _)| self.current_tid(*s)).collect();
                        effect["open_transactions"] = json!(open);
                        // Past the transaction timeout plus the broker's abort
                        // scan (≤ 1 s in the library; 1.5 s margin), while
                        // still frozen: the broker's view then is the evidence.
                        let look_after = u64::try_from(self.cfg.job.transaction_timeout_ms)
                            .unwrap_or(u64::MAX)
                            .saturating_add(1_500);
                        if d > look_after && !open.is_empty() {
                            self.heals.push(Heal {
                                at: Some(Instant::now() + Duration::from_millis(look_after)),
                                fault: f,
                                action: HealAction::ObserveOpen(open),
                            });
                        }
                        self.fault_started(f, all_confirmed && !hit.is_empty(), effect)?;
                        self.heals.push(Heal {
                            at: Some(Instant::now() + Duration::from_millis(d)),
                            fault: f,
                            action: HealAction::ResumeWorkers(hit),
                        });
                    }
                    FaultKind::JobOutage => {
                        let d = duration.unwrap_or(self.cfg.job.restart_delay_ms);
                        effect["outage_ms"] = json!(d);
                        // The job stays down for the outage, whether it was
                        // running (the kill makes it fail over) or already down.
                        self.outage = Some((f, Instant::now(), d));
                        if let Phase::Down { .. } = self.phase {
                            self.phase = Phase::Down { until: Instant::now() + Duration::from_millis(d) };
                        }
                        self.fault_started(f, all_confirmed && !hit.is_empty(), effect)?;
                    }
                    _ => self.fault_started(f, all_confirmed && !hit.is_empty(), effect)?,
                }
            }
            FaultKind::BrokerKill | FaultKind::BrokerStop | FaultKind::BrokerRestart | FaultKind::BrokerPause => {
                let target = match faults::broker_target(&spec.target, &self.node_ids, self.parallelism()) {
                    Ok(BrokerTarget::Nodes(n)) => Aim::Nodes(n),
                    // A commit_started / txn_opened trigger names a transaction: plain
                    // `txn-coordinator` then means that transaction's coordinator (the
                    // one the commit talks to), not the one of subtask 0's open id.
                    Ok(BrokerTarget::CoordinatorOf(_))
                        if matches!(spec.target, Some(crate::scenario::Target::Named(_)))
                            && event_tid(&trigger).is_some() =>
                    {
                        let (subtask, tid) = event_tid(&trigger).expect("checked");
                        Aim::CoordinatorOf { subtask, transactional_id: tid }
                    }
                    // The id is the one open now, as the coordinator knows it.
                    Ok(BrokerTarget::CoordinatorOf(s)) => {
                        Aim::CoordinatorOf { subtask: s, transactional_id: self.current_tid(s) }
                    }
                    Ok(BrokerTarget::Controller) => Aim::Controller,
                    Ok(BrokerTarget::LeaderOf(p)) => {
                        if p >= self.cfg.partitions {
                            let e = format!("partition {p} does not exist ({} partitions)", self.cfg.partitions);
                            return self.fault_failed(f, trigger, e);
                        }
                        Aim::LeaderOf { topic: self.cfg.topic.clone(), partition: p as i32 }
                    }
                    Err(e) => return self.fault_failed(f, trigger, e),
                };
                let job = BrokerJob::Fire { fault: f, trigger, kind: spec.kind, duration, target };
                self.faults[f].queued = true;
                if inline {
                    // Inside the event's window (e.g. persisted, not yet notified): done before the next step.
                    self.broker_job_now(job).await?;
                } else {
                    // Beside the loop, so checkpoints and heartbeats go on meanwhile.
                    self.broker_queue.push_back(job);
                    self.pump_broker_jobs()?;
                }
            }
            FaultKind::RollingRestart => {
                // Minutes long: always beside the loop.
                self.faults[f].queued = true;
                self.broker_queue.push_back(BrokerJob::Rolling { fault: f, trigger });
                self.pump_broker_jobs()?;
            }
            kind if faults::is_proxy_fault(kind) => self.fire_proxy(f, trigger).await?,
            FaultKind::DropNotification | FaultKind::DelayNotification | FaultKind::DeclineCheckpoint => {
                let targets = match faults::worker_targets(&spec.target, self.parallelism()) {
                    Ok(t) => t,
                    Err(e) => return self.fault_failed(f, trigger, e),
                };
                let delay_ms = match (spec.kind, spec.delay_ms) {
                    (FaultKind::DelayNotification, None) => {
                        return self.fault_failed(f, trigger, "delay-notification needs delay_ms".into())
                    }
                    (_, d) => d.unwrap_or(0),
                };
                // The checkpoint acted on: the one named, else the trigger's,
                // else the next one (for a decline: the next triggered).
                let checkpoint = spec
                    .checkpoint
                    .or(at_checkpoint)
                    .or_else(|| (spec.kind == FaultKind::DeclineCheckpoint).then_some(self.next_id));
                let armed_for = match checkpoint {
                    Some(c) => json!(c),
                    None => json!("the next notification"),
                };
                let effect = json!({"trigger": trigger, "armed_for_checkpoint": armed_for, "subtasks": targets,
                                    "delay_ms": (spec.kind == FaultKind::DelayNotification).then_some(delay_ms)});
                // Confirmed only once it acted (a notification withheld or late, a checkpoint aborted).
                self.fault_started(f, false, effect)?;
                self.armed.push(Armed { fault: f, kind: spec.kind, checkpoint, targets, delay_ms });
            }
            FaultKind::CoordinatorCrash => {
                // Flink's JobManager dies after the checkpoint store has the
                // checkpoint and before notifyCheckpointComplete reaches any
                // task; with HA the new leader restores every task from the
                // latest completed checkpoint. Here: every worker is killed
                // (no notification goes out, see `complete`) and the failover
                // restores from the store.
                let all: Vec<u32> = (0..self.parallelism()).collect();
                let (effects, all_confirmed, hit) = self.signal_workers(f, &all, Signal::SIGKILL)?;
                let window = matches!(spec.when, When::CheckpointPersisted(_)).then_some(at_checkpoint).flatten();
                let effect = json!({"trigger": trigger, "attempt": self.attempt.number, "workers": effects,
                                    "persisted_not_notified": window});
                let confirmed = all_confirmed && hit.len() == all.len();
                self.fault_started(f, confirmed, effect)?;
                if let Some(id) = window {
                    self.crash_in_window = Some((f, id));
                }
            }
            other => {
                return self.fault_failed(f, trigger, format!("{} is not implemented", other.name()));
            }
        }
        Ok(())
    }

    /// A network or protocol fault: a rule in the proxy until it is healed.
    async fn fire_proxy(&mut self, f: usize, trigger: serde_json::Value) -> anyhow::Result<()> {
        let spec = self.faults[f].spec.clone();
        if spec.kind == FaultKind::NetBlackhole {
            // The cluster is needed to pick the way (and maybe a role).
            self.wait_broker_op().await?;
        }
        let proxy = self.proxy.clone();
        let isolates =
            spec.kind == FaultKind::NetBlackhole && self.brokers.as_deref().is_some_and(|b| b.isolates_nodes());
        if proxy.is_none() && !isolates {
            return self.fault_failed(f, trigger, "the cluster has no proxy; set cluster.proxy".into());
        }
        let tid = match &spec.transactional_id {
            None => None,
            Some(TidSelector::Literal(t)) => Some(t.clone()),
            // Resolved now. A trigger that names a checkpoint (its commit,
            // persist, notification, barrier, or the transaction opened for
            // it) means that checkpoint's transaction — the one being
            // committed, not the one open beside it; other triggers mean the
            // subtask's open transaction.
            Some(TidSelector::Subtask { subtask }) if *subtask < self.parallelism() => {
                Some(match trigger_checkpoint(&trigger) {
                    Some(n) => sinkhole_workloads::sink::naming::transactional_id(&self.cfg.tid_prefix, *subtask, n),
                    None => self.current_tid(*subtask),
                })
            }
            Some(TidSelector::Subtask { subtask }) => {
                let e = format!("transactional_id of subtask {subtask}: no such subtask");
                return self.fault_failed(f, trigger, e);
            }
        };
        let mut role = serde_json::Value::Null;
        let blackholed = if spec.kind == FaultKind::NetBlackhole {
            match faults::broker_target(&spec.target, &self.node_ids, self.parallelism()) {
                Ok(BrokerTarget::Nodes(n)) => n,
                Ok(other) => {
                    // A role: looked up now, through the cluster.
                    self.wait_broker_op().await?;
                    let coordinator_tid = match other {
                        BrokerTarget::CoordinatorOf(s) => self.current_tid(s),
                        _ => String::new(),
                    };
                    let brokers = self.brokers.as_deref_mut().expect("no broker job in flight");
                    let (r, name, of) = match other {
                        BrokerTarget::Controller => (brokers.controller().await, "controller", String::new()),
                        BrokerTarget::LeaderOf(p) => (
                            brokers.leader_of(&self.cfg.topic, p as i32).await,
                            "leader",
                            format!("{}-{p}", self.cfg.topic),
                        ),
                        BrokerTarget::CoordinatorOf(_) => {
                            (brokers.find_coordinator(&coordinator_tid).await, "txn-coordinator", coordinator_tid)
                        }
                        BrokerTarget::Nodes(_) => unreachable!(),
                    };
                    match r {
                        Ok(n) => {
                            role = role_evidence(name, &of, n, "looked up when the fault fired");
                            vec![n]
                        }
                        Err(e) => return self.fault_failed(f, trigger, format!("finding the {name}: {e}")),
                    }
                }
                Err(e) => return self.fault_failed(f, trigger, e),
            }
        } else {
            vec![]
        };
        if spec.kind == FaultKind::NetBlackhole && self.brokers.as_deref().is_some_and(|b| b.isolates_nodes()) {
            // Containers: the engine takes the node off the run's network.
            let brokers = self.brokers.as_deref_mut().expect("no broker job in flight");
            let mut nodes = vec![];
            let mut isolated = vec![];
            let mut all = !blackholed.is_empty();
            for &n in &blackholed {
                match brokers.isolate(n).await {
                    Ok(e) => {
                        all &= e.confirmed;
                        isolated.push(n);
                        nodes.push(json!({"node": n, "confirmed": e.confirmed, "network": e}));
                    }
                    Err(e) => {
                        all = false;
                        nodes.push(json!({"node": n, "confirmed": false, "error": e.to_string()}));
                    }
                }
            }
            let effect = json!({"trigger": trigger, "how": "engine network disconnect", "nodes": nodes,
                                "role": role, "duration_ms": spec.duration_ms});
            self.fault_started(f, all, effect)?;
            let at = spec.duration_ms.map(|d| Instant::now() + Duration::from_millis(d));
            self.heals.push(Heal { at, fault: f, action: HealAction::Rejoin(isolated) });
            return Ok(());
        }
        let Some(proxy) = proxy else {
            return self.fault_failed(f, trigger, "the cluster has no proxy; set cluster.proxy".into());
        };
        let name = self.faults[f].name.clone();
        let rule = match faults::proxy_rule(&spec, &name, tid, &blackholed) {
            Ok(r) => r,
            Err(e) => return self.fault_failed(f, trigger, e),
        };
        let rule_json = serde_json::to_value(&rule).unwrap_or_default();
        let id = proxy.add(rule);
        let effect = json!({"trigger": trigger, "rule": rule_json, "rule_id": id.0, "role": role,
                            "duration_ms": spec.duration_ms});
        // Confirmed when healed: only a rule that acted on something did anything.
        self.fault_started(f, false, effect)?;
        let at = spec.duration_ms.map(|d| Instant::now() + Duration::from_millis(d));
        self.heals.push(Heal { at, fault: f, action: HealAction::RemoveRule(id) });
        Ok(())
    }

    /// Starts the next queued broker job if none is running.
    fn pump_broker_jobs(&mut self) -> anyhow::Result<()> {
        if self.broker_op.is_some() {
            return Ok(());
        }
        let Some(job) = self.broker_queue.pop_front() else { return Ok(()) };
        let Some(brokers) = self.brokers.take() else {
            self.broker_queue.push_front(job);
            return Ok(());
        };
        self.broker_job_started(&job)?;
        self.broker_op = Some(Box::pin(async move {
            let done = run_broker_job(&mut *brokers, job).await;
            (brokers, done)
        }));
        Ok(())
    }

    /// Runs a broker job now, after the one in flight (if any).
    async fn broker_job_now(&mut self, job: BrokerJob) -> anyhow::Result<()> {
        self.wait_broker_op().await?;
        let brokers = self.brokers.take().expect("no broker job in flight");
        self.broker_job_started(&job)?;
        let done = run_broker_job(&mut *brokers, job).await;
        self.brokers = Some(brokers);
        self.broker_job_done(done)
    }

    /// Waits for the broker job in flight, if any, and records its end.
    async fn wait_broker_op(&mut self) -> anyhow::Result<()> {
        if let Some(op) = self.broker_op.take() {
            let (brokers, done) = op.await;
            self.brokers = Some(brokers);
            self.broker_job_done(done)?;
        }
        Ok(())
    }

    fn broker_job_started(&mut self, job: &BrokerJob) -> anyhow::Result<()> {
        self.op_fault = Some(job.fault());
        let interval = match job {
            BrokerJob::Fire { fault, trigger, kind: FaultKind::BrokerRestart, target, .. } => {
                let nodes = match target {
                    Aim::Nodes(n) => json!(n),
                    Aim::CoordinatorOf { transactional_id, .. } => json!({"coordinator_of": transactional_id}),
                    Aim::Controller => json!("controller"),
                    Aim::LeaderOf { topic, partition } => json!({"leader_of": format!("{topic}-{partition}")}),
                };
                Some((*fault, json!({"trigger": trigger, "nodes": nodes})))
            }
            BrokerJob::Rolling { fault, trigger } => Some((
                *fault,
                json!({"trigger": trigger, "nodes": self.node_ids, "order": "id order, controller last"}),
            )),
            _ => None,
        };
        if let Some((fault, effect)) = interval {
            // A restart is an interval (stop, start, ready): started now, ended when back.
            self.fault_started(fault, false, effect)?;
        }
        Ok(())
    }

    fn broker_job_done(&mut self, done: BrokerDone) -> anyhow::Result<()> {
        self.op_fault = None;
        let per_node: Vec<serde_json::Value> =
            done.results.iter().map(|(n, r)| faults::node_effect_json(*n, r)).collect();
        let confirmed = done.error.is_none()
            && !done.results.is_empty()
            && done.results.iter().all(|(_, r)| r.as_ref().is_ok_and(faults::node_effect_confirmed));
        match done.job {
            BrokerJob::Heal { fault, .. } => {
                let effect = per_node.into_iter().next().unwrap_or(serde_json::Value::Null);
                self.fault_ended(fault, effect)
            }
            BrokerJob::Rolling { fault, .. } => {
                let effect = json!({"nodes": done.rolling, "controller": done.coordinator, "error": done.error,
                                    "confirmed": done.rolling_ok});
                self.fault_ended_with(fault, effect, Some(done.rolling_ok))
            }
            BrokerJob::Fire { fault, trigger, kind, duration, .. } => {
                if kind == FaultKind::BrokerRestart {
                    let effect = json!({"nodes": per_node, "coordinator": done.coordinator, "role": done.coordinator,
                                        "error": done.error, "confirmed": confirmed});
                    return self.fault_ended_with(fault, effect, Some(confirmed));
                }
                if let Some(error) = done.error {
                    return self.fault_failed(fault, trigger, error);
                }
                for (node, r) in &done.results {
                    if r.is_ok() {
                        let action = if matches!(kind, FaultKind::BrokerKill | FaultKind::BrokerStop) {
                            HealAction::StartBroker(*node)
                        } else {
                            HealAction::ResumeBroker(*node)
                        };
                        let at = duration.map(|d| Instant::now() + Duration::from_millis(d));
                        self.heals.push(Heal { at, fault, action });
                    }
                }
                let effect = json!({"trigger": trigger, "nodes": per_node, "coordinator": done.coordinator,
                                    "role": done.coordinator, "duration_ms": duration});
                self.fault_started(fault, confirmed, effect)
            }
        }
    }

    /// Signals the workers of these subtasks; returns the per-worker effects,
    /// whether all were confirmed, and the (subtask, pid) actually hit.
    #[allow(clippy::type_complexity)]
    fn signal_workers(
        &mut self,
        f: usize,
        targets: &[u32],
        signal: Signal,
    ) -> anyhow::Result<(Vec<serde_json::Value>, bool, Vec<(u32, u32)>)> {
        let mut effects = vec![];
        let mut all = true;
        let mut hit = vec![];
        for &s in targets {
            let running = self.phase == Phase::Running || matches!(self.phase, Phase::Stopping { .. });
            let slot = self.attempt.slots.get(s as usize);
            let Some(pid) = slot.filter(|sl| running && sl.exit.is_none()).map(|sl| sl.pid) else {
                all = false;
                effects.push(json!({"subtask": s, "error": "no worker running"}));
                continue;
            };
            match self.launcher.signal(pid, signal) {
                Ok(e) => {
                    all &= e.confirmed;
                    hit.push((s, pid));
                    effects.push(json!({"subtask": s, "pid": pid, "signal": e}));
                    if signal == Signal::SIGKILL {
                        let status = format!("killed by fault {} (SIGKILL)", self.faults[f].name);
                        let slot = &mut self.attempt.slots[s as usize];
                        slot.exit = Some((Instant::now(), status.clone()));
                        slot.killed_by_fault = true;
                        self.coord(EventKind::WorkerExited { subtask: s, status, expected: false })?;
                    }
                }
                Err(e) => {
                    all = false;
                    effects.push(json!({"subtask": s, "pid": pid, "error": e}));
                }
            }
        }
        Ok((effects, all, hit))
    }

    /// Subtask s's current transactional id, as Flink's INCREMENTING naming
    /// gives it: the checkpoint that will carry the open transaction — after
    /// barrier k that is k+1; right after a restore from r, r+1; fresh, 1.
    fn current_tid(&self, s: u32) -> String {
        let n = match (self.attempt.last_triggered, self.attempt.restored_from) {
            (Some(k), _) => k + 1,
            (None, Some(r)) => r + 1,
            (None, None) => 1,
        };
        format!("{}-{s}-{n}", self.cfg.tid_prefix)
    }

    async fn heal(&mut self, h: Heal) -> anyhow::Result<()> {
        let effect = match h.action {
            HealAction::ResumeWorkers(list) => {
                let mut out = vec![];
                for (s, pid) in list {
                    out.push(match self.launcher.signal(pid, Signal::SIGCONT) {
                        Ok(e) => json!({"subtask": s, "pid": pid, "signal": e}),
                        // The failover may have killed it meanwhile: nothing to resume.
                        Err(e) => json!({"subtask": s, "pid": pid, "gone": e}),
                    });
                }
                json!({"workers": out})
            }
            HealAction::ObserveOpen(ids) => {
                let attempt = self.attempt.number;
                let started_in =
                    self.faults[h.fault].firings.last().and_then(|f| f.start.get("attempt")).and_then(|a| a.as_u64());
                self.wait_broker_op().await?;
                let brokers = self.brokers.as_deref_mut().expect("no broker job in flight");
                let seen = match brokers.describe_transactions(ids).await {
                    Ok(v) => v,
                    Err(e) => json!({"error": e.to_string()}),
                };
                let mut obs = json!({"after_ms": self.cfg.job.transaction_timeout_ms as i64 + 1_500,
                                     "transactions": seen});
                if started_in != Some(u64::from(attempt)) {
                    // A failover meanwhile: the next attempt reuses the ids.
                    obs["note"] = json!(format!(
                        "the job failed over during the pause (attempt {} now): these ids may belong to the new attempt",
                        attempt
                    ));
                }
                let name = self.faults[h.fault].name.clone();
                self.coord(EventKind::Note { text: format!("fault {name}: the broker's view while frozen: {obs}") })?;
                if let Some(firing) = self.faults[h.fault].firings.last_mut() {
                    firing.start["while_frozen"] = obs;
                }
                return Ok(());
            }
            HealAction::RemoveRule(id) => {
                let Some(proxy) = self.proxy.clone() else { return Ok(()) };
                let stats = proxy.remove(id);
                let acted = stats.acted();
                let mut effect = json!({"rule_id": id.0, "stats": stats, "acted": acted});
                if !acted {
                    effect["why_unconfirmed"] = json!("the rule matched no frame it could act on");
                }
                return self.fault_ended_with(h.fault, effect, Some(acted));
            }
            HealAction::Rejoin(nodes) => {
                self.wait_broker_op().await?;
                let brokers = self.brokers.as_deref_mut().expect("no broker job in flight");
                let mut out = vec![];
                for n in nodes {
                    out.push(match brokers.rejoin(n).await {
                        Ok(e) => json!({"node": n, "network": e}),
                        Err(e) => json!({"node": n, "error": e.to_string()}),
                    });
                }
                json!({"nodes": out})
            }
            HealAction::StartBroker(node) | HealAction::ResumeBroker(node) => {
                let action =
                    if matches!(h.action, HealAction::StartBroker(_)) { NodeAction::Start } else { NodeAction::Resume };
                self.broker_queue.push_back(BrokerJob::Heal { fault: h.fault, node, action });
                return self.pump_broker_jobs();
            }
        };
        self.fault_ended(h.fault, effect)
    }

    // ----- the end -------------------------------------------------------

    /// Heals whatever is still faulted, records the faults that never fired,
    /// and builds the outcome. Runs on error paths too.
    async fn finish(&mut self) -> anyhow::Result<ModeOutcome> {
        if let Some(t) = self.accept_task.take() {
            t.abort();
        }
        let _ = std::fs::remove_file(&self.socket);
        if self.phase != Phase::Done {
            // An error ended the loop: nothing may outlive the runner.
            let _ = self.kill_all("the runner stopped on an error");
        }
        // Heals still due (a broker killed for the rest of the job among
        // them), then every broker job to its end, one after the other.
        for h in std::mem::take(&mut self.heals) {
            self.heal(h).await?;
        }
        loop {
            self.wait_broker_op().await?;
            match self.broker_queue.pop_front() {
                Some(job) => self.broker_job_now(job).await?,
                None if self.heals.is_empty() => break,
                None => {
                    for h in std::mem::take(&mut self.heals) {
                        self.heal(h).await?;
                    }
                }
            }
        }
        if self.faults.iter().any(|f| f.fired() && is_broker_fault(f.spec.kind)) {
            let brokers = self.brokers.as_deref_mut().expect("no broker job in flight");
            if let Err(e) = brokers.wait_ready(faults::READY_TIMEOUT).await {
                self.coord(EventKind::Note { text: format!("the cluster was not ready after the faults: {e}") })?;
                anyhow::bail!("the cluster did not recover after the faults: {e}");
            }
        }
        if let Some((f, _, _)) = self.outage.take() {
            self.fault_ended(f, json!({"note": "the job ended during the outage"}))?;
        }
        for a in std::mem::take(&mut self.armed) {
            let what = match a.kind {
                FaultKind::DeclineCheckpoint => "an ack it could decline",
                _ => "a notification it could act on",
            };
            let effect =
                json!({"not_acted": format!("the job ended before {what} (checkpoint {:?} or later)", a.checkpoint)});
            self.fault_ended_with(a.fault, effect, Some(false))?;
        }
        let late: Vec<usize> = std::mem::take(&mut self.delayed).into_iter().map(|d| d.4).collect();
        for f in late.into_iter().collect::<std::collections::BTreeSet<_>>() {
            let effect = json!({"not_acted": "the job ended before the late notification was due"});
            self.fault_ended_with(f, effect, Some(false))?;
        }
        let ran_ms = self.job_started.map(|t| t.elapsed().as_millis() as u64).unwrap_or(0);
        for f in 0..self.faults.len() {
            if self.faults[f].fired() {
                continue;
            }
            let reason = faults::skipped_reason(&self.faults[f].spec, self.latest_complete, ran_ms);
            let (name, fault) = (self.faults[f].name.clone(), self.faults[f].kind.clone());
            self.fault_event(EventKind::FaultSkipped {
                name: name.clone(),
                fault: fault.clone(),
                reason: reason.clone(),
            })?;
            self.faults[f].record = Some(FaultRecord {
                name,
                kind: fault,
                fired: false,
                confirmed: false,
                effect: json!({"skipped": reason}),
            });
        }
        self.history.sync().context("syncing the history")?;
        let job = self
            .outcome
            .clone()
            .unwrap_or_else(|| JobOutcome::Failed { reason: "the runner stopped on an error".into() });
        Ok(ModeOutcome {
            job,
            attempts: self.attempt.number + 1,
            checkpoints_completed: self.completed,
            history: self.history.path().to_path_buf(),
            faults: self.faults.iter().filter_map(|f| f.record.clone()).collect(),
            committables_dropped: self.committables_dropped,
            wall_ms: self.start.elapsed().as_millis() as u64,
        })
    }
}

/// A trigger event as a fault's effect records it, and its checkpoint.
fn event_trigger(source: &Source, event: &EventKind) -> (serde_json::Value, Option<u64>) {
    let subtask = match source {
        Source::Worker { subtask } => Some(*subtask),
        _ => None,
    };
    match event {
        EventKind::CheckpointTriggered { id } => (json!({"checkpoint_triggered": id}), Some(*id)),
        EventKind::CheckpointAcked { id, subtask } => {
            (json!({"checkpoint_acked": {"checkpoint": id, "subtask": subtask}}), Some(*id))
        }
        // The old key stays: reports and tests read it.
        EventKind::CheckpointPersisted { id, .. } => {
            (json!({"after_checkpoint_persisted": id, "checkpoint_persisted": id}), Some(*id))
        }
        EventKind::CheckpointNotified { id } => (json!({"checkpoint_notified": id}), Some(*id)),
        EventKind::CommitStarted { transactional_id, checkpoint, restored } => (
            json!({"commit_started": {"checkpoint": checkpoint, "subtask": subtask,
                                      "transactional_id": transactional_id, "restored": restored}}),
            Some(*checkpoint),
        ),
        EventKind::TxnOpened { transactional_id, checkpoint } => (
            json!({"txn_opened": {"checkpoint": checkpoint, "subtask": subtask, "transactional_id": transactional_id}}),
            Some(*checkpoint),
        ),
        other => (json!({"event": other}), None),
    }
}

/// The checkpoint an event trigger names (None for time triggers).
fn trigger_checkpoint(trigger: &serde_json::Value) -> Option<u64> {
    ["commit_started", "txn_opened", "checkpoint_acked"]
        .iter()
        .find_map(|k| trigger.get(*k).and_then(|t| t.get("checkpoint")).and_then(|c| c.as_u64()))
        .or_else(|| {
            ["checkpoint_persisted", "checkpoint_notified", "checkpoint_triggered"]
                .iter()
                .find_map(|k| trigger.get(*k).and_then(|c| c.as_u64()))
        })
}

/// The (subtask, transactional id) a commit_started or txn_opened trigger names.
fn event_tid(trigger: &serde_json::Value) -> Option<(u32, String)> {
    let t = trigger.get("commit_started").or_else(|| trigger.get("txn_opened"))?;
    Some((t.get("subtask")?.as_u64()? as u32, t.get("transactional_id")?.as_str()?.to_string()))
}

/// The subtask a message says it comes from.
fn claimed_subtask(msg: &FromWorker) -> Option<u32> {
    match msg {
        FromWorker::Ready { subtask, .. }
        | FromWorker::Heartbeat { subtask, .. }
        | FromWorker::Ack { subtask, .. }
        | FromWorker::Committed { subtask, .. }
        | FromWorker::EndOfInput { subtask }
        | FromWorker::Failed { subtask, .. } => Some(*subtask),
        FromWorker::Event { .. } => None,
    }
}

fn is_broker_fault(kind: FaultKind) -> bool {
    matches!(
        kind,
        FaultKind::BrokerKill
            | FaultKind::BrokerStop
            | FaultKind::BrokerRestart
            | FaultKind::BrokerPause
            | FaultKind::RollingRestart
    )
}

/// Accepts worker connections; each gets a reader task that forwards its
/// messages stamped with their arrival time.
async fn accept_loop(listener: UnixListener, tx: mpsc::UnboundedSender<Inbound>, counter: Arc<AtomicU64>) {
    let mut readers = tokio::task::JoinSet::new();
    loop {
        let stream = tokio::select! {
            r = listener.accept() => r,
            Some(_) = readers.join_next(), if !readers.is_empty() => continue,
        };
        let stream = match stream {
            Ok((s, _)) => s,
            Err(e) => {
                tracing::warn!("accepting a worker connection: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let conn = counter.fetch_add(1, Ordering::SeqCst);
        let peer_pid = stream.peer_cred().ok().and_then(|c| c.pid()).map(|p| p as u32);
        let (mut reader, writer) = Channel::from_stream(stream).into_split();
        if tx.send(Inbound { conn, at: Instant::now(), what: ConnEvent::Hello { peer_pid, writer } }).is_err() {
            return;
        }
        let tx = tx.clone();
        readers.spawn(async move {
            loop {
                let r = reader.recv::<FromWorker>().await;
                let at = Instant::now();
                let (what, end) = match r {
                    Ok(Some(m)) => (ConnEvent::Msg(Box::new(m)), false),
                    Ok(None) => (ConnEvent::Closed(None), true),
                    Err(e) => (ConnEvent::Closed(Some(e.to_string())), true),
                };
                if tx.send(Inbound { conn, at, what }).is_err() || end {
                    return;
                }
            }
        });
    }
}
