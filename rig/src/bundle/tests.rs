//! A bundle of the stored 3-broker marker-bug run: small, complete, replayable, no secrets.
use std::process::Command;

use super::*;
use crate::story::tests::{copy, fixture};

fn listing(path: &Path) -> String {
    let out = Command::new("tar").arg("tzf").arg(path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn read_in(path: &Path, name: &str) -> String {
    let out = Command::new("tar").arg("xzOf").arg(path).arg(name).output().unwrap();
    assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_bundle_holds_what_a_report_needs_under_the_limit() {
    let out = std::env::temp_dir().join(format!("sinkhole-bundle-{}.tar.gz", std::process::id()));
    let b = write(&RunDir::at(fixture()), Some(&out)).unwrap();
    assert!(b.bytes < MAX_BYTES && b.bytes == std::fs::metadata(&out).unwrap().len() as usize);
    assert!(b.left_out.is_empty());
    let root = "markers-skipped-leader-dies-20261207T212037-1";
    let list = listing(&out);
    for f in [
        "README.md",
        "scenario.yaml",
        "schedule.json",
        "summary.json",
        "versions.json",
        "legacy/story.md",
        "legacy/verdict.json",
        "legacy/history.jsonl",
        "cluster/node-2/server.properties",
        "log-excerpts/cluster-node-2-server.log.txt",
    ] {
        assert!(list.lines().any(|l| l == format!("{root}/{f}")), "{f} not in\n{list}");
    }
    assert_eq!(
        b.replay,
        "sinkhole setup --kafka 4.4.0 && sinkhole run scenario.yaml --kafka 4.4.0 --seed 1 --mode legacy"
    );
    let readme = read_in(&out, &format!("{root}/README.md"));
    assert!(readme.contains(&b.replay) && readme.contains("LOST 2869"), "{readme}");
    let excerpt = read_in(&out, &format!("{root}/log-excerpts/cluster-node-2-server.log.txt"));
    assert!(excerpt.contains("likely deleted") || excerpt.contains("Fencing broker"), "{excerpt}");
    let story = read_in(&out, &format!("{root}/legacy/story.md"));
    assert!(story.contains("| time (UTC) |"));
    // The scenario in the bundle is the run's resolved one: it loads as a scenario.
    let scenario = std::env::temp_dir().join(format!("sinkhole-bundle-scenario-{}.yaml", std::process::id()));
    std::fs::write(&scenario, read_in(&out, &format!("{root}/scenario.yaml"))).unwrap();
    sinkhole_scenario::load(&scenario).unwrap_or_else(|e| panic!("{}", e.render()));
    let _ = std::fs::remove_file(&scenario);
    std::fs::remove_file(&out).unwrap();
}

#[test]
fn secrets_in_a_runs_configs_never_reach_the_bundle() {
    let dir = copy("secrets");
    let props = dir.join("cluster/node-1/server.properties");
    let mut text = std::fs::read_to_string(&props).unwrap();
    text.push_str("sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\" password=\"hunter2\";\nssl.keystore.password=hunter3\n");
    std::fs::write(&props, text).unwrap();
    let out = dir.join("b.tar.gz");
    let b = write(&RunDir::at(&dir), Some(&out)).unwrap();
    assert_eq!(b.redacted, 2);
    let bytes = Command::new("tar").arg("xzOf").arg(&out).output().unwrap().stdout;
    let all = String::from_utf8_lossy(&bytes);
    assert!(!all.contains("hunter2") && !all.contains("hunter3"));
    assert!(all.contains(redact::REDACTED));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_directory_that_is_no_run_is_bad_input() {
    let e = write(&RunDir::at(std::env::temp_dir().join("sinkhole-no-such-run")), None).unwrap_err();
    assert!(e.is_bad_input(), "{e}");
}

#[test]
fn a_flink_runs_bundle_names_flink_the_connector_and_its_jar() {
    let run = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/flink-flip319/flink-flip319-long-outage-20261207T213421-1");
    let out = std::env::temp_dir().join(format!("sinkhole-bundle-flink-{}.tar.gz", std::process::id()));
    let b = write(&RunDir::at(&run), Some(&out)).unwrap();
    assert!(b.replay.ends_with("--seed 1 --mode flink-kafkasink"), "{}", b.replay);
    let root = "flink-flip319-long-outage-20261207T213421-1";
    let v: serde_json::Value = serde_json::from_str(&read_in(&out, &format!("{root}/versions.json"))).unwrap();
    assert_eq!(v["flink"]["flink"], "2.2.1");
    assert_eq!(v["flink"]["connector"], "5.0.0-2.2");
    assert_eq!(v["flink_provenance"]["flink-kafkasink"]["proven"], true);
    assert_eq!(v["rig_that_ran"]["schema_version"], 1);
    assert!(listing(&out).contains(&format!("{root}/log-excerpts/flink-kafkasink-flink-log-tm-0.log.txt")));
    std::fs::remove_file(&out).unwrap();
}
