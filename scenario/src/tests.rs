//! The fault types against the loader and the table: parameter errors are
//! named and located, each kind's parameter list is its struct's, a fault
//! written out reads back the same, docs/SCENARIOS.md agrees with the table.
use serde_json::{json, Value};

use super::fields::fields_of;
use super::*;

/// A valid scenario whose faults are `faults` (YAML list items; the first one
/// starts at line 14).
fn with_faults(faults: &str) -> String {
    format!(
        "\
name: t
cluster:
  brokers: 3
topic:
  partitions: 3
  replication_factor: 3
job:
  parallelism: 2
  records_per_subtask: 100
  checkpoint_interval_ms: 1000
  transaction_timeout_ms: 5000
modes: [legacy]
faults:
{faults}
"
    )
}

/// Exactly one problem, at `line`, about `field`, saying `needle`.
#[track_caller]
fn one(text: &str, line: u64, field: &str, needle: &str) -> Problem {
    let e = from_str(text, "t.yaml").expect_err("must be refused");
    let ps = e.problems();
    assert_eq!(ps.len(), 1, "{}", e.render());
    let p = ps[0].clone();
    assert_eq!((p.line, p.field.as_str()), (line, field), "{p}");
    assert!(p.message.contains(needle), "{p} should say {needle:?}");
    assert!(p.column > 0, "{p}");
    p
}

/// As [`one`], for a parse error: the excerpt under it shows the same line.
#[track_caller]
fn one_parse(text: &str, line: u64, field: &str, needle: &str) -> Problem {
    let p = one(text, line, field, needle);
    let rendered = from_str(text, "t.yaml").unwrap_err().render();
    assert!(rendered.contains(&format!("t.yaml:{line}:{}\n", p.column)), "{rendered}");
    assert!(rendered.contains(&format!("\n{line} | ")), "{rendered}");
    p
}

#[test]
fn a_parameter_of_the_wrong_type_is_named_at_its_line() {
    let t = with_faults(
        "  - kind: net-delay\n    from: [workers]\n    to: [brokers]\n    delay_ms: abc\n    when: {at_ms: 1}",
    );
    let p = one_parse(&t, 17, "faults[0].delay_ms", "invalid type");
    assert_eq!(p.column, 15, "at the value: {p}");
    // In the second fault, written in flow style.
    let t = with_faults(
        "  - {kind: kill-workers, when: {at_ms: 1}}\n  - {kind: protocol-drop, apis: EndTxn, when: {at_ms: 1}}",
    );
    let p = one_parse(&t, 15, "faults[1].apis", "expected a sequence");
    assert!(p.column > 20, "at the value, not the entry: {p}");
    // A value type inside a parameter: a group.
    let t = with_faults("  - kind: net-reset\n    from: [workerz]\n    to: [brokers]\n    when: {at_ms: 1}");
    one_parse(&t, 15, "faults[0].from", "workerz");
    // The hint for untagged targets still applies.
    let t = with_faults("  - kind: broker-kill\n    target: nonsense\n    when: {at_ms: 1}");
    one_parse(&t, 15, "faults[0].target", "expected `all`, `txn-coordinator`");
}

#[test]
fn the_txn_log_follower_target_is_a_broker_of_a_replicated_log_for_a_subtask_that_exists() {
    let t = with_faults("  - {kind: broker-stop, target: {txn-log-follower: 1}, when: {at_ms: 1}, duration_ms: 10}");
    let s = from_str(&t, "t.yaml").expect("valid");
    assert_eq!(s.faults[0].kind.target(), Some(&Target::TxnLogFollower { txn_log_follower: 1 }));
    let t = with_faults("  - {kind: broker-stop, target: {txn-log-follower: 2}, when: {at_ms: 1}, duration_ms: 10}");
    one(&t, 14, "faults[0].target.txn-log-follower", "parallelism is 2");
    let t = with_faults("  - {kind: broker-stop, target: {txn-log-follower: 0}, when: {at_ms: 1}, duration_ms: 10}")
        .replace("  brokers: 3", "  brokers: 1")
        .replace("  replication_factor: 3", "  replication_factor: 1");
    one(&t, 14, "faults[0].target", "replicated __transaction_state");
    let t = with_faults("  - {kind: kill-workers, target: {txn-log-follower: 0}, when: {at_ms: 1}}");
    one(&t, 14, "faults[0].target", "txn-log-follower is a broker");
}

#[test]
fn an_unknown_fault_field_is_named_at_its_key() {
    let t = with_faults("  - kind: kill-workers\n    when: {at_ms: 1}\n    bogus: 3");
    let p = one_parse(&t, 16, "faults[0].bogus", "unknown field `bogus`");
    assert_eq!(p.column, 5, "at the key: {p}");
    assert!(p.message.contains("`target`") && !p.message.contains("`delay_ms`"), "what kill-workers takes: {p}");
    // A parameter of another kind: named with the kinds that take it.
    let t = with_faults("  - {kind: coordinator-crash, when: {after_checkpoint_persisted: 1}, checkpoint: 2}");
    one_parse(&t, 14, "faults[0].checkpoint", "drop-notification, delay-notification, decline-checkpoint");
    let t = with_faults("  - kind: coordinator-crash\n    target: all\n    when: {after_checkpoint_persisted: 1}");
    one_parse(&t, 15, "faults[0].target", "the coordinator is one process");
}

#[test]
fn a_missing_required_parameter_is_reported_at_the_fault() {
    let t = with_faults("  - {kind: kill-workers, when: {at_ms: 1}}\n  - kind: broker-kill\n    when: {at_ms: 1}");
    let p = one_parse(&t, 15, "faults[1].target", "broker-kill needs a target");
    assert_eq!(p.column, 5, "{p}");
    let t = with_faults("  - {kind: net-partition, from: [workers], when: {at_ms: 1}}");
    one_parse(&t, 14, "faults[0].to", "needs from and to");
    let t = with_faults("  - {kind: protocol-delay, apis: [EndTxn], when: {at_ms: 1}}");
    one_parse(&t, 14, "faults[0].delay_ms", "protocol-delay needs delay_ms");
    // Not a parameter: the spec's own fields are reported as before.
    let t = with_faults("  - {kind: kill-workers}");
    one(&t, 14, "faults[0]", "missing field `when`");
    let t = with_faults("  - kind: kill-workers\n    when: {at_ms: x}");
    one(&t, 15, "faults[0].when.at_ms", "u64");
}

#[test]
fn parameter_lists_are_the_structs_fields() {
    assert_eq!(fields_of::<Delay>(), ["from", "to", "delay_ms", "jitter_ms"]);
    assert_eq!(fields_of::<NoParams>(), [] as [&str; 0]);
    assert_eq!(FaultKind::NetDelay.params(), fields_of::<Delay>());
    assert_eq!(FaultKind::DeclineCheckpoint.params(), ["target", "checkpoint"]);
    assert_eq!(
        FaultKind::parameters(),
        [
            "duration_ms",
            "target",
            "from",
            "to",
            "direction",
            "delay_ms",
            "jitter_ms",
            "probability",
            "bytes_per_sec",
            "apis",
            "frames",
            "transactional_id",
            "nth",
            "error",
            "checkpoint"
        ]
    );
    assert!(FaultKind::BrokerPause.takes("duration_ms") && !FaultKind::BrokerRestart.takes("duration_ms"));
    let takers: Vec<&str> = FaultKind::takers("jitter_ms").into_iter().map(FaultKind::name).collect();
    assert_eq!(takers, ["net-delay", "protocol-delay"]);
}

/// A valid value for each parameter.
fn sample(param: &str) -> Value {
    match param {
        "target" => json!("all"),
        "from" => json!(["workers"]),
        "to" => json!(["brokers"]),
        "direction" => json!("one-way"),
        "delay_ms" => json!(10),
        "jitter_ms" => json!(2),
        "probability" => json!(0.5),
        "bytes_per_sec" => json!(4096),
        "apis" => json!(["EndTxn"]),
        "frames" => json!("response"),
        "error" => json!("NOT_COORDINATOR"),
        "transactional_id" => json!({"subtask": 1}),
        "nth" => json!(1),
        "checkpoint" => json!(3),
        other => panic!("a new parameter {other}: give it a sample here"),
    }
}

/// A fault of kind `k` with every parameter it takes.
fn full(k: FaultKind) -> Value {
    let mut v = json!({"kind": k.name(), "when": {"at_ms": 5}});
    for p in k.params() {
        v[*p] = sample(p);
    }
    v
}

#[test]
fn every_kind_takes_exactly_its_structs_parameters() {
    for &k in FaultKind::all() {
        // Every listed parameter is read...
        let spec: FaultSpec = serde_json::from_value(full(k)).unwrap_or_else(|e| panic!("{k:?}: {e}"));
        assert_eq!(spec.kind.kind(), k);
        // ...and written back: the struct has no field the list lacks.
        let back = serde_json::to_value(&spec).unwrap();
        let mut keys: Vec<&str> = back.as_object().unwrap().keys().map(String::as_str).collect();
        keys.retain(|key| !matches!(*key, "kind" | "when"));
        let mut listed = k.params().to_vec();
        keys.sort();
        listed.sort();
        assert_eq!(keys, listed, "{k:?}");
        // Any other kind's parameter is refused, naming the kinds that take it.
        for p in FaultKind::parameters() {
            if p == "duration_ms" || k.takes(p) {
                continue;
            }
            let mut v = full(k);
            v[p] = sample(p);
            let e = serde_json::from_value::<FaultSpec>(v).expect_err(&format!("{k:?} took {p}")).to_string();
            assert!(e.starts_with(&format!("`{p}`: {} does not take {p}", k.name())), "{k:?} {p}: {e}");
        }
    }
}

#[test]
fn required_parameters_cannot_be_left_out() {
    for &k in FaultKind::all() {
        for p in k.params() {
            let mut v = full(k);
            v.as_object_mut().unwrap().remove(*p);
            let r = serde_json::from_value::<FaultSpec>(v);
            if let Err(e) = r {
                assert!(e.to_string().contains(&format!("{} needs ", k.name())), "{k:?} {p}: {e}");
            }
        }
    }
    let required = |k: FaultKind| -> Vec<&str> {
        k.params()
            .iter()
            .copied()
            .filter(|p| {
                let mut v = full(k);
                v.as_object_mut().unwrap().remove(*p);
                serde_json::from_value::<FaultSpec>(v).is_err()
            })
            .collect()
    };
    assert_eq!(required(FaultKind::NetDelay), ["from", "to", "delay_ms"]);
    assert_eq!(required(FaultKind::ProtocolError), ["apis", "error"]);
    assert_eq!(required(FaultKind::BrokerKill), ["target"]);
    assert!(required(FaultKind::NetBlackhole).is_empty(), "target or to: validation's");
}

#[test]
fn a_fault_is_written_flat_in_the_files_order_and_reads_back() {
    let mut s: FaultSpec = serde_json::from_value(json!({
        "name": "err", "kind": "protocol-error", "when": {"at_ms": 5}, "duration_ms": 100, "nth": 2,
        "apis": ["EndTxn"], "error": 51, "from": ["workers"], "transactional_id": "p-0-1"
    }))
    .unwrap();
    let keys = |s: &FaultSpec| -> Vec<String> {
        let text = serde_json::to_string(s).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        keys.sort_by_key(|k| text.find(&format!("\"{k}\":")).unwrap());
        keys
    };
    assert_eq!(keys(&s), ["name", "kind", "when", "duration_ms", "from", "apis", "error", "transactional_id", "nth"]);
    s.times = Some(2);
    s.kind = Fault::BrokerKill(Brokers { target: Target::Ids(vec![1]) });
    assert_eq!(keys(&s), ["name", "kind", "target", "when", "duration_ms", "times"]);
    for &k in FaultKind::all() {
        let spec: FaultSpec = serde_json::from_value(full(k)).unwrap();
        let yaml = serde_saphyr::to_string(&spec).unwrap();
        let back: FaultSpec = serde_saphyr::from_str(&yaml).unwrap_or_else(|e| panic!("{k:?}: {e}\n{yaml}"));
        assert_eq!(back, spec, "{yaml}");
        // A Fault alone: tagged by kind.
        let fault = serde_json::to_value(&spec.kind).unwrap();
        assert_eq!(fault["kind"], k.name());
        assert_eq!(serde_json::from_value::<Fault>(fault).unwrap(), spec.kind);
    }
}

#[test]
fn the_table_is_consistent() {
    for (i, &k) in FaultKind::all().iter().enumerate() {
        assert_eq!(k as usize, i);
        assert_eq!(k.info().kind, k);
        assert_eq!(serde_json::to_value(k).unwrap(), json!(k.name()));
        assert!(!k.about().is_empty() && !k.about().contains('\n'), "{k:?}: one line");
        // The proxy kinds are exactly the network and protocol families.
        assert_eq!(k.needs_proxy(), matches!(k.family(), Family::Network | Family::Protocol), "{k:?}");
    }
    let proxy: Vec<Family> = Family::ALL.into_iter().filter(|f| f.needs_proxy()).collect();
    assert_eq!(proxy, [Family::Network, Family::Protocol]);
    for f in Family::ALL {
        assert!(f.kinds().count() >= 3, "{f:?}");
        assert_eq!(Mix::from(f).family(), Some(f));
    }
    assert!(Fault::NetReset(Link { from: vec![], to: vec![] }) == FaultKind::NetReset);
}

// ---------------------------------------------------------------------------
// docs/SCENARIOS.md

fn docs() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/SCENARIOS.md")).unwrap()
}

/// The rows of the table that follows `heading`, as cells.
fn table_after(doc: &str, heading: &str) -> Vec<Vec<String>> {
    let rest = &doc[doc.find(heading).unwrap_or_else(|| panic!("no {heading:?} in the docs"))..];
    rest.lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| l.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect())
        .collect()
}

/// The backticked words of a cell.
fn ticked(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// The parameters a cell names with their marks (`from` R, `to` o, …): each
/// R or o applies to the names since the previous mark.
fn marked(cell: &str) -> Vec<(String, char)> {
    let mut out = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    for (i, part) in cell.split('`').enumerate() {
        if i % 2 == 1 {
            pending.push(part.to_string());
            continue;
        }
        for word in part.split(|c: char| !c.is_alphanumeric()) {
            if let "R" | "o" = word {
                out.extend(pending.drain(..).map(|p| (p, word.chars().next().unwrap())));
            }
        }
    }
    out
}

#[test]
fn the_docs_list_every_kind_with_its_parameters() {
    let doc = docs();
    let rows = table_after(&doc, "### Kinds and their parameters");
    let names: Vec<&str> = rows.iter().map(|r| ticked(&r[0])[0]).collect();
    let kinds: Vec<&str> = FaultKind::all().iter().map(|k| k.name()).collect();
    assert_eq!(names, kinds, "the kinds table lists every kind, in the table's order");
    let params = FaultKind::parameters();
    let row_of = |k: &str| rows.iter().find(|r| ticked(&r[0])[0] == k).unwrap();
    for (&k, row) in FaultKind::all().iter().zip(&rows) {
        let (target, duration, others) = (&row[1], &row[2], &row[3]);
        assert_eq!(!target.starts_with('—'), k.takes("target"), "{k:?}: target column {target:?}");
        let mark = match k.duration() {
            Need::Required => "R",
            Need::Optional => "o",
            Need::Refused => "—",
        };
        assert_eq!(duration, mark, "{k:?}: duration_ms column");
        // The other parameters, with `as <kind>` for another row's.
        let mut named: Vec<(String, char)> = marked(others);
        if let Some(base) = others.strip_prefix("as ").and_then(|r| r.split(',').next()) {
            named.extend(marked(&row_of(base)[3]));
        }
        let mut listed: Vec<&str> = named.iter().map(|(p, _)| p.as_str()).filter(|p| params.contains(p)).collect();
        let mut takes: Vec<&str> = k.params().iter().copied().filter(|p| *p != "target").collect();
        listed.sort();
        takes.sort();
        assert_eq!(listed, takes, "{k:?}: other parameters {others:?}");
        for (p, m) in named.iter().filter(|(p, _)| params.contains(&p.as_str())) {
            let mut v = full(k);
            v.as_object_mut().unwrap().remove(p);
            let required = serde_json::from_value::<FaultSpec>(v).is_err();
            assert_eq!(*m == 'R', required, "{k:?}: {p} is marked {m}");
        }
    }
    // Each parameter but target and duration_ms has a line in the values table.
    let values = table_after(&doc, "Parameters:");
    let mut described: Vec<&str> = values.iter().flat_map(|r| ticked(&r[0])).collect();
    let mut expected: Vec<&str> = params.iter().copied().filter(|p| !matches!(*p, "target" | "duration_ms")).collect();
    described.sort();
    expected.sort();
    assert_eq!(described, expected, "the parameters table");
}

#[test]
fn absurd_sizes_and_times_are_refused_not_run() {
    // A fault time near u64::MAX would overflow the clock the nemesis adds it to.
    let huge = u64::MAX;
    one(
        &with_faults(&format!("  - kind: pause-workers\n    when: {{at_ms: 10}}\n    duration_ms: {huge}")),
        16,
        "faults[0].duration_ms",
        "at most 604800000 ms",
    );
    one(&with_faults("  - kind: kill-workers\n    when: {at_ms: 99999999999}"), 15, "faults[0].when", "7 days");
    // A job whose expected records would not fit the checker's memory.
    let t = with_faults("  - kind: kill-workers\n    when: {at_ms: 10}")
        .replace("records_per_subtask: 100", "records_per_subtask: 18446744073709551615");
    one(&t, 9, "job.records_per_subtask", "at most 1000000000");
    let t =
        with_faults("  - kind: kill-workers\n    when: {at_ms: 10}").replace("parallelism: 2", "parallelism: 100000");
    one(&t, 8, "job.parallelism", "at most 1024");
}

#[test]
fn excerpt_points_at_the_column() {
    let x = load::excerpt("a: 1\nbb: [x, y]\n", 2, 9).unwrap();
    assert_eq!(x, "  |\n2 | bb: [x, y]\n  |         ^");
    assert!(load::excerpt("a", 3, 1).is_none());
    assert!(load::excerpt("a", 0, 1).is_none());
}

/// [`with_faults`] with a pause and `premise` lines after it (its first mode is line 16). The
/// pause outlasts the look (5000 ms timeout + Kafka's default 10000 ms abort scan + 1000 ms).
fn with_premise(premise: &str) -> String {
    format!(
        "{}premise:\n{premise}\n",
        with_faults("  - {name: freeze, kind: pause-workers, target: [0], when: {at_ms: 1}, duration_ms: 16001}")
    )
}

#[test]
fn premises_parse_and_their_problems_are_located() {
    let s = from_str(
        &with_premise("  legacy: {timeout_abort: {checkpoint: 3}, outlives_timeout: {fault: freeze}}"),
        "t.yaml",
    )
    .unwrap();
    let p = &s.premise[&SinkMode::Legacy];
    assert_eq!(
        p.list().iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        ["timeout_abort {checkpoint: 3}", "outlives_timeout {fault: freeze}"]
    );
    // A resolved scenario writes it back the same; one without premises writes none.
    let yaml = serde_saphyr::to_string(&s).unwrap();
    assert_eq!(from_str(&yaml, "r.yaml").unwrap(), s);
    assert!(!serde_saphyr::to_string(&from_str(&with_faults("  []"), "t.yaml").unwrap()).unwrap().contains("premise"));

    one(&with_premise("  kip939: {timeout_abort: {checkpoint: 3}}"), 16, "premise.kip939", "not in modes [legacy]");
    // An empty entry is valid: none for the mode, not even the defaults (`premise::defaults`).
    let none = from_str(&with_premise("  legacy: {}"), "t.yaml").unwrap();
    assert!(none.premise[&SinkMode::Legacy].is_empty());
    one(
        &with_premise("  legacy: {timeout_abort: {checkpoint: 3, fault: freeze}}"),
        16,
        "premise.legacy.timeout_abort",
        "exactly one of",
    );
    one(
        &with_premise("  legacy: {timeout_abort: {checkpoint: 0}}"),
        16,
        "premise.legacy.timeout_abort.checkpoint",
        "≥ 1",
    );
    one(
        &with_premise("  legacy: {timeout_abort: {fault: thaw}}"),
        16,
        "premise.legacy.timeout_abort.fault",
        "no fault named \"thaw\"",
    );
    // Unknown premises and fields are parse errors at their line.
    one_parse(
        &with_premise("  legacy: {timeout_commit: {checkpoint: 3}}"),
        16,
        "premise.legacy.timeout_commit",
        "unknown field",
    );
    // A fault's premise needs a pause long enough to be looked at: past the timeout and one
    // abort scan (Kafka's default here), as the nemesis looks.
    let short = format!(
        "{}premise:\n  legacy: {{timeout_abort: {{fault: freeze}}}}\n",
        with_faults("  - {name: freeze, kind: pause-workers, target: [0], when: {at_ms: 1}, duration_ms: 16000}")
    );
    one(
        &short,
        16,
        "premise.legacy.timeout_abort.fault",
        "taken 16000 ms (the transaction timeout 5000 ms + one abort scan 10000 ms, Kafka's default + 1000 ms)",
    );
    let kill = format!(
        "{}premise:\n  legacy: {{timeout_abort: {{fault: boom}}}}\n",
        with_faults("  - {name: boom, kind: kill-workers, when: {at_ms: 1}}")
    );
    one(&kill, 16, "premise.legacy.timeout_abort.fault", "only the transactions a pause-workers fault freezes");
}

#[test]
fn a_known_bugs_trigger_is_a_premise_naming_two_faults() {
    let faults = "  - {name: hold, kind: protocol-delay, apis: [WriteTxnMarkers], delay_ms: 100, when: {at_ms: 1}, duration_ms: 100}\n  - {name: crash, kind: broker-kill, target: [1], when: {at_ms: 2}}";
    let with = |premise: &str| format!("{}premise:\n{premise}\n", with_faults(faults));
    let s = from_str(&with("  legacy: {acted_before: {fault: hold, before: crash}}"), "t.yaml")
        .unwrap_or_else(|e| panic!("{}", e.render()));
    let p = s.premise[&SinkMode::Legacy].list();
    assert_eq!(p.iter().map(|p| p.to_string()).collect::<Vec<_>>(), ["acted_before {fault: hold, before: crash}"]);
    assert!(s.premise[&SinkMode::Legacy].checkpoints().is_empty(), "no checkpoint to look at");
    let yaml = serde_saphyr::to_string(&s).unwrap();
    assert_eq!(from_str(&yaml, "r.yaml").unwrap(), s, "{yaml}");
    // The faults' lines are 14 and 15: the premise's mode is on line 17.
    one(
        &with("  legacy: {acted_before: {fault: crash, before: hold}}"),
        17,
        "premise.legacy.acted_before.fault",
        "only a fault through the proxy",
    );
    one(
        &with("  legacy: {acted_before: {fault: hold, before: boom}}"),
        17,
        "premise.legacy.acted_before.before",
        "no fault named \"boom\"",
    );
    one(&with("  legacy: {acted_before: {fault: hold}}"), 17, "premise.legacy.acted_before", "needs `fault: A`");
    one(
        &with("  legacy: {acted_before: {fault: hold, before: hold}}"),
        17,
        "premise.legacy.acted_before.before",
        "before itself",
    );
    one(
        &with("  legacy: {timeout_abort: {checkpoint: 3, before: crash}}"),
        17,
        "premise.legacy.timeout_abort.before",
        "acted_before only",
    );
}

/// Lines 1–14 are `with_faults`; `expect` at 15–16, `expect_by` from 17, its entries from 18.
fn with_expect_by(entries: &str) -> String {
    format!("{}expect:\n  legacy: clean\nexpect_by:\n{entries}\n", with_faults("  []"))
}

#[test]
fn expectations_by_version_and_protocol_resolve_for_the_run() {
    use super::expect_by::{resolve, version_matches};
    let text = with_expect_by(
        "  - {kafka: \"<4.0.1\", bug: KAFKA-19367, expect: {legacy: {lost: \">0\"}}}\n  - {protocol: v1, expect: {legacy: job-failed}}",
    );
    let s = from_str(&text, "t.yaml").unwrap_or_else(|e| panic!("{}", e.render()));
    assert_eq!(s.expect_by.len(), 2);
    let on = |kafka: &str, v1: bool| {
        let mut r = s.clone();
        r.cluster.kafka = kafka.into();
        r.job.force_transactions_v1 = v1;
        let notes = resolve(&mut r);
        assert!(r.expect_by.is_empty(), "resolved once");
        (r.expect[&SinkMode::Legacy].clone(), notes)
    };
    let lost = Expectation::Counts([(CountName::Lost, Condition::Expr(">0".into()))].into());
    let (e, notes) = on("4.0.0", false);
    assert_eq!(e, lost);
    assert_eq!(notes, ["legacy: expecting {lost:>0} on Kafka 4.0.0, Transactions V2 (KAFKA-19367)"]);
    // The first entry that matches wins; the fixed release keeps `expect`.
    assert_eq!(on("4.0.0", true).0, lost);
    assert_eq!(on("4.4.0", true).0, Expectation::Word(ExpectWord::JobFailed));
    let (e, notes) = on("4.0.2", false);
    assert_eq!((e, notes.len()), (Expectation::Word(ExpectWord::Clean), 0));
    // Before 4.0.0 the protocol is V1 whatever the job says.
    assert_eq!(on("3.9.1", false).0, lost, "<4.0.1 first");
    // A resolved scenario has none left to write; an unresolved one writes them back.
    assert_eq!(from_str(&serde_saphyr::to_string(&s).unwrap(), "r.yaml").unwrap(), s);
    for (req, v, want) in [
        ("4.0.0", "4.0.0", true),
        ("4.0", "4.0.0", true),
        ("<4.0.1", "4.0.1", false),
        (">=4.0.1", "4.0.10", true),
        (">=4.0.0,<4.1.0", "4.1.0", false),
        ("> 3.9", "4.0.0", true),
        ("<=4.0.2", "4.0.2", true),
    ] {
        assert_eq!(version_matches(req, v), Ok(want), "{req} {v}");
    }
    assert!(version_matches("~4.0", "4.0.0").is_err());
}

#[test]
fn expectations_by_version_are_checked_where_they_are_written() {
    one(&with_expect_by("  - {expect: {legacy: clean}}"), 18, "expect_by[0]", "name the versions");
    one(&with_expect_by("  - {kafka: \"~4.0\", expect: {legacy: clean}}"), 18, "expect_by[0].kafka", "not a version");
    one(&with_expect_by("  - {protocol: v2, expect: {}}"), 18, "expect_by[0].expect", "at least one mode");
    one(
        &with_expect_by("  - protocol: v1\n    expect: {kip939: clean}"),
        19,
        "expect_by[0].expect.kip939",
        "not in modes [legacy]",
    );
    one(
        &with_expect_by("  - {kafka: \"4.0.0\", expect: {legacy: clean}}\n  - {kafka: \"4.0.0\", expect: {legacy: {lost: \"lots\"}}}"),
        19,
        "expect_by[1].expect.legacy.lost",
        "",
    );
    one_parse(&with_expect_by("  - {protocol: v3, expect: {legacy: clean}}"), 18, "expect_by[0].protocol", "v3");
}

#[test]
fn readers_are_read_with_their_default_mode_and_bad_ones_are_located() {
    // `readers:` after `faults: []` (line 13): `count` at line 15, `mode` at 16.
    let readers =
        |body: &str| with_faults("  []").replace("faults:\n  []\n", &format!("faults: []\nreaders:\n{body}\n"));
    let s = from_str(&readers("  count: 2"), "t.yaml").expect("valid");
    assert_eq!(s.readers, Some(ReadersSpec { count: 2, mode: ReaderMode::Assign }));
    let s = from_str(&readers("  count: 24\n  mode: assign~read-uncommitted"), "t.yaml").expect("valid");
    assert_eq!(
        s.readers.map(|r| (r.mode, r.mode.isolation())),
        Some((ReaderMode::AssignReadUncommitted, "read_uncommitted"))
    );
    one(&readers("  count: 0"), 15, "readers.count", "use 1 to 24 readers");
    one(&readers("  count: 25\n  mode: subscribe"), 15, "readers.count", "8 per partition of the topic's 3");
    one_parse(&readers("  count: 2\n  mode: everyone"), 16, "readers.mode", "unknown variant `everyone`");
    one_parse(&readers("  count: 2\n  isolation: none"), 16, "readers.isolation", "unknown field `isolation`");
    for m in ["subscribe~commit-before-process", "subscribe~skip-after-rebalance"] {
        let s = from_str(&readers(&format!("  count: 2\n  mode: {m}")), "t.yaml").expect("valid");
        let mode = s.readers.unwrap().mode;
        assert_eq!((mode.name(), mode.subscribes(), mode.isolation()), (m, true, "read_committed"));
    }
}

#[test]
fn reader_faults_need_readers_and_readers_that_exist() {
    // The fault at line 14 (its kind there, its target at 15), `readers:` after the faults.
    let with_readers =
        |fault: &str, count: u32| format!("{}readers: {{count: {count}, mode: subscribe}}\n", with_faults(fault));
    let kill = "  - kind: kill-readers\n    target: [1]\n    when: {at_ms: 10}\n    duration_ms: 500";
    let s = from_str(&with_readers(kill, 2), "t.yaml").expect("valid");
    assert_eq!(s.faults[0].kind.target(), Some(&Target::Ids(vec![1])));
    assert!(s.faults[0].job_scoped(), "each mode's readers are its own");
    one(&with_readers(kill, 1), 15, "faults[0].target[0]", "reader 1 does not exist (valid: 0..=0)");
    one(&with_faults(kill), 14, "faults[0].kind", "kill-readers acts on the live readers, and this scenario has none");
    let role = "  - kind: pause-readers\n    target: controller\n    when: {at_ms: 10}\n    duration_ms: 500";
    one(&with_readers(role, 2), 15, "faults[0].target", "use all or reader indexes");
    let pause = "  - kind: pause-readers\n    when: {at_ms: 10}";
    one(&with_readers(pause, 2), 14, "faults[0].duration_ms", "pause-readers needs duration_ms");
    let restart = "  - kind: restart-readers\n    when: {at_ms: 10}\n    duration_ms: 5";
    one(&with_readers(restart, 2), 16, "faults[0].duration_ms", "use kill-readers with duration_ms");
}
