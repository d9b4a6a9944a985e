//! The `expect:` and `premise:` sections of a scenario, checked: an
//! expectation or premise only for a mode that runs, conditions that parse,
//! counts that the scenario's source can have, premises that name one set of
//! transactions the rig can observe (or, for a share group's premises, a
//! scenario that has one). An empty premise entry is valid: it turns the
//! defaults off (`premise::defaults`). Split from `validate.rs`, which calls them.
use super::located::{key, Seg};
use super::*;
use sinkhole_model::anomaly::Group;

/// One mode's expectation, at `path`: the mode runs, every condition parses.
pub(super) fn validate_expectation(
    s: &Scenario,
    path: Vec<Seg>,
    m: SinkMode,
    e: &Expectation,
    bad: &mut impl FnMut(Vec<Seg>, String),
) {
    if !s.modes.contains(&m) {
        bad(
            path.clone(),
            format!(
                "an expectation for {m}, which is not in modes [{}]",
                s.modes.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
            ),
        );
    }
    let share = s.share_source().is_some();
    if let Expectation::FailedWith(f) = e {
        if f.job_failed.trim().is_empty() {
            let mut p = path.clone();
            p.push(key("job_failed"));
            bad(p, "empty: give the text the failure's reason must contain (e.g. an exception's class)".into());
        }
    }
    if let Expectation::Counts(conds) = e {
        for (name, cond) in conds {
            let mut p = path.clone();
            p.push(key(name.key()));
            if let Err(msg) = cond.parse() {
                bad(p.clone(), msg);
            }
            match name {
                _ if name.group() == Group::Input && !share => bad(
                    p,
                    format!("{name} is counted for a share-group source only (source: {{type: share-group}})"),
                ),
                CountName::Nonmonotonic if share => bad(
                    p,
                    "a share group hands records out in no order across its members: nonmonotonic is not counted with a share-group source".into(),
                ),
                _ => {}
            }
        }
    }
}

/// A mode's premises: its mode runs, each premise names exactly one set of
/// transactions, and that set can be observed.
pub(super) fn validate_premises(
    s: &Scenario,
    m: SinkMode,
    p: &premise::Premises,
    bad: &mut impl FnMut(Vec<Seg>, String),
) {
    let path = vec![key("premise"), key(m.name())];
    if !s.modes.contains(&m) {
        bad(
            path.clone(),
            format!(
                "a premise for {m}, which is not in modes [{}]",
                s.modes.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
            ),
        );
    }
    // An empty entry is allowed: no premises for the mode, not even the defaults.
    for pr in p.list() {
        let mut pp = path.clone();
        pp.push(key(pr.kind.name()));
        if pr.kind.of_share_group() {
            if s.share_source().is_none() {
                bad(
                    pp,
                    format!(
                        "{} is about a share group's deliveries: the scenario has no share-group source \
                         (source: {{type: share-group}})",
                        pr.kind.name()
                    ),
                );
            }
            continue;
        }
        if pr.kind == premise::PremiseKind::Superseded {
            if m != SinkMode::FlinkKafkasink {
                bad(
                    pp.clone(),
                    "superseded is looked at by the Flink subject when it resubmits: flink-kafkasink only".into(),
                );
            }
            if pr.of.fault.is_some() {
                bad(pp.clone(), "superseded is about a checkpoint's ids: name `checkpoint: N`".into());
                continue;
            }
        }
        if pr.kind == premise::PremiseKind::ActedBefore {
            validate_acted_before(s, &pr.of, pp, bad);
            continue;
        }
        if pr.of.before.is_some() {
            pp.push(key("before"));
            bad(pp, format!("`before` is for acted_before only, not {}", pr.kind.name()));
            continue;
        }
        match (&pr.of.checkpoint, &pr.of.fault) {
            (Some(_), Some(_)) | (None, None) => {
                bad(pp, "name exactly one of `checkpoint: N` or `fault: NAME`".into());
            }
            (Some(0), None) => {
                pp.push(key("checkpoint"));
                bad(pp, "checkpoints are numbered from 1: must be ≥ 1".into());
            }
            (Some(_), None) => {}
            (None, Some(name)) => {
                pp.push(key("fault"));
                let found = fault_named(s, name);
                // When the nemesis takes the broker's view of a pause's transactions.
                let timing = crate::Timing::of(s);
                match found {
                    None => bad(pp, format!("no fault named {name:?}")),
                    Some(f) if f.kind.kind() != FaultKind::PauseWorkers => bad(
                        pp,
                        format!(
                            "{name} is a {} fault: only the transactions a pause-workers fault freezes open are looked at for it; use `checkpoint: N` for a checkpoint's",
                            f.kind.name()
                        ),
                    ),
                    Some(f) if f.duration_ms.is_some_and(|d| d <= timing.look_after_ms()) => bad(
                        pp,
                        format!(
                            "{name} lasts {} ms: the broker's view is taken {} into a pause, so the pause must last longer",
                            f.duration_ms.unwrap_or(0),
                            timing.look_after_text()
                        ),
                    ),
                    Some(_) => {}
                }
            }
        }
    }
}

/// A fault's label as the nemesis names it: its name, else `<kind>-<index>`.
fn fault_named<'a>(s: &'a Scenario, name: &str) -> Option<&'a FaultSpec> {
    s.faults
        .iter()
        .enumerate()
        .find(|(i, f)| f.name.clone().unwrap_or_else(|| format!("{}-{i}", f.kind.name())) == name)
        .map(|(_, f)| f)
}

/// `acted_before {fault: A, before: B}`: A is a fault through the proxy (it acts on frames, and
/// its stats say when), B any other fault of the scenario, and no checkpoint.
fn validate_acted_before(s: &Scenario, of: &premise::PremiseOf, pp: Vec<Seg>, bad: &mut impl FnMut(Vec<Seg>, String)) {
    let at = |field: &str| {
        let mut p = pp.clone();
        p.push(key(field));
        p
    };
    if of.checkpoint.is_some() {
        bad(at("checkpoint"), "acted_before names two faults (`fault: A, before: B`), not a checkpoint".into());
    }
    let (Some(a), Some(b)) = (&of.fault, &of.before) else {
        bad(pp, "acted_before needs `fault: A` (a proxy fault) and `before: B` (the fault it must act before)".into());
        return;
    };
    match fault_named(s, a) {
        None => bad(at("fault"), format!("no fault named {a:?}")),
        Some(f) if !f.kind.kind().needs_proxy() => bad(
            at("fault"),
            format!("{a} is a {} fault: only a fault through the proxy says when it acted on a frame", f.kind.name()),
        ),
        Some(_) => {}
    }
    if fault_named(s, b).is_none() {
        bad(at("before"), format!("no fault named {b:?}"));
    } else if a == b {
        bad(at("before"), "a fault cannot act before itself: name another fault".into());
    }
}
