//! The `shape:` section, checked: a bound no job can meet, or one the cluster or the subject
//! cannot host, is refused at its field when the file is loaded, never drawn and found out
//! mid-run. Split from `validate.rs`, which calls [`validate_shape`] with its own validation of
//! a whole scenario: each end of a numeric bound is a job the loader must accept.
use super::expect_by::Protocol;
use super::located::{key, Seg};
use super::shape::{chooses_protocol, has_v2, Bounds, Problems, Records, Shape, MIN_JOB_INTERVALS};
use super::*;

/// Problems of `s.shape`; `problems` is the loader's validation of a scenario (`field: message`).
/// Each bound on its own first; then, when each is well formed, what they make together; then
/// each end as a whole job.
pub(super) fn validate_shape(s: &Scenario, problems: Problems, bad: &mut impl FnMut(Vec<Seg>, String)) {
    let Some(spec) = &s.shape else { return };
    let mut found: Vec<(&str, String)> = Vec::new();
    for (f, b) in [
        ("parallelism", spec.parallelism.map(wide)),
        ("max_concurrent_checkpoints", spec.max_concurrent_checkpoints.map(wide)),
        ("checkpoint_interval_ms", spec.checkpoint_interval_ms),
        ("records_per_subtask", spec.records_per_subtask),
        ("rate_per_subtask", spec.rate_per_subtask),
    ] {
        found.extend(b.and_then(|b| range_problem(f, b, s)).map(|m| (f, m)));
    }
    if let Some([lo, hi]) = spec.transaction_timeout_ms {
        found.extend(timeout_problem(s, lo, hi).map(|m| ("transaction_timeout_ms", m)));
    }
    found.extend(spec.transactions.as_deref().and_then(|t| transactions_problem(s, t)).map(|m| ("transactions", m)));
    found.extend(spec.naming.as_deref().and_then(|n| naming_problem(s, n)).map(|m| ("naming", m)));
    if found.is_empty() {
        found = together(spec, &Bounds::of(s, problems), s);
    }
    if found.is_empty() {
        found = ends(s, spec, problems);
    }
    for (f, m) in found {
        bad(vec![key("shape"), key(f)], m);
    }
}

fn wide([lo, hi]: [u32; 2]) -> [u64; 2] {
    [u64::from(lo), u64::from(hi)]
}

/// A numeric bound: `[min, max]` in order, and a minimum a job can have.
fn range_problem(field: &str, [lo, hi]: [u64; 2], s: &Scenario) -> Option<String> {
    if lo > hi {
        return Some(format!("[{lo}, {hi}]: the minimum is above the maximum; write [min, max]"));
    }
    match field {
        "parallelism" | "max_concurrent_checkpoints" | "records_per_subtask" if lo == 0 => {
            Some(format!("[{lo}, {hi}]: must be ≥ 1 (as job.{field})"))
        }
        "checkpoint_interval_ms" if lo < 10 => Some(format!("[{lo}, {hi}]: an interval must be ≥ 10 ms")),
        "checkpoint_interval_ms" if hi >= s.job.checkpoint_timeout_ms => Some(format!(
            "[{lo}, {hi}]: {hi} ms is not below job.checkpoint_timeout_ms ({} ms): every checkpoint could expire",
            s.job.checkpoint_timeout_ms
        )),
        "rate_per_subtask" if lo == 0 && hi > 0 => Some(format!(
            "[{lo}, {hi}]: 0 is an unthrottled job, whose length is not known before it runs: use [0, 0] or rates ≥ 1"
        )),
        _ => None,
    }
}

/// `transaction_timeout_ms: [min, max]`: in order, above 0, one the broker accepts.
fn timeout_problem(s: &Scenario, lo: i32, hi: i32) -> Option<String> {
    if lo > hi {
        return Some(format!("[{lo}, {hi}]: the minimum is above the maximum; write [min, max]"));
    }
    if lo <= 0 {
        return Some(format!("[{lo}, {hi}]: a timeout must be > 0 ms"));
    }
    let max = txn_max_timeout_ms(s).ok()?;
    (i64::from(hi) > max).then(|| {
        format!(
            "[{lo}, {hi}]: {hi} ms exceeds the broker's transaction.max.timeout.ms ({max} ms): InitProducerId would fail \
             with INVALID_TRANSACTION_TIMEOUT; lower it or raise cluster.broker_config[transaction.max.timeout.ms]"
        )
    })
}

/// `transactions:` choices the subject and the cluster have.
fn transactions_problem(s: &Scenario, t: &[Protocol]) -> Option<String> {
    if t.is_empty() {
        return Some("name v1, v2 or both".into());
    }
    if let Some((i, p)) = t.iter().enumerate().find(|(i, p)| t[..*i].contains(p)) {
        return Some(format!("{p:?} is listed twice (choice {})", i + 1));
    }
    if !chooses_protocol(s) {
        let modes: Vec<&str> = s.modes.iter().map(|m| m.name()).collect();
        return Some(format!(
            "none of the modes ({}) lets the rig choose its transaction protocol: only the rig's producer does \
             (legacy, twopc-inject, kip939, plain-txn and their mutants); leave transactions out",
            modes.join(", ")
        ));
    }
    (t.contains(&Protocol::V2) && !has_v2(s))
        .then(|| format!("v2: Kafka {} has no Transactions V2 (it is finalized from 4.0.0): use [v1]", s.cluster.kafka))
}

/// `naming:` choices of the Flink subject that its connector has.
fn naming_problem(s: &Scenario, n: &[flink::Naming]) -> Option<String> {
    if !s.modes.contains(&SinkMode::FlinkKafkasink) {
        return Some(
            "naming is the flink-kafkasink mode's transactional-id naming, and modes has no flink-kafkasink: leave it out"
                .into(),
        );
    }
    if n.is_empty() {
        return Some("name INCREMENTING, POOLING or both".into());
    }
    if let Some((_, x)) = n.iter().enumerate().find(|(i, x)| n[..*i].contains(x)) {
        return Some(format!("{} is listed twice", x.name()));
    }
    let connector = s.flink_spec().connector();
    n.iter().find_map(|x| sinkhole_install::flink::check_naming(&connector, x.name()).err())
}

/// What the bounds make together: a timeout above the interval and, for a one-phase sink,
/// above the floor; a shortest job with room for faults.
fn together(spec: &ShapeSpec, b: &Bounds, s: &Scenario) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let [_, ihi] = b.checkpoint_interval_ms;
    let [_, chi] = b.max_concurrent_checkpoints;
    if let Some([lo, hi]) = spec.transaction_timeout_ms {
        if u64::try_from(lo).unwrap_or(0) <= ihi {
            out.push((
                "transaction_timeout_ms",
                format!(
                    "[{lo}, {hi}]: {lo} ms is not above the longest checkpoint interval ({ihi} ms): a transaction \
                     would time out before the checkpoint that commits it"
                ),
            ));
        } else if let Some(f) = b.floor.filter(|f| f.one_phase && u64::try_from(hi).unwrap_or(0) < f.ms(ihi, chi)) {
            let enable_2pc = |m: &&SinkMode| matches!(m.base(), SinkMode::TwopcInject | SinkMode::Kip939);
            let one_phase: Vec<&str> = s.modes.iter().filter(|m| !enable_2pc(m)).map(|m| m.name()).collect();
            out.push((
                "transaction_timeout_ms",
                format!(
                    "[{lo}, {hi}]: a one-phase sink among the modes ({}) must outlive the longest stall exploration's \
                     faults can cause at the longest interval and concurrency: {}; raise the maximum to at least that",
                    one_phase.join(", "),
                    f.text(ihi, chi)
                ),
            ));
        }
    }
    // Records named, at the highest rate: a default (records for a length) starts long enough.
    if let (Some(_), Records::Between([lo, _])) = (spec.records_per_subtask, b.records) {
        let [_, rhi] = b.rate_per_subtask;
        if let Some(ms) = lo.saturating_mul(1000).checked_div(rhi).filter(|ms| *ms < MIN_JOB_INTERVALS * ihi) {
            out.push((
                "records_per_subtask",
                format!(
                    "the shortest job ({lo} records at {rhi}/s, {ms} ms) holds fewer than {MIN_JOB_INTERVALS} \
                     checkpoints at the longest interval ({ihi} ms): no room for faults; raise the records or lower \
                     the rate"
                ),
            ));
        }
    }
    out
}

/// Each end of each numeric bound, as the whole job the loader must accept (the other fields
/// the scenario's own): a problem it adds is the bound's.
fn ends(s: &Scenario, spec: &ShapeSpec, problems: Problems) -> Vec<(&'static str, String)> {
    let mut base = s.clone();
    base.faults.clear();
    base.shape = None;
    let before = problems(&base);
    let own = Shape::of(&base);
    let mut out = Vec::new();
    let ends: [(&'static str, Option<[u64; 2]>); 6] = [
        ("parallelism", spec.parallelism.map(wide)),
        ("max_concurrent_checkpoints", spec.max_concurrent_checkpoints.map(wide)),
        ("checkpoint_interval_ms", spec.checkpoint_interval_ms),
        ("rate_per_subtask", spec.rate_per_subtask),
        ("records_per_subtask", spec.records_per_subtask),
        ("transaction_timeout_ms", spec.transaction_timeout_ms.map(|[a, b]| [a.max(0) as u64, b.max(0) as u64])),
    ];
    for (field, b) in ends {
        let Some([lo, hi]) = b else { continue };
        for v in [lo, hi] {
            let mut one = own;
            match field {
                "parallelism" => one.parallelism = v as u32,
                "max_concurrent_checkpoints" => one.max_concurrent_checkpoints = v as u32,
                "checkpoint_interval_ms" => one.checkpoint_interval_ms = v,
                "rate_per_subtask" => one.rate_per_subtask = v,
                "records_per_subtask" => one.records_per_subtask = v,
                _ => one.transaction_timeout_ms = v as i32,
            }
            let new: Vec<String> = problems(&one.apply(&base)).into_iter().filter(|p| !before.contains(p)).collect();
            if let Some(p) = new.first() {
                out.push((field, format!("[{lo}, {hi}]: a job with {field} {v} is refused: {p}")));
                break;
            }
        }
    }
    out
}
