//! `results/<run-id>/junit.xml`: one test case per scenario × mode, for CI
//! systems that read JUnit (the de-facto schema of Ant's JUnit task, which
//! Jenkins, GitLab and GitHub reporters accept).
//!
//! - `fail` → `<failure message="…">` (an expectation not met, or a job
//!   that failed);
//! - `error` → `<error message="…" type="rig">`: the rig itself failed
//!   for that mode, which says nothing about the sink;
//! - `inconclusive` → `<skipped message="…">`: the run could not show
//!   what the scenario tests, which is not a pass;
//! - `pass` and `observed` → a plain test case, the same text in its output.
//!
//! Every message starts with the verdict's words ([`message`]: `LOST 12 —
//! expected clean — <reason>`), so a CI page that shows a passing case with
//! lost records says so first.
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::results::summary::{ModeSummary, Summary};
use sinkhole_base::rundir::RunDir;
use sinkhole_checker::verdict::Outcome;

/// Escapes text for an XML attribute or element. Characters XML 1.0 cannot
/// hold at all (most C0 controls) become U+FFFD.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// A test case's message: the verdict's words, then its reason.
pub fn message(m: &ModeSummary) -> String {
    format!("{} — {}", m.words(), m.reason)
}

pub fn render(s: &Summary) -> String {
    let failures = s.modes.iter().filter(|m| m.outcome == Outcome::Fail).count();
    let skipped = s.modes.iter().filter(|m| m.outcome == Outcome::Inconclusive).count();
    let errors = s.modes.iter().filter(|m| m.outcome == Outcome::Error).count();
    let time = |ms: u64| format!("{:.3}", ms as f64 / 1000.0);
    let total: u64 = s.modes.iter().map(|m| m.wall_ms).sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"sinkhole\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{}\">",
        s.modes.len(),
        time(total)
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{}\">",
        escape(&s.scenario),
        s.modes.len(),
        time(total)
    );
    let _ = writeln!(x, "    <properties>");
    let seed = s.seed.to_string();
    let props = [
        ("run_id", s.run_id.as_str()),
        ("kafka", s.kafka.as_str()),
        ("seed", &seed),
        ("sinkhole_version", sinkhole_base::provenance::VERSION),
        ("sinkhole_git_commit", sinkhole_base::provenance::GIT_COMMIT),
    ];
    for (k, v) in props {
        let _ = writeln!(x, "      <property name=\"{k}\" value=\"{}\"/>", escape(v));
    }
    let _ = writeln!(x, "    </properties>");
    for m in &s.modes {
        let head = format!(
            "    <testcase classname=\"{}\" name=\"{}\" time=\"{}\"",
            escape(&s.scenario),
            escape(m.mode.name()),
            time(m.wall_ms)
        );
        let text = format!("{}\nexpected: {}\n{}", m.words(), m.expected, m.reason);
        let message = escape(&message(m));
        match m.outcome {
            Outcome::Fail => {
                let _ = writeln!(x, "{head}>");
                let _ = writeln!(
                    x,
                    "      <failure message=\"{message}\" type=\"{}\">{}</failure>",
                    if m.expected_met == Some(false) { "expectation-not-met" } else { "failed" },
                    escape(&text)
                );
                let _ = writeln!(x, "    </testcase>");
            }
            Outcome::Inconclusive => {
                let _ = writeln!(x, "{head}>");
                let _ = writeln!(x, "      <skipped message=\"{message}\"/>");
                let _ = writeln!(x, "    </testcase>");
            }
            Outcome::Error => {
                let _ = writeln!(x, "{head}>");
                let _ = writeln!(x, "      <error message=\"{message}\" type=\"rig\"/>");
                let _ = writeln!(x, "    </testcase>");
            }
            Outcome::Pass | Outcome::Observed => {
                let _ = writeln!(x, "{head}>");
                let _ = writeln!(x, "      <system-out>{}</system-out>", escape(&text));
                let _ = writeln!(x, "    </testcase>");
            }
        }
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// Writes the run's `junit.xml`.
pub fn write(dir: &RunDir, s: &Summary) -> std::io::Result<PathBuf> {
    let path = dir.junit();
    std::fs::write(&path, render(s))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkhole_checker::verdict::Cause;
    use sinkhole_checker::Counts;
    use sinkhole_model::SinkMode;

    fn row(mode: SinkMode, outcome: Outcome, met: Option<bool>, reason: &str) -> ModeSummary {
        ModeSummary {
            mode,
            outcome,
            words: String::new(),
            inconclusive_cause: None,
            expected_met: met,
            expected: "lost>0".into(),
            reason: reason.into(),
            counts: Counts::default(),
            verdict: None,
            wall_ms: 1500,
            checked: true,
        }
    }

    #[test]
    fn escapes_markup_quotes_and_controls() {
        assert_eq!(escape(r#"a<b>&"c"'d'"#), "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;");
        assert_eq!(escape("x\ny\u{1}z–"), "x&#10;y\u{FFFD}z–");
    }

    #[test]
    fn one_case_per_mode_failed_skipped_or_passed() {
        let s = Summary {
            run_id: "flip319-x-1".into(),
            scenario: "flip<319>".into(),
            source: "s.yaml".into(),
            kafka: "4.4.0".into(),
            seed: 1,
            dir: "/tmp".into(),
            modes: vec![
                row(SinkMode::Legacy, Outcome::Fail, Some(false), "expected lost >0, got 0 & \"more\""),
                ModeSummary {
                    inconclusive_cause: Some(Cause::BrokerCannotRun),
                    checked: false,
                    ..row(SinkMode::Kip939, Outcome::Inconclusive, None, "the broker cannot run this mode: <35>")
                },
                row(SinkMode::TwopcInject, Outcome::Pass, Some(true), "clean as expected"),
                row(SinkMode::AtLeastOnce, Outcome::Observed, None, "no expectation"),
            ],
            exit_code: 1,
            fail_on_inconclusive: false,
            started: None,
            wall_ms: None,
            ..Default::default()
        };
        let x = render(&s);
        assert!(x.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"sinkhole\" tests=\"4\" failures=\"1\" errors=\"0\" skipped=\"1\""), "{x}");
        assert!(x.contains(r#"<testcase classname="flip&lt;319&gt;" name="legacy" time="1.500">"#), "{x}");
        assert!(
            x.contains(
                r#"<failure message="clean — expected lost&gt;0 — expected lost &gt;0, got 0 &amp; &quot;more&quot;" type="expectation-not-met">clean — expected lost&gt;0&#10;expected: lost&gt;0&#10;"#
            ),
            "{x}"
        );
        assert!(
            x.contains(
                r#"<testcase classname="flip&lt;319&gt;" name="kip939" time="1.500">
      <skipped message="inconclusive — broker cannot run the mode — the broker cannot run this mode: &lt;35&gt;"/>"#
            ),
            "{x}"
        );
        assert_eq!(x.matches("<testcase ").count(), 4);
        assert_eq!(x.matches("<failure ").count(), 1);
        assert_eq!(x.matches("<skipped ").count(), 1);
        assert!(x.contains(r#"name="twopc-inject""#) && x.contains(r#"name="at-least-once""#));
        // A passing case says what happened to the data first, in its output.
        assert!(
            x.contains("<system-out>clean (expected)&#10;expected: lost&gt;0&#10;clean as expected</system-out>"),
            "{x}"
        );
        // Well-formed enough: every opened element is closed.
        assert_eq!(x.matches("<testcase ").count(), x.matches("</testcase>").count());
        assert!(x.ends_with("</testsuite>\n</testsuites>\n"));
        assert!(x.contains(&format!(
            "<property name=\"sinkhole_git_commit\" value=\"{}\"/>",
            sinkhole_base::provenance::GIT_COMMIT
        )));
    }

    #[test]
    fn a_mode_the_rig_failed_is_an_error_not_a_failure() {
        let mut s = Summary {
            run_id: "r".into(),
            scenario: "s".into(),
            source: "s.yaml".into(),
            kafka: "4.4.0".into(),
            seed: 1,
            dir: "/tmp".into(),
            modes: vec![row(SinkMode::Legacy, Outcome::Pass, Some(true), "clean as expected")],
            exit_code: 3,
            fail_on_inconclusive: false,
            started: None,
            wall_ms: None,
            ..Default::default()
        };
        s.modes.push(crate::results::summary::rig_failed(
            SinkMode::Kip939,
            "clean".into(),
            "running mode kip939: <boom>",
        ));
        let x = render(&s);
        assert!(x.contains(r#"tests="2" failures="0" errors="1" skipped="0""#), "{x}");
        assert!(
            x.contains(
                r#"<error message="rig error — the rig failed: running mode kip939: &lt;boom&gt;" type="rig"/>"#
            ),
            "{x}"
        );
        assert_eq!(x.matches("<failure ").count(), 0);
    }
}
