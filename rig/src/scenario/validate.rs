//! Semantic checks: what the types accept but a run could not do, each
//! reported at the field it is about.
use super::fault::does_not_take;
use super::located::{key, render_path, Locs, Seg};
use super::schedule::MAX_SCHEDULE_MS;
use super::validate_expect::{validate_expectation, validate_premises};
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

    // name: it goes into run ids, topic names and transactional ids.
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

    // cluster
    let c = &s.cluster;
    if !matches!(c.brokers, 1 | 3 | 5) {
        bad(vec![key("cluster"), key("brokers")], format!("{}: use 1, 3 or 5 KRaft nodes", c.brokers));
    }
    if let Err(e) = crate::install::parse_versions(&c.kafka) {
        bad(vec![key("cluster"), key("kafka")], e.to_string());
    }
    for (k, v) in &c.broker_config {
        let path = vec![key("cluster"), key("broker_config"), key(k)];
        if let Err(e) = super::broker_config::parse_override(&format!("{k}={v}")) {
            bad(path, e.to_string());
        }
    }
    let max_timeout = match txn_max_timeout_ms(s) {
        Ok(m) => Some(m),
        Err(e) => {
            bad(vec![key("cluster"), key("broker_config"), key("transaction.max.timeout.ms")], e);
            None
        }
    };

    // topic
    let t = &s.topic;
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

    // job
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

    // modes
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

    // flink
    let flink_mode = s.modes.contains(&SinkMode::FlinkKafkasink);
    if let Some(f) = &s.flink {
        if !flink_mode {
            bad(vec![key("flink")], "a flink section, but modes has no flink-kafkasink".into());
        }
        for (path, message) in super::flink::validate(f, file, j) {
            bad(path, message);
        }
    }

    // source
    for (path, message) in super::source::validate(s) {
        bad(path, message);
    }

    // expect
    for (m, e) in &s.expect {
        validate_expectation(s, vec![key("expect"), key(m.name())], *m, e, &mut bad);
    }
    // expect_by: each entry says which runs it is for, in a form that parses
    for (i, w) in s.expect_by.iter().enumerate() {
        let entry = vec![key("expect_by"), Seg::Index(i)];
        let at = |k: &str| {
            let mut p = entry.clone();
            p.push(key(k));
            p
        };
        if w.kafka.is_none() && w.protocol.is_none() {
            bad(
                entry.clone(),
                "name the versions (`kafka: \"<4.0.1\"`) or the protocol (`protocol: v1`) this expectation is for"
                    .into(),
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
            validate_expectation(s, p, *m, e, &mut bad);
        }
    }

    // premise
    for (m, p) in &s.premise {
        validate_premises(s, *m, p, &mut bad);
    }

    // faults
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
        validate_fault(s, locs, i, f, &mut bad);
    }
    if let Some(r) = &s.schedule {
        validate_schedule(s, r, &mut bad);
    }

    // cluster settings that depend on the faults
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
    if c.backend == Backend::External && flink_mode && secured {
        bad(
            vec![key("modes")],
            "flink-kafkasink gets no client security settings (the Flink job is given the bootstrap only): \
             run it against a PLAINTEXT listener, or drop the mode"
                .into(),
        );
    }
    if c.proxy == Some(false) {
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
    out
}

/// The YAML key under which a `when` variant was written (aliases included),
/// so its problems point at the user's text.
fn when_key(locs: &Locs, i: usize, names: &[&str]) -> Vec<Seg> {
    let base = |n: &str| vec![key("faults"), Seg::Index(i), key("when"), key(n)];
    names.iter().map(|n| base(n)).find(|p| locs.has(p)).unwrap_or_else(|| base(names[0]))
}

fn validate_fault(s: &Scenario, locs: &Locs, i: usize, f: &FaultSpec, bad: &mut impl FnMut(Vec<Seg>, String)) {
    let c = &s.cluster;
    let j = &s.job;
    let fp = |field: &str| vec![key("faults"), Seg::Index(i), key(field)];
    let k = f.kind.kind();
    let kind = k.name();

    // A parameter outside the kind's struct cannot be written down (the
    // loader reports it as a type error). What is left to check here: values
    // a struct's types admit but the kind does not, and duration_ms, which
    // every spec has.
    if let Fault::RollingRestart(Rolling { target: Some(t) }) = &f.kind {
        // `target: all` on a rolling restart says what it does anyway.
        if *t != Target::Named(NamedTarget::All) {
            bad(fp("target"), does_not_take(k, "target"));
        }
    }
    // Times a run adds to the clock: bounded like a random schedule's.
    let times = [
        ("duration_ms", f.duration_ms),
        ("delay_ms", f.kind.delay_ms()),
        ("jitter_ms", f.kind.jitter_ms()),
        (
            "when",
            match f.when {
                When::AtMs(t) | When::EveryMs(t) => Some(t),
                _ => None,
            },
        ),
    ];
    for (field, ms) in times {
        if let Some(ms) = ms.filter(|ms| *ms > MAX_SCHEDULE_MS) {
            bad(fp(field), format!("{ms} ms: at most {MAX_SCHEDULE_MS} ms (7 days)"));
        }
    }
    // duration_ms: every spec has the field; the table says who takes it.
    match (f.duration_ms, k.duration()) {
        (Some(_), Need::Refused) => bad(fp("duration_ms"), does_not_take(k, "duration_ms")),
        (None, Need::Required) => bad(fp("duration_ms"), format!("{kind} needs duration_ms (how long it lasts)")),
        (Some(0), _) => bad(fp("duration_ms"), "must be ≥ 1 ms".into()),
        _ => {}
    }

    // trigger
    let when_path = |names: &[&str]| when_key(locs, i, names);
    let check_cp = |bad: &mut dyn FnMut(Vec<Seg>, String), path: Vec<Seg>, n: u64| {
        if n == 0 {
            bad(path, "checkpoints are numbered from 1: must be ≥ 1".into());
        }
    };
    let check_subtask = |bad: &mut dyn FnMut(Vec<Seg>, String), path: Vec<Seg>, st: u32| {
        if st >= j.parallelism {
            bad(path, format!("subtask {st} does not exist (parallelism {})", j.parallelism));
        }
    };
    match f.when {
        When::AtMs(_) => {}
        When::EveryMs(n) => {
            if n < 100 {
                bad(when_path(&["every_ms"]), format!("{n} ms: must be ≥ 100 ms"));
            }
            if let Some(d) = f.duration_ms {
                if d >= n && n >= 100 {
                    bad(
                        fp("duration_ms"),
                        format!("{d} ms lasts as long as the period every_ms ({n} ms): a repeated fault must end before it fires again"),
                    );
                }
            }
        }
        When::CheckpointTriggered(n) => check_cp(bad, when_path(&["checkpoint_triggered"]), n),
        When::CheckpointPersisted(n) => {
            check_cp(bad, when_path(&["checkpoint_persisted", "after_checkpoint_persisted"]), n)
        }
        When::CheckpointNotified(n) => check_cp(bad, when_path(&["checkpoint_notified"]), n),
        When::CommitStarted(n) => check_cp(bad, when_path(&["commit_started"]), n),
        When::CheckpointAcked { checkpoint, subtask } => {
            let mut p = when_path(&["checkpoint_acked"]);
            p.push(key("checkpoint"));
            check_cp(bad, p.clone(), checkpoint);
            p.pop();
            p.push(key("subtask"));
            check_subtask(bad, p, subtask);
        }
        When::TxnOpened { subtask, checkpoint }
        | When::Acknowledged { subtask, checkpoint }
        | When::Committed { subtask, checkpoint } => {
            let name = match f.when {
                When::TxnOpened { .. } => "txn_opened",
                When::Acknowledged { .. } => "acknowledged",
                _ => "committed",
            };
            let mut p = when_path(&[name]);
            if name == "acknowledged" && s.share_source().is_none() {
                bad(
                    p.clone(),
                    "acknowledged is a share-group source's event: add source: {type: share-group} or use another trigger".into(),
                );
            }
            p.push(key("subtask"));
            check_subtask(bad, p.clone(), subtask);
            if let Some(n) = checkpoint {
                p.pop();
                p.push(key("checkpoint"));
                check_cp(bad, p, n);
            }
        }
    }
    match f.times {
        Some(_) if !matches!(f.when, When::EveryMs(_)) => {
            bad(fp("times"), "times only goes with an `every_ms` trigger (other triggers fire once)".into())
        }
        Some(0) => bad(fp("times"), "must be ≥ 1".into()),
        _ => {}
    }
    if f.after_ms.is_some() && matches!(f.when, When::AtMs(_) | When::EveryMs(_)) {
        bad(fp("after_ms"), "after_ms goes with an event trigger; with a time trigger, add it to the time".into())
    }
    if k == FaultKind::CoordinatorCrash && !matches!(f.when, When::CheckpointPersisted(_)) {
        bad(
            fp("when"),
            "coordinator-crash fires between a checkpoint's persist and its notification: use `when: {after_checkpoint_persisted: N}`".into(),
        );
    }

    // target
    let tp = fp("target");
    let subtask_target = match &f.kind {
        Fault::KillWorkers(Workers { target }) | Fault::PauseWorkers(Workers { target }) => {
            Some((target, "acts on workers"))
        }
        Fault::JobOutage(Outage { target }) => Some((target, "acts on workers")),
        Fault::DropNotification(Notification { target, .. })
        | Fault::DeclineCheckpoint(Notification { target, .. })
        | Fault::DelayNotification(NotificationDelay { target, .. }) => Some((target, "acts on subtasks")),
        _ => None,
    };
    if let Some((target, whose)) = subtask_target {
        match target {
            None | Some(Target::Named(NamedTarget::All)) => {}
            Some(Target::Named(NamedTarget::TxnCoordinator)) | Some(Target::Coordinator { .. }) => {
                bad(tp, format!("txn-coordinator is a broker; {kind} {whose}: use all or subtask ids"))
            }
            Some(Target::TxnLogFollower { .. }) => {
                bad(tp, format!("txn-log-follower is a broker; {kind} {whose}: use all or subtask ids"))
            }
            Some(Target::Named(NamedTarget::GroupCoordinator)) => {
                bad(tp, format!("group-coordinator is a broker; {kind} {whose}: use all or subtask ids"))
            }
            Some(Target::Named(NamedTarget::Controller | NamedTarget::Leader)) | Some(Target::Leader { .. }) => {
                bad(tp, format!("controller and leader are brokers; {kind} {whose}: use all or subtask ids"))
            }
            Some(Target::Ids(_)) if k == FaultKind::JobOutage => {
                bad(tp, "job-outage stops every worker: leave target out (or write all)".into())
            }
            // flink-kafkasink's workers: TaskManagers 0..taskmanagers, then the JobManager.
            Some(Target::Ids(ids)) if s.modes.contains(&SinkMode::FlinkKafkasink) && k != FaultKind::JobOutage => {
                let jm = i64::from(s.flink_spec().taskmanagers);
                let hi = if whose == "acts on workers" {
                    jm.max(i64::from(j.parallelism) - 1)
                } else {
                    i64::from(j.parallelism) - 1
                };
                check_ids(bad, &tp, ids, 0, hi, "worker")
            }
            Some(Target::Ids(ids)) => check_ids(bad, &tp, ids, 0, i64::from(j.parallelism) - 1, "subtask"),
        }
    } else {
        match &f.kind {
            Fault::BrokerKill(b) | Fault::BrokerStop(b) | Fault::BrokerRestart(b) | Fault::BrokerPause(b) => {
                check_broker_target(s, &b.target, &tp, bad)
            }
            Fault::NetBlackhole(Blackhole { target: Some(t), .. }) => check_broker_target(s, t, &tp, bad),
            _ => {}
        }
    }

    // network: two sides
    let check_groups = |bad: &mut dyn FnMut(Vec<Seg>, String), field: &str, gs: &[Group]| {
        if gs.is_empty() {
            bad(fp(field), "an empty list of groups".into());
        }
        for (n, g) in gs.iter().enumerate() {
            let mut p = fp(field);
            p.push(Seg::Index(n));
            match *g {
                Group::Worker(w) if w >= j.parallelism => bad(
                    p,
                    format!(
                        "{g}: no such worker (parallelism {}: worker-0..worker-{})",
                        j.parallelism,
                        j.parallelism.saturating_sub(1)
                    ),
                ),
                Group::Broker(b) if b < 1 || b as usize > c.brokers => {
                    bad(p, format!("{g}: no such broker (brokers are broker-1..broker-{})", c.brokers))
                }
                _ if gs[..n].contains(g) => bad(p, format!("{g} is listed twice")),
                _ => {}
            }
        }
    };
    if let Some(gs) = f.kind.from() {
        check_groups(bad, "from", gs);
    }
    if let Some(gs) = f.kind.to() {
        check_groups(bad, "to", gs);
    }
    if let (Some(from), Some(to)) = (f.kind.from(), f.kind.to()) {
        let is_b = |g: &Group| matches!(g, Group::Brokers | Group::Broker(_));
        if !from.iter().chain(to).any(is_b) {
            bad(
                fp("to"),
                "no broker on either side: the proxy sits in front of broker listeners, and workers do not talk to each other".into(),
            );
        } else {
            for g in from {
                let overlap = to.iter().any(|t| {
                    t == g
                        || matches!((g, t), (Group::Workers, Group::Worker(_)) | (Group::Worker(_), Group::Workers))
                        || matches!((g, t), (Group::Brokers, Group::Broker(_)) | (Group::Broker(_), Group::Brokers))
                });
                if overlap {
                    bad(fp("to"), format!("{g} is on both sides: a node cannot be cut off from itself"));
                    break;
                }
            }
        }
    }
    if let Fault::NetBlackhole(b) = &f.kind {
        match (&b.target, &b.to) {
            (None, None) => bad(
                fp("target"),
                "net-blackhole needs target: the broker ids (or roles) to cut off, or to: [broker-N]".into(),
            ),
            (Some(_), Some(_)) => bad(fp("to"), "give target or to, not both".into()),
            (None, Some(to)) => {
                if let Some(g) = to.iter().find(|g| matches!(g, Group::Workers | Group::Worker(_))) {
                    bad(fp("to"), format!("{g}: net-blackhole cuts off brokers; to takes brokers or broker-N"));
                }
            }
            _ => {}
        }
    }

    // delays and probabilities
    match (f.kind.delay_ms(), f.kind.jitter_ms()) {
        (Some(0), _) => bad(fp("delay_ms"), "must be ≥ 1 ms".into()),
        (Some(d), Some(jt)) if jt > d => {
            bad(fp("jitter_ms"), format!("{jt} ms is above delay_ms ({d} ms): a frame cannot be held less than 0 ms"))
        }
        _ => {}
    }
    if let Fault::NetBandwidth(Bandwidth { bytes_per_sec: 0, .. }) = &f.kind {
        bad(fp("bytes_per_sec"), "must be ≥ 1 byte a second (0 would carry nothing: that is net-partition)".into());
    }
    if let Some(p) = f.kind.probability() {
        if !(p > 0.0 && p <= 1.0) {
            bad(fp("probability"), format!("{p}: must be in (0, 1] (0 would never act)"));
        }
    }

    // protocol
    if let Some(a) = f.kind.apis() {
        if a.is_empty() {
            bad(fp("apis"), "an empty list of APIs".into());
        }
        for (n, name) in a.iter().enumerate() {
            let mut p = fp("apis");
            p.push(Seg::Index(n));
            match sinkhole_kafka::api::api_key(name) {
                None => bad(p, unknown_api(name)),
                Some(key_) if a[..n].iter().any(|o| sinkhole_kafka::api::api_key(o) == Some(key_)) => {
                    bad(p, format!("{name} is listed twice"))
                }
                Some(_) => {}
            }
        }
        if let Some(e) = f.kind.error() {
            if let Err(msg) = sinkhole_kafka::errors::error_code(e) {
                bad(fp("error"), msg);
            }
        }
        if f.kind.nth() == Some(0) {
            bad(fp("nth"), "frames are counted from 1: must be ≥ 1".into());
        }
        match f.kind.transactional_id() {
            Some(TidSelector::Subtask { subtask }) if *subtask >= j.parallelism => {
                let mut p = fp("transactional_id");
                p.push(key("subtask"));
                bad(p, format!("subtask {subtask} does not exist (parallelism {})", j.parallelism));
            }
            Some(TidSelector::Literal(t)) if t.is_empty() => {
                bad(fp("transactional_id"), "an empty transactional id".into())
            }
            _ => {}
        }
    }

    // coordinator
    if f.kind.checkpoint() == Some(0) {
        bad(fp("checkpoint"), "checkpoints are numbered from 1: must be ≥ 1".into());
    }
}

/// "Endtxn": not an API; the nearest names help more than the whole list.
fn unknown_api(name: &str) -> String {
    let f: String = name.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    let near: Vec<&str> = sinkhole_kafka::api::api_names()
        .into_iter()
        .filter(|n| {
            let l = n.to_ascii_lowercase();
            f.len() >= 3 && (l.contains(&f) || f.contains(&l))
        })
        .take(4)
        .collect();
    if near.is_empty() {
        format!("{name:?} is not a Kafka API (use Kafka's names: Produce, FindCoordinator, InitProducerId, AddPartitionsToTxn, EndTxn, …)")
    } else {
        format!("{name:?} is not a Kafka API; did you mean {}?", near.join(" or "))
    }
}

/// A broker fault's target: node ids, all, or a role.
fn check_broker_target(s: &Scenario, t: &Target, tp: &[Seg], bad: &mut impl FnMut(Vec<Seg>, String)) {
    let (c, j) = (&s.cluster, &s.job);
    match t {
        Target::Named(NamedTarget::GroupCoordinator) if s.share_source().is_none() => bad(
            tp.to_vec(),
            "group-coordinator is the broker coordinating the share group: add source: {type: share-group}".into(),
        ),
        Target::Named(_) => {}
        Target::Coordinator { txn_coordinator } if *txn_coordinator >= j.parallelism => {
            let mut p = tp.to_vec();
            p.push(key("txn-coordinator"));
            bad(p, format!("txn-coordinator of subtask {txn_coordinator}, but parallelism is {}", j.parallelism))
        }
        Target::Leader { leader } if *leader >= s.topic.partitions => {
            let mut p = tp.to_vec();
            p.push(key("leader"));
            bad(
                p,
                format!(
                    "leader of partition {leader}, but the topic has {} partition(s): 0..={}",
                    s.topic.partitions,
                    s.topic.partitions.saturating_sub(1)
                ),
            )
        }
        Target::TxnLogFollower { txn_log_follower } if *txn_log_follower >= j.parallelism => {
            let mut p = tp.to_vec();
            p.push(key("txn-log-follower"));
            bad(p, format!("txn-log-follower of subtask {txn_log_follower}, but parallelism is {}", j.parallelism))
        }
        // One broker: `__transaction_state` has no follower.
        Target::TxnLogFollower { .. } if c.brokers < 2 => {
            bad(tp.to_vec(), "txn-log-follower needs a replicated __transaction_state: brokers: 3 (or 5)".into())
        }
        Target::Coordinator { .. } | Target::Leader { .. } | Target::TxnLogFollower { .. } => {}
        Target::Ids(ids) => check_ids(bad, tp, ids, 1, c.brokers as i64, "node"),
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

fn check_ids(
    bad: &mut (impl FnMut(Vec<Seg>, String) + ?Sized),
    path: &[Seg],
    ids: &[i64],
    lo: i64,
    hi: i64,
    what: &str,
) {
    if ids.is_empty() {
        bad(path.to_vec(), format!("an empty list of {what} ids"));
    }
    for (k, id) in ids.iter().enumerate() {
        let mut p = path.to_vec();
        p.push(Seg::Index(k));
        if *id < lo || *id > hi {
            let range = if hi < lo { "none".to_string() } else { format!("{lo}..={hi}") };
            bad(p, format!("{what} {id} does not exist (valid: {range})"));
        } else if ids[..k].contains(id) {
            bad(p, format!("{what} {id} is listed twice"));
        }
    }
}
