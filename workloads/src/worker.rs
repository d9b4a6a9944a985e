//! The worker process: one subtask of the job, driven by the coordinator over
//! the control channel.
//!
//! The order of operations is Flink's: on start the writer restores
//! (`KafkaCommitter` commits the restored committables, then
//! `ExactlyOnceKafkaWriter` aborts lingering transactions) and opens the
//! transaction for the next checkpoint; records flow into it; at a barrier
//! the writer pre-commits and opens the next transaction, and the subtask
//! acks with its source position and the committables not yet committed;
//! when a checkpoint is complete, `CommitterOperator` commits every
//! committable up to it, in order (a lost notification is covered by the
//! next one).
//!
//! With a share-group source (`config.share`) the records come from a share
//! group instead of the generated source, and the worker acknowledges them
//! where the scenario's policy says (`crate::share::source`): at a barrier
//! before the pre-commit (`before-commit`), after each fetch (`at-poll`), or
//! once the coordinator says the subtask's commits of a checkpoint were
//! reported (`after-commit`, [`ToWorker::Acknowledge`]). A restore rewinds
//! nothing: the group redelivers what no member acknowledged.
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use tokio::time::MissedTickBehavior;
use tracing::{debug, error, info};

use crate::control::{Channel, ChannelReader, ChannelWriter};
use crate::share::source::{Layout, ShareSource};
use crate::sink::{mutants, naming, AnySink, Sink, SinkError};
use crate::source::{Record, Source};
use sinkhole_client::wire::security::ResolveSecurity;
use sinkhole_client::wire::ClientConfig;
use sinkhole_model::{
    CommitOutcome, Committable, EventKind, FromWorker, IdRange, SinkMode, SubtaskState, ToWorker, WorkerConfig,
};

/// Records handed to the sink per turn of the loop when unthrottled, so the
/// control channel and timers are looked at in between.
const BATCH: u64 = 256;

/// Runs one subtask attempt until the coordinator says Stop (Ok) or the
/// subtask fails (Err: the process exits non-zero and the job fails over).
pub async fn run(config: WorkerConfig, control: &Path) -> anyhow::Result<()> {
    // A real cluster's security, by reference in the configuration file: the password is
    // read here, from the environment this process inherited or the file named.
    if let Some(sec) = &config.security {
        let resolved = sec.resolve().context("the cluster's security settings")?;
        sinkhole_client::wire::security::install(Some(std::sync::Arc::new(resolved)));
    }
    let channel = Channel::connect(control)
        .await
        .with_context(|| format!("connecting to the coordinator at {}", control.display()))?;
    let (rx, tx) = channel.into_split();
    let subtask = config.subtask;
    let mut w = Worker { subtask, tx: std::sync::Arc::new(tokio::sync::Mutex::new(tx)) };
    info!(subtask, mode = %config.mode, attempt = config.attempt, restore = ?config.restore.as_ref().map(|r| r.0), "worker starting");
    let result = w.run(config, rx).await;
    match result {
        Ok(()) => {
            info!(subtask, "worker stopped");
            Ok(())
        }
        Err(e) => {
            let text = match &e {
                Failure::Unsupported { what, error } => {
                    let _ =
                        w.tx.lock()
                            .await
                            .send(&FromWorker::Event {
                                event: EventKind::Unsupported { what: what.clone(), error: error.clone() },
                            })
                            .await;
                    format!("unsupported by the broker: {what}: {error}")
                }
                Failure::Other(e) => format!("{e:#}"),
            };
            error!(subtask, error = %text, "worker failed");
            let _ = w.tx.lock().await.send(&FromWorker::Failed { subtask, error: text.clone() }).await;
            Err(anyhow!(text))
        }
    }
}

enum Failure {
    Unsupported { what: String, error: String },
    Other(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Other(e)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Other(anyhow::Error::new(e).context("control channel"))
    }
}

impl From<SinkError> for Failure {
    fn from(e: SinkError) -> Self {
        match e {
            SinkError::Unsupported { what, error } => Failure::Unsupported { what, error },
            SinkError::Failed(s) => Failure::Other(anyhow!(s)),
        }
    }
}

struct Worker {
    subtask: u32,
    /// Shared with the heartbeat task; one message is written whole under the lock.
    tx: std::sync::Arc<tokio::sync::Mutex<ChannelWriter>>,
}

/// Aborts the heartbeat task when the worker's run ends, however it ends.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Where the records come from.
enum Input {
    Generated(Source),
    Share(Box<ShareSource>),
}

impl Input {
    /// The generated source's position; a share source's records read by
    /// this attempt (progress only: a restore rewinds nothing).
    fn next_seq(&self) -> u64 {
        match self {
            Input::Generated(s) => s.next_seq(),
            Input::Share(s) => s.read(),
        }
    }

    fn exhausted(&self) -> bool {
        match self {
            Input::Generated(s) => s.exhausted(),
            Input::Share(s) => s.exhausted(),
        }
    }

    async fn ready(&mut self) {
        match self {
            Input::Generated(s) => s.ready().await,
            Input::Share(s) => s.ready().await,
        }
    }

    async fn take(&mut self) -> Result<Vec<Record>, Failure> {
        match self {
            Input::Generated(s) => Ok(s.take(BATCH)),
            Input::Share(s) => s.fetch().await.map_err(|e| Failure::Other(anyhow!("share-group source: {e}"))),
        }
    }
}

fn share_failure(e: sinkhole_client::wire::WireError) -> Failure {
    Failure::Other(anyhow!("share-group source: {e}"))
}

/// The input of this attempt: the generated source at the restored
/// position, or a new member of the share group.
async fn open_input(config: &WorkerConfig, next_seq: u64, restored: Option<u64>) -> Result<Input, Failure> {
    let Some(share) = &config.share else { return Ok(Input::Generated(Source::new(config, next_seq))) };
    let layout = Layout {
        run_id: config.run_id.clone(),
        parallelism: config.parallelism,
        records_per_subtask: config.records,
        partitions: config.partitions,
        partitioning: config.partitioning,
        rate_per_sec: config.rate_per_sec,
    };
    // The sink's client id: the proxy tells a subtask's traffic apart by it (`worker-N`).
    let client = ClientConfig {
        client_id: format!("sinkhole-{}-{}-{}", config.mode, config.subtask, config.attempt),
        ..ClientConfig::default()
    };
    let first = naming::first_checkpoint(restored);
    let s = ShareSource::join(&config.bootstrap, share.clone(), layout, client, first).await.map_err(share_failure)?;
    Ok(Input::Share(Box::new(s)))
}

impl Worker {
    async fn send(&mut self, msg: FromWorker) -> Result<(), Failure> {
        self.tx.lock().await.send(&msg).await?;
        Ok(())
    }

    /// Heartbeats on their own task, as a Flink TaskExecutor's heartbeat to
    /// the JobManager runs apart from the task thread: a sink blocked in a
    /// long flush or a commit whose answer never comes is not a dead worker
    /// (the checkpoint timeout deals with it), while a SIGSTOPped or killed
    /// process stops heartbeating at once.
    fn spawn_heartbeats(&self, every: Duration, next_seq: std::sync::Arc<AtomicU64>) -> AbortOnDrop {
        let tx = self.tx.clone();
        let subtask = self.subtask;
        AbortOnDrop(tokio::spawn(async move {
            let mut heartbeat = tokio::time::interval(every);
            heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
            loop {
                heartbeat.tick().await;
                let msg = FromWorker::Heartbeat { subtask, next_seq: next_seq.load(Ordering::Relaxed) };
                if tx.lock().await.send(&msg).await.is_err() {
                    return;
                }
            }
        }))
    }

    async fn forward_events(&mut self, sink: &mut AnySink) -> Result<(), Failure> {
        for event in sink.take_events() {
            self.send(FromWorker::Event { event }).await?;
        }
        Ok(())
    }

    async fn forward_input_events(&mut self, input: &mut Input) -> Result<(), Failure> {
        if let Input::Share(s) = input {
            for event in s.take_events() {
                self.send(FromWorker::Event { event }).await?;
            }
        }
        Ok(())
    }

    /// Commits one committable with the history events around it.
    async fn commit(&mut self, sink: &mut AnySink, c: &Committable, restored: bool) -> Result<CommitOutcome, Failure> {
        self.send(FromWorker::Event {
            event: EventKind::CommitStarted {
                transactional_id: c.transactional_id.clone(),
                checkpoint: c.checkpoint,
                restored,
            },
        })
        .await?;
        let start = Instant::now();
        let outcome = sink.commit(c, restored).await;
        let latency_us = start.elapsed().as_micros() as u64;
        self.forward_events(sink).await?;
        self.send(FromWorker::Event {
            event: EventKind::CommitFinished {
                transactional_id: c.transactional_id.clone(),
                checkpoint: c.checkpoint,
                restored,
                outcome: outcome.clone(),
                latency_us,
            },
        })
        .await?;
        if let CommitOutcome::Failed { error } = &outcome {
            // Flink's `signalFailedWithUnknownReason`: the job fails over.
            return Err(Failure::Other(anyhow!(
                "commit of {} (checkpoint {}) failed: {error}",
                c.transactional_id,
                c.checkpoint
            )));
        }
        Ok(outcome)
    }

    async fn run(&mut self, config: WorkerConfig, mut rx: ChannelReader) -> Result<(), Failure> {
        let subtask = self.subtask;
        let mut sink = AnySink::new(&config)?;
        let (restored, state) = match &config.restore {
            Some((id, st)) => (Some(*id), st.clone()),
            None => (None, SubtaskState::default()),
        };
        self.restore(&mut sink, config.mode, restored, &state).await?;

        // The stored position (a mutant may start elsewhere: `sink::mutants`).
        let start = mutants::restore_position(config.mode, restored, state.next_seq);
        let mut source = open_input(&config, start, restored).await?;
        self.forward_input_events(&mut source).await?;
        self.send(FromWorker::Ready { subtask, pid: std::process::id() }).await?;

        let open_result = sink.open(naming::first_checkpoint(restored)).await;
        self.forward_events(&mut sink).await?;
        open_result?;

        let mut at = Attempt {
            sink,
            source,
            pending: BTreeMap::new(),
            last_checkpoint: restored.unwrap_or(0),
            last_completed: restored.unwrap_or(0),
            end_sent: false,
        };
        if at.source.exhausted() {
            self.send(FromWorker::EndOfInput { subtask }).await?;
            at.end_sent = true;
        }

        let next_seq = std::sync::Arc::new(AtomicU64::new(at.source.next_seq()));
        let _heartbeats = self.spawn_heartbeats(Duration::from_millis(config.heartbeat_ms.max(1)), next_seq.clone());
        let mut poll = tokio::time::interval(Duration::from_millis(config.linger_ms.clamp(1, 100)));
        poll.set_missed_tick_behavior(MissedTickBehavior::Delay);

        loop {
            tokio::select! {
                biased;
                msg = rx.recv::<ToWorker>() => {
                    let Some(msg) = msg? else {
                        return Err(Failure::Other(anyhow!("the coordinator closed the control channel")));
                    };
                    debug!(subtask, ?msg, "control");
                    match msg {
                        ToWorker::Checkpoint { id } => self.checkpoint(&mut at, id, config.mode).await?,
                        ToWorker::Complete { id } => self.complete(&mut at, id).await?,
                        ToWorker::Acknowledge { id } => {
                            if let Input::Share(s) = &mut at.source {
                                s.acknowledge_through(id).await.map_err(share_failure)?;
                            }
                            self.forward_input_events(&mut at.source).await?;
                        }
                        ToWorker::Stop => return self.stop(at).await,
                    }
                }
                _ = poll.tick() => {
                    let r = at.sink.poll().await;
                    self.forward_events(&mut at.sink).await?;
                    r?;
                }
                _ = at.source.ready() => self.take_input(&mut at, &next_seq, config.records).await?,
            }
        }
    }

    /// The restore: say what the checkpoint holds, commit it in checkpoint
    /// order, then abort what was left open after it.
    async fn restore(
        &mut self,
        sink: &mut AnySink,
        mode: SinkMode,
        restored: Option<u64>,
        state: &SubtaskState,
    ) -> Result<(), Failure> {
        let mut restored_committables = state.committables.clone();
        restored_committables.sort_by_key(|c| c.checkpoint);
        if let Some(checkpoint) = restored {
            let committables = restored_committables.iter().map(Into::into).collect();
            self.send(FromWorker::Event { event: EventKind::StateRestored { checkpoint, committables } }).await?;
        }
        for c in mutants::restored_to_commit(mode.mutant(), &restored_committables) {
            self.commit(sink, c, true).await?;
        }
        let restore_result = sink.restore(restored, &restored_committables).await;
        self.forward_events(sink).await?;
        restore_result?;
        Ok(())
    }

    /// A barrier: the source's part first, as a Flink source snapshots before
    /// the barrier reaches the writer; then the sink pre-commits, and the
    /// subtask acks with its position and the committables not yet committed.
    async fn checkpoint(&mut self, at: &mut Attempt, id: u64, mode: SinkMode) -> Result<(), Failure> {
        if id <= at.last_checkpoint {
            return Err(Failure::Other(anyhow!(
                "checkpoint {id} after checkpoint {}: ids must increase",
                at.last_checkpoint
            )));
        }
        at.last_checkpoint = id;
        let carried = match &mut at.source {
            Input::Share(s) => s.barrier(id).await.map_err(share_failure)?,
            Input::Generated(_) => vec![],
        };
        self.forward_input_events(&mut at.source).await?;
        if let Some(tid) = at.sink.commits_at_barrier() {
            // A one-phase sink commits inside `precommit`: its commit starts now, on the
            // history's clock, before any reader can see what it commits.
            let event = EventKind::CommitStarted { transactional_id: tid, checkpoint: id, restored: false };
            self.send(FromWorker::Event { event }).await?;
        }
        let result = at.sink.precommit(id).await;
        let pre = match result {
            Ok(p) => p,
            Err(e) => {
                self.forward_events(&mut at.sink).await?;
                return Err(e.into());
            }
        };
        if let Some(c) = pre.committable {
            self.precommitted(at, c, pre.flush_us, carried, mode).await?;
        }
        self.forward_events(&mut at.sink).await?;
        let state =
            SubtaskState { next_seq: at.source.next_seq(), committables: at.pending.values().cloned().collect() };
        let subtask = self.subtask;
        info!(subtask, id, next_seq = state.next_seq, pending = state.committables.len(), "checkpoint acked");
        self.send(FromWorker::Ack { subtask, id, state }).await
    }

    /// A pre-committed transaction: in the history with the share records it
    /// carries, then kept until its checkpoint completes.
    async fn precommitted(
        &mut self,
        at: &mut Attempt,
        c: Committable,
        flush_us: u64,
        carried: Vec<IdRange>,
        mode: SinkMode,
    ) -> Result<(), Failure> {
        self.send(FromWorker::Event { event: EventKind::TxnPrecommitted { committable: c.clone(), flush_us } }).await?;
        if !carried.is_empty() {
            let event = EventKind::TxnRecords {
                transactional_id: c.transactional_id.clone(),
                checkpoint: c.checkpoint,
                ranges: carried,
            };
            self.send(FromWorker::Event { event }).await?;
        }
        if mutants::commits_at_barrier(mode) {
            // legacy~commit-before-persist: committed
            // now, before the ack; nothing stored.
            self.commit(&mut at.sink, &c, false).await?;
        } else {
            at.pending.insert(c.checkpoint, c);
        }
        Ok(())
    }

    /// A checkpoint complete: every pending committable up to it committed, in order.
    async fn complete(&mut self, at: &mut Attempt, id: u64) -> Result<(), Failure> {
        at.last_completed = at.last_completed.max(id);
        let due: Vec<u64> = at.pending.range(..=at.last_completed).map(|(k, _)| *k).collect();
        for k in due {
            let c = at.pending.remove(&k).expect("listed above");
            self.commit(&mut at.sink, &c, false).await?;
        }
        // What the commits left unacknowledged (after-commit): the
        // coordinator's `committed` trigger waits for a report with some.
        if let Input::Share(s) = &at.source {
            if s.policy() == sinkhole_model::AckPolicy::AfterCommit {
                let records = s.held_through(id);
                let event = EventKind::ShareUnacknowledged { checkpoint: id, records };
                self.send(FromWorker::Event { event }).await?;
            }
        }
        let subtask = self.subtask;
        self.send(FromWorker::Committed { subtask, id }).await
    }

    /// Stop: the share consumer leaves its group, the sink closes.
    async fn stop(&mut self, at: Attempt) -> Result<(), Failure> {
        info!(subtask = self.subtask, pending = at.pending.len(), "stop");
        let Attempt { mut sink, source, .. } = at;
        if let Input::Share(s) = source {
            s.close().await;
        }
        sink.close().await;
        self.forward_events(&mut sink).await?;
        Ok(())
    }

    /// Records the source has ready, into the sink; the end of input said once.
    async fn take_input(&mut self, at: &mut Attempt, next_seq: &AtomicU64, records: u64) -> Result<(), Failure> {
        for record in at.source.take().await? {
            at.sink.write(record).await?;
        }
        self.forward_input_events(&mut at.source).await?;
        next_seq.store(at.source.next_seq(), Ordering::Relaxed);
        if at.source.exhausted() && !at.end_sent {
            let subtask = self.subtask;
            info!(subtask, records, "end of input");
            self.send(FromWorker::EndOfInput { subtask }).await?;
            at.end_sent = true;
        }
        Ok(())
    }
}

/// One attempt of the subtask between the control messages: its sink and
/// input, and where its checkpoints stand.
struct Attempt {
    sink: AnySink,
    source: Input,
    /// Committables pre-committed by this attempt, not yet committed.
    pending: BTreeMap<u64, Committable>,
    last_checkpoint: u64,
    last_completed: u64,
    end_sent: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkhole_model::Partitioning;

    /// The coordinator's tests run workers in spawned tasks: the future must be Send.
    #[test]
    fn run_is_send() {
        fn is_send<T: Send>(_: T) {}
        is_send(run(crate::source::test_config(1, 0, 1, Partitioning::RoundRobin), Path::new("/nonexistent")));
    }

    #[tokio::test]
    async fn no_coordinator_is_an_error() {
        let err = run(crate::source::test_config(1, 0, 1, Partitioning::RoundRobin), Path::new("/nonexistent/socket"))
            .await
            .unwrap_err();
        assert!(format!("{err:#}").contains("connecting to the coordinator"), "{err:#}");
    }
}
