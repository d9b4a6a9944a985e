//! Default premises: the effects the built-in modes' expectations rest on,
//! which the rig knows without being told (docs/SCENARIOS.md, "Default
//! premises").
//!
//! Why: an expectation that rests on something the broker must do, in a
//! scenario that states no premise, turns a run where the broker did not do
//! it into a failure of a sink that did nothing wrong. A FLIP-319 outage
//! with a 60 s abort scan: the broker never aborts checkpoint 3's
//! transactions, legacy commits everything, and `lost: ">0"` fails. Users
//! do not know to write the premise; the rig does.
//!
//! The rules, for a mode with an expectation on the counts (`clean` or
//! conditions; not `job-failed`, not `refused`) and no `premise:` entry of
//! its own:
//! 1. **Timeout.** A fault keeps the job from committing for longer than
//!    `transaction_timeout_ms`: a `job-outage` or `pause-workers` whose
//!    `duration_ms` is above it, a `kill-workers` with `restart_delay_ms`
//!    above it. Such a fault is there to make the broker's timeout matter,
//!    so the expectation of a mode that cannot take back a transaction the
//!    broker aborted (legacy and its mutants: no Enable2Pc) rests on
//!    `timeout_abort`, and that of an Enable2Pc mode (twopc-inject, kip939
//!    and their mutants) on `outlives_timeout` (KIP-939: the coordinator
//!    never times such a transaction out). Of which transactions: a
//!    pause's own (`fault: NAME`) when it lasts past the rig's look (the
//!    timeout, one abort scan and a second: `Timing::look_after_ms`), else
//!    those of the checkpoint its trigger names pre-committed
//!    (`checkpoint_persisted`, `checkpoint_notified`, `commit_started`: N).
//!    A fault on a wall-clock trigger names no checkpoint, and gives none.
//! 2. **Delivery limit.** A share-group source and an expectation that wants
//!    records archived (`archived: ">0"`): `delivery_limit`. What the group
//!    archives is its reaction to a fault (a lock that ran out at the limit),
//!    not the sink's doing: a run where the limit was not reached shows
//!    nothing about the sink.
//! 3. **Redelivery.** A share-group source and an expectation that wants
//!    records delivered again or written twice (`redelivered` or
//!    `duplicated` above 0): `redelivery`. A share group hands a record out
//!    again only when a lock runs out or a member leaves with it in hand.
//!
//! The Flink subject (`flink-kafkasink`) gets none: the rig takes no look at
//! its transactions by checkpoint or pause (its `superseded` premise is
//! written by hand). Rules 1–3 are the ones the library's expectations rest
//! on; every other expectation is judged on the counts alone.
//!
//! [`resolve`] runs once when a run is planned (after `expect_by` and the
//! random schedule), so the resolved scenario.yaml carries the premises and
//! replays the same run; [`explain`] says the same for `sinkhole validate
//! --explain` and `sinkhole schedule`, one line per premise.
use serde::Serialize;
use sinkhole_model::SinkMode;

use super::{Premise, PremiseKind, PremiseOf, Premises};
use crate::{CountName, ExpectWord, Expectation, FaultKind, FaultSpec, Scenario, Timing, When};

/// Where a mode's premises come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// The scenario's own `premise:` entry.
    Scenario,
    /// The scenario's entry is empty: no premises, not even the defaults.
    OptedOut,
    /// The rules of this module.
    Defaults,
    /// No entry, and no rule applies.
    None,
}

/// One premise and why the mode has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reasoned {
    /// As written: `timeout_abort {checkpoint: 3}`.
    pub premise: String,
    pub default: bool,
    pub why: String,
}

/// A mode's premises as a run resolves them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModePremises {
    pub mode: SinkMode,
    pub source: Source,
    pub premises: Vec<Reasoned>,
    /// Why a rule gave nothing, or what an opted-out mode's defaults would be; one line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The default premises of one mode, each with why, and why a rule that
/// looked at the mode gave nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Defaults {
    pub premises: Premises,
    pub why: Vec<Reasoned>,
    pub notes: Vec<String>,
}

impl Defaults {
    fn add(&mut self, p: Premise, why: String) {
        self.why.push(Reasoned { premise: p.to_string(), default: true, why });
        self.premises.set(p);
    }
}

/// The premises the rules give `mode` under `s` (its expectation as `s.expect` has it: resolve
/// `expect_by` first). None without an expectation on the counts.
pub fn for_mode(s: &Scenario, mode: SinkMode) -> Defaults {
    let mut d = Defaults::default();
    let Some(e) = s.expect.get(&mode).filter(|e| on_counts(e)) else { return d };
    timeout_rule(s, mode, e, &mut d);
    if s.share_source().is_some() {
        share_rules(s, e, &mut d);
    }
    d
}

/// Fills `s.premise` with the defaults of every mode that has an expectation and no entry of its
/// own; returns what each mode ends up with and why (as [`explain`] said before).
pub fn resolve(s: &mut Scenario) -> Vec<ModePremises> {
    let told = explain(s);
    for m in s.modes.clone() {
        if s.premise.contains_key(&m) {
            continue;
        }
        let d = for_mode(s, m);
        if !d.premises.is_empty() {
            s.premise.insert(m, d.premises);
        }
    }
    told
}

/// Each mode's premises once resolved, and where they come from, in `s.modes`' order.
pub fn explain(s: &Scenario) -> Vec<ModePremises> {
    s.modes
        .iter()
        .map(|&mode| {
            let d = for_mode(s, mode);
            match s.premise.get(&mode) {
                Some(own) if own.is_empty() => {
                    let mut notes = vec![format!("`premise: {{{mode}: {{}}}}`: none, not even the defaults")];
                    notes.extend(d.why.iter().map(|r| format!("the default would be {} ({})", r.premise, r.why)));
                    ModePremises { mode, source: Source::OptedOut, premises: vec![], notes }
                }
                Some(own) => ModePremises {
                    mode,
                    source: Source::Scenario,
                    premises: own
                        .list()
                        .into_iter()
                        .map(|p| Reasoned { premise: p.to_string(), default: false, why: "the scenario's own".into() })
                        .collect(),
                    notes: vec![],
                },
                None if d.premises.is_empty() => {
                    let mut notes = d.notes;
                    if notes.is_empty() {
                        notes.push(match s.expect.get(&mode) {
                            None => "no expectation: the counts are reported, not judged".into(),
                            Some(e) if !on_counts(e) => "the expectation is not on the counts".into(),
                            Some(_) => "no default applies: the expectation is judged on the counts alone".into(),
                        });
                    }
                    ModePremises { mode, source: Source::None, premises: vec![], notes }
                }
                None => ModePremises { mode, source: Source::Defaults, premises: d.why, notes: d.notes },
            }
        })
        .collect()
}

/// What a run of `s` would resolve, without running it: the expectations for the scenario's own
/// Kafka version and protocol (`expect_by`), the faults `faults` gives (a random schedule drawn
/// for a seed; None: the explicit faults alone), then each mode's premises.
pub fn as_planned(s: &Scenario, faults: Option<&[FaultSpec]>) -> Vec<ModePremises> {
    let mut s = s.clone();
    crate::expect_by::resolve(&mut s);
    if let Some(f) = faults {
        s.faults = f.to_vec();
    }
    explain(&s)
}

/// One line per premise (or per mode without one), for `sinkhole validate --explain` and
/// `sinkhole schedule`.
pub fn render(v: &[ModePremises]) -> String {
    let width = v.iter().map(|m| m.mode.name().len()).max().unwrap_or(0);
    let mut out = String::from("premises:\n");
    for m in v {
        let name = m.mode.name();
        for r in &m.premises {
            let why = if r.default { format!("default: {}", r.why) } else { r.why.clone() };
            out.push_str(&format!("  {name:<width$}  {:<34} {why}\n", r.premise));
        }
        if m.premises.is_empty() {
            out.push_str(&format!("  {name:<width$}  {:<34} {}\n", "none", m.notes.first().map_or("", String::as_str)));
        }
        // A mode without premises printed its first note on its own line.
        let shown = usize::from(m.premises.is_empty());
        for n in m.notes.iter().skip(shown) {
            out.push_str(&format!("  {:<width$}  {:<34} {n}\n", "", ""));
        }
    }
    out
}

/// `clean` or conditions: an expectation judged on the counts.
fn on_counts(e: &Expectation) -> bool {
    match e {
        Expectation::Word(w) => *w == ExpectWord::Clean,
        Expectation::Counts(c) => !c.is_empty(),
        Expectation::FailedWith(_) => false,
    }
}

/// The expectation, compactly: `clean`, `lost >0, duplicated ==0`.
fn text(e: &Expectation) -> String {
    match e {
        Expectation::Counts(c) => c
            .iter()
            .map(|(k, v)| match v.parse() {
                Ok(cmp) => format!("{} {cmp}", k.key()),
                Err(_) => k.key().to_string(),
            })
            .collect::<Vec<_>>()
            .join(", "),
        _ => "clean".into(),
    }
}

/// The conditions of `e` on `names` that a run without any such record breaks (`archived >0`).
fn wanted(e: &Expectation, names: &[CountName]) -> Vec<String> {
    let Expectation::Counts(c) = e else { return vec![] };
    c.iter()
        .filter(|(k, _)| names.contains(k))
        .filter_map(|(k, v)| v.parse().ok().filter(|cmp| !cmp.holds(0)).map(|cmp| format!("{} {cmp}", k.key())))
        .collect()
}

/// Which timeout premise a mode's expectation rests on under a fault past the timeout: the kind,
/// what the mode does, and the effect it then needs (of `{}` transactions).
fn timeout_kind(mode: SinkMode) -> Result<(PremiseKind, &'static str, &'static str), String> {
    match mode.base() {
        SinkMode::Legacy => Ok((
            PremiseKind::TimeoutAbort,
            "cannot take back a transaction the broker aborted (no Enable2Pc)",
            "the broker aborting {} by their timeout",
        )),
        SinkMode::TwopcInject | SinkMode::Kip939 => Ok((
            PremiseKind::OutlivesTimeout,
            "opens its transactions with Enable2Pc",
            "the broker keeping {} past their timeout (KIP-939)",
        )),
        SinkMode::FlinkKafkasink => Err("the rig takes no look at the Flink subject's transactions by checkpoint or \
             pause: no timeout premise by default (write `superseded` where it applies)"
            .into()),
        SinkMode::RdkafkaTxn | SinkMode::PlainTxn | SinkMode::AtLeastOnce | SinkMode::Mutant(_) => {
            Err(format!("{mode} keeps no pre-committed transaction across a restore: no timeout premise"))
        }
    }
}

/// How long `f` keeps the job from committing, if it is a fault that does.
fn holds_commits_ms(s: &Scenario, f: &FaultSpec) -> Option<(u64, &'static str)> {
    match f.kind.kind() {
        FaultKind::JobOutage => f.duration_ms.map(|d| (d, "keeps the job down")),
        FaultKind::PauseWorkers => f.duration_ms.map(|d| (d, "freezes workers")),
        FaultKind::KillWorkers => {
            Some((s.job.restart_delay_ms, "takes the job down until its restore (restart_delay_ms)"))
        }
        _ => None,
    }
}

/// The checkpoint whose transactions are pre-committed and not yet committed when a fault on
/// this trigger fires.
fn precommitted(w: &When) -> Option<u64> {
    match *w {
        When::CheckpointPersisted(n) | When::CheckpointNotified(n) | When::CommitStarted(n) if n >= 1 => Some(n),
        _ => None,
    }
}

/// A fault's label as the nemesis names it: its name, else `<kind>-<index>`.
fn label(i: usize, f: &FaultSpec) -> String {
    f.name.clone().unwrap_or_else(|| format!("{}-{i}", f.kind.name()))
}

/// Rule 1 (module docs).
fn timeout_rule(s: &Scenario, mode: SinkMode, e: &Expectation, d: &mut Defaults) {
    let timing = Timing::of(s);
    let timeout = timing.transaction_timeout_ms();
    let past: Vec<(usize, &FaultSpec, u64, &str)> = s
        .faults
        .iter()
        .enumerate()
        .filter_map(|(i, f)| holds_commits_ms(s, f).filter(|(ms, _)| *ms > timeout).map(|(ms, how)| (i, f, ms, how)))
        .collect();
    let Some(&(i, f, ms, how)) = past.first() else { return };
    let (kind, does, needs) = match timeout_kind(mode) {
        Ok(k) => k,
        Err(why) => return d.notes.push(why),
    };
    let name = label(i, f);
    let of = if f.kind.kind() == FaultKind::PauseWorkers && ms > timing.look_after_ms() {
        Some((
            PremiseOf { checkpoint: None, fault: Some(name.clone()), before: None },
            "the transactions it froze open".to_string(),
        ))
    } else {
        precommitted(&f.when).map(|n| {
            (PremiseOf { checkpoint: Some(n), fault: None, before: None }, format!("checkpoint {n}'s transactions"))
        })
    };
    let Some((of, which)) = of else {
        return d.notes.push(format!(
            "{name} {how} for {ms} ms, past the transaction timeout ({timeout} ms), but its trigger ({}) names no \
             pre-committed checkpoint{}: state the premise if the expectation rests on the timeout",
            crate::schedule::trigger_text(&f.when),
            if f.kind.kind() == FaultKind::PauseWorkers {
                format!(" and it ends before the rig's look ({})", timing.look_after_text())
            } else {
                String::new()
            }
        ));
    };
    let why = format!(
        "{name} {how} for {ms} ms, past the transaction timeout ({timeout} ms), and {} {does}: its expectation `{}` \
         rests on {}",
        mode.base(),
        text(e),
        needs.replace("{}", &which)
    );
    d.add(Premise { kind, of }, why);
}

/// Rules 2 and 3 (module docs).
fn share_rules(s: &Scenario, e: &Expectation, d: &mut Defaults) {
    let limit = crate::source::delivery_limit(s);
    let archived = wanted(e, &[CountName::Archived]);
    if !archived.is_empty() {
        d.add(
            Premise { kind: PremiseKind::DeliveryLimit, of: PremiseOf::default() },
            format!(
                "`{}` counts records the share group archived at its delivery limit ({limit}): the group's reaction \
                 to a fault (a lock run out on a record's last delivery), not the sink's doing",
                archived.join(", ")
            ),
        );
    }
    let again = wanted(e, &[CountName::Redelivered, CountName::Duplicated]);
    if !again.is_empty() {
        d.add(
            Premise { kind: PremiseKind::Redelivery, of: PremiseOf::default() },
            format!(
                "the expectation `{}` needs the share group to hand records out again (a lock run out, a member \
                 gone with records in hand): without a redelivery no record is written twice",
                again.join(", ")
            ),
        );
    }
}

#[cfg(test)]
mod tests;
