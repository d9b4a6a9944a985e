//! The words a person reads for a verdict: what happened to the data first,
//! then whether that was expected.
//!
//! `outcome` (`pass`, `fail`, …) says whether the expectation was met: right
//! for machines and exit codes, wrong for a reader skimming a table, who takes
//! `pass` for "safe" even when the expectation was that records get lost. So
//! the words lead with the data, as Jepsen's checkers do (`valid? false` when
//! data is lost, whatever was expected): `clean`, or the anomalies with their
//! counts in capitals (`LOST 4002`, `LOST 3, DUPLICATED 5`, `UNCOMMITTED
//! TAIL`), or `job failed`, `refused by the broker`, `not checked`. The
//! expectation only qualifies them:
//!
//! | outcome | words |
//! |---|---|
//! | pass | `LOST 4002 (expected)`, `clean (expected)` |
//! | fail | `LOST 12 — expected clean`, `clean — expected lost>0` |
//! | inconclusive | `inconclusive — premise unmet`; anomalies seen come first: `LOST 9, inconclusive — fault fired late` |
//! | observed | `DUPLICATED 7 (no expectation)` |
//! | error | `rig error` |
//!
//! An inconclusive verdict says why from its typed [`Cause`], never from the
//! reason text. Colour, where a screen has it, follows the outcome (expected
//! or not); the words follow the data.
use sinkhole_history::JobOutcome;

use super::{Cause, Outcome};
use crate::Counts;
use sinkhole_model::anomaly::{Anomaly, Group, Renderer, Show};

/// The words of a mode, or a whole matrix cell, the rig failed to run
/// through: nothing is said about the data.
pub const RIG_ERROR: &str = "rig error";

/// How the job ended, as far as the words need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Finished,
    Failed,
    /// The broker refused the mode (`JobOutcome::Unsupported`).
    Refused,
    /// Not recorded (a summary row of an older run, without its verdict).
    Unknown,
}

impl End {
    pub fn of(job: &JobOutcome) -> End {
        match job {
            JobOutcome::Finished => End::Finished,
            JobOutcome::Failed { .. } => End::Failed,
            JobOutcome::Unsupported { .. } => End::Refused,
        }
    }
}

/// What the words are made from: the judgement, the expectation as written
/// and what the checker counted.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    pub outcome: Outcome,
    /// Why it is inconclusive (None when unknown, or for another outcome).
    pub cause: Option<Cause>,
    /// The expectation as written (`clean`, `lost>0`); None without one.
    pub expectation: Option<&'a str>,
    pub counts: &'a Counts,
    /// A partition stayed below its high-water mark that no open transaction explains.
    pub uncommitted_tail: bool,
    /// The output was drained and counted (else the counts mean nothing).
    pub checked: bool,
    pub end: End,
}

/// An outcome said as whether the expectation was met, for counts over
/// many verdicts (a matrix's totals, the seeds of a scenario): `as
/// expected`, `NOT as expected`, `inconclusive`, `observed`, `rig error`.
/// Never `pass`: a count of passes read beside lost records reads "safe".
pub fn expectation_word(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "as expected",
        Outcome::Fail => "NOT as expected",
        Outcome::Inconclusive => "inconclusive",
        Outcome::Observed => "observed",
        Outcome::Error => RIG_ERROR,
    }
}

/// The anomalies of the data, each with its count, in capitals: `LOST 3`,
/// `ABORTED READ 2`, `UNCOMMITTED TAIL` (a partition count, so no number);
/// the share-group counts too (`REDELIVERED 12`, `ARCHIVED 3`), which say what
/// happened to the input. Empty when the data is clean.
///
/// The table's `words` renderer, group by group (the worst first); those said without a count
/// after the counted ones of the data, and what became of the input last.
pub fn anomalies(c: &Counts, uncommitted_tail: bool) -> Vec<String> {
    // A stuck partition is said by the open transaction that holds it when one is named; one
    // no open transaction explains is said even when not counted (a verdict written before the
    // count lists it only).
    let said_tail = match (uncommitted_tail, c.hanging_transaction + c.missing_marker) {
        (true, _) => c.uncommitted_tail.max(1),
        (false, 0) => c.uncommitted_tail,
        (false, _) => 0,
    };
    let c = &Counts { uncommitted_tail: said_tail, ..*c };
    let shown = |a: Anomaly| a.shown(Renderer::Words).shows(c.get(a));
    let (input, data): (Vec<Anomaly>, Vec<Anomaly>) =
        Anomaly::by_group().into_iter().filter(|a| shown(*a)).partition(|a| a.group() == Group::Input);
    let (named, counted): (Vec<Anomaly>, Vec<Anomaly>) =
        data.into_iter().partition(|a| a.shown(Renderer::Words) == Show::Named);
    let mut out: Vec<String> = counted.iter().map(|a| format!("{} {}", a.said(), c.get(*a))).collect();
    out.extend(named.iter().map(|a| a.said().to_string()));
    out.extend(input.iter().map(|a| format!("{} {}", a.said(), c.get(*a))));
    out
}

/// What happened to the data: `clean`, the anomalies, `job failed`,
/// `refused by the broker` or `not checked`.
pub fn data(f: &Facts) -> String {
    match f.end {
        End::Refused => return "refused by the broker".to_string(),
        End::Failed => return "job failed".to_string(),
        End::Finished | End::Unknown => {}
    }
    if !f.checked {
        return "not checked".to_string();
    }
    let a = anomalies(f.counts, f.uncommitted_tail);
    if a.is_empty() {
        "clean".to_string()
    } else {
        a.join(", ")
    }
}

/// The words of a verdict (see the module doc).
pub fn words(f: &Facts) -> String {
    match f.outcome {
        Outcome::Pass => format!("{} (expected)", data(f)),
        Outcome::Fail => match f.expectation {
            Some(e) => format!("{} — expected {e}", data(f)),
            // Only a failed job fails without an expectation.
            None => format!("{} — not expected", data(f)),
        },
        Outcome::Observed => format!("{} (no expectation)", data(f)),
        Outcome::Error => RIG_ERROR.to_string(),
        Outcome::Inconclusive => inconclusive(f),
    }
}

/// `inconclusive — <cause>`, after the anomalies the data showed (they are
/// real whatever made the run inconclusive). The uncommitted tail is not
/// repeated beside the cause that names it.
fn inconclusive(f: &Facts) -> String {
    let why = match f.cause {
        Some(c) => format!("inconclusive — {}", c.words()),
        None => "inconclusive".to_string(),
    };
    let counted = f.checked && matches!(f.end, End::Finished | End::Unknown);
    let tail = (f.uncommitted_tail || f.counts.uncommitted_tail > 0) && f.cause != Some(Cause::TransactionLeftOpen);
    let seen = if counted { anomalies(&Counts { uncommitted_tail: 0, ..*f.counts }, tail) } else { Vec::new() };
    if seen.is_empty() {
        why
    } else {
        format!("{}, {why}", seen.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(lost: u64, duplicated: u64) -> Counts {
        Counts { expected: 10_000, committed: 10_000 - lost, lost, duplicated, ..Counts::default() }
    }

    fn facts<'a>(outcome: Outcome, expectation: Option<&'a str>, c: &'a Counts) -> Facts<'a> {
        Facts {
            outcome,
            cause: None,
            expectation,
            counts: c,
            uncommitted_tail: false,
            checked: true,
            end: End::Finished,
        }
    }

    /// outcome, cause, expectation, counts, checked, end, and the words.
    type Case<'a> = (Outcome, Option<Cause>, Option<&'a str>, &'a Counts, bool, End, &'a str);

    /// Every outcome × data × cause, as a person reads it.
    #[test]
    fn the_words_of_every_case() {
        let clean = counts(0, 0);
        let lost = counts(4002, 0);
        let both = counts(3, 5);
        let many = Counts {
            aborted_read: 2,
            torn_transaction: 1,
            lingering: 4,
            nonmonotonic: 6,
            unexpected: 7,
            uncommitted_tail: 2,
            ..counts(0, 0)
        };
        let share = Counts { redelivered: 12, archived: 3, ..counts(0, 12) };
        let lost_open = Counts { uncommitted_tail: 1, ..lost };
        let (finished, failed, refused, unknown) = (End::Finished, End::Failed, End::Refused, End::Unknown);
        use Outcome::*;
        let table: Vec<Case> = vec![
            (Pass, None, Some("clean"), &clean, true, finished, "clean (expected)"),
            (Pass, None, Some("lost>0"), &lost, true, finished, "LOST 4002 (expected)"),
            (Pass, None, Some("duplicated>0"), &both, true, finished, "LOST 3, DUPLICATED 5 (expected)"),
            (Pass, None, Some("job-failed"), &lost, true, failed, "job failed (expected)"),
            (Pass, None, Some("refused"), &clean, false, refused, "refused by the broker (expected)"),
            (
                Pass,
                None,
                Some("duplicated>0,redelivered>0"),
                &share,
                true,
                finished,
                "DUPLICATED 12, REDELIVERED 12, ARCHIVED 3 (expected)",
            ),
            (Fail, None, Some("clean"), &lost, true, finished, "LOST 4002 — expected clean"),
            (Fail, None, Some("lost>0"), &clean, true, finished, "clean — expected lost>0"),
            (
                Fail,
                None,
                Some("clean"),
                &many,
                true,
                finished,
                "UNEXPECTED 7, ABORTED READ 2, TORN TRANSACTION 1, LINGERING 4, NONMONOTONIC 6, UNCOMMITTED TAIL — expected clean",
            ),
            (Fail, None, Some("clean"), &lost, true, failed, "job failed — expected clean"),
            (Fail, None, None, &clean, true, failed, "job failed — not expected"),
            (Fail, None, Some("refused"), &clean, true, finished, "clean — expected refused"),
            (Fail, None, Some("job-failed(X)"), &clean, true, failed, "job failed — expected job-failed(X)"),
            (Fail, None, Some("job-failed"), &clean, true, finished, "clean — expected job-failed"),
            (Observed, None, None, &both, true, finished, "LOST 3, DUPLICATED 5 (no expectation)"),
            (Observed, None, None, &clean, true, finished, "clean (no expectation)"),
            (Error, None, Some("clean"), &lost, true, finished, "rig error"),
            (
                Inconclusive,
                Some(Cause::BrokerCannotRun),
                Some("clean"),
                &clean,
                false,
                refused,
                "inconclusive — broker cannot run the mode",
            ),
            (
                Inconclusive,
                Some(Cause::RigStarved),
                Some("clean"),
                &lost,
                true,
                failed,
                "inconclusive — job failed, rig starved",
            ),
            (
                Inconclusive,
                Some(Cause::FaultNotFired),
                Some("lost>0"),
                &clean,
                true,
                finished,
                "inconclusive — fault did not fire",
            ),
            (
                Inconclusive,
                Some(Cause::FaultUnconfirmed),
                Some("clean"),
                &clean,
                true,
                finished,
                "inconclusive — fault not confirmed",
            ),
            (
                Inconclusive,
                Some(Cause::FaultLate),
                Some("lost>0"),
                &lost,
                true,
                finished,
                "LOST 4002, inconclusive — fault fired late",
            ),
            (
                Inconclusive,
                Some(Cause::PremiseUnmet),
                Some("lost>0"),
                &clean,
                true,
                finished,
                "inconclusive — premise unmet",
            ),
            (
                Inconclusive,
                Some(Cause::PremiseUnmet),
                Some("lost>0"),
                &both,
                true,
                finished,
                "LOST 3, DUPLICATED 5, inconclusive — premise unmet",
            ),
            (
                Inconclusive,
                Some(Cause::TransactionLeftOpen),
                Some("clean"),
                &lost_open,
                true,
                finished,
                "LOST 4002, inconclusive — stuck tail, holder unknown",
            ),
            (
                Inconclusive,
                Some(Cause::NotChecked),
                Some("clean"),
                &clean,
                false,
                finished,
                "inconclusive — output not checked",
            ),
            // An older row whose cause is not known.
            (Inconclusive, None, Some("clean"), &clean, true, unknown, "inconclusive"),
        ];
        for (outcome, cause, expectation, c, checked, end, want) in table {
            let f = Facts { cause, checked, end, ..facts(outcome, expectation, c) };
            assert_eq!(words(&f), want, "{outcome:?} {cause:?} {expectation:?} {end:?}");
        }
        // Every cause has its words, and they are short.
        for c in Cause::ALL {
            let f = Facts { cause: Some(c), ..facts(Inconclusive, Some("clean"), &clean) };
            let w = words(&f);
            assert!(w.starts_with("inconclusive — ") && w.ends_with(c.words()), "{w}");
            assert!(w.chars().count() <= 42, "{w}");
            assert_eq!(serde_json::to_value(c).unwrap(), c.name(), "{c:?}");
        }
    }

    #[test]
    fn an_outcome_in_counts_never_says_pass() {
        let all = [Outcome::Pass, Outcome::Fail, Outcome::Inconclusive, Outcome::Observed, Outcome::Error];
        let said: Vec<&str> = all.into_iter().map(expectation_word).collect();
        assert_eq!(said, ["as expected", "NOT as expected", "inconclusive", "observed", "rig error"]);
    }

    /// What matters most: no words put a word of comfort before lost data.
    #[test]
    fn anomalies_always_come_first_in_capitals() {
        let lost = counts(12, 0);
        for outcome in [Outcome::Pass, Outcome::Fail, Outcome::Observed, Outcome::Inconclusive] {
            let f = Facts { cause: Some(Cause::FaultLate), ..facts(outcome, Some("lost>0"), &lost) };
            assert!(words(&f).starts_with("LOST 12"), "{outcome:?}: {}", words(&f));
        }
    }

    #[test]
    fn the_tail_is_data_unless_the_cause_already_names_it() {
        let c = Counts { uncommitted_tail: 2, ..counts(306, 0) };
        let f = facts(Outcome::Observed, None, &c);
        assert_eq!(words(&f), "LOST 306, UNCOMMITTED TAIL (no expectation)");
        let nine = counts(9, 0);
        let f = Facts { uncommitted_tail: true, ..facts(Outcome::Pass, Some("lost>0"), &nine) };
        assert_eq!(words(&f), "LOST 9, UNCOMMITTED TAIL (expected)", "listed, not counted, still says so");
        let f = Facts { cause: Some(Cause::FaultLate), ..facts(Outcome::Inconclusive, Some("lost>0"), &c) };
        assert_eq!(words(&f), "LOST 306, UNCOMMITTED TAIL, inconclusive — fault fired late");
    }
}
