//! The anomaly table (`sinkhole_model::anomaly`) held to what this crate and the docs do with
//! it: an expectation names every anomaly by its key and is judged on its count, `clean`
//! forbids exactly what the table says, each row's check is where the row says, and the
//! docs (GUIDE.md's checker tables, words and JSON fields; SCENARIOS.md's expectation keys)
//! list the table. The renderers are held to it in the rig (`rig/src/anomaly_tests.rs`).
use std::collections::BTreeMap;

use sinkhole_model::anomaly::{Anomaly, Group, Renderer, Severity, Show};
use sinkhole_model::SinkMode;
use sinkhole_scenario::{Cmp, Condition, CountName, ExpectWord, Expectation};

use crate::verdict::{conditions_by, evaluate, expectation_text};
use crate::Counts;

/// A valid scenario whose legacy mode expects `expect` (with a share-group source when `share`).
fn scenario(expect: &str, share: bool) -> String {
    let source = if share { "source: {type: share-group}\n" } else { "" };
    format!(
        "name: t\ncluster: {{brokers: 1}}\ntopic: {{partitions: 1}}\n\
         job: {{parallelism: 1, records_per_subtask: 10, checkpoint_interval_ms: 1000, transaction_timeout_ms: 5000}}\n\
         {source}modes: [legacy]\nexpect:\n  legacy: {expect}\n"
    )
}

fn counts(a: Anomaly, n: u64) -> Counts {
    let mut c = Counts { expected: 10, committed: 10, ..Counts::default() };
    *c.get_mut(a) = n;
    c
}

#[test]
fn every_anomaly_is_named_by_an_expectation_by_its_key_and_judged_on_its_count() {
    for &a in Anomaly::ALL {
        let text = scenario(&format!("{{{}: \">0\"}}", a.key()), a.group() == Group::Input);
        let s = sinkhole_scenario::from_str(&text, "t.yaml").unwrap_or_else(|e| panic!("{a:?}: {}", e.render()));
        let e = &s.expect[&SinkMode::Legacy];
        assert_eq!(e, &Expectation::Counts(BTreeMap::from([(a, Condition::Expr(">0".into()))])), "{a:?}");
        // Written back as it was read, in the words a verdict shows it by.
        let j = serde_json::to_value(e).unwrap();
        assert_eq!(j, serde_json::json!({a.key(): ">0"}));
        assert_eq!(serde_json::from_value::<Expectation>(j).unwrap(), *e);
        assert_eq!(expectation_text(Some(e)), format!("{}>0", a.key()));
        // Judged on its own count, and on no other.
        let (met, why) = evaluate(e, &counts(a, 0));
        assert!(!met && why.starts_with(&format!("expected {} >0, got 0", a.key())), "{a:?}: {why}");
        for &b in Anomaly::ALL {
            let (met, why) = evaluate(e, &counts(b, 7));
            assert_eq!(met, a == b, "{a:?} judged on {b:?}: {why}");
        }
        // `clean` forbids what the table says it forbids.
        let (met, why) = evaluate(&Expectation::Word(ExpectWord::Clean), &counts(a, 7));
        assert_eq!(met, !a.severity().forbidden_by_clean(), "{a:?}: {why}");
    }
    // A name that is not a key (here the stored field) is refused, and the keys are listed.
    let refused = sinkhole_scenario::from_str(&scenario("{torn_transaction: 0}", false), "t.yaml").unwrap_err();
    assert!(refused.render().contains("torn-transaction"), "{}", refused.render());
}

#[test]
fn an_anomaly_every_expectation_forbids_is_judged_unless_the_expectation_names_it() {
    let always: Vec<Anomaly> = Anomaly::ALL.iter().copied().filter(|a| a.severity().forbidden_unless_named()).collect();
    assert_eq!(always, [Anomaly::HangingTransaction, Anomaly::MissingMarker]);
    let implied = |but: Option<Anomaly>| always.iter().filter(move |a| Some(**a) != but).map(|a| (*a, Cmp::Eq(0)));
    let lost = Expectation::Counts(BTreeMap::from([(Anomaly::Lost, Condition::Expr(">0".into()))]));
    let want: Vec<(CountName, Cmp)> = [(Anomaly::Lost, Cmp::Gt(0))].into_iter().chain(implied(None)).collect();
    assert_eq!(conditions_by(&lost, Anomaly::severity), want);
    // Named, it is judged as written.
    let named = Expectation::Counts(BTreeMap::from([
        (Anomaly::Lost, Condition::Expr(">0".into())),
        (Anomaly::MissingMarker, Condition::Expr(">0".into())),
    ]));
    let want: Vec<(CountName, Cmp)> = [(Anomaly::Lost, Cmp::Gt(0)), (Anomaly::MissingMarker, Cmp::Gt(0))]
        .into_iter()
        .chain(implied(Some(Anomaly::MissingMarker)))
        .collect();
    assert_eq!(conditions_by(&named, Anomaly::severity), want);
    let clean = conditions_by(&Expectation::Word(ExpectWord::Clean), Anomaly::severity);
    assert!(always.iter().all(|a| clean.contains(&(*a, Cmp::Eq(0)))));
    assert_eq!(conditions_by(&Expectation::Word(ExpectWord::JobFailed), Anomaly::severity), []);
    // The implied conditions fail an expectation, and go without saying when they hold.
    for &a in &always {
        let (met, why) = evaluate(&lost, &Counts { lost: 3, ..counts(a, 1) });
        assert!(!met && why.starts_with(&format!("expected {a} ==0, got 1")), "{why}");
    }
    let (met, why) = evaluate(&lost, &counts(Anomaly::Lost, 3));
    assert!(met && why.starts_with("as expected, lost >0 (3): "), "{why}");
    // The rule follows the table's severity, not a list of its own.
    let torn = |k: CountName| if k == Anomaly::TornTransaction { Severity::Always } else { k.severity() };
    assert!(conditions_by(&lost, torn).contains(&(Anomaly::TornTransaction, Cmp::Eq(0))));
}

#[test]
fn each_anomalys_check_is_where_the_table_says() {
    for &a in Anomaly::ALL {
        let check = a.info().check;
        let (file, path) = check.split_once(": ").unwrap_or_else(|| panic!("{a:?}: {check:?} is `file.rs: function`"));
        let src = std::fs::read_to_string(format!("{}/src/{file}", env!("CARGO_MANIFEST_DIR")))
            .unwrap_or_else(|e| panic!("{a:?}: {file}: {e}"));
        let (owner, function) = path.rsplit_once("::").map_or((None, path), |(o, f)| (Some(o), f));
        assert!(
            src.contains(&format!("fn {function}(")) || src.contains(&format!("fn {function}<")),
            "{a:?}: no fn {function} in {file}"
        );
        if let Some(owner) = owner {
            let implemented = src.lines().any(|l| {
                l.starts_with("impl") && l.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == owner)
            });
            assert!(implemented, "{a:?}: no impl of {owner} in {file}");
        }
    }
}

// ---------------------------------------------------------------------------
// The docs

fn doc(name: &str) -> String {
    std::fs::read_to_string(format!("{}/../docs/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The text from `start` to the first `end` after it.
fn between<'a>(doc: &'a str, start: &str, end: &str) -> &'a str {
    let from = doc.find(start).unwrap_or_else(|| panic!("no {start:?} in the docs"));
    let rest = &doc[from + start.len()..];
    &rest[..rest.find(end).unwrap_or_else(|| panic!("no {end:?} after {start:?}"))]
}

/// The backticked words of a text.
fn ticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The first cells of the table that follows `heading`, as the backticked name each holds.
fn first_column<'a>(doc: &'a str, heading: &str) -> Vec<&'a str> {
    let rest = &doc[doc.find(heading).unwrap_or_else(|| panic!("no {heading:?} in the docs"))..];
    rest.lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| ticked(l.trim_start_matches('|').split('|').next().unwrap_or(""))[0])
        .collect()
}

fn of<'a>(pick: impl Fn(Anomaly) -> bool, name: impl Fn(Anomaly) -> &'a str) -> Vec<&'a str> {
    Anomaly::ALL.iter().copied().filter(|a| pick(*a)).map(name).collect()
}

#[test]
fn guide_lists_every_anomaly_where_it_describes_them() {
    let guide = doc("GUIDE.md");
    let output = |a: Anomaly| matches!(a.group(), Group::Output | Group::Order);
    // The checker's table: the output's counts, by field, in the table's order.
    assert_eq!(first_column(&guide, "### Checker and verdict"), of(output, Anomaly::field));
    let share = between(&guide, "With a [share-group source](#share-group-source) two more counts", ".");
    assert_eq!(ticked(share), of(|a| a.group() == Group::Input, Anomaly::field));
    let clean = between(&guide, "A `clean` expectation forbids", ";");
    assert_eq!(ticked(clean), of(|a| output(a) && a.severity().forbidden_by_clean(), Anomaly::field));
    // The readers' table, by key.
    let readers = |a: Anomaly| a.group() == Group::Readers;
    assert_eq!(first_column(&guide, "### What live readers saw"), of(readers, Anomaly::key));
    let clean = between(&guide, "`clean` forbids `G1a`", ";");
    assert_eq!(
        ["G1a"].into_iter().chain(ticked(clean)).collect::<Vec<_>>(),
        of(|a| readers(a) && a.severity().forbidden_by_clean(), Anomaly::key)
    );
    // The words: every anomaly the words say, in capitals, as the table says it.
    let words = between(&guide, "- the data: `clean`, or every anomaly with its count in capitals", "— or");
    let said: Vec<String> = ticked(words)
        .iter()
        .map(|w| w.trim_end_matches(|c: char| c.is_ascii_digit() || c == ' ').to_string())
        .collect();
    let mut want = of(|a| a.shown(Renderer::Words) != Show::Never, Anomaly::said);
    want.sort();
    let mut listed: Vec<&str> = said.iter().map(String::as_str).filter(|w| *w != "clean").collect();
    listed.sort();
    assert_eq!(listed, want, "the words GUIDE.md lists");
    // verdict.json's counts: every field.
    let fields = between(&guide, "`counts` (`expected`, `committed`, ", ")");
    assert_eq!(ticked(fields), of(|_| true, Anomaly::field), "the counts verdict.json holds");
}

#[test]
fn scenarios_md_names_every_anomaly_an_expectation_can_name() {
    let scenarios = doc("SCENARIOS.md");
    let keys = |text: &str| -> Vec<Anomaly> { ticked(text).into_iter().filter_map(Anomaly::parse).collect() };
    let clean = between(&scenarios, "- `clean`: every anomaly count 0:", "\n- ");
    assert_eq!(keys(clean), Anomaly::forbidden_by_clean().collect::<Vec<_>>(), "what `clean` forbids");
    let conditions = between(&scenarios, "- conditions on counts:", "Counts not named are free");
    let mut named = keys(conditions);
    named.sort();
    assert_eq!(named, Anomaly::ALL, "every count a condition can name");
}
