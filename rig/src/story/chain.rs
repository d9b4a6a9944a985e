//! One anomaly's causal chain: the records → the transaction that carried them → the faults
//! that touched it → the client's requests and the broker's answers → the coordinator's view
//! → the brokers' (and Flink's) own log lines, on one clock. Pure: built from a verdict, a
//! history and the log files already read, so it is tested on synthetic runs.
//!
//! What a chain does not know it says ([`Chain::missing`]) rather than guessing: a link with no
//! evidence in the run directory is named as missing, with where the story looked.
use std::collections::BTreeMap;

use serde_json::Value;
use sinkhole_base::utc::Utc;
use sinkhole_checker::report::{Hanging, Whose};
use sinkhole_checker::verdict::Verdict;
use sinkhole_history::fault::End;
use sinkhole_history::observation::Observation;
use sinkhole_model::anomaly::{Anomaly, Example};
use sinkhole_model::{CommitOutcome, Event, EventKind};

use super::logs::{cluster_event, excerpt, LogFile, LogKind, Needles};

/// The most log lines one chain cites (the rest are counted).
pub const MAX_LOG_LINES: usize = 40;
/// How long before a transaction's first event, and after its last (or the last fault that
/// touched it), a chain looks for faults and log lines.
pub const MARGIN_MS: u64 = 2_000;
/// The most record ranges a chain lists (the verdict keeps the rest).
pub const MAX_RECORD_LINES: usize = 6;
/// The longest log excerpt, in characters.
pub const EXCERPT_CHARS: usize = 400;

/// Which link of the chain an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Link {
    /// The job's checkpoints and lifecycle around the transaction.
    Job,
    /// The transaction as the sink lived it: opened, pre-committed, its commit.
    Transaction,
    /// A fault of the scenario, fired or healed.
    Fault,
    /// A frame the proxy acted on (a request or a response on the wire).
    Wire,
    /// The coordinator's view: the rig's DescribeTransactions looks, the checker's look at the end.
    Coordinator,
    /// A broker's own log.
    BrokerLog,
    /// Flink's own log (the Flink subject).
    FlinkLog,
}

impl Link {
    pub fn name(self) -> &'static str {
        match self {
            Link::Job => "job",
            Link::Transaction => "transaction",
            Link::Fault => "fault",
            Link::Wire => "wire",
            Link::Coordinator => "coordinator",
            Link::BrokerLog => "broker log",
            Link::FlinkLog => "flink log",
        }
    }
}

/// One line of a chain's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Unix ms; None for what the checker saw after the job (placed last).
    pub wall_ms: Option<u64>,
    pub link: Link,
    pub text: String,
    /// Where it is written: `legacy/history.jsonl:212`, `cluster/node-1/server.log:4924`.
    pub cite: String,
}

/// `21:02:26.390` (UTC), the time of day a timeline shows, its entries' and its missing links'.
pub fn clock(ms: u64) -> String {
    let u = Utc::from_unix(ms / 1000);
    format!("{:02}:{:02}:{:02}.{:03}", u.hour, u.minute, u.second, ms % 1000)
}

/// The transaction a chain is about, as far as the run knows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Txn {
    pub transactional_id: Option<String>,
    pub producer_id: Option<i64>,
    pub epoch: Option<i32>,
    pub checkpoint: Option<u64>,
    pub subtask: Option<u32>,
}

impl Txn {
    pub fn title(&self) -> String {
        let mut s = self.transactional_id.clone().unwrap_or_else(|| "a transaction no coordinator names".into());
        let mut facts = Vec::new();
        if let Some(p) = self.producer_id {
            facts.push(format!("producer id {p}"));
        }
        if let Some(e) = self.epoch {
            facts.push(format!("epoch {e}"));
        }
        if let Some(c) = self.checkpoint {
            facts.push(format!("checkpoint {c}"));
        }
        if let Some(t) = self.subtask {
            facts.push(format!("subtask {t}"));
        }
        if !facts.is_empty() {
            s.push_str(&format!(" ({})", facts.join(", ")));
        }
        s
    }
}

/// The causal chain of the anomalies of one transaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chain {
    pub txn: Txn,
    /// What the checker found of it, one line per anomaly.
    pub found: Vec<String>,
    /// The records it concerns.
    pub records: Vec<String>,
    pub timeline: Vec<Entry>,
    /// The links the run holds no evidence for, each saying where the story looked.
    pub missing: Vec<String>,
}

/// What a chain is built from.
pub struct Inputs<'a> {
    /// The mode's directory name, for citations (`legacy`).
    pub mode_dir: &'a str,
    pub verdict: &'a Verdict,
    pub events: &'a [Event],
    /// The history's line number of each event (1-based), index for index.
    pub event_lines: &'a [usize],
    pub logs: &'a [LogFile],
    /// The output topic (partition names in broker logs are `topic-P`).
    pub topic: Option<String>,
    /// The Flink subject: its logs are a link the chain expects.
    pub flink: bool,
}

/// One transaction's anomalies (`None`: records no transaction was tied to), with an example each.
pub type Group = (Option<String>, Vec<(Anomaly, Example)>);

/// The anomalies of the verdict, grouped by transaction: those that leave a transaction open
/// or torn first (the root causes a later loss sits behind), then the others in checkpoint
/// order; examples with no transaction come last under `None`.
pub fn by_transaction(v: &Verdict) -> Vec<Group> {
    let mut groups: BTreeMap<Option<String>, Vec<(Anomaly, Example)>> = BTreeMap::new();
    for a in Anomaly::ALL.iter().copied() {
        for e in v.examples.get(a) {
            groups.entry(e.transactional_id.clone()).or_default().push((a, e.clone()));
        }
    }
    for h in &v.hanging {
        groups.entry(h.transactional_id.clone()).or_default();
    }
    let mut out: Vec<_> = groups.into_iter().collect();
    let root = |tid: &Option<String>, ex: &[(Anomaly, Example)]| {
        v.hanging.iter().any(|h| &h.transactional_id == tid)
            || ex.iter().any(|(a, _)| matches!(a, Anomaly::TornTransaction | Anomaly::MissingMarker))
    };
    let checkpoint = |ex: &[(Anomaly, Example)]| ex.iter().filter_map(|(_, e)| e.checkpoint).min();
    out.sort_by_key(|(tid, ex)| (tid.is_none(), !root(tid, ex), checkpoint(ex), tid.clone()));
    out
}

/// Whether a group is a root cause (open, torn, without its marker) rather than a loss behind one.
pub fn is_root(v: &Verdict, tid: &Option<String>, ex: &[(Anomaly, Example)]) -> bool {
    v.hanging.iter().any(|h| &h.transactional_id == tid)
        || ex
            .iter()
            .any(|(a, _)| matches!(a, Anomaly::TornTransaction | Anomaly::MissingMarker | Anomaly::HangingTransaction))
}

/// A record range in words: `subtask 0 seq 1904–2398 (495 records) lost`.
pub fn records_of(a: Anomaly, e: &Example) -> String {
    let mut parts = Vec::new();
    if let Some(s) = e.subtask {
        parts.push(format!("subtask {s}"));
    }
    match (e.seq, e.seq_end) {
        (Some(a), Some(b)) if b > a => parts.push(format!("seq {a}–{b} ({} records)", b - a + 1)),
        (Some(a), _) => parts.push(format!("seq {a}")),
        _ => {}
    }
    if let (Some(p), Some(o)) = (e.partition, e.offset) {
        parts.push(format!("at partition {p} offset {o}"));
    }
    format!("{}: {}", parts.join(" "), a.said())
}

/// The chain of one transaction's anomalies.
pub fn build(i: &Inputs<'_>, tid: Option<&str>, anomalies: &[(Anomaly, Example)]) -> Chain {
    let hanging = i.verdict.hanging.iter().find(|h| h.transactional_id.as_deref() == tid);
    let mut c = Chain { txn: txn_facts(i, tid, anomalies, hanging), ..Chain::default() };
    for (a, e) in anomalies {
        if !c.found.iter().any(|f| f.starts_with(a.said())) {
            c.found.push(format!("{}: {}", a.said(), e.detail));
        }
        if e.seq.is_some() || e.offset.is_some() {
            c.records.push(records_of(*a, e));
        }
    }
    if c.records.len() > MAX_RECORD_LINES {
        let more = c.records.len() - MAX_RECORD_LINES;
        c.records.truncate(MAX_RECORD_LINES);
        c.records.push(format!("{more} more example(s) in the verdict"));
    }
    if let Some(h) = hanging {
        if c.found.is_empty() || !c.found.iter().any(|f| f.contains(&h.story)) {
            c.found.push(hanging_words(h));
        }
    }
    let Some(tid) = tid else {
        c.missing.push("no transaction: the checker tied these records to no transactional id".into());
        return c;
    };
    let (start, end) = window(i, tid, hanging.is_some());
    let Some(start) = start else {
        c.missing.push(format!("the history ({}/history.jsonl) has no event of {tid}", i.mode_dir));
        return c;
    };
    transaction_entries(i, tid, c.txn.checkpoint, start, end, &mut c);
    fault_entries(i, tid, start, end, &mut c);
    coordinator_entries(i, tid, hanging, &mut c);
    log_entries(i, &needles(i, &c.txn, hanging), start, end, &mut c);
    c.timeline.sort_by_key(|e| (e.wall_ms.is_none(), e.wall_ms));
    c
}

fn hanging_words(h: &Hanging) -> String {
    let whose = match h.whose {
        Whose::Sink => "HANGING TRANSACTION (the sink's)",
        Whose::Broker => "MISSING MARKER (the broker's)",
    };
    let stuck: Vec<String> = h.stuck.iter().map(|(p, o)| format!("partition {p} from offset {o}")).collect();
    let state = h.coordinator_state.as_deref().unwrap_or("not listed");
    format!("{whose}: {state} at its coordinator after the job, holding {}; {}", stuck.join(", "), h.story)
}

/// The transaction's ids from the history (InitProducerId, the committable) and the checker.
fn txn_facts(i: &Inputs<'_>, tid: Option<&str>, ex: &[(Anomaly, Example)], h: Option<&Hanging>) -> Txn {
    let mut t = Txn {
        transactional_id: tid.map(str::to_string),
        checkpoint: ex.iter().find_map(|(_, e)| e.checkpoint).or(h.and_then(|h| h.checkpoint)),
        subtask: ex.iter().find_map(|(_, e)| e.subtask).or(h.and_then(|h| h.subtask)),
        producer_id: h.map(|h| h.producer_id),
        epoch: h.map(|h| h.producer_epoch),
    };
    for e in i.events {
        match &e.kind {
            EventKind::TxnPrecommitted { committable: c, .. } if Some(c.transactional_id.as_str()) == tid => {
                if c.producer_id >= 0 {
                    t.producer_id.get_or_insert(c.producer_id);
                    t.epoch.get_or_insert(i32::from(c.producer_epoch));
                }
                t.checkpoint.get_or_insert(c.checkpoint);
            }
            EventKind::ProducerInit { transactional_id, producer_id, epoch, .. }
                if Some(transactional_id.as_str()) == tid =>
            {
                t.producer_id.get_or_insert(*producer_id);
                t.epoch.get_or_insert(i32::from(*epoch));
            }
            _ => {}
        }
    }
    t
}

/// The tid an event is about, if it is a transaction's.
fn tid_of(k: &EventKind) -> Option<&str> {
    match k {
        EventKind::ProducerInit { transactional_id, .. }
        | EventKind::TxnOpened { transactional_id, .. }
        | EventKind::CommitStarted { transactional_id, .. }
        | EventKind::CommitFinished { transactional_id, .. }
        | EventKind::TxnAborted { transactional_id, .. }
        | EventKind::LingeringAborted { transactional_id, .. } => Some(transactional_id),
        EventKind::TxnPrecommitted { committable, .. } => Some(&committable.transactional_id),
        _ => None,
    }
}

/// From a second before the transaction's first event to [`MARGIN_MS`] past its last and past
/// the end of every fault that started meanwhile; a transaction left open runs to the job's end.
fn window(i: &Inputs<'_>, tid: &str, open: bool) -> (Option<u64>, u64) {
    let mine: Vec<u64> = i.events.iter().filter(|e| tid_of(&e.kind) == Some(tid)).map(|e| e.wall_ms).collect();
    let (Some(&first), Some(&last)) = (mine.iter().min(), mine.iter().max()) else {
        return (None, 0);
    };
    let mut end = last;
    let mut started: Vec<&str> = Vec::new();
    for e in i.events {
        match &e.kind {
            // A fault that started while it was open (not one that started while an earlier
            // fault was healing: the window does not chain from fault to fault).
            EventKind::FaultStarted { name, .. } if e.wall_ms <= last + MARGIN_MS && e.wall_ms + 1_000 >= first => {
                started.push(name);
                end = end.max(e.wall_ms);
            }
            EventKind::FaultEnded { name, .. } if started.contains(&name.as_str()) => end = end.max(e.wall_ms),
            EventKind::JobFinished { .. } if open => end = end.max(e.wall_ms),
            _ => {}
        }
    }
    (Some(first.saturating_sub(1_000)), end + MARGIN_MS)
}

fn cite(i: &Inputs<'_>, idx: usize) -> String {
    format!("{}/history.jsonl:{}", i.mode_dir, i.event_lines.get(idx).copied().unwrap_or(idx + 1))
}

/// The sink's side: the transaction's own events and its checkpoint's, and the job's
/// lifecycle in the window.
fn transaction_entries(i: &Inputs<'_>, tid: &str, checkpoint: Option<u64>, start: u64, end: u64, c: &mut Chain) {
    for (idx, e) in i.events.iter().enumerate() {
        let inside = e.wall_ms >= start && e.wall_ms <= end;
        let ours = tid_of(&e.kind) == Some(tid);
        let of_checkpoint = |n: &u64| Some(*n) == checkpoint;
        let (link, text) = match &e.kind {
            _ if ours => (Link::Transaction, transaction_words(&e.kind)),
            EventKind::StateRestored { checkpoint: from, committables }
                if committables.iter().any(|r| r.transactional_id == tid) =>
            {
                (Link::Transaction, format!("a restore from checkpoint {from} holds its committable"))
            }
            EventKind::CheckpointTriggered { id } if of_checkpoint(id) => {
                (Link::Job, format!("checkpoint {id} triggered"))
            }
            EventKind::CheckpointPersisted { id, .. } if of_checkpoint(id) => {
                (Link::Job, format!("checkpoint {id} persisted (complete)"))
            }
            EventKind::CheckpointNotified { id } if of_checkpoint(id) => {
                (Link::Job, format!("checkpoint {id}'s completion notified: its commits start"))
            }
            EventKind::FailureDetected { reason, .. } if inside => (Link::Job, format!("the job failed: {reason}")),
            EventKind::Restarting { attempt, from_checkpoint, .. } if inside => (
                Link::Job,
                format!(
                    "restarting as attempt {attempt} from checkpoint {}",
                    from_checkpoint.map_or("none".into(), |n| n.to_string())
                ),
            ),
            EventKind::JobFinished { outcome, attempts } if inside => {
                (Link::Job, format!("the job ended: {outcome} after {attempts} attempt(s)"))
            }
            _ => continue,
        };
        let by = match &e.source {
            sinkhole_model::Source::Worker { subtask } => format!("subtask {subtask}: "),
            _ => String::new(),
        };
        c.timeline.push(Entry { wall_ms: Some(e.wall_ms), link, text: format!("{by}{text}"), cite: cite(i, idx) });
    }
}

/// The client's requests and the answers, as the sink recorded them.
fn transaction_words(k: &EventKind) -> String {
    match k {
        EventKind::ProducerInit { producer_id, epoch, enable_2pc, .. } => format!(
            "InitProducerId answered: producer id {producer_id}, epoch {epoch}{}",
            if *enable_2pc { ", Enable2Pc" } else { "" }
        ),
        EventKind::TxnOpened { checkpoint, .. } => format!("transaction opened for checkpoint {checkpoint}"),
        EventKind::TxnPrecommitted { committable: c, .. } => format!(
            "pre-committed at the barrier of checkpoint {}: {} records{}",
            c.checkpoint,
            c.records,
            match (c.first_seq, c.last_seq) {
                (Some(a), Some(b)) => format!(", seq {a}–{b}"),
                _ => String::new(),
            }
        ),
        EventKind::CommitStarted { checkpoint, restored, .. } => format!(
            "commit of checkpoint {checkpoint} sent (EndTxn COMMIT){}",
            if *restored { ", by a restore" } else { "" }
        ),
        EventKind::CommitFinished { outcome, latency_us, .. } => match outcome {
            CommitOutcome::Committed => format!("commit answered: committed ({} ms)", latency_us / 1000),
            CommitOutcome::Dropped { error } => format!("commit answered {error}: committable dropped"),
            CommitOutcome::Failed { error } => format!("commit failed: {error} (retried on restore)"),
        },
        EventKind::TxnAborted { producer_id, epoch, reason, .. } => {
            format!("aborted (producer id {producer_id}, epoch {epoch}): {reason}")
        }
        EventKind::LingeringAborted { epoch, .. } => format!("found lingering at epoch {epoch} and aborted"),
        _ => String::new(),
    }
}

/// The faults that fired in the window (or named the transaction in their trigger), and the
/// frames their proxy rules acted on then.
fn fault_entries(i: &Inputs<'_>, tid: &str, start: u64, end: u64, c: &mut Chain) {
    let mut touched = Vec::new();
    for (idx, e) in i.events.iter().enumerate() {
        let inside = e.wall_ms >= start && e.wall_ms <= end;
        let (name, text) = match &e.kind {
            EventKind::FaultStarted { name, fault, effect } if inside || effect.to_string().contains(tid) => {
                (name, format!("fault {name} ({fault}) fired{}", effect_words(effect)))
            }
            EventKind::FaultEnded { name, fault, effect } if inside => {
                (name, format!("fault {name} ({fault}) healed{}", effect_words(effect)))
            }
            EventKind::FaultSkipped { name, fault, reason } if inside => {
                (name, format!("fault {name} ({fault}) did not fire: {reason}"))
            }
            _ => continue,
        };
        touched.push(name.clone());
        c.timeline.push(Entry { wall_ms: Some(e.wall_ms), link: Link::Fault, text, cite: cite(i, idx) });
    }
    if touched.is_empty() {
        c.missing.push(format!(
            "no fault fired while it was open (from {} to {}): nothing the scenario did touched it",
            clock(start),
            clock(end)
        ));
    }
    let mut frames = 0;
    for f in &i.verdict.faults {
        let ends: Vec<&End> = f.effect.end().into_iter().collect();
        for end_effect in ends {
            let End::Rule(r) = end_effect else { continue };
            for (at, what) in r.stats.timed_samples() {
                let names_tid = what.contains(" tid ") || what.contains(" tids ");
                let fits = at.is_some_and(|t| t >= start && t <= end);
                if fits && (!names_tid || what.contains(tid)) {
                    frames += 1;
                    c.timeline.push(Entry {
                        wall_ms: at,
                        link: Link::Wire,
                        text: format!("the proxy ({}): {what}", f.name),
                        cite: format!("{}/verdict.json: faults[{}].effect.end.stats", i.mode_dir, f.name),
                    });
                }
            }
        }
    }
    if frames == 0 {
        c.missing.push(
            "no frame of it on the wire: the proxy keeps only the frames its rules acted on (up to 20 a rule, with their times since this rig version)"
                .into(),
        );
    }
}

/// A fault's effect in a few words: the nodes it hit and what it did to them.
fn effect_words(v: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(nodes) = v.get("nodes").and_then(Value::as_array) {
        for n in nodes {
            let node = n.get("node").and_then(Value::as_i64).unwrap_or(-1);
            let action = n.pointer("/effect/action").and_then(Value::as_str).unwrap_or("acted on");
            let sig = n
                .pointer("/effect/signals/0/signal")
                .and_then(Value::as_str)
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            parts.push(format!("node {node}: {action}{sig}"));
        }
    }
    if let (Some(node), Some(action)) =
        (v.get("node").and_then(Value::as_i64), v.pointer("/effect/action").and_then(Value::as_str))
    {
        let ms =
            v.pointer("/effect/elapsed_ms").and_then(Value::as_u64).map(|m| format!(" in {m} ms")).unwrap_or_default();
        parts.push(format!("node {node}: {action}{ms}"));
    }
    if let Some(name) = v.pointer("/rule/name").and_then(Value::as_str) {
        let action = v.pointer("/rule/action/action").and_then(Value::as_str).unwrap_or("acts");
        parts.push(format!("proxy rule {name}: {action}"));
    }
    if let Some(t) = v.get("trigger").and_then(Value::as_object).and_then(|t| t.iter().find(|(k, _)| *k != "mode")) {
        parts.push(format!("on {} {}", t.0, t.1));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(": {}", parts.join("; "))
    }
}

/// The coordinator's view: the rig's looks during the run, the checker's after the job.
fn coordinator_entries(i: &Inputs<'_>, tid: &str, hanging: Option<&Hanging>, c: &mut Chain) {
    let mut seen = 0;
    for (idx, e) in i.events.iter().enumerate() {
        let EventKind::Observed { what, effect } = &e.kind else { continue };
        let Ok(o) = serde_json::from_value::<Observation>(effect.clone()) else { continue };
        for t in o.seen().iter().filter(|t| t.transactional_id == tid) {
            seen += 1;
            let state = t.error.clone().unwrap_or_else(|| t.state.clone());
            c.timeline.push(Entry {
                wall_ms: Some(e.wall_ms),
                link: Link::Coordinator,
                text: format!(
                    "DescribeTransactions ({what}): {state}, producer id {}, epoch {}",
                    t.producer_id, t.producer_epoch
                ),
                cite: cite(i, idx),
            });
        }
    }
    let v = i.verdict;
    let at_end = format!("{}/verdict.json", i.mode_dir);
    for t in v.end_look.transactions.iter().filter(|t| t.transactional_id == tid) {
        seen += 1;
        c.timeline.push(Entry {
            wall_ms: None,
            link: Link::Coordinator,
            text: format!(
                "after the job, coordinator {} lists it {} (producer id {}, epoch {}), partitions {:?}, open {} ms",
                t.coordinator, t.state, t.producer_id, t.producer_epoch, t.partitions, t.open_ms
            ),
            cite: format!("{at_end}: end_look"),
        });
    }
    if let Some(h) = hanging {
        seen += 1;
        c.timeline.push(Entry {
            wall_ms: None,
            link: Link::Coordinator,
            text: format!("after the job: {}", hanging_words(h)),
            cite: format!("{at_end}: hanging"),
        });
    }
    for tail in &v.uncommitted_tail {
        for o in tail.open.iter().filter(|o| o.transactional_id.as_deref() == Some(tid)) {
            c.timeline.push(Entry {
                wall_ms: None,
                link: Link::Coordinator,
                text: format!(
                    "after the drain: partition {} stuck at offset {} below its high-water mark {}, held by producer id {} epoch {} from offset {} ({} at its coordinator)",
                    tail.partition,
                    tail.position,
                    tail.high_watermark,
                    o.producer_id,
                    o.producer_epoch,
                    o.txn_start_offset,
                    o.coordinator_state.as_deref().unwrap_or("not listed")
                ),
                cite: format!("{at_end}: uncommitted_tail"),
            });
        }
    }
    if seen == 0 {
        c.missing.push(
            "no view of its coordinator: the rig took no DescribeTransactions look that names it, and the checker found it open on no broker after the job"
                .into(),
        );
    }
}

/// What its log lines must name: the id, the producer id, the partitions it holds (or, with
/// none known, every partition of the output topic).
fn needles(i: &Inputs<'_>, t: &Txn, hanging: Option<&Hanging>) -> Needles {
    let partitions = match (&i.topic, hanging) {
        (Some(topic), Some(h)) if !h.stuck.is_empty() => h.stuck.iter().map(|(p, _)| format!("{topic}-{p}")).collect(),
        _ => Vec::new(),
    };
    Needles {
        transactional_id: t.transactional_id.clone(),
        producer_id: t.producer_id,
        partitions,
        run_id: i.verdict.run_id.clone(),
    }
}

/// The brokers' and Flink's lines that name it, or are a cluster event, in the window.
fn log_entries(i: &Inputs<'_>, n: &Needles, start: u64, end: u64, c: &mut Chain) {
    let (mut cited, mut more, mut named) = (0usize, 0usize, 0usize);
    for f in i.logs {
        for l in f.lines.iter().filter(|l| l.wall_ms >= start && l.wall_ms <= end) {
            let names = n.named_in(&l.text);
            let event = (f.kind == LogKind::Broker).then(|| cluster_event(&l.text)).flatten();
            if !names && event.is_none() {
                continue;
            }
            named += usize::from(names);
            if cited >= MAX_LOG_LINES {
                more += 1;
                continue;
            }
            cited += 1;
            let meaning = event.map(|m| format!(" — {m}")).unwrap_or_default();
            let link = if f.kind == LogKind::Broker { Link::BrokerLog } else { Link::FlinkLog };
            c.timeline.push(Entry {
                wall_ms: Some(l.wall_ms),
                link,
                text: format!("{}{meaning}", excerpt(l, f.kind, EXCERPT_CHARS)),
                cite: format!("{}:{}", f.name, l.line_no),
            });
        }
    }
    if more > 0 {
        c.missing.push(format!("{more} more log lines name it in that window; the first {MAX_LOG_LINES} are cited"));
    }
    let brokers = i.logs.iter().filter(|f| f.kind == LogKind::Broker).count();
    if brokers == 0 {
        c.missing.push("no broker log in the run directory (an external cluster's, or a run without cluster/node-*/server.log): the brokers' side is not told".into());
    } else if named == 0 {
        c.missing.push(format!(
            "no line of the {brokers} broker log(s) names it (its id, producer id or stuck partitions) in that window"
        ));
    }
    if i.flink && !i.logs.iter().any(|f| f.kind == LogKind::Flink) {
        c.missing.push("no Flink log in the mode directory (flink/log/): the job's own side is not told".into());
    }
}
