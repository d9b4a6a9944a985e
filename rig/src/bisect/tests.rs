//! What a run showed, read from its summary (the stored 3-broker marker-bug run), a
//! version's verdict over seeds, and the report's boundary.
use super::*;
use crate::story::tests::fixture;

fn summary() -> Summary {
    let text = std::fs::read_to_string(fixture().join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_run_is_read_from_its_data_not_from_its_expectation() {
    // Expected on 4.4.0 (a pass), and still bad: the data lost records.
    let s = summary();
    assert_eq!(s.modes[0].outcome, Outcome::Pass);
    let (seen, words) = classify(&s);
    assert_eq!(seen, Seen::Bad("LOST, TORN TRANSACTION, MISSING MARKER".into()));
    assert!(words.starts_with("legacy: LOST 2869"), "{words}");
    // Inconclusive with nothing lost: not judged, whatever it expected.
    let mut unjudged = summary();
    let m = &mut unjudged.modes[0];
    m.outcome = Outcome::Inconclusive;
    m.counts = sinkhole_checker::Counts { expected: 12000, committed: 12000, ..Default::default() };
    m.words = "clean — inconclusive (premise unmet)".into();
    assert_eq!(classify(&unjudged).0, Seen::Inconclusive);
    // A clean run is clean even where the expectation wanted losses (a fail).
    let mut clean = unjudged.clone();
    clean.modes[0].outcome = Outcome::Fail;
    assert_eq!(classify(&clean), (Seen::Clean, "clean".into()));
}

#[test]
fn seeds_that_disagree_make_a_version_flaky() {
    let bad = (Seen::Bad("LOST".into()), String::new());
    let clean = (Seen::Clean, String::new());
    let none = (Seen::Inconclusive, String::new());
    assert_eq!(judge(&[bad.clone(), bad.clone(), none.clone()]), Seen::Bad("LOST".into()));
    assert_eq!(judge(&[clean.clone(), none.clone()]), Seen::Clean);
    assert_eq!(judge(&[clean, bad]), Seen::Flaky);
    assert_eq!(judge(&[none.clone(), none]), Seen::Inconclusive);
}

#[test]
fn the_report_names_the_boundary_the_flaky_and_the_versions_not_run() {
    let versions: Vec<String> = ["4.2.1", "4.2.2", "4.3.0", "4.3.1", "4.4.0"].map(String::from).to_vec();
    let a = BisectArgs {
        file: "s.yaml".into(),
        axis: Axis::Kafka,
        versions: versions.clone(),
        seed: 1,
        seed_count: 3,
        modes: vec![],
        results: "r".into(),
        every: false,
    };
    let mut s = Search::new(5, false);
    s.record(0, Seen::Clean);
    s.record(1, Seen::Clean);
    s.record(2, Seen::Flaky);
    s.record(3, Seen::Bad("LOST, MISSING MARKER".into()));
    s.record(4, Seen::Bad("LOST, MISSING MARKER".into()));
    let r = report(&a, &s, vec![Vec::new(); 5]);
    assert_eq!(r.boundaries, ["clean up to 4.2.2, LOST, MISSING MARKER from 4.3.1 (4.3.0 between: no clear answer)"]);
    assert_eq!(r.rows[2].verdict, "flaky");
    assert_eq!(r.first_bad.as_deref(), Some("4.3.1"));
    assert_eq!(r.seeds, [1, 2, 3]);
    let text = render(&r);
    assert!(text.contains("boundary: clean up to 4.2.2"), "{text}");
    // A version the search skipped says why.
    let three = BisectArgs { versions: versions[..3].to_vec(), ..a };
    let mut t = Search::new(3, false);
    t.record(0, Seen::Clean);
    t.record(2, Seen::Clean);
    let r = report(&three, &t, vec![Vec::new(); 3]);
    assert_eq!(r.rows[1].verdict, "not run");
    assert!(r.rows[1].detail.contains("between 4.2.1 and 4.3.0"), "{}", r.rows[1].detail);
    assert!(r.none.as_deref().unwrap().contains("every version that gave a clear answer was clean"));
}
