//! The Flink subject's loop: one task owning the cluster's processes, the job's ids and
//! attempts, reading Flink's logs ([`super::evidence`]) and answering the nemesis.
//!
//! Phases: *booting* (processes started; once `/overview` shows every TaskManager and its
//! slots the job is submitted, from the latest retained checkpoint when there is one),
//! *running* (a job id; its tasks polled through the REST API: all running is "up"),
//! *down* (the JobManager, and for an outage every TaskManager, killed until a moment),
//! *done*. Flink restarts its own tasks after a TaskManager loss (fixed-delay restarts);
//! the subject only starts the lost TaskManager again, as a supervisor would.
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::sys::signal::Signal;
use sinkhole_model::{EventKind, Partitioning, Source, TxnProtocol};
use tokio::sync::{mpsc, oneshot};

use super::cluster::{latest_checkpoint, ClusterSpec, FlinkCluster, Role};
use super::evidence::{Evidence, Heard};
use super::logs::{follow, Line};
use super::rest::{Rest, RunRequest};
use super::{Command, FlinkConfig, Seen};
use crate::subject::{JobEvent, JobReport, Notice, Outage, OutageEnd, WorkerHit};
use sinkhole_client::wire::describe_transactions::TxnDescription;
use sinkhole_history::JobOutcome;

const TICK: Duration = Duration::from_millis(50);
/// How often the job's status is asked (REST).
const POLL: Duration = Duration::from_millis(200);
/// How long a cluster may take to show every TaskManager.
const BOOT_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Booting { since: Instant, deadline: Instant },
    Running,
    Down { until: Instant, all: bool },
    Done,
}

mod looks;
mod provenance;

pub(super) struct Loop {
    cfg: FlinkConfig,
    cluster: FlinkCluster,
    rest: Rest,
    history: sinkhole_history::Writer,
    notices: mpsc::UnboundedSender<Notice>,
    commands: mpsc::UnboundedReceiver<Command>,
    commands_open: bool,
    lines: mpsc::UnboundedReceiver<(usize, Line)>,
    lines_tx: mpsc::UnboundedSender<(usize, Line)>,
    evidence: Evidence,
    phase: Phase,
    attempt: u32,
    up: bool,
    /// JobStarted written for the current attempt.
    started: bool,
    restored: Option<u64>,
    jar_id: Option<String>,
    jobs: Vec<String>,
    last_poll: Instant,
    last_history: Instant,
    history_json: HashMap<String, serde_json::Value>,
    tm_due: BTreeMap<u32, Instant>,
    outage: Option<(Instant, oneshot::Sender<OutageEnd>)>,
    resubmits: u32,
    completed: u64,
    start: Instant,
    deadline: Instant,
    outcome: Option<JobOutcome>,
    /// FLINK-40689: the ids driven to `flink.drive_epoch` before the job.
    driven: Vec<super::epochs::Driven>,
    /// The lingering look due for the latest resubmission ([`super::lingering`]).
    look: Option<PendingLook>,
    /// The lingering look under way (on a task of its own: a broker that does not answer
    /// must not stall the loop), with what it is for and the job ms it began.
    looking: Option<(PendingLook, u64, LookTask)>,
    /// Transactions the look found lingering, watched until they end: (what was found,
    /// job ms when found).
    watching: Vec<(super::lingering::Found, u64)>,
    last_watch: Instant,
    /// The watch's question under way.
    asking: Option<tokio::task::JoinHandle<Result<Vec<TxnDescription>, String>>>,
}

/// A lingering look on its task.
type LookTask = tokio::task::JoinHandle<Result<super::lingering::Look, String>>;

/// A resubmission's lingering look, due once it completed its own checkpoints.
#[derive(Debug, Clone, Copy)]
struct PendingLook {
    attempt: u32,
    restored_from: Option<u64>,
    /// Unix ms of the submission: what began before it is an earlier attempt's.
    submitted_ms: i64,
    completed_at_submit: u64,
}

fn unix_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn partitioning(p: Partitioning) -> &'static str {
    match p {
        Partitioning::RoundRobin => "round-robin",
        Partitioning::BySubtask => "by-subtask",
        Partitioning::Hash => "hash",
    }
}

impl Loop {
    pub(super) fn new(
        cfg: FlinkConfig,
        history: sinkhole_history::Writer,
        commands: mpsc::UnboundedReceiver<Command>,
        notices: mpsc::UnboundedSender<Notice>,
        seen: Arc<Mutex<Seen>>,
    ) -> anyhow::Result<Loop> {
        let f = &cfg.flink;
        let spec = ClusterSpec {
            dist: cfg.dist.clone(),
            connector_jar: cfg.connector_jar.as_ref().map(|j| j.path.clone()),
            dir: cfg.dir.flink(),
            taskmanagers: f.taskmanagers,
            slots: sinkhole_scenario::flink::slots_per_taskmanager(cfg.job.parallelism, f.taskmanagers),
            heartbeat_timeout_ms: cfg.job.heartbeat_timeout_ms,
        };
        let cluster = FlinkCluster::prepare(spec).context("preparing the Flink cluster")?;
        let rest = Rest::new(cluster.rest_port);
        let protocol = if cfg.connector_major() >= 5 { TxnProtocol::V2 } else { TxnProtocol::V1 };
        let jar_name = match &cfg.connector_jar {
            Some(j) => j.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            None => cfg.dist.connector_jar.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        };
        let evidence = Evidence::new(
            history.clone(),
            notices.clone(),
            seen,
            cfg.tid_prefix.clone(),
            f.naming,
            protocol,
            cluster.checkpoints.clone(),
            jar_name,
        );
        let (lines_tx, lines) = mpsc::unbounded_channel();
        // The job cannot take longer than its records at its rate, plus faults; a bound
        // keeps a wedged cluster from hanging the run.
        let job_ms =
            cfg.job.records_per_subtask.saturating_mul(1000).checked_div(cfg.job.rate_per_subtask).unwrap_or(0);
        let deadline = Instant::now() + Duration::from_millis(job_ms.saturating_mul(3)) + Duration::from_secs(600);
        let start = history.start();
        Ok(Loop {
            cfg,
            cluster,
            rest,
            history,
            notices,
            commands,
            commands_open: true,
            lines,
            lines_tx,
            evidence,
            phase: Phase::Done,
            attempt: 0,
            up: false,
            started: false,
            restored: None,
            jar_id: None,
            jobs: vec![],
            last_poll: Instant::now(),
            last_history: Instant::now(),
            history_json: HashMap::new(),
            tm_due: BTreeMap::new(),
            outage: None,
            resubmits: 0,
            completed: 0,
            start,
            deadline,
            outcome: None,
            driven: vec![],
            look: None,
            looking: None,
            watching: vec![],
            last_watch: Instant::now(),
            asking: None,
        })
    }

    fn tms(&self) -> u32 {
        self.cfg.flink.taskmanagers
    }

    fn coord(&self, kind: EventKind) -> anyhow::Result<()> {
        self.history.record(Source::Coordinator, kind).context("writing the history")?;
        Ok(())
    }

    fn note(&self, text: String) -> anyhow::Result<()> {
        self.coord(EventKind::Note { text })
    }

    fn notice(&self, event: JobEvent) {
        let _ = self.notices.send(Notice { at: Instant::now(), event, hold: None });
    }

    fn progress(&self, line: &str) {
        if self.cfg.progress {
            eprintln!("{}  {line}", self.cfg.mode.name());
        }
    }

    pub(super) async fn run(mut self) -> anyhow::Result<JobReport> {
        let logs: Vec<std::path::PathBuf> = std::iter::once(self.cluster.log_of(Role::JobManager))
            .chain((0..self.tms()).map(|k| self.cluster.log_of(Role::TaskManager(k))))
            .collect();
        let mut tails = vec![];
        for (i, path) in logs.into_iter().enumerate() {
            tails.push(tokio::spawn(follow(path, i, 0, self.lines_tx.clone())));
        }
        let result = self.drive().await;
        let report = self.finish().await;
        for t in tails {
            t.abort();
        }
        result?;
        report
    }

    async fn drive(&mut self) -> anyhow::Result<()> {
        if let Some(epoch) = self.cfg.flink.drive_epoch {
            self.drive_epochs(epoch).await?;
        }
        self.boot(true)?;
        self.coord(EventKind::JobStarted { attempt: 0, restored_from: None })?;
        self.notice(JobEvent::Started { attempt: 0, restored_from: None });
        self.started = true;
        while self.outcome.is_none() {
            tokio::select! {
                l = self.lines.recv() => {
                    if let Some((src, line)) = l {
                        self.on_line(src, line).await?;
                    }
                }
                c = self.commands.recv(), if self.commands_open => match c {
                    Some(c) => self.on_command(c)?,
                    None => self.commands_open = false,
                },
                _ = tokio::time::sleep(TICK) => {}
            }
            if self.outcome.is_none() {
                self.on_tick().await?;
            }
        }
        Ok(())
    }

    /// FLINK-40689's precondition, before any process of the cluster starts: each subtask's
    /// first transactional id brought to `epoch` ([`super::epochs`]).
    async fn drive_epochs(&mut self, epoch: i16) -> anyhow::Result<()> {
        let tids: Vec<String> = (0..self.cfg.job.parallelism)
            .map(|s| super::epochs::first_tid(&self.cfg.tid_prefix, s, self.cfg.flink.naming))
            .collect();
        self.progress(&format!("driving {} to producer epoch {epoch} (FLINK-40689's precondition)", tids.join(", ")));
        let (mode, show) = (self.cfg.mode.name(), self.cfg.progress);
        let progress = std::sync::Arc::new(move |l: String| {
            if show {
                eprintln!("{mode}  {l}");
            }
        });
        let timeout = self.cfg.job.transaction_timeout_ms;
        let driven = super::epochs::drive(&self.cfg.bootstrap, &tids, epoch, timeout, progress)
            .await
            .context("driving the transactional ids' epochs before the job (flink.drive_epoch)")?;
        for d in &driven {
            let text = format!(
                "FLINK-40689 precondition: {} at producer id {} epoch {} before the job ({} InitProducerId calls in {:.1} s)",
                d.tid,
                d.producer_id,
                d.epoch,
                d.calls,
                d.elapsed.as_secs_f64()
            );
            self.progress(&text);
            self.note(text)?;
        }
        self.driven = driven;
        Ok(())
    }

    /// Starts the JobManager and, with `all`, every TaskManager; then waits (in ticks) for them.
    fn boot(&mut self, all: bool) -> anyhow::Result<()> {
        // Start-to-ready counts from here: BashJavaUtils (the first time) and the JVMs' starts.
        let since = Instant::now();
        let pid = self.cluster.start(Role::JobManager)?;
        self.coord(EventKind::WorkerStarted { subtask: self.tms(), pid, attempt: self.attempt })?;
        if all {
            for k in 0..self.tms() {
                self.start_tm(k)?;
            }
        }
        self.phase = Phase::Booting { since, deadline: Instant::now() + BOOT_TIMEOUT };
        Ok(())
    }

    fn start_tm(&mut self, k: u32) -> anyhow::Result<()> {
        let pid = self.cluster.start(Role::TaskManager(k))?;
        self.coord(EventKind::WorkerStarted { subtask: k, pid, attempt: self.attempt })
    }

    /// The parallelism of a submission: `job.parallelism` at first, `flink.resubmit_parallelism`
    /// (a downscale) for a resubmission from a retained checkpoint when the scenario sets it.
    fn parallelism(&self, first: bool) -> u32 {
        match self.cfg.flink.resubmit_parallelism {
            Some(p) if !first => p,
            _ => self.cfg.job.parallelism,
        }
    }

    /// The job's arguments; `first` is the first submission (a slow snapshot is its only).
    fn program_args(&self, first: bool) -> Vec<String> {
        let j = &self.cfg.job;
        let a = |k: &str, v: String| [format!("--{k}"), v];
        let mut extra: Vec<[String; 2]> = vec![];
        if let (true, Some(slow)) = (first, &self.cfg.flink.slow_snapshot) {
            extra.push(a("slow-snapshot", slow.arg()));
        }
        let p = self.parallelism(first);
        if p != j.parallelism {
            extra.push(a("operator-parallelism", p.to_string()));
        }
        [
            a("run-id", self.cfg.run_id.clone()),
            a("bootstrap", self.cfg.bootstrap.join(",")),
            a("topic", self.cfg.topic.clone()),
            a("tid-prefix", self.cfg.tid_prefix.clone()),
            a("partitions", self.cfg.partitions.to_string()),
            a("partitioning", partitioning(j.partitioning).into()),
            a("parallelism", j.parallelism.to_string()),
            a("records", j.records_per_subtask.to_string()),
            a("rate", j.rate_per_subtask.to_string()),
            a("transaction-timeout-ms", j.transaction_timeout_ms.to_string()),
            a("naming", self.cfg.flink.naming.name().into()),
            a("checkpoint-interval-ms", j.checkpoint_interval_ms.to_string()),
            a("checkpoint-timeout-ms", j.checkpoint_timeout_ms.to_string()),
            a("max-concurrent-checkpoints", j.max_concurrent_checkpoints.to_string()),
            // A TaskManager loss restarts each of its failover regions (one per subtask).
            a("restart-attempts", (j.restart_limit.max(1) * j.parallelism).to_string()),
            a("restart-delay-ms", j.restart_delay_ms.max(500).to_string()),
        ]
        .into_iter()
        .chain(extra)
        .flatten()
        .collect()
    }

    /// The latest retained checkpoint of the last job that has one (a resubmission that
    /// completed none yet leaves its predecessor's the latest).
    fn latest_retained(&self) -> Option<(u64, String)> {
        self.jobs.iter().rev().find_map(|j| {
            latest_checkpoint(&self.cluster.job_checkpoints(j)).map(|(n, p)| (n, p.display().to_string()))
        })
    }

    async fn submit(&mut self) -> anyhow::Result<()> {
        let first = self.jobs.is_empty();
        let from = if first { None } else { self.latest_retained() };
        // Uploaded jars live in the JobManager's upload directory; a restarted one lists them again.
        let jar = match &self.jar_id {
            Some(j) if !first => j.clone(),
            _ => self.rest.upload(&self.cfg.dist.job_jar).await.context("uploading the job jar")?,
        };
        self.jar_id = Some(jar.clone());
        if let (false, Some((n, _))) = (first, &from) {
            if self.cfg.superseded_look == Some(*n) {
                self.look_superseded(*n).await?;
            }
        }
        let parallelism = self.parallelism(first);
        let req = RunRequest {
            args: self.program_args(first),
            parallelism,
            savepoint: from.as_ref().map(|(_, p)| p.clone()),
        };
        let id = match self.rest.run(&jar, &req).await {
            Ok(id) => id,
            // A JobManager restarted without the jar: upload it again once.
            Err(_) if !self.jobs.is_empty() => {
                let jar = self.rest.upload(&self.cfg.dist.job_jar).await.context("uploading the job jar")?;
                self.jar_id = Some(jar.clone());
                self.rest.run(&jar, &req).await.context("submitting the Flink job")?
            }
            Err(e) => return Err(e.context("submitting the Flink job")),
        };
        let restored_from = from.as_ref().map(|(n, _)| *n);
        self.evidence.restored_from = restored_from;
        let downscale = if parallelism < self.cfg.job.parallelism {
            format!(
                " at parallelism {parallelism}, down from {} (flink.resubmit_parallelism)",
                self.cfg.job.parallelism
            )
        } else {
            String::new()
        };
        self.note(format!(
            "Flink job {id} submitted{}{downscale}",
            from.as_ref().map(|(_, p)| format!(" from the retained checkpoint {p}")).unwrap_or_default()
        ))?;
        if !first {
            self.look = Some(PendingLook {
                attempt: self.attempt,
                restored_from,
                submitted_ms: unix_ms(),
                completed_at_submit: self.completed,
            });
        }
        self.progress(&format!(
            "Flink job {id} submitted{}",
            restored_from.map(|n| format!(" from checkpoint {n}")).unwrap_or_default()
        ));
        self.jobs.push(id.clone());
        self.evidence.job = Some(id);
        if !self.started {
            self.coord(EventKind::JobStarted { attempt: self.attempt, restored_from })?;
            self.notice(JobEvent::Started { attempt: self.attempt, restored_from });
            self.started = true;
        }
        if let Some((since, tx)) = self.outage.take() {
            let _ = tx.send(OutageEnd { down_ms: since.elapsed().as_millis() as u64, restored_from });
        }
        self.phase = Phase::Running;
        Ok(())
    }

    async fn on_line(&mut self, src: usize, line: Line) -> anyhow::Result<()> {
        match self.evidence.on_line(src, line)? {
            Some(Heard::Completed { id }) => {
                self.completed += 1;
                self.progress(&format!("checkpoint {id} complete (attempt {})", self.attempt));
                if let Some(l) = self.look {
                    if self.completed >= l.completed_at_submit + super::lingering::AFTER_CHECKPOINTS {
                        self.look = None;
                        let (bootstrap, prefix) = (self.cfg.bootstrap.clone(), self.cfg.tid_prefix.clone());
                        let task =
                            tokio::spawn(
                                async move { super::lingering::look(&bootstrap, &prefix, l.submitted_ms).await },
                            );
                        self.looking = Some((l, self.start.elapsed().as_millis() as u64, task));
                    }
                }
            }
            Some(Heard::Restored { job, id }) if Some(&job) == self.jobs.last() => {
                self.restored = Some(id);
                self.evidence.restored_from = Some(id);
                if !self.started {
                    self.coord(EventKind::JobStarted { attempt: self.attempt, restored_from: Some(id) })?;
                    self.notice(JobEvent::Started { attempt: self.attempt, restored_from: Some(id) });
                    self.started = true;
                }
            }
            Some(Heard::JobState { to }) if matches!(to.as_str(), "RESTARTING" | "FAILING") => {
                self.down(None, format!("Flink's job switched to {to}"))?;
            }
            _ => {}
        }
        Ok(())
    }

    /// The job went down: its tasks are not all running.
    fn down(&mut self, subtask: Option<u32>, reason: String) -> anyhow::Result<()> {
        if !self.up && !self.started {
            return Ok(());
        }
        let was = self.attempt;
        self.coord(EventKind::FailureDetected { subtask, reason: reason.clone() })?;
        let from_checkpoint = self.latest_retained().map(|(n, _)| n);
        self.coord(EventKind::Restarting {
            attempt: was + 1,
            from_checkpoint,
            delay_ms: self.cfg.job.restart_delay_ms,
        })?;
        self.progress(&format!("failure (attempt {was}): {reason}"));
        self.up = false;
        self.started = false;
        self.attempt += 1;
        self.evidence.tasks_gone();
        self.notice(JobEvent::Down { attempt: was });
        Ok(())
    }

    async fn on_tick(&mut self) -> anyhow::Result<()> {
        self.evidence.flush(Duration::from_millis(500))?;
        self.lingering_found().await?;
        self.watch_lingering().await?;
        let now = Instant::now();
        for (role, pid, status) in self.cluster.exited() {
            let subtask = match role {
                Role::JobManager => self.tms(),
                Role::TaskManager(k) => k,
            };
            self.coord(EventKind::WorkerExited {
                subtask,
                status: format!("pid {pid} exited: {status}"),
                expected: false,
            })?;
            self.lost(role)?;
        }
        let due: Vec<u32> = self.tm_due.iter().filter(|(_, t)| **t <= now).map(|(k, _)| *k).collect();
        for k in due {
            self.tm_due.remove(&k);
            if !matches!(self.phase, Phase::Down { all: true, .. } | Phase::Done) {
                self.start_tm(k)?;
            }
        }
        match self.phase {
            Phase::Down { until, all } if now >= until => self.boot(all)?,
            Phase::Booting { since, deadline } => {
                if let Ok(o) = self.rest.overview().await {
                    let slots = u64::from(sinkhole_scenario::flink::slots_per_taskmanager(
                        self.cfg.job.parallelism,
                        self.tms(),
                    ));
                    if o.taskmanagers >= u64::from(self.tms()) && o.slots_total >= slots * u64::from(self.tms()) {
                        let s = since.elapsed().as_secs_f64();
                        self.note(format!(
                            "Flink cluster ready in {s:.1} s (/overview: {} TaskManagers, {} slots)",
                            o.taskmanagers, o.slots_total
                        ))?;
                        self.progress(&format!("Flink cluster ready in {s:.1} s"));
                        self.submit().await?;
                        return Ok(());
                    }
                }
                if now >= deadline {
                    return self.end(JobOutcome::Failed {
                        reason: format!("the Flink cluster was not ready within {BOOT_TIMEOUT:?}"),
                    });
                }
            }
            Phase::Running if now.duration_since(self.last_poll) >= POLL => {
                self.last_poll = now;
                self.poll().await?;
            }
            _ => {}
        }
        if now >= self.deadline && self.outcome.is_none() {
            return self.end(JobOutcome::Failed { reason: "the Flink job did not finish in time".into() });
        }
        Ok(())
    }

    /// A process the subject did not kill itself is gone (or a fault killed it).
    fn lost(&mut self, role: Role) -> anyhow::Result<()> {
        let delay = Duration::from_millis(self.cfg.job.restart_delay_ms);
        match role {
            Role::TaskManager(k) => {
                if !matches!(self.phase, Phase::Down { all: true, .. }) {
                    self.tm_due.insert(k, Instant::now() + delay);
                }
            }
            Role::JobManager => {
                if matches!(self.phase, Phase::Down { .. }) {
                    return Ok(());
                }
                // No HA: the job is gone with it; a new JobManager gets it resubmitted.
                self.down(None, "the JobManager is gone (no HA: the job with it)".into())?;
                self.resubmits += 1;
                if self.resubmits > self.cfg.job.restart_limit {
                    let limit = self.cfg.job.restart_limit;
                    return self.end(JobOutcome::Failed {
                        reason: format!(
                            "the JobManager was lost {} times, more than restart_limit {limit}",
                            self.resubmits
                        ),
                    });
                }
                self.phase = Phase::Down { until: Instant::now() + delay, all: false };
            }
        }
        Ok(())
    }

    /// The job's state, its tasks, and now and then its checkpoint history.
    async fn poll(&mut self) -> anyhow::Result<()> {
        let Some(job) = self.jobs.last().cloned() else { return Ok(()) };
        let Ok(status) = self.rest.job(&job).await else { return Ok(()) };
        if self.last_history.elapsed() >= Duration::from_secs(2) || status.terminal() {
            self.last_history = Instant::now();
            if let Ok(h) = self.rest.checkpoints(&job).await {
                self.history_json.insert(job.clone(), h);
            }
        }
        if status.terminal() {
            return match status.state.as_str() {
                "FINISHED" => {
                    // The final commits are logged before the task finishes: read them all.
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    while let Ok((src, line)) = self.lines.try_recv() {
                        self.evidence.on_line(src, line)?;
                    }
                    self.evidence.settle_all()?;
                    self.end(JobOutcome::Finished)
                }
                other => {
                    let why = self.rest.root_exception(&job).await.unwrap_or_else(|| "no exception recorded".into());
                    self.end(JobOutcome::Failed { reason: format!("the Flink job is {other}: {why}") })
                }
            };
        }
        if status.all_running() && !self.up {
            self.up = true;
            if !self.started {
                let restored_from = self.restored.take();
                self.coord(EventKind::JobStarted { attempt: self.attempt, restored_from })?;
                self.notice(JobEvent::Started { attempt: self.attempt, restored_from });
                self.started = true;
            }
            self.progress(&format!("Flink job up (attempt {}): {} tasks running", self.attempt, status.tasks_running));
            self.notice(JobEvent::Up { attempt: self.attempt });
        } else if self.up && !status.all_running() {
            let reason =
                format!("{} of {} tasks running (job {})", status.tasks_running, status.tasks_total, status.state);
            self.down(None, reason)?;
        }
        Ok(())
    }

    fn role_of(&self, worker: u32) -> Option<Role> {
        match worker {
            w if w < self.tms() => Some(Role::TaskManager(w)),
            w if w == self.tms() => Some(Role::JobManager),
            _ => None,
        }
    }

    fn on_command(&mut self, c: Command) -> anyhow::Result<()> {
        match c {
            Command::Signal { workers, signal, by, reply } => {
                let hits = self.signal(&workers, None, signal, &by)?;
                let _ = reply.send(hits);
            }
            Command::Resume { frozen, by, reply } => {
                let mut hits = vec![];
                for (w, pid) in frozen {
                    hits.extend(self.signal(&[w], Some(pid), Signal::SIGCONT, &by)?);
                }
                let _ = reply.send(hits);
            }
            Command::Outage { down_ms, by, reply } => {
                let attempt = self.attempt;
                let all: Vec<u32> = (0..=self.tms()).collect();
                let hits = self.signal_only(&all, Signal::SIGKILL, &by)?;
                let (tx, ended) = oneshot::channel();
                self.tm_due.clear();
                if self.up || self.started {
                    self.down(None, format!("job outage (fault {by}): the JobManager and every TaskManager killed"))?;
                }
                self.outage = Some((Instant::now(), tx));
                self.phase = Phase::Down { until: Instant::now() + Duration::from_millis(down_ms), all: true };
                let _ = reply.send(Ok(Outage { attempt, workers: hits, ended }));
            }
        }
        Ok(())
    }

    /// Signals without the consequences (an outage handles its own).
    fn signal_only(&mut self, workers: &[u32], signal: Signal, by: &str) -> anyhow::Result<Vec<WorkerHit>> {
        let mut out = vec![];
        for &w in workers {
            let Some(role) = self.role_of(w) else {
                out.push(WorkerHit::NotRunning {
                    subtask: w,
                    error: format!("no worker {w} (TaskManagers 0..{}, JobManager {})", self.tms(), self.tms()),
                });
                continue;
            };
            let Some(pid) = self.cluster.pid(role) else {
                out.push(WorkerHit::NotRunning { subtask: w, error: format!("the {} is not running", role.name()) });
                continue;
            };
            match self.cluster.signal(role, None, signal) {
                Ok(e) => {
                    out.push(WorkerHit::Signalled { subtask: w, pid, signal: e });
                    if signal == Signal::SIGKILL {
                        let status = format!("{} killed by fault {by} (SIGKILL)", role.name());
                        self.coord(EventKind::WorkerExited { subtask: w, status, expected: false })?;
                    }
                }
                Err(error) => out.push(WorkerHit::Failed { subtask: w, pid, error }),
            }
        }
        Ok(out)
    }

    /// Signals workers on behalf of fault `by`; a killed one is replaced (see [`Loop::lost`]).
    fn signal(
        &mut self,
        workers: &[u32],
        pid: Option<u32>,
        signal: Signal,
        by: &str,
    ) -> anyhow::Result<Vec<WorkerHit>> {
        if let Some(want) = pid {
            let w = workers[0];
            let Some(role) = self.role_of(w) else { return Ok(vec![]) };
            return Ok(vec![match self.cluster.signal(role, Some(want), signal) {
                Ok(e) => WorkerHit::Signalled { subtask: w, pid: want, signal: e },
                Err(error) => WorkerHit::Failed { subtask: w, pid: want, error },
            }]);
        }
        let hits = self.signal_only(workers, signal, by)?;
        if signal == Signal::SIGKILL {
            for h in &hits {
                if let Some((w, _)) = h.hit() {
                    if let Some(role) = self.role_of(w) {
                        self.lost(role)?;
                    }
                }
            }
        }
        Ok(hits)
    }

    /// Ends the job: outcome recorded, every process killed.
    fn end(&mut self, outcome: JobOutcome) -> anyhow::Result<()> {
        if self.outcome.is_some() {
            return Ok(());
        }
        let text = match &outcome {
            JobOutcome::Finished => "finished".to_string(),
            JobOutcome::Failed { reason } => format!("failed: {reason}"),
            JobOutcome::Unsupported { error } => format!("unsupported: {error}"),
        };
        self.coord(EventKind::JobFinished { outcome: text.clone(), attempts: self.attempt + 1 })?;
        self.progress(&format!("Flink job {text} ({} checkpoints, {} attempts)", self.completed, self.attempt + 1));
        self.phase = Phase::Done;
        self.outcome = Some(outcome);
        Ok(())
    }

    /// Writes the evidence files, kills what is left, builds the report. Runs on error paths too.
    async fn finish(&mut self) -> anyhow::Result<JobReport> {
        self.cluster.kill_all();
        self.last_looks().await?;
        for (job, h) in &self.history_json {
            let _ = std::fs::write(self.cfg.dir.flink_checkpoints(job), serde_json::to_vec_pretty(h)?);
            let counts = &h["counts"];
            self.note(format!(
                "Flink's checkpoint history of job {job}: {} completed, {} failed, {} restored (flink/checkpoints-{job}.json)",
                counts["completed"], counts["failed"], counts["restored"]
            ))?;
        }
        self.provenance()?;
        self.still_lingering()?;
        if !self.driven.is_empty() {
            for line in super::epochs::after(&self.cfg.bootstrap, &self.driven).await {
                self.progress(&line);
                self.note(line)?;
            }
        }
        self.notice(JobEvent::Ended);
        self.history.sync().context("syncing the history")?;
        let job = self
            .outcome
            .clone()
            .unwrap_or_else(|| JobOutcome::Failed { reason: "the runner stopped on an error".into() });
        Ok(JobReport {
            job,
            attempts: self.attempt + 1,
            checkpoints_completed: self.completed,
            committables_dropped: self.evidence.dropped,
            wall_ms: self.start.elapsed().as_millis() as u64,
        })
    }
}
