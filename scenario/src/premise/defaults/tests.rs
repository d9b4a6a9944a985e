//! The default rules, one by one, and the library: every scenario resolves to premises a
//! replay reads back the same.
use super::*;
use crate::from_str;

/// A 1-broker scenario with `modes`, `expect` lines and `faults` items; abort scan 500 ms, so the
/// rig's look at a pause is 5000 + 500 + 1000 ms in.
fn scenario(modes: &str, expect: &str, faults: &str, extra: &str) -> Scenario {
    let text = scenario_text(modes, expect, faults, extra);
    from_str(&text, "t.yaml").unwrap_or_else(|e| panic!("{}", e.render()))
}

fn scenario_text(modes: &str, expect: &str, faults: &str, extra: &str) -> String {
    format!(
        "name: t\ncluster: {{brokers: 1, broker_config: {{transaction.abort.timed.out.transaction.cleanup.interval.ms: 500}}}}\n\
         topic: {{partitions: 2}}\n\
         job: {{parallelism: 2, records_per_subtask: 100, checkpoint_interval_ms: 1000, transaction_timeout_ms: 5000, restart_delay_ms: 200}}\n\
         modes: [{modes}]\nfaults:\n{faults}\nexpect:\n{expect}\n{extra}"
    )
}

fn premises_of(s: &Scenario, m: SinkMode) -> Vec<String> {
    for_mode(s, m).premises.list().iter().map(|p| p.to_string()).collect()
}

const OUTAGE: &str = "  - {kind: job-outage, when: {after_checkpoint_persisted: 3}, duration_ms: 12000}";

#[test]
fn an_outage_past_the_timeout_gives_timeout_abort_to_legacy_and_outlives_timeout_to_enable2pc() {
    let s = scenario(
        "legacy, twopc-inject, kip939, at-least-once",
        "  legacy: {lost: \">0\"}\n  twopc-inject: clean\n  kip939: clean\n  at-least-once: {duplicated: \">0\"}",
        OUTAGE,
        "",
    );
    assert_eq!(premises_of(&s, SinkMode::Legacy), ["timeout_abort {checkpoint: 3}"]);
    assert_eq!(premises_of(&s, SinkMode::TwopcInject), ["outlives_timeout {checkpoint: 3}"]);
    assert_eq!(premises_of(&s, SinkMode::Kip939), ["outlives_timeout {checkpoint: 3}"]);
    assert!(premises_of(&s, SinkMode::AtLeastOnce).is_empty());
    let why = &for_mode(&s, SinkMode::Legacy).why[0].why;
    assert_eq!(
        why,
        "job-outage-0 keeps the job down for 12000 ms, past the transaction timeout (5000 ms), and legacy cannot \
         take back a transaction the broker aborted (no Enable2Pc): its expectation `lost >0` rests on the broker \
         aborting checkpoint 3's transactions by their timeout"
    );
    // A mutant rests on what its base rests on.
    for (m, base) in [
        (SinkMode::Mutant(sinkhole_model::Mutant::RestoreOffByOne), SinkMode::Legacy),
        (SinkMode::Mutant(sinkhole_model::Mutant::Drop2pcFlag), SinkMode::TwopcInject),
    ] {
        let mut s = s.clone();
        s.modes.push(m);
        s.expect.insert(m, s.expect[&base].clone());
        assert_eq!(premises_of(&s, m), premises_of(&s, base), "{m}");
    }
}

#[test]
fn resolve_writes_the_defaults_and_a_replay_reads_the_same_ones() {
    let mut s = scenario("legacy, twopc-inject", "  legacy: {lost: \">0\"}\n  twopc-inject: clean", OUTAGE, "");
    let told = resolve(&mut s);
    assert_eq!(told.iter().map(|m| m.source).collect::<Vec<_>>(), [Source::Defaults, Source::Defaults]);
    assert_eq!(s.premise[&SinkMode::Legacy].timeout_abort.as_ref().and_then(|o| o.checkpoint), Some(3));
    // Written out and read back (the run's scenario.yaml): the same premises, now the scenario's own.
    let back = from_str(&serde_saphyr::to_string(&s).unwrap(), "resolved.yaml").unwrap();
    assert_eq!(back, s);
    let again = explain(&back);
    assert_eq!(again.iter().map(|m| m.source).collect::<Vec<_>>(), [Source::Scenario, Source::Scenario]);
    let mut twice = back.clone();
    resolve(&mut twice);
    assert_eq!(twice, back);
}

#[test]
fn a_short_fault_or_an_expectation_not_on_the_counts_gives_none() {
    let short = "  - {kind: job-outage, when: {after_checkpoint_persisted: 3}, duration_ms: 2000}";
    let s = scenario("legacy", "  legacy: clean", short, "");
    assert!(premises_of(&s, SinkMode::Legacy).is_empty());
    let e = explain(&s);
    assert_eq!(e[0].source, Source::None);
    assert!(e[0].notes[0].contains("judged on the counts alone"), "{:?}", e[0].notes);
    let s = scenario("legacy", "  legacy: job-failed", OUTAGE, "");
    assert!(premises_of(&s, SinkMode::Legacy).is_empty());
    assert!(explain(&s)[0].notes[0].contains("not on the counts"));
    let s = scenario("legacy", "  legacy: {}", OUTAGE, "");
    assert!(premises_of(&s, SinkMode::Legacy).is_empty(), "no conditions, nothing rests on anything");
}

#[test]
fn a_pause_past_the_look_is_its_own_premise_a_shorter_one_names_its_checkpoint_or_nothing() {
    // The look comes 6500 ms into a pause: 8000 ms is past it.
    let long = "  - {name: freeze, kind: pause-workers, target: [0], when: {at_ms: 3000}, duration_ms: 8000}";
    let s = scenario("legacy, kip939", "  legacy: {duplicated: 0}\n  kip939: clean", long, "");
    assert_eq!(premises_of(&s, SinkMode::Legacy), ["timeout_abort {fault: freeze}"]);
    assert_eq!(premises_of(&s, SinkMode::Kip939), ["outlives_timeout {fault: freeze}"]);
    // Past the timeout but not past the look: the checkpoint its trigger names...
    let mid = "  - {kind: pause-workers, target: all, when: {checkpoint_persisted: 4}, duration_ms: 6000}";
    let s = scenario("legacy", "  legacy: {lost: \">0\"}", mid, "");
    assert_eq!(premises_of(&s, SinkMode::Legacy), ["timeout_abort {checkpoint: 4}"]);
    // ...and a wall-clock trigger names none: no premise, and the explanation says why.
    let wall = "  - {kind: pause-workers, target: all, when: {at_ms: 3000}, duration_ms: 6000}";
    let s = scenario("legacy", "  legacy: {lost: \">0\"}", wall, "");
    let d = for_mode(&s, SinkMode::Legacy);
    assert!(d.premises.is_empty());
    assert!(
        d.notes[0].starts_with("pause-workers-0 freezes workers for 6000 ms, past the transaction timeout (5000 ms), but its trigger (at 3000 ms) names no pre-committed checkpoint and it ends before the rig's look (6500 ms"),
        "{:?}",
        d.notes
    );
}

#[test]
fn a_kill_rests_on_the_timeout_when_the_restart_delay_outlasts_it() {
    let kill = "  - {kind: kill-workers, target: all, when: {checkpoint_notified: 2}}";
    let s = scenario("legacy", "  legacy: {lost: \">0\"}", kill, "");
    assert!(premises_of(&s, SinkMode::Legacy).is_empty(), "restart_delay_ms 200 is under the timeout");
    let mut slow = s.clone();
    slow.job.restart_delay_ms = 9_000;
    assert_eq!(premises_of(&slow, SinkMode::Legacy), ["timeout_abort {checkpoint: 2}"]);
    // A trigger before the checkpoint is pre-committed names nothing pending.
    slow.faults[0].when = When::CheckpointTriggered(2);
    assert!(premises_of(&slow, SinkMode::Legacy).is_empty());
}

#[test]
fn an_own_entry_replaces_the_defaults_and_an_empty_one_turns_them_off() {
    let own = "premise:\n  legacy: {timeout_abort: {checkpoint: 2}}\n  twopc-inject: {}\n";
    let mut s = scenario("legacy, twopc-inject", "  legacy: {lost: \">0\"}\n  twopc-inject: clean", OUTAGE, own);
    let told = resolve(&mut s);
    assert_eq!(told[0].source, Source::Scenario);
    assert_eq!(told[0].premises[0].premise, "timeout_abort {checkpoint: 2}");
    assert_eq!(told[1].source, Source::OptedOut);
    assert!(told[1].premises.is_empty());
    assert_eq!(told[1].notes[0], "`premise: {twopc-inject: {}}`: none, not even the defaults");
    assert!(
        told[1].notes[1].starts_with("the default would be outlives_timeout {checkpoint: 3}"),
        "{:?}",
        told[1].notes
    );
    assert!(s.premise[&SinkMode::TwopcInject].is_empty(), "opted out stays out");
    // The empty entry survives the resolved scenario.yaml, so a replay has none either.
    let back = from_str(&serde_saphyr::to_string(&s).unwrap(), "resolved.yaml").unwrap();
    assert_eq!(back.premise.get(&SinkMode::TwopcInject), Some(&Premises::default()));
}

#[test]
fn the_flink_subject_gets_no_timeout_premise_and_says_why() {
    let s = scenario("legacy", "  legacy: {lost: \">0\"}", OUTAGE, "");
    let mut f = s.clone();
    f.modes = vec![SinkMode::FlinkKafkasink];
    f.expect = [(SinkMode::FlinkKafkasink, s.expect[&SinkMode::Legacy].clone())].into();
    let d = for_mode(&f, SinkMode::FlinkKafkasink);
    assert!(d.premises.is_empty());
    assert!(d.notes[0].contains("no look at the Flink subject's transactions"), "{:?}", d.notes);
}

fn share(expect: &str, faults: &str) -> Scenario {
    let text = format!(
        "name: s\ncluster: {{brokers: 1, kafka: 4.4.0}}\ntopic: {{partitions: 2}}\n\
         job: {{parallelism: 2, records_per_subtask: 100, checkpoint_interval_ms: 1000, transaction_timeout_ms: 60000}}\n\
         source: {{type: share-group, lock_ms: 2000, delivery_limit: 2}}\n\
         modes: [legacy, twopc-inject]\nfaults:\n{faults}\nexpect:\n{expect}\n"
    );
    from_str(&text, "s.yaml").unwrap_or_else(|e| panic!("{}", e.render()))
}

#[test]
fn a_share_group_source_rests_archived_on_the_delivery_limit_and_duplicates_on_a_redelivery() {
    let pause = "  - {name: freeze-0, kind: pause-workers, target: [0], when: {at_ms: 3000}, duration_ms: 1500}";
    let s = share(
        "  legacy: {lost: 0, duplicated: \">0\", archived: \">0\"}\n  twopc-inject: {lost: 0, redelivered: \">=1\"}",
        pause,
    );
    assert_eq!(premises_of(&s, SinkMode::Legacy), ["delivery_limit", "redelivery"]);
    assert_eq!(premises_of(&s, SinkMode::TwopcInject), ["redelivery"]);
    let why = &for_mode(&s, SinkMode::Legacy).why[0].why;
    assert!(
        why.starts_with("`archived >0` counts records the share group archived at its delivery limit (2)"),
        "{why}"
    );
    let s = share("  legacy: {lost: 0}\n  twopc-inject: {archived: 0}", pause);
    assert!(premises_of(&s, SinkMode::Legacy).is_empty() && premises_of(&s, SinkMode::TwopcInject).is_empty());
    // Written by hand, they are validated like the others: only with a share-group source.
    let mut y = serde_saphyr::to_string(&s).unwrap();
    y.push_str("premise:\n  legacy: {delivery_limit: true}\n");
    assert!(from_str(&y, "s.yaml").is_ok());
    let plain = scenario_text("legacy", "  legacy: clean", OUTAGE, "premise:\n  legacy: {redelivery: true}\n");
    let e = from_str(&plain, "t.yaml").unwrap_err();
    assert_eq!(e.problems().len(), 1, "{}", e.render());
    assert_eq!(e.problems()[0].field, "premise.legacy.redelivery");
    assert!(e.problems()[0].message.contains("no share-group source"), "{}", e.render());
}

#[test]
fn every_library_scenario_resolves_to_premises_a_replay_reads_back() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let mut s = crate::load(&path).unwrap_or_else(|e| panic!("{}", e.render()));
        crate::expect_by::resolve(&mut s);
        let r = crate::schedule::resolve(&s, 7);
        s.faults = r.faults;
        s.schedule = None;
        let told = resolve(&mut s);
        assert_eq!(told.len(), s.modes.len());
        let back = from_str(&serde_saphyr::to_string(&s).unwrap(), "resolved.yaml")
            .unwrap_or_else(|e| panic!("{}: {}", path.display(), e.render()));
        assert_eq!(back.premise, s.premise, "{}", path.display());
        seen += 1;
    }
    assert!(seen > 30, "{seen} scenarios");
}

#[test]
fn the_library_gets_the_premises_its_expectations_rest_on() {
    let load = |name: &str| {
        let mut s = crate::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(name))
            .unwrap_or_else(|e| panic!("{}", e.render()));
        crate::expect_by::resolve(&mut s);
        s
    };
    // The premises the library writes by hand (the Flink subject's aside) are exactly the defaults.
    for name in ["flip319-long-outage.yaml", "kafka-6119.yaml", "pause-past-txn-timeout.yaml"] {
        let s = load(name);
        assert!(!s.premise.is_empty(), "{name}");
        let mut bare = s.clone();
        bare.premise.clear();
        resolve(&mut bare);
        assert_eq!(bare.premise, s.premise, "{name}");
    }
    // The Flink FLIP-319 comparison: the rig's modes get theirs, the Flink subject none.
    let s = load("flink-flip319-long-outage.yaml");
    assert_eq!(premises_of(&s, SinkMode::Legacy), ["timeout_abort {checkpoint: 4}"]);
    assert_eq!(premises_of(&s, SinkMode::TwopcInject), ["outlives_timeout {checkpoint: 4}"]);
    assert!(premises_of(&s, SinkMode::FlinkKafkasink).is_empty());
    let s = load("share-delivery-limit.yaml");
    assert_eq!(premises_of(&s, SinkMode::Legacy), ["delivery_limit", "redelivery"]);
    let s = load("share-pause-past-lock.yaml");
    assert_eq!(premises_of(&s, SinkMode::TwopcInject), ["redelivery"]);
    let s = load("share-ack-at-poll-kill.yaml");
    assert!(premises_of(&s, SinkMode::Legacy).is_empty());
    let s = load("flip319-short-outage.yaml");
    assert!(premises_of(&s, SinkMode::Legacy).is_empty());
    assert_eq!(render(&explain(&s)).lines().count(), 4);
}
