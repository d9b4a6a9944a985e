//! The verdict: one mode's run judged against what the scenario expects.
//!
//! pass / fail / inconclusive (docs/GUIDE.md, "Verdicts"), or `observed` when the
//! scenario states no expectation (`error`, the rig failing for a mode, is the run's to
//! record, not a judgement). The rules, in order:
//! 0. the scenario expects `refused`: the broker refusing the mode
//!    (`JobOutcome::Unsupported`) passes, with its error; anything else fails;
//! 1. the broker cannot run the mode (`JobOutcome::Unsupported`) → inconclusive,
//!    with the broker's exact error;
//! 2. the job failed → fail, unless the scenario expects `job-failed` (with
//!    `{job_failed: TEXT}` only a failure whose reason holds TEXT passes);
//!    a failure while a fault fired later than the rig's bound (the rig was
//!    starved, and its own heartbeat timeouts fire too) → inconclusive,
//!    unless it names the cause `{job_failed: TEXT}` asks for;
//! 3. a fault that did not fire or whose effect was not confirmed → never a
//!    pass: inconclusive, unless the counts show anomalies the expectation
//!    forbids — a clean expectation's, or a condition a run without anomalies
//!    meets, like `lost: 0` (those are real whatever the fault did) → fail;
//!    A premise of the expectation that did not hold (`premise`: the broker
//!    never aborted the transaction the expectation's losses rest on) is
//!    judged the same way: inconclusive with the evidence, unless forbidden
//!    anomalies were seen;
//! 4. a partition whose read_committed position stayed below its high-water
//!    mark and that no open transaction the brokers named explains → inconclusive
//!    (whose doing it is cannot be told), unless the expectation wants losses
//!    (records stuck behind an open transaction are lost to read_committed
//!    readers) and they were seen;
//! 5. else the expectation on the counts decides pass or fail. A transaction
//!    left open after a finished job is counted there, by whose it is
//!    ([`crate::hanging`]): `hanging-transaction` (Ongoing at its coordinator:
//!    the sink's) or `missing-marker` (finished at its coordinator, open in a
//!    partition: the broker's); every expectation forbids both unless it names
//!    them, so a sink's is never excused and a broker's is a finding against
//!    Kafka unless a scenario names the known bug.
//!
//! An inconclusive judgement carries its [`Cause`], typed, beside the reason
//! text; the words a person reads ([`words`]: `LOST 4002 (expected)`,
//! `inconclusive — premise unmet`) are made from the judgement and the
//! counts, never parsed from the reason. `outcome` stays the machine's field
//! (and the exit code's).
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sinkhole_base::rundir::ModeDir;
use sinkhole_model::SinkMode;

use crate::hanging;
use crate::premise::{self, PremiseRecord};
use crate::{CheckReport, Counts, Examples, UncommittedTail};
use sinkhole_history::fault::FaultRecord;
use sinkhole_history::{JobOutcome, ModeOutcome};
use sinkhole_model::anomaly::{Renderer, Severity, Show};
use sinkhole_scenario::{Cmp, CountName, ExpectWord, Expectation};

pub mod words;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Pass,
    Fail,
    Inconclusive,
    /// No expectation: the counts are reported, not judged.
    Observed,
    /// The rig itself failed for this mode (its runner or checker errored):
    /// no verdict on the sink at all. Never decided by [`judge`]; the run
    /// records it when a mode could not be run through (exit code 3).
    Error,
}

impl Outcome {
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Inconclusive => "inconclusive",
            Outcome::Observed => "observed",
            Outcome::Error => "error",
        }
    }
}

/// Why a mode was judged inconclusive: the rule that decided it (see the
/// module doc), for the words and for machines (`inconclusive_cause` in
/// verdict.json, summary.json and matrix.json). Several can hold at once; a
/// judgement names the first by the rules' order (faults before premises).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// Rule 1: the broker refused the mode (`JobOutcome::Unsupported`).
    BrokerCannotRun,
    /// Rule 2: the job failed while a fault fired later than the rig's bound.
    RigStarved,
    /// Rule 3: a fault never fired.
    FaultNotFired,
    /// Rule 3: a fault fired but its effect was not confirmed.
    FaultUnconfirmed,
    /// Rule 3: a fault fired later than the rig's bound.
    FaultLate,
    /// Rule 3: a premise of the expectation did not hold.
    PremiseUnmet,
    /// Rule 4: a partition stayed below its high-water mark and no open transaction the
    /// brokers named explains it (whose doing it is cannot be told).
    TransactionLeftOpen,
    /// The output was not read (no check report).
    NotChecked,
}

impl Cause {
    pub const ALL: [Cause; 8] = [
        Cause::BrokerCannotRun,
        Cause::RigStarved,
        Cause::FaultNotFired,
        Cause::FaultUnconfirmed,
        Cause::FaultLate,
        Cause::PremiseUnmet,
        Cause::TransactionLeftOpen,
        Cause::NotChecked,
    ];

    /// The machine name, as serialised: `premise-unmet`.
    pub fn name(&self) -> &'static str {
        match self {
            Cause::BrokerCannotRun => "broker-cannot-run",
            Cause::RigStarved => "rig-starved",
            Cause::FaultNotFired => "fault-not-fired",
            Cause::FaultUnconfirmed => "fault-unconfirmed",
            Cause::FaultLate => "fault-late",
            Cause::PremiseUnmet => "premise-unmet",
            Cause::TransactionLeftOpen => "transaction-left-open",
            Cause::NotChecked => "not-checked",
        }
    }

    /// A few words for people: `premise unmet`.
    pub fn words(&self) -> &'static str {
        match self {
            Cause::BrokerCannotRun => "broker cannot run the mode",
            Cause::RigStarved => "job failed, rig starved",
            Cause::FaultNotFired => "fault did not fire",
            Cause::FaultUnconfirmed => "fault not confirmed",
            Cause::FaultLate => "fault fired late",
            Cause::PremiseUnmet => "premise unmet",
            Cause::TransactionLeftOpen => "stuck tail, holder unknown",
            Cause::NotChecked => "output not checked",
        }
    }
}

/// The judgement alone (what [`judge`] decides).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    pub outcome: Outcome,
    pub expected_met: Option<bool>,
    pub reason: String,
    /// Why, when the outcome is inconclusive (and only then).
    pub cause: Option<Cause>,
}

/// `results/<run-id>/<mode>/verdict.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verdict {
    pub scenario: String,
    pub run_id: String,
    pub mode: SinkMode,
    pub outcome: Outcome,
    /// What happened to the data, for people ([`words`]); absent in verdicts
    /// written before it existed ([`Verdict::words`] computes them then).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub words: String,
    /// Why the outcome is inconclusive; absent otherwise (and in older verdicts:
    /// [`Verdict::cause`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inconclusive_cause: Option<Cause>,
    /// null when the scenario has no expectation for the mode, or it could not be judged.
    pub expected_met: Option<bool>,
    pub reason: String,
    pub expectation: Option<Expectation>,
    /// Whether the output was drained and counted; false when the mode could
    /// not run (its counts are then zeros that mean nothing).
    #[serde(default = "yes")]
    pub checked: bool,
    pub counts: Counts,
    pub examples: Examples,
    pub uncommitted_tail: Vec<UncommittedTail>,
    /// What the coordinators listed open when the check began (absent in older verdicts).
    #[serde(default, skip_serializing_if = "end_look_empty")]
    pub end_look: crate::EndLook,
    /// The transactions left open after the job, and whose doing each is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hanging: Vec<hanging::Hanging>,
    pub job: JobOutcome,
    pub attempts: u32,
    pub checkpoints_completed: u64,
    pub faults: Vec<FaultRecord>,
    /// The expectation's premises and whether they held, with the evidence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub premises: Vec<PremiseRecord>,
    pub committables_dropped: u64,
    pub kafka: String,
    pub seed: u64,
    pub history: PathBuf,
    /// The saved drain (`drained.bin`), for offline re-checks.
    pub drained: PathBuf,
    pub wall_ms: u64,
    /// Latency per metric (µs: p50, p90, p99, p99.9, max, count), see
    /// [`crate::latency`]; a metric the mode did not measure is absent.
    #[serde(default)]
    pub latency: std::collections::BTreeMap<String, crate::latency::Summary>,
    /// A share-group source: the group's own view at the end, and what the
    /// workers saw of deliveries and acknowledgements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<crate::share::ShareView>,
    /// What the scenario's live readers saw: their counts (also in `counts`), examples and
    /// the lag from commit to first poll; absent without readers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<crate::reads::ReadReport>,
}

/// Renders an expectation as written in YAML, compactly: `clean`, `lost>0`.
pub fn expectation_text(e: Option<&Expectation>) -> String {
    match e {
        None => "-".to_string(),
        Some(Expectation::Word(ExpectWord::Clean)) => "clean".to_string(),
        Some(Expectation::Word(ExpectWord::JobFailed)) => "job-failed".to_string(),
        Some(Expectation::Word(ExpectWord::Refused)) => "refused".to_string(),
        Some(Expectation::FailedWith(f)) => format!("job-failed({})", f.job_failed),
        Some(Expectation::Counts(m)) if m.is_empty() => "{}".to_string(),
        Some(Expectation::Counts(m)) => m
            .iter()
            .map(|(k, c)| match c.parse() {
                Ok(cmp) => format!("{k}{cmp}"),
                Err(_) => format!("{k}?"),
            })
            .collect::<Vec<_>>()
            .join(","),
    }
}

fn count_of(c: &Counts, n: CountName) -> u64 {
    c.get(n)
}

/// The reason's counts (the table's `reason` renderer): its head, then the anomalies seen,
/// so the usual line stays short.
fn counts_text(c: &Counts) -> String {
    let head: Vec<String> =
        c.shown(Renderer::Reason).filter(|(k, _)| k.shown(Renderer::Reason) == Show::Always).map(said).collect();
    let mut t = format!("{} of {} committed, {}", c.committed, c.expected, head.join(", "));
    for k in c.shown(Renderer::Reason).filter(|(k, _)| k.shown(Renderer::Reason) != Show::Always) {
        t.push_str(&format!(", {}", said(k)));
    }
    t
}

fn said((k, n): (CountName, u64)) -> String {
    format!("{n} {k}")
}

/// The expectation's conditions on the counts: `clean`'s (every anomaly it forbids == 0),
/// or those written, with == 0 for every anomaly the table forbids unless it is named (a
/// transaction left open after a finished job stops every read_committed reader of its
/// partitions, whatever else a scenario expects: `lost>0` from an outage says nothing of it).
fn conditions(e: &Expectation) -> Vec<(CountName, Cmp)> {
    conditions_by(e, CountName::severity)
}

/// [`conditions`], with each anomaly's severity from `severity` (the table's, or a test's).
pub(crate) fn conditions_by(e: &Expectation, severity: impl Fn(CountName) -> Severity) -> Vec<(CountName, Cmp)> {
    let forbidden = |named: &dyn Fn(CountName) -> bool| {
        CountName::ALL
            .iter()
            .copied()
            .filter(|k| !named(*k))
            .filter(|k| match e {
                Expectation::Word(ExpectWord::Clean) => severity(*k).forbidden_by_clean(),
                _ => severity(*k).forbidden_unless_named(),
            })
            .map(|k| (k, Cmp::Eq(0)))
            .collect::<Vec<_>>()
    };
    match e {
        Expectation::Word(ExpectWord::Clean) => forbidden(&|_| false),
        Expectation::Word(ExpectWord::JobFailed | ExpectWord::Refused) | Expectation::FailedWith(_) => vec![],
        // Validation already rejected conditions that do not parse.
        Expectation::Counts(m) => {
            let mut conds: Vec<(CountName, Cmp)> =
                m.iter().filter_map(|(k, c)| c.parse().ok().map(|cmp| (*k, cmp))).collect();
            conds.extend(forbidden(&|k| m.contains_key(&k)));
            conds
        }
    }
}

/// Whether the expectation holds on the counts, and why.
pub fn evaluate(e: &Expectation, c: &Counts) -> (bool, String) {
    if let Expectation::Word(ExpectWord::Clean) = e {
        let ok = conditions(e).iter().all(|(k, cmp)| cmp.holds(count_of(c, *k)));
        let head = if ok { "clean as expected" } else { "expected clean" };
        return (ok, format!("{head}: {}", counts_text(c)));
    }
    let conds = conditions(e);
    let failed: Vec<String> = conds
        .iter()
        .filter(|(k, cmp)| !cmp.holds(count_of(c, *k)))
        .map(|(k, cmp)| format!("expected {k} {cmp}, got {}", count_of(c, *k)))
        .collect();
    if failed.is_empty() {
        // The conditions as written (those every expectation implies go without saying).
        let named = |k: &CountName| matches!(e, Expectation::Counts(m) if m.contains_key(k));
        let held: Vec<String> = conds
            .iter()
            .filter(|(k, _)| !k.severity().forbidden_unless_named() || named(k))
            .map(|(k, cmp)| format!("{k} {cmp} ({})", count_of(c, *k)))
            .collect();
        let what = if held.is_empty() { "no conditions".to_string() } else { held.join(", ") };
        (true, format!("as expected, {what}: {}", counts_text(c)))
    } else {
        (false, format!("{}: {}", failed.join("; "), counts_text(c)))
    }
}

/// Whether an expectation asks for anomalies a clean run cannot show (so it
/// depends on the faults having their effect).
fn wants_anomalies(e: &Expectation) -> bool {
    let zero = Counts::default();
    conditions(e).iter().any(|(k, cmp)| !cmp.holds(count_of(&zero, *k)))
}

/// Whether the counts break a condition a run without anomalies meets (`lost: 0`,
/// `duplicated: "<3"`): anomalies the expectation forbids, real whatever a fault or the broker did.
fn forbidden_seen(e: &Expectation, c: &Counts) -> bool {
    conditions(e).iter().any(|(k, cmp)| cmp.holds(0) && !cmp.holds(count_of(c, *k)))
}

fn wants_loss(e: &Expectation) -> bool {
    conditions(e).iter().any(|(k, cmp)| *k == CountName::Lost && !cmp.holds(0))
}

/// Judges one mode. `report` is None when the checker did not run (a job
/// the broker could not run has nothing to check).
pub fn judge(
    expect: Option<&Expectation>,
    job: &JobOutcome,
    faults: &[FaultRecord],
    report: Option<&CheckReport>,
) -> Judgement {
    judge_with(expect, job, faults, &[], report)
}

/// [`judge`], with the expectation's premises as observed.
pub fn judge_with(
    expect: Option<&Expectation>,
    job: &JobOutcome,
    faults: &[FaultRecord],
    premises: &[PremiseRecord],
    report: Option<&CheckReport>,
) -> Judgement {
    let j = |outcome, expected_met, reason: String| Judgement { outcome, expected_met, reason, cause: None };
    let inconclusive = |cause, reason: String| Judgement {
        outcome: Outcome::Inconclusive,
        expected_met: None,
        reason,
        cause: Some(cause),
    };
    // 0. `refused`: the broker must refuse the mode; anything else fails.
    if matches!(expect, Some(Expectation::Word(ExpectWord::Refused))) {
        return match job {
            JobOutcome::Unsupported { error } => {
                j(Outcome::Pass, Some(true), format!("the broker refused the mode, as expected: {error}"))
            }
            JobOutcome::Failed { reason } => j(
                Outcome::Fail,
                Some(false),
                format!("expected the broker to refuse the mode, but the job failed: {reason}"),
            ),
            JobOutcome::Finished => {
                let counts = report.map(|r| format!(": {}", counts_text(&r.counts))).unwrap_or_default();
                j(Outcome::Fail, Some(false), format!("expected the broker to refuse the mode, but it ran{counts}"))
            }
        };
    }
    // 1. The broker cannot run it.
    if let JobOutcome::Unsupported { error } = job {
        return inconclusive(Cause::BrokerCannotRun, format!("the broker cannot run this mode: {error}"));
    }
    // 2. The job failed.
    let wants_failure = expect.is_some_and(Expectation::wants_failure);
    // A job that failed while the rig ran faults late (it was starved: its own heartbeat
    // timeouts fire too) shows nothing about the sink, unless the failure names the cause the
    // expectation asks for.
    let starved = late(faults.iter()).join("; ");
    match (job, wants_failure) {
        (JobOutcome::Failed { reason }, true) => {
            if let Some(Expectation::FailedWith(f)) = expect {
                if !reason.contains(&f.job_failed) {
                    return j(
                        Outcome::Fail,
                        Some(false),
                        format!("the job failed, but not with {}: {reason}", f.job_failed),
                    );
                }
            } else if !starved.is_empty() {
                return inconclusive(
                    Cause::RigStarved,
                    format!("the job failed, as expected, but {starved}, so the failure may be the rig's: {reason}"),
                );
            }
            return j(Outcome::Pass, Some(true), format!("the job failed, as expected: {reason}"));
        }
        (JobOutcome::Failed { reason }, false) if !starved.is_empty() => {
            return inconclusive(
                Cause::RigStarved,
                format!("the job failed, but {starved}, so the failure may be the rig's, not the sink's: {reason}"),
            )
        }
        (JobOutcome::Failed { reason }, false) => {
            return j(
                Outcome::Fail,
                expect.map(|_| false),
                format!("the job failed (no expectation allows that; `job-failed` would): {reason}"),
            )
        }
        (_, true) => {
            let counts = report.map(|r| format!(": {}", counts_text(&r.counts))).unwrap_or_default();
            return j(Outcome::Fail, Some(false), format!("expected the job to fail, but it finished{counts}"));
        }
        _ => {}
    }
    let Some(report) = report else {
        return inconclusive(Cause::NotChecked, "the output was not checked".to_string());
    };
    let c = &report.counts;
    let Some(e) = expect else {
        let mut reason = format!("no expectation: {}", counts_text(c));
        if !report.uncommitted_tail.is_empty() {
            reason.push_str(&format!("; {}", tail_text(&report.uncommitted_tail)));
        }
        if let Some(f) = unconfirmed(faults) {
            reason.push_str(&format!("; {f}"));
        }
        return j(Outcome::Observed, None, reason);
    };
    let (met, why) = evaluate(e, c);
    // 3. A fault without a confirmed effect, or a premise that did not hold: never a pass.
    let unheld = premise::unmet(premises);
    if let Some(f) = [unconfirmed(faults), unheld].into_iter().flatten().reduce(|a, b| format!("{a}; {b}")) {
        if !met && (!wants_anomalies(e) || forbidden_seen(e, c)) {
            return j(Outcome::Fail, Some(false), format!("{why} (although {f})"));
        }
        let cause = fault_cause(faults).unwrap_or(Cause::PremiseUnmet);
        return inconclusive(cause, format!("{f}, so the result does not show what the scenario tests ({why})"));
    }
    by_counts(e, met, why, report)
}

/// Rules 4 and 5, once the faults and premises did what the scenario says.
fn by_counts(e: &Expectation, met: bool, why: String, report: &CheckReport) -> Judgement {
    let j = |outcome, reason| Judgement { outcome, expected_met: Some(met), reason, cause: None };
    // 4. A partition stuck below its high-water mark that no open transaction explains: whose
    // doing it is cannot be told.
    let unexplained: Vec<UncommittedTail> =
        hanging::unexplained(&report.uncommitted_tail, &report.hanging).into_iter().cloned().collect();
    if !unexplained.is_empty() {
        let tail = tail_text(&unexplained);
        if met && wants_loss(e) {
            return j(Outcome::Pass, format!("{why}; {tail}: those records are lost to read_committed readers"));
        }
        return Judgement {
            outcome: Outcome::Inconclusive,
            expected_met: None,
            reason: format!("{tail}; {why}"),
            cause: Some(Cause::TransactionLeftOpen),
        };
    }
    // 5. The counts decide, the transactions left open among them, each said with whose it is.
    let why = match open_text(&report.hanging) {
        Some(t) => format!("{why}; {t}"),
        None => why,
    };
    j(if met { Outcome::Pass } else { Outcome::Fail }, why)
}

/// The transactions left open after the job, in one clause: `transactions left open after the
/// job: …; …`; None when there are none.
fn open_text(h: &[hanging::Hanging]) -> Option<String> {
    if h.is_empty() {
        return None;
    }
    Some(format!(
        "transaction(s) left open after the job: {}",
        h.iter().map(hanging::Hanging::describe).collect::<Vec<_>>().join("; ")
    ))
}

fn tail_text(t: &[UncommittedTail]) -> String {
    let parts: Vec<String> = t
        .iter()
        .map(|u| {
            let mut s = format!(
                "partition {} stuck at offset {} below high-water mark {}",
                u.partition, u.position, u.high_watermark
            );
            for o in &u.open {
                s.push_str(&format!(" ({})", o.describe()));
            }
            s
        })
        .collect();
    format!("uncommitted tail (a transaction left open): {}", parts.join(", "))
}

/// Faults that did not do what the scenario says: never fired, fired
/// without a confirmed effect, or fired later than the rig's bound
/// ([`sinkhole_history::trigger::LATE_BOUND`]) for a reason other than a restore in
/// progress — the scenario that ran was not the one written.
fn unconfirmed(faults: &[FaultRecord]) -> Option<String> {
    let mut bad: Vec<String> = faults
        .iter()
        .filter(|f| !f.fired || !f.confirmed)
        .map(|f| {
            format!(
                "fault {} ({}) {}",
                f.name,
                f.kind,
                if f.fired { "fired but its effect was not confirmed" } else { "did not fire" }
            )
        })
        .collect();
    bad.extend(late(faults.iter().filter(|f| f.confirmed)));
    if bad.is_empty() {
        None
    } else {
        Some(bad.join("; "))
    }
}

/// Which of [`unconfirmed`]'s kinds of fault comes first (one that never
/// fired, then one whose effect was not confirmed, then a late one); None
/// when every fault did what the scenario says.
fn fault_cause(faults: &[FaultRecord]) -> Option<Cause> {
    if faults.iter().any(|f| !f.fired) {
        Some(Cause::FaultNotFired)
    } else if faults.iter().any(|f| !f.confirmed) {
        Some(Cause::FaultUnconfirmed)
    } else if !late(faults.iter()).is_empty() {
        Some(Cause::FaultLate)
    } else {
        None
    }
}

/// Faults that fired later than the rig's bound: the rig was too busy to run the schedule
/// as written.
fn late<'a>(faults: impl Iterator<Item = &'a FaultRecord>) -> Vec<String> {
    let bound = sinkhole_history::trigger::LATE_BOUND.as_millis() as u64;
    faults
        .filter(|f| f.fired)
        .filter_map(|f| {
            let t = late_trigger(f).filter(|t| t.late_ms.is_some_and(|l| l > bound))?;
            Some(format!(
                "fault {} ({}) fired {} ms after its time ({}), more than the {bound} ms the rig allows",
                f.name,
                f.kind,
                t.late_ms.unwrap_or(0),
                t.late_because.as_deref().unwrap_or("the rig was busy")
            ))
        })
        .collect()
}

/// The latest of a fault's firings' triggers.
fn late_trigger(f: &FaultRecord) -> Option<&sinkhole_history::fault::Trigger> {
    use sinkhole_history::fault::FaultEffect;
    let FaultEffect::Fired { start, firings, .. } = &f.effect else { return None };
    let all = firings.iter().flatten().map(|fi| &fi.start).chain(std::iter::once(start));
    all.filter_map(|s| s.trigger()).max_by_key(|t| t.late_ms.unwrap_or(0))
}

fn yes() -> bool {
    true
}

fn end_look_empty(l: &crate::EndLook) -> bool {
    *l == crate::EndLook::default()
}

/// Everything [`build`] puts in a verdict besides the judgement.
pub struct VerdictInput<'a> {
    pub scenario: &'a str,
    pub run_id: &'a str,
    pub mode: SinkMode,
    pub expectation: Option<&'a Expectation>,
    /// The expectation's premises, judged from the run's observations.
    pub premises: Vec<PremiseRecord>,
    pub outcome: &'a ModeOutcome,
    pub report: Option<&'a CheckReport>,
    pub kafka: &'a str,
    pub seed: u64,
    pub drained: PathBuf,
}

pub fn build(i: VerdictInput<'_>) -> Verdict {
    let o = i.outcome;
    let jd = judge_with(i.expectation, &o.job, &o.faults, &i.premises, i.report);
    let report = i.report.cloned().unwrap_or_default();
    let mut v = Verdict {
        scenario: i.scenario.to_string(),
        run_id: i.run_id.to_string(),
        mode: i.mode,
        outcome: jd.outcome,
        words: String::new(),
        inconclusive_cause: jd.cause,
        expected_met: jd.expected_met,
        reason: jd.reason,
        expectation: i.expectation.cloned(),
        checked: i.report.is_some(),
        counts: report.counts,
        examples: report.examples,
        uncommitted_tail: report.uncommitted_tail,
        end_look: report.end_look,
        hanging: report.hanging,
        job: o.job.clone(),
        attempts: o.attempts,
        checkpoints_completed: o.checkpoints_completed,
        faults: o.faults.clone(),
        premises: i.premises,
        committables_dropped: o.committables_dropped,
        kafka: i.kafka.to_string(),
        seed: i.seed,
        history: o.history.clone(),
        drained: i.drained,
        wall_ms: o.wall_ms,
        // Filled by the caller, who has the history and the live tail.
        latency: Default::default(),
        share: None,
        reads: None,
    };
    v.reword();
    v
}

impl Verdict {
    /// Why the verdict is inconclusive (None for any other outcome): as
    /// stored, or, for a verdict written before the cause was, judged again
    /// by the same rules from what the file holds.
    pub fn cause(&self) -> Option<Cause> {
        if self.outcome != Outcome::Inconclusive {
            return None;
        }
        self.inconclusive_cause.or_else(|| {
            let report = self.checked.then(|| CheckReport {
                counts: self.counts,
                uncommitted_tail: self.uncommitted_tail.clone(),
                hanging: self.hanging.clone(),
                ..CheckReport::default()
            });
            judge_with(self.expectation.as_ref(), &self.job, &self.faults, &self.premises, report.as_ref()).cause
        })
    }

    /// The words for people: as stored, else made from the verdict's fields
    /// (a verdict written before they existed).
    pub fn words(&self) -> String {
        if self.words.is_empty() {
            self.made_words()
        } else {
            self.words.clone()
        }
    }

    /// Makes `words` again from the judgement and the counts: after either changed.
    pub fn reword(&mut self) {
        self.words = self.made_words();
    }

    fn made_words(&self) -> String {
        let expectation = self.expectation.as_ref().map(|e| expectation_text(Some(e)));
        words::words(&words::Facts {
            outcome: self.outcome,
            cause: self.cause(),
            expectation: expectation.as_deref(),
            counts: &self.counts,
            uncommitted_tail: !hanging::unexplained(&self.uncommitted_tail, &self.hanging).is_empty(),
            checked: self.checked,
            end: words::End::of(&self.job),
        })
    }
}

/// Writes the mode directory's `verdict.json`.
pub fn write(dir: &ModeDir, v: &Verdict) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.verdict();
    let text = sinkhole_base::provenance::to_json(v).map_err(std::io::Error::other)?;
    std::fs::write(&path, text)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use sinkhole_scenario::Condition;

    fn counts(lost: u64, duplicated: u64, unexpected: u64) -> Counts {
        Counts { expected: 100, committed: 100 - lost, lost, duplicated, unexpected, ..Counts::default() }
    }

    fn report(c: Counts) -> CheckReport {
        CheckReport { counts: c, ..CheckReport::default() }
    }

    fn cond(k: CountName, c: &str) -> Expectation {
        Expectation::Counts(BTreeMap::from([(k, Condition::Expr(c.into()))]))
    }

    fn fault(fired: bool, confirmed: bool) -> FaultRecord {
        FaultRecord {
            name: "outage".into(),
            kind: "job-outage".into(),
            fired,
            confirmed,
            effect: sinkhole_history::fault::FaultEffect::Skipped { skipped: String::new() },
        }
    }

    const CLEAN: Expectation = Expectation::Word(ExpectWord::Clean);

    #[test]
    fn clean_passes_and_fails_on_counts() {
        let j = judge(Some(&CLEAN), &JobOutcome::Finished, &[fault(true, true)], Some(&report(counts(0, 0, 0))));
        assert_eq!((j.outcome, j.expected_met), (Outcome::Pass, Some(true)));
        assert_eq!(j.reason, "clean as expected: 100 of 100 committed, 0 lost, 0 duplicated, 0 unexpected");
        let j = judge(Some(&CLEAN), &JobOutcome::Finished, &[], Some(&report(counts(0, 3, 0))));
        assert_eq!((j.outcome, j.expected_met), (Outcome::Fail, Some(false)));
        assert!(j.reason.contains("3 duplicated"), "{}", j.reason);
    }

    #[test]
    fn conditions_name_the_counts() {
        let e = cond(CountName::Lost, ">0");
        let j = judge(Some(&e), &JobOutcome::Finished, &[fault(true, true)], Some(&report(counts(20, 0, 0))));
        assert_eq!(j.outcome, Outcome::Pass);
        assert_eq!(j.reason, "as expected, lost >0 (20): 80 of 100 committed, 20 lost, 0 duplicated, 0 unexpected");
        let j = judge(Some(&e), &JobOutcome::Finished, &[fault(true, true)], Some(&report(counts(0, 0, 0))));
        assert_eq!(j.outcome, Outcome::Fail);
        assert!(j.reason.starts_with("expected lost >0, got 0"), "{}", j.reason);
        let (ok, _) = evaluate(
            &Expectation::Counts(BTreeMap::from([(CountName::Duplicated, Condition::Exactly(0))])),
            &counts(5, 0, 0),
        );
        assert!(ok, "unnamed counts are free");
        let (ok, _) = evaluate(&cond(CountName::Unexpected, "<3"), &counts(0, 0, 3));
        assert!(!ok);
        let (ok, _) = evaluate(&cond(CountName::Duplicated, ">=2"), &counts(0, 2, 0));
        assert!(ok);
    }

    #[test]
    fn unsupported_is_inconclusive_with_the_error() {
        let job =
            JobOutcome::Unsupported { error: "InitProducerId v6 keepPreparedTxn: UNSUPPORTED_VERSION (35)".into() };
        let j = judge(Some(&CLEAN), &job, &[], None);
        assert_eq!((j.outcome, j.expected_met, j.cause), (Outcome::Inconclusive, None, Some(Cause::BrokerCannotRun)));
        assert!(j.reason.contains("UNSUPPORTED_VERSION (35)"));
    }

    #[test]
    fn refused_passes_only_when_the_broker_refuses() {
        let r = Expectation::Word(ExpectWord::Refused);
        let error = "InitProducerId v6 Enable2Pc=true → TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53)".to_string();
        let j = judge(Some(&r), &JobOutcome::Unsupported { error }, &[], None);
        assert_eq!((j.outcome, j.expected_met), (Outcome::Pass, Some(true)));
        assert!(j.reason.contains("TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53)"), "{}", j.reason);
        let j = judge(Some(&r), &JobOutcome::Finished, &[], Some(&report(counts(0, 0, 0))));
        assert_eq!((j.outcome, j.expected_met), (Outcome::Fail, Some(false)));
        assert!(j.reason.contains("but it ran"), "{}", j.reason);
        let j = judge(Some(&r), &JobOutcome::Failed { reason: "x".into() }, &[], None);
        assert_eq!((j.outcome, j.expected_met), (Outcome::Fail, Some(false)));
        assert_eq!(expectation_text(Some(&r)), "refused");
    }

    #[test]
    fn failed_job_fails_unless_expected() {
        let job = JobOutcome::Failed { reason: "restart limit 10 exceeded".into() };
        let j = judge(Some(&CLEAN), &job, &[], Some(&report(counts(0, 0, 0))));
        assert_eq!((j.outcome, j.expected_met), (Outcome::Fail, Some(false)));
        assert!(j.reason.contains("restart limit 10 exceeded"));
        let j = judge(None, &job, &[], None);
        assert_eq!((j.outcome, j.expected_met), (Outcome::Fail, None));
        let jf = Expectation::Word(ExpectWord::JobFailed);
        let j = judge(Some(&jf), &job, &[], None);
        assert_eq!((j.outcome, j.expected_met), (Outcome::Pass, Some(true)));
        let j = judge(Some(&jf), &JobOutcome::Finished, &[], Some(&report(counts(0, 0, 0))));
        assert_eq!((j.outcome, j.expected_met), (Outcome::Fail, Some(false)));
        // With a cause: only that cause earns the pass.
        let with = |t: &str| Expectation::FailedWith(sinkhole_scenario::FailedWith { job_failed: t.into() });
        let j = judge(Some(&with("restart limit")), &job, &[], None);
        assert_eq!((j.outcome, j.expected_met), (Outcome::Pass, Some(true)));
        let j = judge(Some(&with("InvalidPidMappingException")), &job, &[], None);
        assert_eq!((j.outcome, j.expected_met), (Outcome::Fail, Some(false)));
        assert!(j.reason.contains("but not with InvalidPidMappingException"), "{}", j.reason);
        let j = judge(Some(&with("x")), &JobOutcome::Finished, &[], Some(&report(counts(0, 0, 0))));
        assert_eq!((j.outcome, j.expected_met), (Outcome::Fail, Some(false)));
        assert_eq!(expectation_text(Some(&with("X"))), "job-failed(X)");
    }

    #[test]
    fn unconfirmed_fault_is_never_a_pass() {
        let e = cond(CountName::Lost, ">0");
        // lost > 0 expected, the outage never fired, nothing lost: that proves nothing.
        let j = judge(Some(&e), &JobOutcome::Finished, &[fault(false, false)], Some(&report(counts(0, 0, 0))));
        assert_eq!((j.outcome, j.expected_met), (Outcome::Inconclusive, None));
        assert_eq!(j.cause, Some(Cause::FaultNotFired));
        assert!(j.reason.contains("fault outage (job-outage) did not fire"), "{}", j.reason);
        // clean expected and clean seen, but the fault's effect is unconfirmed: not a pass either.
        let j = judge(Some(&CLEAN), &JobOutcome::Finished, &[fault(true, false)], Some(&report(counts(0, 0, 0))));
        assert_eq!((j.outcome, j.cause), (Outcome::Inconclusive, Some(Cause::FaultUnconfirmed)));
        assert!(j.reason.contains("fired but its effect was not confirmed"), "{}", j.reason);
        // clean expected, losses seen: real whatever the fault did.
        let j = judge(Some(&CLEAN), &JobOutcome::Finished, &[fault(false, false)], Some(&report(counts(4, 0, 0))));
        assert_eq!((j.outcome, j.expected_met), (Outcome::Fail, Some(false)));
    }

    #[test]
    fn a_fault_that_fired_late_is_never_a_pass_unless_a_restore_deferred_it() {
        use sinkhole_history::fault::{FaultEffect, Start, Trigger, WorkersStart};
        let kill = |trigger: Trigger| FaultRecord {
            name: "kill-at-7s".into(),
            kind: "kill-workers".into(),
            fired: true,
            confirmed: true,
            effect: FaultEffect::Fired {
                start: Start::Workers(WorkersStart {
                    trigger,
                    attempt: 0,
                    workers: vec![],
                    duration_ms: None,
                    open_transactions: None,
                    while_frozen: None,
                    outage_ms: None,
                }),
                end: None,
                firings: None,
            },
        };
        let dup = cond(CountName::Duplicated, ">0");
        let late = Trigger {
            at_ms: Some(19_000),
            late_ms: Some(12_000),
            late_because: Some("the cluster was busy with fault restart".into()),
            ..Trigger::default()
        };
        // The at-least-once control's kill came after every record was
        // written: 0 duplicates is not a failure of the sink, and not a pass.
        let j = judge(Some(&dup), &JobOutcome::Finished, &[kill(late.clone())], Some(&report(counts(0, 0, 0))));
        assert_eq!((j.outcome, j.expected_met), (Outcome::Inconclusive, None), "{}", j.reason);
        assert_eq!(j.cause, Some(Cause::FaultLate));
        assert!(
            j.reason.contains("fired 12000 ms after its time (the cluster was busy with fault restart)"),
            "{}",
            j.reason
        );
        // A clean expectation met under a late fault: inconclusive too.
        let j = judge(Some(&CLEAN), &JobOutcome::Finished, &[kill(late.clone())], Some(&report(counts(0, 0, 0))));
        assert_eq!(j.outcome, Outcome::Inconclusive);
        // A job that failed while the rig ran its faults late (starved: its own heartbeat
        // timeouts fire) is not the sink's failure, nor an expected failure earned...
        let failed =
            JobOutcome::Failed { reason: "no message from subtask 0 for 5233 ms (heartbeat_timeout_ms 5000)".into() };
        let j = judge(Some(&CLEAN), &failed, &[kill(late.clone())], None);
        assert_eq!((j.outcome, j.expected_met), (Outcome::Inconclusive, None), "{}", j.reason);
        assert_eq!(j.cause, Some(Cause::RigStarved));
        assert!(j.reason.contains("the failure may be the rig's") && j.reason.contains("5233 ms"), "{}", j.reason);
        let j = judge(None, &failed, &[kill(late.clone())], None);
        assert_eq!(j.outcome, Outcome::Inconclusive, "{}", j.reason);
        let jf = Expectation::Word(ExpectWord::JobFailed);
        assert_eq!(judge(Some(&jf), &failed, &[kill(late.clone())], None).outcome, Outcome::Inconclusive);
        // ...unless the failure names the cause the expectation asks for.
        let with = Expectation::FailedWith(sinkhole_scenario::FailedWith { job_failed: "heartbeat_timeout_ms".into() });
        assert_eq!(judge(Some(&with), &failed, &[kill(late.clone())], None).outcome, Outcome::Pass);
        // On time, the same failure is the sink's.
        let on_time = Trigger { at_ms: Some(7_400), late_ms: Some(400), ..Trigger::default() };
        assert_eq!(judge(Some(&CLEAN), &failed, &[kill(on_time)], None).outcome, Outcome::Fail);
        // Within the bound, or deferred by a restore (recorded as deferred_from_ms, not late_ms): judged as usual.
        let on_time = Trigger { at_ms: Some(7_400), late_ms: Some(400), ..Trigger::default() };
        let j = judge(Some(&dup), &JobOutcome::Finished, &[kill(on_time)], Some(&report(counts(0, 7, 0))));
        assert_eq!(j.outcome, Outcome::Pass, "{}", j.reason);
        let deferred = Trigger { at_ms: Some(12_000), deferred_from_ms: Some(7_000), ..Trigger::default() };
        let j = judge(Some(&dup), &JobOutcome::Finished, &[kill(deferred)], Some(&report(counts(0, 7, 0))));
        assert_eq!(j.outcome, Outcome::Pass, "{}", j.reason);
    }

    #[test]
    fn an_unmet_premise_is_inconclusive_with_its_evidence_a_met_one_is_judged() {
        use crate::premise::Held;
        let premise = |held| PremiseRecord {
            premise: "timeout_abort {checkpoint: 3}".into(),
            held,
            evidence: "the broker's view at the restore: x-0-3 Ongoing".into(),
        };
        let lost = cond(CountName::Lost, ">0");
        // FLIP-319 with a slow abort scan: nothing lost because the broker
        // never aborted; the sink is not to blame.
        let j = judge_with(
            Some(&lost),
            &JobOutcome::Finished,
            &[fault(true, true)],
            &[premise(Held::Unmet)],
            Some(&report(counts(0, 0, 0))),
        );
        assert_eq!((j.outcome, j.expected_met), (Outcome::Inconclusive, None), "{}", j.reason);
        assert_eq!(j.cause, Some(Cause::PremiseUnmet));
        assert!(
            j.reason.starts_with(
                "premise timeout_abort {checkpoint: 3} not met: the broker's view at the restore: x-0-3 Ongoing, so the result"
            ),
            "{}",
            j.reason
        );
        assert!(j.reason.contains("expected lost >0, got 0"), "{}", j.reason);
        // Met (or preempted): judged on the counts, both ways.
        for held in [Held::Met, Held::Preempted] {
            let j =
                judge_with(Some(&lost), &JobOutcome::Finished, &[], &[premise(held)], Some(&report(counts(0, 0, 0))));
            assert_eq!(j.outcome, Outcome::Fail, "{held:?}");
            let j =
                judge_with(Some(&lost), &JobOutcome::Finished, &[], &[premise(held)], Some(&report(counts(9, 0, 0))));
            assert_eq!(j.outcome, Outcome::Pass, "{held:?}");
        }
        // A clean expectation's anomalies are real whatever the broker did.
        let j = judge_with(
            Some(&CLEAN),
            &JobOutcome::Finished,
            &[],
            &[premise(Held::Unmet)],
            Some(&report(counts(0, 4, 0))),
        );
        assert_eq!((j.outcome, j.expected_met), (Outcome::Fail, Some(false)));
        // A mixed expectation (share-delivery-limit's): the limit not reached is inconclusive,
        // but a loss `lost: 0` forbids is real whatever the group did.
        let mixed = Expectation::Counts(BTreeMap::from([
            (CountName::Lost, Condition::Exactly(0)),
            (CountName::Archived, Condition::Expr(">0".into())),
        ]));
        let limit = PremiseRecord {
            premise: "delivery_limit".into(),
            held: Held::Unmet,
            evidence: "highest delivery count 1 of limit 2".into(),
        };
        let j = judge_with(
            Some(&mixed),
            &JobOutcome::Finished,
            &[],
            std::slice::from_ref(&limit),
            Some(&report(counts(0, 0, 0))),
        );
        assert_eq!(j.outcome, Outcome::Inconclusive, "{}", j.reason);
        assert!(
            j.reason.starts_with("premise delivery_limit not met: highest delivery count 1 of limit 2"),
            "{}",
            j.reason
        );
        let j = judge_with(Some(&mixed), &JobOutcome::Finished, &[], &[limit], Some(&report(counts(5, 0, 0))));
        assert_eq!((j.outcome, j.expected_met), (Outcome::Fail, Some(false)), "{}", j.reason);
        // And an unmet premise never lets a clean run pass.
        let j = judge_with(
            Some(&CLEAN),
            &JobOutcome::Finished,
            &[],
            &[premise(Held::Unmet)],
            Some(&report(counts(0, 0, 0))),
        );
        assert_eq!(j.outcome, Outcome::Inconclusive);
        // Unconfirmed faults and unmet premises are both named.
        let j = judge_with(
            Some(&lost),
            &JobOutcome::Finished,
            &[fault(false, false)],
            &[premise(Held::Unmet)],
            Some(&report(counts(0, 0, 0))),
        );
        assert!(j.reason.contains("did not fire; premise timeout_abort"), "{}", j.reason);
        assert_eq!(j.cause, Some(Cause::FaultNotFired), "the first of the rules' order");
    }

    #[test]
    fn uncommitted_tail_is_inconclusive_unless_loss_is_expected() {
        let mut r = report(counts(10, 0, 0));
        r.uncommitted_tail = vec![UncommittedTail { partition: 1, position: 31, high_watermark: 40, open: vec![] }];
        let j = judge(Some(&CLEAN), &JobOutcome::Finished, &[], Some(&r));
        assert_eq!((j.outcome, j.cause), (Outcome::Inconclusive, Some(Cause::TransactionLeftOpen)));
        assert!(j.reason.contains("partition 1 stuck at offset 31 below high-water mark 40"), "{}", j.reason);
        let j = judge(Some(&cond(CountName::Lost, ">0")), &JobOutcome::Finished, &[], Some(&r));
        assert_eq!((j.outcome, j.expected_met, j.cause), (Outcome::Pass, Some(true), None));
        let j = judge(Some(&CLEAN), &JobOutcome::Finished, &[], None);
        assert_eq!((j.outcome, j.cause), (Outcome::Inconclusive, Some(Cause::NotChecked)));
    }

    #[test]
    fn no_expectation_is_observed() {
        let j = judge(None, &JobOutcome::Finished, &[], Some(&report(counts(0, 7, 0))));
        assert_eq!((j.outcome, j.expected_met), (Outcome::Observed, None));
        assert!(j.reason.contains("7 duplicated"));
    }

    #[test]
    fn expectation_text_is_compact() {
        assert_eq!(expectation_text(Some(&CLEAN)), "clean");
        assert_eq!(expectation_text(Some(&cond(CountName::Lost, ">0"))), "lost>0");
        assert_eq!(expectation_text(None), "-");
    }

    #[test]
    fn verdict_json_has_the_fields() {
        let o = ModeOutcome {
            job: JobOutcome::Finished,
            attempts: 2,
            checkpoints_completed: 9,
            history: "h.jsonl".into(),
            faults: vec![fault(true, true)],
            committables_dropped: 1,
            wall_ms: 5,
        };
        let r = report(counts(20, 0, 0));
        let e = cond(CountName::Lost, ">0");
        let v = build(VerdictInput {
            scenario: "s",
            run_id: "s-x-1",
            mode: SinkMode::Legacy,
            expectation: Some(&e),
            premises: vec![],
            outcome: &o,
            report: Some(&r),
            kafka: "4.4.0",
            seed: 42,
            drained: "d.bin".into(),
        });
        let dir = std::env::temp_dir().join(format!("sinkhole-verdict-{}", std::process::id()));
        let path = write(&ModeDir::at(&dir), &v).unwrap();
        assert_eq!(path, dir.join("verdict.json"));
        let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(j["scenario"], "s");
        assert_eq!(j["mode"], "legacy");
        assert_eq!(j["outcome"], "pass");
        assert_eq!(j["words"], "LOST 20 (expected)");
        assert!(j.get("inconclusive_cause").is_none(), "only an inconclusive verdict has a cause");
        assert_eq!(j["expected_met"], true);
        assert_eq!(j["counts"]["lost"], 20);
        assert_eq!(j["counts"]["expected"], 100);
        assert_eq!(j["job"]["status"], "finished");
        assert_eq!(j["committables_dropped"], 1);
        assert_eq!(j["kafka"], "4.4.0");
        assert_eq!(j["seed"], 42);
        assert_eq!(j["history"], "h.jsonl");
        assert!(j["examples"].is_object() && j["faults"].is_array());
    }

    #[test]
    fn an_inconclusive_verdict_names_its_cause_in_json_and_words() {
        let o = ModeOutcome {
            job: JobOutcome::Unsupported { error: "InitProducerId v6 → UNSUPPORTED_VERSION (35)".into() },
            attempts: 1,
            checkpoints_completed: 0,
            history: "h.jsonl".into(),
            faults: vec![],
            committables_dropped: 0,
            wall_ms: 5,
        };
        let v = build(VerdictInput {
            scenario: "s",
            run_id: "s-x-1",
            mode: SinkMode::Kip939,
            expectation: Some(&CLEAN),
            premises: vec![],
            outcome: &o,
            report: None,
            kafka: "4.4.0",
            seed: 1,
            drained: "d.bin".into(),
        });
        let j = serde_json::to_value(&v).unwrap();
        assert_eq!(j["outcome"], "inconclusive");
        assert_eq!(j["inconclusive_cause"], "broker-cannot-run");
        assert_eq!(j["words"], "inconclusive — broker cannot run the mode");
    }

    #[test]
    fn a_verdict_written_before_the_words_gets_them_from_its_fields() {
        // A verdict of an older rig: no words, no cause; an outage that never fired.
        let mut j = serde_json::json!({
            "scenario": "s", "run_id": "r", "mode": "legacy", "outcome": "inconclusive",
            "expected_met": null, "reason": "fault outage (job-outage) did not fire, so …",
            "expectation": {"lost": ">0"},
            "counts": {"expected": 100, "committed": 100, "lost": 0, "duplicated": 0, "unexpected": 0},
            "examples": {"lost": [], "duplicated": [], "unexpected": []},
            "uncommitted_tail": [], "job": {"status": "finished"}, "attempts": 1,
            "checkpoints_completed": 3,
            "faults": [{"name": "outage", "kind": "job-outage", "fired": false, "confirmed": false,
                        "effect": {"skipped": "never reached"}}],
            "committables_dropped": 0, "kafka": "4.4.0", "seed": 1, "history": "h", "drained": "d", "wall_ms": 1
        });
        let v: Verdict = serde_json::from_value(j.clone()).unwrap();
        assert!(v.words.is_empty() && v.inconclusive_cause.is_none());
        assert_eq!(v.cause(), Some(Cause::FaultNotFired));
        assert_eq!(v.words(), "inconclusive — fault did not fire");
        // A judged one: lost records a clean expectation forbids.
        j["outcome"] = "fail".into();
        j["expected_met"] = false.into();
        j["expectation"] = "clean".into();
        j["counts"]["lost"] = 12.into();
        let v: Verdict = serde_json::from_value(j).unwrap();
        assert_eq!((v.cause(), v.words().as_str()), (None, "LOST 12 — expected clean"));
    }
}
