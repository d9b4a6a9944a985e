//! `sinkhole explore` end to end on real Kafka 4.4.0: one run of a small scenario with a
//! seed whose schedule restores the job, under the mutant that rewinds one record too far,
//! so the run must be a finding: saved as found/01-lost.yaml with its seed, in explore.json
//! with its signature and in explore.html, the job and the schedule the binary ran the ones the
//! library draws (and aims) for that seed, the protocol states its history shows in its row and
//! in the campaign's coverage of states; replayed once (`--replay 1`) on the run's cluster, kept
//! healthy for it, and reproduced; the brokers' log segments removed with the cluster at the end.
use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use sinkhole_checker::reached::State;
use sinkhole_model::SinkMode;
use sinkhole_rig::explore::aim::Aims;
use sinkhole_scenario::Family;

#[test]
fn a_run_that_loses_records_is_a_finding_saved_with_its_seed() {
    let _turn = common::serial();
    common::dist("4.4.0");
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/explore-tiny.yaml");
    let s = sinkhole_scenario::load(&file).unwrap_or_else(|e| panic!("{}", e.render()));
    // The campaign's first run: nothing reached yet, so the seed may aim it. A seed aimed at a
    // restore of one pending committable (a kill in a checkpoint's persist→notify window, so
    // the restore is from a checkpoint the mutant rewinds past) whose faults touch no broker (a
    // broker's restart is slow next to a six-second job).
    let mode = SinkMode::parse("legacy~restore-off-by-one").unwrap();
    let aims = Aims::new(&s, &[mode]);
    let planned = |seed: u64| aims.run_of(&s, seed, &Default::default());
    let seed = (0..200)
        .find(|seed| {
            let (run, aim) = planned(*seed);
            aim.is_some_and(|a| a.state == State::RestorePending1)
                && run.drawn.faults.iter().all(|f| f.kind.kind().family() != Family::Brokers)
        })
        .expect("a seed aimed at restore-pending-1");
    let results = common::test_dir("explore");
    let out = Command::new(common::bin())
        .arg("explore")
        .arg(&file)
        .args(["--mode", "legacy~restore-off-by-one", "--runs", "1", "--time", "5m", "--shrink-runs", "0"])
        .args(["--replay", "1"])
        .args(["--seed", &seed.to_string(), "--results"])
        .arg(&results)
        .output()
        .expect("run sinkhole explore");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}\n{stderr}");
    assert_eq!(out.status.code(), Some(1), "a finding exits 1");
    assert!(stderr.contains("explore: run 1/1 [") && stderr.contains("findings so far 1"), "{stderr}");
    let dir = std::fs::read_dir(&results).unwrap().next().unwrap().unwrap().path();
    let e: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("explore.json")).unwrap()).unwrap();
    assert_eq!(e["schema_version"], 1, "provenance first");
    assert_eq!((e["runs_done"].as_u64(), e["inconclusive"].as_u64()), (Some(1), Some(0)), "{e}");
    let f = &e["findings"][0];
    assert_eq!(f["signature"]["mode"], "legacy~restore-off-by-one", "{f}");
    assert_eq!(f["signature"]["anomaly"], "lost", "{f}");
    assert_eq!(f["seed"].as_u64(), Some(seed));
    assert_eq!(f["not_shrunk"], "--shrink-runs 0");
    let found = dir.join("found/01-lost.yaml");
    assert_eq!(Path::new(f["path"].as_str().unwrap()), found);
    let text = std::fs::read_to_string(&found).unwrap();
    assert!(text.contains(&format!("# seed: {seed}\n")) && text.contains("--seed"), "{text}");
    let saved = sinkhole_scenario::load(&found).unwrap_or_else(|e| panic!("{}", e.render()));
    assert_eq!(saved.modes.iter().map(|m| m.name()).collect::<Vec<_>>(), ["legacy~restore-off-by-one"]);
    // The binary ran what the library draws for the seed: its job, then its faults.
    let ran = sinkhole_scenario::load(&dir.join("schedules/run-001.yaml")).unwrap_or_else(|e| panic!("{}", e.render()));
    let (planned_run, aim) = planned(seed);
    assert_eq!((&ran.job, &ran.faults), (&planned_run.scenario.job, &planned_run.drawn.faults));
    assert_eq!(e["runs"][0]["shape"].as_str(), Some(planned_run.shape.text().as_str()), "{e}");
    assert_eq!(saved.faults, ran.faults, "not shrunk: the run's faults");
    assert!(e["coverage"].as_array().is_some_and(|c| !c.is_empty() && c.iter().all(|c| c["hits"] == c["runs"])), "{e}");
    // The aim and the states the restored mode reached, in its row and in the campaign's
    // cells (every state listed, the run's with one run and one hit).
    let row = &e["runs"][0];
    assert_eq!(
        (row["aimed_at"].as_str(), aim.map(|a| a.state)),
        (Some("restore-pending-1"), Some(State::RestorePending1))
    );
    let reached: Vec<&str> = row["modes"][0]["states"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
    assert!(reached.contains(&"restore-pending-1"), "{reached:?}");
    assert!(stderr.contains("aimed at restore-pending-1: reached"), "{stderr}");
    let cells = e["states"].as_array().unwrap();
    assert_eq!(cells.len(), State::ALL.len(), "{e}");
    for c in cells {
        let name = c["state"].as_str().unwrap();
        let runs = u64::from(reached.contains(&name));
        assert_eq!((c["runs"].as_u64(), c["hits"].as_u64()), (Some(runs), Some(runs)), "{c}");
    }
    assert!(stdout.contains("protocol states: ") && stdout.contains("never reached ("), "{stdout}");
    // The detection: the mutant found in run 1, no later than the campaign's end; the memory
    // the campaign held after the run, freed memory handed back.
    let d = &e["detection"][0];
    assert_eq!(
        (d["mode"].as_str(), d["first"]["run"].as_u64(), d["first"]["seed"].as_u64()),
        (Some("legacy~restore-off-by-one"), Some(1), Some(seed)),
        "{e}"
    );
    assert!(d["first"]["at_ms"].as_u64().is_some_and(|t| t > 0 && t <= e["wall_ms"].as_u64().unwrap()), "{e}");
    assert!(stdout.contains("legacy~restore-off-by-one  finding 01 in run 1 of 1"), "{stdout}");
    let rss = e["runs"][0]["rss_bytes"].as_u64().expect("the resident set after the run");
    assert!(rss > 1 << 20 && e["rss_start_bytes"].as_u64().is_some(), "{e}");
    assert!(stdout.contains("memory between runs: "), "{stdout}");
    // librdkafka's own lines stay off the console (the run's log has them).
    assert!(!stderr.contains("librdkafka"), "{stderr}");
    // explore.html beside it: the finding with its file and replay, the run linked to its report.
    let page = std::fs::read_to_string(dir.join("explore.html")).unwrap();
    assert!(page.contains("<a href=\"found/01-lost.yaml\">"), "{page}");
    assert!(page.contains(&format!("{} --seed {seed}</code>", found.display())), "{page}");
    assert!(page.contains("report.html\">1</a>") && page.contains("class=\"hit\""), "{page}");
    // The replay: the saved file run again with its seed on the run's cluster (kept, since
    // the run left it healthy), the same failure again; said in the table and on the page.
    assert_eq!((f["replay"]["tries"].as_u64(), f["replay"]["reproduced"].as_u64()), (Some(1), Some(1)), "{f}");
    assert!(stdout.contains("      replays 1/1\n"), "{stdout}");
    assert!(page.contains("<br>replays 1/1</td>"), "{page}");
    let run = std::fs::read_dir(dir.join("runs")).unwrap().next().unwrap().unwrap().path();
    let tried = std::fs::read_dir(run.join("replay")).unwrap().next().unwrap().unwrap().path();
    let tried: Value = serde_json::from_str(&std::fs::read_to_string(tried.join("summary.json")).unwrap()).unwrap();
    assert_eq!(tried["seed"].as_u64(), Some(seed));
    assert_eq!(tried["cluster_reused_from"].as_str(), e["runs"][0]["run_id"].as_str(), "{tried}");
    assert!(e["runs"][0].get("cluster_fresh_because").is_none(), "{e}");
    // explore.log: the runs' lines and the campaign's, each stamped with its time.
    let log = std::fs::read_to_string(dir.join("explore.log")).unwrap();
    let stamped = |l: &str| l.as_bytes().get(12) == Some(&b' ') && l.as_bytes().get(8) == Some(&b'.');
    assert!(log.lines().all(|l| stamped(l) || l.starts_with(' ')), "{log}");
    assert!(
        log.contains("explore: finding 01: replay try 1/1 [") && log.contains("reusing the cluster of run"),
        "{log}"
    );
    // The brokers: log segments removed with the cluster at the campaign's end, their logs kept.
    let node = run.join("cluster/node-1");
    assert!(node.join("server.log").is_file() && node.join("server.properties").is_file(), "{}", node.display());
    assert!(!node.join("data").exists(), "a campaign's run keeps no log segments: {}", node.display());
}
