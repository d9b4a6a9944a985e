//! The counting and verdict of replays on synthetic tries (no cluster), what a try must show
//! to reproduce a finding, the saved file's header, and the command's checks and table.
use std::path::Path;

use sinkhole_checker::verdict::Outcome;
use sinkhole_model::{Mutant, SinkMode};

use super::*;
use crate::shrink::tests::row;

const M: SinkMode = SinkMode::Mutant(Mutant::RestoreOffByOne);

/// Try `n`: the same failure or not, with its words.
fn attempt(n: u32, same: bool, words: &str) -> Try {
    Try {
        n,
        outcome: if same { Outcome::Fail } else { Outcome::Pass },
        words: words.into(),
        same,
        run_id: Some(format!("r-{n}")),
        dir: None,
        cluster_reused_from: None,
    }
}

#[test]
fn a_try_reproduces_when_the_mode_fails_again_with_the_findings_anomaly_among_its_kinds() {
    assert!(shows(M, "lost", &row(M, Outcome::Fail, 2, 0, "expected clean")));
    assert!(shows(M, "lost", &row(M, Outcome::Fail, 2, 7, "expected clean")), "more kinds than the finding's");
    assert!(!shows(M, "lost", &row(M, Outcome::Fail, 0, 7, "expected clean")), "another kind");
    assert!(!shows(M, "lost", &row(M, Outcome::Pass, 0, 0, "clean as expected")), "not a failure");
    assert!(!shows(M, "lost", &row(M, Outcome::Inconclusive, 2, 0, "a fault fired late")), "inconclusive");
    assert!(!shows(M, "lost", &row(SinkMode::Legacy, Outcome::Fail, 2, 0, "x")), "another mode");
    assert!(shows(M, "job-failed", &row(M, Outcome::Fail, 0, 0, "the job failed 11 times")));
    // A failure that showed no kind is reproduced by a failure that shows none either.
    assert!(shows(M, UNMET, &row(M, Outcome::Fail, 0, 0, "expected lost>0")));
    assert!(!shows(M, UNMET, &row(M, Outcome::Fail, 3, 0, "expected lost>0")));
}

#[test]
fn the_count_keeps_what_the_other_tries_showed_and_why_tries_are_missing() {
    let tries = [
        attempt(1, true, "LOST 2 — expected clean"),
        attempt(2, false, "clean (expected)"),
        attempt(3, true, "LOST 1 — expected clean"),
    ];
    let r = Replay::of(&tries, 3, None);
    assert_eq!((r.tries, r.reproduced, r.cut.as_deref()), (3, 2, None));
    assert_eq!(r.other, ["try 2: clean (expected)"]);
    // Fewer tries than asked: the reason given, else the count.
    let cut = Replay::of(&tries[..1], 3, Some("the time budget was spent after 1 of 3 tries".into()));
    assert_eq!((cut.tries, cut.reproduced), (1, 1));
    assert_eq!(cut.cut.as_deref(), Some("the time budget was spent after 1 of 3 tries"));
    assert_eq!(Replay::of(&tries[..2], 3, None).cut.as_deref(), Some("2 of 3 tries made"));
}

#[test]
fn a_finding_replays_at_nine_tries_in_ten_and_the_command_passes_only_on_every_try() {
    let of = |reproduced: u32, tries: u32| Replay { tries, reproduced, ..Replay::default() };
    let r = of(9, 10);
    assert!(r.replays() && !r.every_time());
    assert_eq!(r.words(), "replays 9/10");
    let r = of(10, 10);
    assert!(r.replays() && r.every_time());
    assert_eq!(r.words(), "replays 10/10");
    let r = of(4, 10);
    assert!(!r.replays() && !r.every_time());
    assert_eq!(r.words(), "does not replay: 4/10");
    // Three tries: one miss is a third of them, under the bar.
    assert_eq!(of(3, 3).words(), "replays 3/3");
    assert_eq!(of(2, 3).words(), "does not replay: 2/3");
    assert_eq!(of(0, 1).words(), "does not replay: 0/1");
    // No try at all is no replay, and says why.
    let none = Replay { cut: Some("the time budget was spent after 0 of 3 tries".into()), ..Replay::default() };
    assert!(!none.replays() && !none.every_time());
    assert_eq!(none.words(), "not replayed: the time budget was spent after 0 of 3 tries");
    let partial = Replay { cut: Some("1 of 3 tries made".into()), ..of(1, 1) };
    assert_eq!(partial.words(), "replays 1/1 (1 of 3 tries made)");
}

#[test]
fn the_header_gives_the_seed_and_the_signatures_mode_and_anomaly() {
    let file = Path::new("found/01-lost.yaml");
    let text = "# found by `sinkhole explore` over s.yaml in run r-1 (Kafka 4.4.0): legacy~restore-off-by-one LOST 2\n\
                # signature: legacy~restore-off-by-one: lost × broker-kill+kill-workers × at_ms+checkpoint_persisted\n\
                # replay: sinkhole run found/01-lost.yaml --seed 8000\n\
                # seed: 8000\n\
                name: s\n\
                # seed: 1\n";
    let h = header(text, file).unwrap();
    assert_eq!(h.seed, Some(8000), "only the header's comments count");
    assert_eq!(h.target, Some(("legacy~restore-off-by-one".to_string(), "lost".to_string())));
    // A signature without faults, and a file without a header.
    let h = header("# signature: legacy: unmet × no-faults × no-faults\nname: s\n", file).unwrap();
    assert_eq!((h.seed, h.target), (None, Some(("legacy".into(), "unmet".into()))));
    assert_eq!(header("name: s\n", file).unwrap(), Header { seed: None, target: None });
    // Bad lines name the file, line and column.
    let e = header("# x\n# seed: 8k\n", file).unwrap_err();
    assert!(e.starts_with("found/01-lost.yaml:2:9: seed: not a number"), "{e}");
    let e = header("# signature: legacy lost\n", file).unwrap_err();
    assert!(e.starts_with("found/01-lost.yaml:1:14: signature: not `MODE: ANOMALY × …`"), "{e}");
}

#[test]
fn a_replay_that_cannot_be_made_is_refused_naming_the_file() {
    let dir = std::env::temp_dir().join(format!("sinkhole-replay-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/explore-tiny.yaml")).unwrap();
    let write = |name: &str, header: &str| {
        let p = dir.join(name);
        std::fs::write(&p, format!("{header}{body}")).unwrap();
        p
    };
    let args = |file: PathBuf| ReplayArgs { file, tries: 3, seed: None, results: dir.clone(), keep_data: false };
    let good = write("good.yaml", "# signature: legacy: lost × kill-workers × at_ms\n# seed: 12\n");
    let spec = check(&args(good.clone())).unwrap();
    assert_eq!((spec.seed, spec.mode, spec.anomaly.as_str(), spec.tries), (12, SinkMode::Legacy, "lost", 3));
    assert!(spec.drop_data && spec.deadline.is_none());
    assert!(
        spec.results.starts_with(&dir) && spec.results.file_name().unwrap().to_str().unwrap().starts_with("replay-")
    );
    // --seed overrides the header's.
    assert_eq!(check(&ReplayArgs { seed: Some(5), ..args(good.clone()) }).unwrap().seed, 5);
    let e = check(&ReplayArgs { tries: 0, ..args(good) }).unwrap_err();
    assert!(e.contains("--tries 0"), "{e}");
    let no_seed = write("no-seed.yaml", "# signature: legacy: lost × kill-workers × at_ms\n");
    let e = check(&args(no_seed.clone())).unwrap_err();
    assert!(e.contains("no-seed.yaml: no `# seed:` line") && e.contains("--seed"), "{e}");
    assert_eq!(check(&ReplayArgs { seed: Some(3), ..args(no_seed) }).unwrap().seed, 3);
    let e = check(&args(write("no-sig.yaml", "# seed: 12\n"))).unwrap_err();
    assert!(e.contains("no-sig.yaml: no `# signature:` line"), "{e}");
    let e = check(&args(write("other-mode.yaml", "# signature: kip939: lost × x × y\n# seed: 1\n"))).unwrap_err();
    assert!(e.contains("mode kip939 is not among the scenario's modes"), "{e}");
    let e = check(&args(dir.join("none.yaml"))).unwrap_err();
    assert!(e.contains("none.yaml"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_table_has_a_row_per_try_and_the_count() {
    let tries = vec![attempt(1, true, "LOST 2 — expected clean"), attempt(2, false, "clean (expected)")];
    let r = Replayed {
        file: "found/01-lost.yaml".into(),
        seed: 8000,
        mode: "legacy".into(),
        anomaly: "lost".into(),
        dir: "results/replay-x".into(),
        replay: Replay::of(&tries, 2, None),
        tries,
        wall_ms: 1,
    };
    let t = render(&r);
    assert!(t.starts_with("found/01-lost.yaml (seed 8000): legacy failing with lost\n"), "{t}");
    assert!(t.contains("    1  yes   r-1  LOST 2 — expected clean\n"), "{t}");
    assert!(t.contains("    2  no    r-2  clean (expected)\n"), "{t}");
    assert!(t.contains("does not replay: 1/2\nresults/replay-x/replay.json\n"), "{t}");
    let line = try_line(&r.tries[1], 2, Duration::from_secs(75));
    assert_eq!(line, "try 2/2 [1m15s]: clean (expected) (not the same failure)");
}
