//! The `shape:` section: its bounds refused at their field, the defaults a scenario gives, the
//! floor a drawn timeout keeps, a shape written into a scenario and read off it again, and
//! docs/SCENARIOS.md's table against the section's fields.
use super::*;
use crate::{from_str, Problem};

/// A valid one-broker scenario (Kafka 4.4.0, legacy and twopc-inject, 40 s at 1000/s, a 1 s
/// interval, the proxy allowed) whose `shape:` is `shape` (its first field on line 9).
fn with_shape(shape: &str) -> String {
    format!(
        "\
name: t
cluster: {{brokers: 1, kafka: 4.4.0}}
topic: {{partitions: 3}}
job: {{parallelism: 2, records_per_subtask: 40000, rate_per_subtask: 1000,
      checkpoint_interval_ms: 1000, transaction_timeout_ms: 60000, restart_delay_ms: 300}}
modes: [legacy, twopc-inject]
expect: {{legacy: clean, twopc-inject: clean}}
shape:
{shape}
"
    )
}

fn load(text: &str) -> Scenario {
    from_str(text, "t.yaml").unwrap_or_else(|e| panic!("{}\n{text}", e.render()))
}

/// Exactly one problem, at `line`:`column`, about `field`, saying `needle`.
#[track_caller]
fn refused(text: &str, (line, column): (u64, u64), field: &str, needle: &str) -> Problem {
    let e = from_str(text, "t.yaml").expect_err("must be refused");
    let ps = e.problems();
    assert_eq!(ps.len(), 1, "{}", e.render());
    let p = ps[0].clone();
    assert_eq!((p.line, p.column, p.field.as_str()), (line, column, field), "{p}");
    assert!(p.message.contains(needle), "{p} should say {needle:?}");
    p
}

#[test]
fn a_bound_no_job_can_meet_is_refused_at_its_field() {
    // The value's place: line 9, column 16 for `  parallelism: [..]`.
    refused(&with_shape("  parallelism: [3, 1]"), (9, 16), "shape.parallelism", "the minimum is above the maximum");
    refused(&with_shape("  parallelism: [0, 2]"), (9, 16), "shape.parallelism", "must be ≥ 1");
    refused(
        &with_shape("  max_concurrent_checkpoints: [0, 3]"),
        (9, 31),
        "shape.max_concurrent_checkpoints",
        "must be ≥ 1",
    );
    refused(&with_shape("  records_per_subtask: [0, 9000]"), (9, 24), "shape.records_per_subtask", "must be ≥ 1");
    refused(&with_shape("  checkpoint_interval_ms: [0, 500]"), (9, 27), "shape.checkpoint_interval_ms", "≥ 10 ms");
    refused(
        &with_shape("  checkpoint_interval_ms: [500, 60000]"),
        (9, 27),
        "shape.checkpoint_interval_ms",
        "not below job.checkpoint_timeout_ms (60000 ms)",
    );
    refused(&with_shape("  rate_per_subtask: [0, 2000]"), (9, 21), "shape.rate_per_subtask", "unthrottled");
    refused(&with_shape("  transaction_timeout_ms: [0, 60000]"), (9, 27), "shape.transaction_timeout_ms", "> 0 ms");
    // A second line of the section: its own place.
    refused(
        &with_shape("  parallelism: [1, 2]\n  transaction_timeout_ms: [60000, 30000]"),
        (10, 27),
        "shape.transaction_timeout_ms",
        "the minimum is above the maximum",
    );
}

#[test]
fn a_timeout_below_the_interval_or_below_the_floor_of_a_one_phase_sink_is_refused() {
    refused(
        &with_shape("  checkpoint_interval_ms: [200, 1500]\n  transaction_timeout_ms: [1000, 60000]"),
        (10, 27),
        "shape.transaction_timeout_ms",
        "1000 ms is not above the longest checkpoint interval (1500 ms)",
    );
    // legacy loses by design past its timeout: 4 × 1500 ms of checkpoints, a dropped request's
    // 30 s after a 3000 ms rule, 10 s to commit.
    let p = refused(
        &with_shape("  checkpoint_interval_ms: [200, 1500]\n  transaction_timeout_ms: [20000, 40000]"),
        (10, 27),
        "shape.transaction_timeout_ms",
        "a one-phase sink among the modes (legacy) must outlive",
    );
    assert!(p.message.contains("49000 ms (4 × 1500 ms"), "{p}");
    // Enable2Pc only: the broker never times those out, only the checkpoints count.
    let text = with_shape("  checkpoint_interval_ms: [200, 1500]\n  transaction_timeout_ms: [20000, 40000]")
        .replace("modes: [legacy, twopc-inject]", "modes: [twopc-inject, kip939]")
        .replace("legacy: clean, ", "");
    load(&text);
    // Without the proxy no request is dropped: the broker's restart is the longest stall.
    let text = with_shape("  checkpoint_interval_ms: [200, 1500]\n  transaction_timeout_ms: [20000, 40000]")
        .replace("kafka: 4.4.0}", "kafka: 4.4.0, proxy: false}");
    assert_eq!(Floor::of(&load(&text)).ms(1500, 3), 6_000 + 2_000 + BROKER_BACK_MS + SETTLE_MS);
}

#[test]
fn a_bound_the_cluster_cannot_host_is_refused() {
    refused(
        &with_shape("  transaction_timeout_ms: [60000, 1000000]"),
        (9, 27),
        "shape.transaction_timeout_ms",
        "exceeds the broker's transaction.max.timeout.ms (900000 ms)",
    );
    let lowered = with_shape("  transaction_timeout_ms: [50000, 100000]")
        .replace("kafka: 4.4.0}", "kafka: 4.4.0, broker_config: {transaction.max.timeout.ms: 90000}}");
    refused(&lowered, (9, 27), "shape.transaction_timeout_ms", "(90000 ms)");
    // Transactions V2 is finalized from 4.0.0.
    let old = with_shape("  transactions: [v1, v2]").replace("kafka: 4.4.0", "kafka: 3.9.0");
    refused(&old, (9, 17), "shape.transactions", "Kafka 3.9.0 has no Transactions V2");
    load(&with_shape("  transactions: [v1]").replace("kafka: 4.4.0", "kafka: 3.9.0"));
    refused(&with_shape("  transactions: []"), (9, 17), "shape.transactions", "name v1, v2 or both");
    refused(&with_shape("  transactions: [v2, v2]"), (9, 17), "shape.transactions", "V2 is listed twice");
}

#[test]
fn a_field_the_subject_cannot_vary_is_refused() {
    refused(&with_shape("  naming: [INCREMENTING, POOLING]"), (9, 11), "shape.naming", "modes has no flink-kafkasink");
    // Only the rig's producer takes force_transactions_v1.
    let flink = with_shape("  transactions: [v1, v2]")
        .replace("modes: [legacy, twopc-inject]", "modes: [flink-kafkasink, at-least-once]")
        .replace("{legacy: clean, twopc-inject: clean}", "{flink-kafkasink: clean}");
    refused(&flink, (9, 17), "shape.transactions", "none of the modes (flink-kafkasink, at-least-once)");
    // A field serde does not know: a parse error at its key.
    let e = from_str(&with_shape("  parallelism: [1, 2]\n  partitions: [1, 3]"), "t.yaml").unwrap_err();
    let p = &e.problems()[0];
    assert_eq!((p.line, p.field.as_str()), (10, "shape.partitions"), "{p}");
    assert!(p.message.contains("unknown field"), "{p}");
    // A bound that is not a pair.
    let e = from_str(&with_shape("  parallelism: 2"), "t.yaml").unwrap_err();
    assert_eq!((e.problems()[0].line, e.problems()[0].field.as_str()), (9, "shape.parallelism"), "{e}");
}

/// The flink-kafkasink scenario of these tests: 2 TaskManagers, so parallelism 2 at least.
fn flink(shape: &str) -> String {
    with_shape(shape)
        .replace("modes: [legacy, twopc-inject]", "modes: [flink-kafkasink]")
        .replace("{legacy: clean, twopc-inject: clean}", "{flink-kafkasink: clean}")
        .replace("expect:", "flink: {taskmanagers: 2}\nexpect:")
}

#[test]
fn each_end_of_a_bound_is_a_job_the_loader_accepts() {
    // The 4th line is now the flink section: shape moves one line down.
    let p =
        refused(&flink("  parallelism: [1, 3]"), (10, 16), "shape.parallelism", "a job with parallelism 1 is refused");
    assert!(p.message.contains("flink.taskmanagers: 2 TaskManagers for parallelism 1"), "{p}");
    let s = load(&flink("  parallelism: [2, 3]\n  naming: [POOLING]"));
    assert_eq!(s.shape_bounds().naming, [Naming::Pooling]);
    // Without a bound, the default starts where the scenario's checks allow.
    assert_eq!(load(&flink("  max_concurrent_checkpoints: [1, 2]")).shape_bounds().parallelism, [2, 3]);
}

#[test]
fn a_shortest_job_without_room_for_faults_is_refused() {
    refused(
        &with_shape("  records_per_subtask: [1000, 9000]\n  rate_per_subtask: [500, 1000]"),
        (9, 24),
        "shape.records_per_subtask",
        "the shortest job (1000 records at 1000/s, 1000 ms) holds fewer than 5 checkpoints at the longest interval \
         (500 ms)",
    );
    // A default interval takes the named records into account: at most 6000 / 5 ms here.
    let s = load(&with_shape("  records_per_subtask: [6000, 9000]\n  rate_per_subtask: [500, 1000]"));
    assert_eq!(s.shape_bounds().checkpoint_interval_ms, [500, 1200]);
}

#[test]
fn without_a_section_every_field_swarms_within_defaults_derived_from_the_scenario() {
    let s = load(&with_shape("  {}"));
    let b = s.shape_bounds();
    assert_eq!(b, load(&with_shape("").replace("shape:\n", "")).shape_bounds(), "shape: {{}} is no section");
    assert_eq!(b.parallelism, [1, 3]);
    assert_eq!(b.max_concurrent_checkpoints, [1, 3]);
    assert_eq!(b.checkpoint_interval_ms, [500, 2000]);
    assert_eq!(b.rate_per_subtask, [500, 2000]);
    assert_eq!(b.records, Records::Lasting([10_000, 40_000]), "at least five of the longest intervals");
    assert_eq!(b.records_for(2_000), [20_000, 80_000]);
    assert_eq!(b.transactions, [Protocol::V1, Protocol::V2]);
    assert!(b.naming.is_empty());
    // The timeout: from the floor at the shortest interval and concurrency (2 × 500 ms, a dropped
    // request's 30 s after a 2000 ms rule, 10 s) up to the scenario's own 60 s, which is above the
    // floor at the longest (4 × 2000 ms + 30 s + 4000 ms + 10 s).
    let f = b.floor.expect("kept");
    assert!(f.one_phase && f.proxy);
    assert_eq!((f.ms(500, 1), f.ms(2000, 3)), (43_000, 52_000));
    assert_eq!(b.transaction_timeout_ms, [43_000, 60_000]);
    assert_eq!(b.timeout_for(2000, 3), [52_000, 60_000]);
    // A scenario's short timeout is raised to the floor: a faithful sink must come through.
    let short = load(&with_shape("  {}").replace("transaction_timeout_ms: 60000", "transaction_timeout_ms: 5000"));
    assert_eq!(short.shape_bounds().transaction_timeout_ms, [43_000, 52_000]);
    // The broker's maximum below the floor: the scenario's own timeout, and no floor.
    let capped = load(
        &with_shape("  {}")
            .replace("kafka: 4.4.0}", "kafka: 4.4.0, broker_config: {transaction.max.timeout.ms: 50000}}")
            .replace("transaction_timeout_ms: 60000", "transaction_timeout_ms: 30000"),
    );
    let cb = capped.shape_bounds();
    assert_eq!((cb.transaction_timeout_ms, cb.floor), ([30_000, 30_000], None));
    // Before 4.0 (or with only Flink's producer), the protocol is the scenario's own.
    assert_eq!(
        load(&with_shape("  {}").replace("kafka: 4.4.0", "kafka: 3.9.0")).shape_bounds().transactions,
        [Protocol::V1]
    );
    // An unthrottled job keeps its records and its rate: its length is not known.
    let flat = load(&with_shape("  {}").replace("rate_per_subtask: 1000", "rate_per_subtask: 0"));
    let fb = flat.shape_bounds();
    assert_eq!((fb.rate_per_subtask, fb.records), ([0, 0], Records::Between([40_000, 40_000])));
    // The Flink subject also varies its naming where the connector has POOLING.
    let fl = load(&flink("  {}"));
    assert_eq!(fl.shape_bounds().naming, [Naming::Incrementing, Naming::Pooling]);
}

#[test]
fn a_shape_reads_off_a_scenario_and_writes_back_into_it() {
    let s = load(&with_shape("  {}").replace("job:", "schedule: {mix: all, start_ms: 3000, end_ms: 30000}\njob:"));
    let own = Shape::of(&s);
    assert_eq!(own.text(), "p2 cc1 ci1000 tt60000 r40000@1000 V2");
    let mut plain = s.clone();
    plain.shape = None;
    assert_eq!(own.apply(&s), plain, "its own shape gives the scenario back, the section gone");
    // Another shape: the job, the protocol, and the schedule's window scaled with the job's length.
    let other = Shape {
        parallelism: 3,
        max_concurrent_checkpoints: 3,
        checkpoint_interval_ms: 400,
        rate_per_subtask: 2000,
        records_per_subtask: 40_000,
        transaction_timeout_ms: 55_000,
        transactions: Protocol::V1,
        naming: None,
    };
    let t = other.apply(&s);
    assert_eq!(Shape::of(&t), other);
    assert!(t.job.force_transactions_v1);
    assert_eq!(job_ms(&t), 20_000);
    let r = t.schedule.as_ref().unwrap();
    assert_eq!([r.start_ms, r.end_ms], [1_500, 15_000]);
    // A window scaled down starts no sooner than two intervals in (or its own start).
    let short = Shape { records_per_subtask: 8_000, ..other }.apply(&s);
    let r = short.schedule.as_ref().unwrap();
    assert_eq!((job_ms(&short), [r.start_ms, r.end_ms]), (4_000, [800, 3_000]));
    assert_eq!(other.text(), "p3 cc3 ci400 tt55000 r40000@2000 V1");
    // The written scenario loads again, its shape the drawn one.
    let text = serde_saphyr::to_string(&t).unwrap();
    assert_eq!(Shape::of(&load(&text)), other);
    // Field by field, as a shrink moves them.
    let moved = other.take("parallelism", &own).take("transactions", &own);
    assert_eq!(moved.text(), "p2 cc3 ci400 tt55000 r40000@2000 V2");
    assert_eq!(FIELDS.iter().map(|f| other.value(f)).collect::<Vec<_>>()[..3], ["3", "3", "400"]);
    // The section itself writes out and reads back.
    let with = load(&with_shape("  parallelism: [1, 2]\n  transactions: [v2]"));
    assert_eq!(load(&serde_saphyr::to_string(&with).unwrap()), with);
}

#[test]
fn bounds_admit_their_own_points_and_clamp_the_scenarios_into_them() {
    let s = load(&with_shape("  parallelism: [1, 2]\n  checkpoint_interval_ms: [200, 800]"));
    let b = s.shape_bounds();
    let own = Shape::of(&s);
    assert!(b.admits(&own).unwrap_err().contains("checkpoint_interval_ms 1000 is outside [200, 800]"));
    let c = b.clamp(&own);
    assert_eq!((c.checkpoint_interval_ms, c.parallelism), (800, 2));
    b.admits(&c).unwrap();
    // A timeout below the floor of its interval is not a point of the bounds.
    let low = Shape { transaction_timeout_ms: 40_000, ..c };
    assert!(b.admits(&low).unwrap_err().contains("transaction_timeout_ms 40000"), "{:?}", b.admits(&low));
}

#[test]
fn the_docs_table_lists_the_sections_fields() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/SCENARIOS.md")).unwrap();
    let rest = &doc[doc.find("## `shape`").expect("a shape section in the docs")..];
    let rows: Vec<&str> = rest
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .filter_map(|l| l.split('`').nth(1))
        .collect();
    let fields = crate::fields::fields_of::<ShapeSpec>();
    let mut sorted = FIELDS.to_vec();
    sorted.sort();
    let mut spec = fields.to_vec();
    spec.sort();
    assert_eq!(spec, sorted, "FIELDS are the section's keys");
    assert_eq!(rows, FIELDS, "the docs list the section's fields in FIELDS' order");
}
