//! The story of a stored run (the 3-broker marker-bug run in
//! `rig/tests/fixtures/markers-skipped-leader-dies`) and what it says when links are missing.
use std::path::{Path, PathBuf};

use super::chain::Link;
use super::*;

pub(crate) fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/markers-skipped-leader-dies/markers-skipped-leader-dies-20261207T212037-1")
}

/// A copy of the fixture to change, under the system's temp directory.
pub(crate) fn copy(name: &str) -> PathBuf {
    let to = std::env::temp_dir().join(format!("sinkhole-story-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&to);
    let out = std::process::Command::new("cp").arg("-r").arg(fixture()).arg(&to).output().unwrap();
    assert!(out.status.success());
    to
}

fn story() -> Story {
    let mut v = explain(&RunDir::at(fixture()), Some("legacy")).unwrap();
    assert_eq!(v.len(), 1);
    v.remove(0)
}

#[test]
fn the_marker_bug_is_told_in_order_kill_fencing_skipped_markers_and_the_open_transaction() {
    let s = story();
    assert_eq!((s.kafka.as_str(), s.seed, s.mode.as_str()), ("4.4.0", 1, "legacy"));
    assert!(s.words.starts_with("LOST 2869"), "{}", s.words);
    // The transaction left without its marker is told in full, with what the checker found.
    let c = s.chains.iter().find(|c| c.found.iter().any(|f| f.starts_with("MISSING MARKER"))).expect("its chain");
    assert_eq!(c.txn.transactional_id.as_deref(), Some("sinkhole-fef39b7d-legacy-1-5"));
    assert_eq!((c.txn.producer_id, c.txn.epoch, c.txn.checkpoint), (Some(1002), Some(0), Some(5)));
    let at = |what: &dyn Fn(&chain::Entry) -> bool| {
        c.timeline.iter().position(what).unwrap_or_else(|| panic!("not told: {:#?}", c.timeline))
    };
    let kill = at(&|e| e.link == Link::Fault && e.text.contains("kill-leader (broker-kill) fired"));
    let fencing = at(&|e| e.link == Link::BrokerLog && e.text.contains("Fencing broker 1"));
    let skipped = at(&|e| e.link == Link::BrokerLog && e.text.contains("likely deleted"));
    let open = at(&|e| e.wall_ms.is_none() && e.text.contains("MISSING MARKER"));
    assert!(kill < fencing && fencing < skipped && skipped < open, "{kill} {fencing} {skipped} {open}");
    let t = |i: usize| c.timeline[i].wall_ms.unwrap();
    assert!(t(fencing) - t(kill) > 5_000, "the fencing comes with the session timeout, seconds later");
    assert!(c.timeline[fencing].cite.starts_with("cluster/node-") && c.timeline[fencing].cite.contains("server.log:"));
    assert!(c.timeline[kill].cite.starts_with("legacy/history.jsonl:"));
    // The proxy's held markers, with their times, before the kill.
    let held = at(&|e| e.link == Link::Wire && e.text.contains("WriteTxnMarkers"));
    assert!(held < kill);
    // Every timed entry in time order.
    let times: Vec<u64> = c.timeline.iter().filter_map(|e| e.wall_ms).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn the_markdown_is_one_table_per_chain_and_the_html_the_same_lines() {
    let s = story();
    let md = render::markdown(&s);
    assert!(md.starts_with("# What happened: markers-skipped-leader-dies — legacy"));
    assert!(md.contains("| time (UTC) | since | link | what | where |"));
    assert!(md.contains("Fencing broker 1"), "{md}");
    assert!(md.contains("## Also lost") || s.behind.is_empty());
    let html = render::html(std::slice::from_ref(&s));
    assert!(html.starts_with("<section id=\"story\">"));
    assert!(html.contains("Fencing broker 1") && !html.contains("<INFO"));
    assert_eq!(
        html.matches("<table class=\"story\">").count(),
        s.chains.iter().filter(|c| !c.timeline.is_empty()).count()
    );
}

#[test]
fn a_missing_link_is_said_not_guessed() {
    let dir = copy("nologs");
    std::fs::remove_dir_all(dir.join("cluster")).unwrap();
    let s = explain(&RunDir::at(&dir), None).unwrap().remove(0);
    for c in &s.chains {
        assert!(c.timeline.iter().all(|e| e.link != Link::BrokerLog));
        assert!(c.missing.iter().any(|m| m.contains("no broker log in the run directory")), "{:?}", c.missing);
    }
    // A transaction the coordinator was never asked about says so.
    assert!(s.chains.iter().any(|c| c.missing.iter().any(|m| m.starts_with("no view of its coordinator"))));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_input_is_named_and_is_the_users() {
    let not_run = explain(&RunDir::at(std::env::temp_dir().join("sinkhole-no-such-run")), None).unwrap_err();
    assert!(matches!(not_run, StoryError::NotARun(_)) && not_run.is_bad_input(), "{not_run}");
    let mode = explain(&RunDir::at(fixture()), Some("kip939")).unwrap_err();
    assert!(mode.to_string().contains("its modes: legacy") && mode.is_bad_input(), "{mode}");
    let old = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/old-results/old-results-20261201T105322-7");
    let e = explain(&RunDir::at(old), None).unwrap_err();
    assert!(matches!(e, StoryError::OldRig { .. }) && e.is_bad_input(), "{e}");
    assert!(e.to_string().contains("sinkhole check"), "{e}");
}

/// A FLIP-319 run of Flink's own KafkaSink (`rig/tests/fixtures/flink-flip319`).
fn flink_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/flink-flip319/flink-flip319-long-outage-20261207T213421-1")
}

#[test]
fn flinks_own_sink_is_told_with_its_logs_the_held_commit_the_timeout_and_the_fenced_recovery() {
    let s = explain(&RunDir::at(flink_fixture()), None).unwrap();
    assert_eq!(s.len(), 1, "only the mode with a verdict");
    let s = &s[0];
    assert_eq!(s.mode, "flink-kafkasink");
    assert!(s.words.starts_with("LOST 408"), "{}", s.words);
    assert!(s.logs_read.iter().any(|l| l == "flink-kafkasink/flink/log/tm-0.log"), "{:?}", s.logs_read);
    let c = &s.chains[0];
    assert_eq!(c.txn.checkpoint, Some(4));
    let at = |what: &dyn Fn(&chain::Entry) -> bool| {
        c.timeline.iter().position(what).unwrap_or_else(|| panic!("{:#?}", c.timeline))
    };
    let held = at(&|e| e.link == Link::Wire && e.text.contains("EndTxn") && e.text.contains("delayed 12000 ms"));
    let outage = at(&|e| e.link == Link::Fault && e.text.contains("outage (job-outage) fired"));
    let rollback = at(&|e| e.link == Link::BrokerLog && e.text.contains("Completed rollback of ongoing transaction"));
    let fenced = at(&|e| e.link == Link::FlinkLog && e.text.contains("KafkaCommitter") && e.text.contains("ERROR"));
    assert!(held < outage && outage < rollback && rollback < fenced, "{held} {outage} {rollback} {fenced}");
    assert!(c.timeline[fenced].cite.starts_with("flink-kafkasink/flink/log/tm-0.log:"));
    assert!(!c.missing.iter().any(|m| m.contains("no Flink log")), "{:?}", c.missing);
}
