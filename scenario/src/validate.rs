//! Semantic checks: what the types accept but a run could not do, each
//! reported at the field it is about.
use super::located::{key, render_path, Locs, Seg};
use super::schedule::MAX_SCHEDULE_MS;
use super::validate_expect::{validate_expectation, validate_premises};
use super::validate_fault::validate_fault;
use super::*;

/// More subtasks than this is not a test a 2-core machine runs.
const MAX_PARALLELISM: u32 = 1_024;
/// The checker keeps a bit per expected record: 10^9 a subtask is 125 MB each.
const MAX_RECORDS_PER_SUBTASK: u64 = 1_000_000_000;

pub(super) fn validate(s: &Scenario, locs: &Locs, file: &str) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut bad = |path: Vec<Seg>, message: String| {
        let (line, column) = locs.at(&path);
        out.push(Problem { file: file.to_string(), line, column, field: render_path(&path), message });
    };
    // Section by section, in the order of a scenario file: the first problem
    // reported is the first of these to find one.
    validate_name(s, &mut bad);
    let max_timeout = validate_cluster(s, &mut bad);
    validate_topic(s, &mut bad);
    validate_job(s, max_timeout, &mut bad);
    validate_modes(s, &mut bad);
    super::readers::validate(s, &mut bad);
    validate_flink(s, file, &mut bad);
    for (path, message) in super::source::validate(s) {
        bad(path, message);
    }
    validate_expect(s, &mut bad);
    for (m, p) in &s.premise {
        validate_premises(s, *m, p, &mut bad);
    }
    validate_faults(s, locs, &mut bad);
    super::validate_shape::validate_shape(s, &job_problems, &mut bad);
    validate_backend(s, &mut bad);
    out
}

/// `s`'s problems as `field: message`, without their places: what `shape:` checks a drawn job
/// against (a job it would draw must load as the scenario's own does).
pub(super) fn job_problems(s: &Scenario) -> Vec<String> {
    validate(s, &Locs::default(), "").into_iter().map(|p| format!("{}: {}", p.field, p.message)).collect()
}

/// name: it goes into run ids, topic names and transactional ids.
fn validate_name(s: &Scenario, bad: &mut impl FnMut(Vec<Seg>, String)) {
    if s.name.is_empty()
        || s.name.len() > 100
        || !s.name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        bad(
            vec![key("name")],
            format!(
                "{:?}: use 1 to 100 letters, digits, '.', '_' or '-' (it becomes part of topic names and transactional ids)",
                s.name
            ),
        );
    }
}

/// cluster: the node count, the versions, the broker settings; returns the
/// broker's transaction.max.timeout.ms when it could be read.
fn validate_cluster(s: &Scenario, bad: &mut impl FnMut(Vec<Seg>, String)) -> Option<i64> {
    let c = &s.cluster;
    if !matches!(c.brokers, 1 | 3 | 5) {
        bad(vec![key("cluster"), key("brokers")], format!("{}: use 1, 3 or 5 KRaft nodes", c.brokers));
    }
    if let Err(e) = sinkhole_install::parse_versions(&c.kafka) {
        bad(vec![key("cluster"), key("kafka")], e.to_string());
    }
    for (k, v) in &c.broker_config {
        let path = vec![key("cluster"), key("broker_config"), key(k)];
        if let Err(e) = super::broker_config::parse_override(&format!("{k}={v}")) {
            bad(path, e.to_string());
        }
    }
    match txn_max_timeout_ms(s) {
        Ok(m) => Some(m),
        Err(e) => {
            bad(vec![key("cluster"), key("broker_config"), key("transaction.max.timeout.ms")], e);
            None
        }
    }
}

/// topic: partitions, and replication the cluster can hold.
fn validate_topic(s: &Scenario, bad: &mut impl FnMut(Vec<Seg>, String)) {
    let (t, c) = (&s.topic, &s.cluster);
    if t.partitions < 1 {
        bad(vec![key("topic"), key("partitions")], "must be ≥ 1".into());
    }
    if t.replication_factor < 1 || t.replication_factor > c.brokers {
        bad(
            vec![key("topic"), key("replication_factor")],
            format!("{} must be between 1 and the number of brokers ({})", t.replication_factor, c.brokers),
        );
    }
    if let Some(m) = t.min_insync_replicas {
        if m < 1 || m > t.replication_factor {
            bad(
                vec![key("topic"), key("min_insync_replicas")],
                format!("{m} must be between 1 and replication_factor ({})", t.replication_factor),
            );
        }
    }
}

/// job: sizes and times a run can keep, and a transaction timeout the broker accepts.
fn validate_job(s: &Scenario, max_timeout: Option<i64>, bad: &mut impl FnMut(Vec<Seg>, String)) {
    let j = &s.job;
    let jp = |f: &str| vec![key("job"), key(f)];
    if j.parallelism < 1 {
        bad(jp("parallelism"), "must be ≥ 1".into());
    }
    if j.records_per_subtask < 1 {
        bad(jp("records_per_subtask"), "must be ≥ 1".into());
    }
    // Bounds that keep a run finite and its checker's memory sized by the
    // job: the checker keeps a bit per expected record.
    if j.parallelism > MAX_PARALLELISM {
        bad(jp("parallelism"), format!("{}: at most {MAX_PARALLELISM} subtasks", j.parallelism));
    }
    if j.records_per_subtask > MAX_RECORDS_PER_SUBTASK {
        bad(jp("records_per_subtask"), format!("{}: at most {MAX_RECORDS_PER_SUBTASK}", j.records_per_subtask));
    }
    for (field, ms) in [
        ("checkpoint_interval_ms", j.checkpoint_interval_ms),
        ("checkpoint_timeout_ms", j.checkpoint_timeout_ms),
        ("restart_delay_ms", j.restart_delay_ms),
        ("heartbeat_timeout_ms", j.heartbeat_timeout_ms),
        ("linger_ms", j.linger_ms),
    ] {
        if ms > MAX_SCHEDULE_MS {
            bad(jp(field), format!("{ms} ms: at most {MAX_SCHEDULE_MS} ms (7 days)"));
        }
    }
    if j.checkpoint_interval_ms < 10 {
        bad(jp("checkpoint_interval_ms"), format!("{} ms: must be ≥ 10 ms", j.checkpoint_interval_ms));
    }
    if j.checkpoint_timeout_ms < 1 {
        bad(jp("checkpoint_timeout_ms"), "must be ≥ 1 ms".into());
    }
    if j.max_concurrent_checkpoints < 1 {
        bad(jp("max_concurrent_checkpoints"), "must be ≥ 1".into());
    }
    if j.heartbeat_timeout_ms < 1 {
        bad(jp("heartbeat_timeout_ms"), "must be ≥ 1 ms".into());
    }
    if j.batch_size < 1 {
        bad(jp("batch_size"), "must be ≥ 1 byte".into());
    }
    if j.transaction_timeout_ms <= 0 {
        bad(jp("transaction_timeout_ms"), format!("{} ms: must be > 0", j.transaction_timeout_ms));
    } else if let Some(max) = max_timeout {
        if i64::from(j.transaction_timeout_ms) > max {
            bad(
                jp("transaction_timeout_ms"),
                format!(
                    "{} ms exceeds the broker's transaction.max.timeout.ms ({max} ms): InitProducerId would fail with INVALID_TRANSACTION_TIMEOUT; lower it or raise cluster.broker_config[transaction.max.timeout.ms]",
                    j.transaction_timeout_ms
                ),
            );
        }
    }
}

/// modes: at least one, each once; a lead mode among them, side by side.
fn validate_modes(s: &Scenario, bad: &mut impl FnMut(Vec<Seg>, String)) {
    if s.modes.is_empty() {
        bad(vec![key("modes")], "name at least one mode".into());
    }
    for (i, m) in s.modes.iter().enumerate() {
        if s.modes[..i].contains(m) {
            bad(vec![key("modes"), Seg::Index(i)], format!("{m} is listed twice"));
        }
    }

    if let Some(l) = s.lead {
        if !s.modes.contains(&l) {
            bad(
                vec![key("lead")],
                format!("{l} is not in modes [{}]", s.modes.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")),
            );
        } else if s.sequential {
            bad(vec![key("lead")], "a lead mode, but sequential: true runs one mode at a time".into());
        }
    }
}

/// flink: only with the flink-kafkasink mode, and its own checks.
fn validate_flink(s: &Scenario, file: &str, bad: &mut impl FnMut(Vec<Seg>, String)) {
    if let Some(f) = &s.flink {
        if !s.modes.contains(&SinkMode::FlinkKafkasink) {
            bad(vec![key("flink")], "a flink section, but modes has no flink-kafkasink".into());
        }
        for (path, message) in super::flink::validate(f, file, &s.job) {
            bad(path, message);
        }
    }
}

/// expect, then expect_by: each entry says which runs it is for, in a form that parses.
fn validate_expect(s: &Scenario, bad: &mut impl FnMut(Vec<Seg>, String)) {
    for (m, e) in &s.expect {
        validate_expectation(s, vec![key("expect"), key(m.name())], *m, e, bad);
    }
    for (i, w) in s.expect_by.iter().enumerate() {
        validate_expect_by(s, i, w, bad);
    }
}

/// `expect_by[i]`: the runs it is for, then its expectations.
fn validate_expect_by(s: &Scenario, i: usize, w: &expect_by::ExpectWhen, bad: &mut impl FnMut(Vec<Seg>, String)) {
    let entry = vec![key("expect_by"), Seg::Index(i)];
    let at = |k: &str| {
        let mut p = entry.clone();
        p.push(key(k));
        p
    };
    if w.kafka.is_none() && w.protocol.is_none() {
        bad(
            entry.clone(),
            "name the versions (`kafka: \"<4.0.1\"`) or the protocol (`protocol: v1`) this expectation is for".into(),
        );
    }
    if let Some(r) = &w.kafka {
        if let Err(e) = expect_by::check_req(r) {
            bad(at("kafka"), e);
        }
    }
    if w.expect.is_empty() {
        bad(at("expect"), "name at least one mode's expectation".into());
    }
    for (m, e) in &w.expect {
        let mut p = at("expect");
        p.push(key(m.name()));
        validate_expectation(s, p, *m, e, bad);
    }
}

/// faults: unique names, each fault's own checks; then the random schedule.
fn validate_faults(s: &Scenario, locs: &Locs, bad: &mut impl FnMut(Vec<Seg>, String)) {
    let mut names: Vec<String> = Vec::new();
    for (i, f) in s.faults.iter().enumerate() {
        if let Some(n) = &f.name {
            if names.contains(n) {
                bad(
                    vec![key("faults"), Seg::Index(i), key("name")],
                    format!("{n:?} names another fault too; fault names must be unique"),
                );
            }
            names.push(n.clone());
        }
        validate_fault(s, locs, i, f, bad);
    }
    if let Some(r) = &s.schedule {
        validate_schedule(s, r, bad);
    }
}

/// Cluster settings that depend on the backend, the modes and the faults.
fn validate_backend(s: &Scenario, bad: &mut impl FnMut(Vec<Seg>, String)) {
    let c = &s.cluster;
    if c.image.is_some() && c.backend != Backend::Containers {
        bad(
            vec![key("cluster"), key("image")],
            "an image is only used by the containers backend: add `backend: containers` or remove image".into(),
        );
    }
    if let Some(e) = &c.external {
        if c.backend != Backend::External {
            bad(
                vec![key("cluster"), key("external")],
                "an external section is only used by the external backend: add `backend: external` or remove it".into(),
            );
        }
        for (path, message) in super::external::validate(e, c.brokers) {
            bad(path, message);
        }
    }
    if c.backend == Backend::External && c.authorizer.is_some() {
        bad(
            vec![key("cluster"), key("authorizer")],
            "the rig cannot set up an authorizer on a cluster it did not start: give the sink's credentials in cluster.external.security".into(),
        );
    }
    // The Flink job's KafkaSink is given the bootstrap only (subjects/flink's JobArgs): on a TLS
    // or SASL listener it would speak PLAINTEXT and never get in. Refused before anything starts.
    let secured = c
        .external
        .as_ref()
        .and_then(|e| e.security.as_ref())
        .is_some_and(|sec| sec.protocol.tls() || sec.protocol.sasl());
    if c.backend == Backend::External && s.modes.contains(&SinkMode::FlinkKafkasink) && secured {
        bad(
            vec![key("modes")],
            "flink-kafkasink gets no client security settings (the Flink job is given the bootstrap only): \
             run it against a PLAINTEXT listener, or drop the mode"
                .into(),
        );
    }
    if c.proxy == Some(false) {
        validate_proxy_off(s, bad);
    }
}

/// `proxy: false`: no fault that only the proxy can inject.
fn validate_proxy_off(s: &Scenario, bad: &mut impl FnMut(Vec<Seg>, String)) {
    for (i, f) in s.faults.iter().enumerate() {
        let k = f.kind.kind();
        if k.needs_proxy() {
            bad(
                vec![key("cluster"), key("proxy")],
                format!(
                    "proxy: false, but faults[{i}] ({}) is a {} fault, which only the proxy can inject: remove `proxy: false`",
                    f.name.as_deref().unwrap_or(k.name()),
                    k.family().name()
                ),
            );
        }
    }
}

fn validate_schedule(s: &Scenario, r: &RandomSchedule, bad: &mut impl FnMut(Vec<Seg>, String)) {
    use super::schedule::{most_faults, MAX_GENERATED};
    let sp = |f: &str| vec![key("schedule"), key(f)];
    // Times beyond a week of job time are mistakes, and near u64::MAX they
    // would overflow the generator's arithmetic.
    let too_far = |v: u64| {
        format!("{v} ms is beyond the longest schedule the rig draws ({MAX_SCHEDULE_MS} ms, 7 days of job time)")
    };
    let mut far = false;
    for (field, v) in [("start_ms", r.start_ms), ("end_ms", r.end_ms)] {
        if v > MAX_SCHEDULE_MS {
            bad(sp(field), too_far(v));
            far = true;
        }
    }
    for (field, pair) in [("quiet_ms", r.quiet_ms), ("duration_ms", r.duration_ms)] {
        if let Some(v) = pair.into_iter().find(|v| *v > MAX_SCHEDULE_MS) {
            bad(sp(field), too_far(v));
            far = true;
        }
    }
    if !far && most_faults(r) > MAX_GENERATED as u64 {
        bad(
            sp("end_ms"),
            format!(
                "[{}, {}] ms with quiet_ms ≥ {} and duration_ms ≥ {} could draw {} faults, more than the {MAX_GENERATED} a schedule may hold: lengthen quiet_ms or duration_ms, or shorten the window",
                r.start_ms,
                r.end_ms,
                r.quiet_ms[0].min(r.quiet_ms[1]),
                r.duration_ms[0].min(r.duration_ms[1]),
                most_faults(r)
            ),
        );
    }
    if r.end_ms <= r.start_ms {
        bad(sp("end_ms"), format!("{} ms: must be after start_ms ({} ms)", r.end_ms, r.start_ms));
    }
    for (field, [lo, hi]) in [("quiet_ms", r.quiet_ms), ("duration_ms", r.duration_ms)] {
        if lo > hi {
            bad(sp(field), format!("[{lo}, {hi}]: the minimum is above the maximum; write [min, max]"));
        } else if field == "duration_ms" && lo == 0 {
            bad(sp(field), "[0, …]: a fault lasts at least 1 ms".into());
        }
    }
    // (`all` leaves the proxy's families out instead: `schedule::families`.)
    if let Some(fam) = r.mix.family().filter(|f| f.needs_proxy() && s.cluster.proxy == Some(false)) {
        bad(
            sp("mix"),
            format!("{} faults need the proxy, but cluster.proxy is false: remove `proxy: false`", fam.name()),
        );
    }
    // With a rate, the job cannot end before records / rate: a schedule
    // starting later could never fire anything.
    if let Some(job_ms) = s.job.records_per_subtask.saturating_mul(1000).checked_div(s.job.rate_per_subtask) {
        if r.start_ms >= job_ms && r.end_ms > r.start_ms {
            bad(
                sp("start_ms"),
                format!(
                    "{} ms: the job produces its records in about {job_ms} ms ({} records at {}/s), so no fault would fire",
                    r.start_ms, s.job.records_per_subtask, s.job.rate_per_subtask
                ),
            );
        }
    }
}
