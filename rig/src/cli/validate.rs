//! `sinkhole validate FILE…`: scenario files checked without running them;
//! with `--explain`, each mode's premises as a run resolves them
//! (`premise::defaults`).
//!
//! Command-line code, so it lives with the binary: the scenario layer loads
//! and validates one file; turning many files into the text (or JSON) a user
//! reads is this command's.
use std::path::PathBuf;

use anyhow::anyhow;
use serde::Serialize;
use sinkhole_scenario::load::excerpt;
use sinkhole_scenario::premise::defaults::{self, ModePremises};
use sinkhole_scenario::schedule::json_text;
use sinkhole_scenario::{Mix, Problem, ScenarioError};

use super::args::ValidateArgs;
use super::{bad, Failure};

pub fn run(a: ValidateArgs) -> Result<(), Failure> {
    let (out, ok) = validate_files(&a.files, a.json, a.explain);
    print!("{out}");
    if ok {
        Ok(())
    } else {
        Err(bad(anyhow!("invalid scenario file(s)")))
    }
}

/// One file's result in `sinkhole validate --json`.
#[derive(Debug, Clone, Serialize)]
struct FileReport {
    file: String,
    ok: bool,
    /// Explicit faults.
    faults: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    mix: Option<Mix>,
    modes: Vec<String>,
    problems: Vec<Problem>,
    /// `--explain`: each mode's premises, the scenario's own or the defaults, with why.
    #[serde(skip_serializing_if = "Option::is_none")]
    premises: Option<Vec<ModePremises>>,
}

/// A random schedule's faults are drawn per run: the premises they give are not known here.
const DRAWN_PER_RUN: &str = "premises: the random schedule's faults are drawn per run and not counted here; \
                             `sinkhole schedule FILE --seed N` shows the premises a seed gives\n";

/// The text (or JSON) to print and whether every file is valid.
fn validate_files(files: &[PathBuf], json: bool, explain: bool) -> (String, bool) {
    let mut reports = Vec::new();
    let mut text = String::new();
    for f in files {
        let name = f.display().to_string();
        match sinkhole_scenario::load(f) {
            Ok(s) => {
                let modes: Vec<String> = s.modes.iter().map(|m| m.name().to_string()).collect();
                let sched = match &s.schedule {
                    Some(r) => format!(
                        " + random schedule {} in [{}, {}] ms",
                        json_text(&serde_json::to_value(r.mix).unwrap_or_default()),
                        r.start_ms,
                        r.end_ms
                    ),
                    None => String::new(),
                };
                text.push_str(&format!("{name}: ok ({} faults{sched}, modes {})\n", s.faults.len(), modes.join(", ")));
                let premises = explain.then(|| defaults::as_planned(&s, None));
                if let Some(p) = &premises {
                    text.push_str(&defaults::render(p));
                    if s.schedule.is_some() {
                        text.push_str(DRAWN_PER_RUN);
                    }
                }
                reports.push(FileReport {
                    file: name,
                    ok: true,
                    faults: s.faults.len(),
                    mix: s.schedule.as_ref().map(|r| r.mix),
                    modes,
                    problems: vec![],
                    premises,
                });
            }
            Err(e) => {
                let problems: Vec<Problem> = match &e {
                    ScenarioError::Read { .. } => vec![Problem {
                        file: name.clone(),
                        line: 0,
                        column: 0,
                        field: "(file)".into(),
                        message: e.to_string(),
                    }],
                    _ => e.problems().to_vec(),
                };
                let source = std::fs::read_to_string(f).unwrap_or_default();
                for p in &problems {
                    if p.line == 0 {
                        text.push_str(&format!("{}\n", p.message));
                        continue;
                    }
                    text.push_str(&format!("{p}\n"));
                    if let Some(x) = excerpt(&source, p.line, p.column) {
                        text.push_str(&x);
                        text.push('\n');
                    }
                }
                reports.push(FileReport {
                    file: name,
                    ok: false,
                    faults: 0,
                    mix: None,
                    modes: vec![],
                    problems,
                    premises: None,
                });
            }
        }
    }
    let all_ok = reports.iter().all(|r| r.ok);
    if json {
        // An array: each file's report carries the provenance.
        let stamped: Vec<_> = reports.iter().map(sinkhole_base::provenance::Stamped::new).collect();
        (serde_json::to_string_pretty(&stamped).unwrap_or_default() + "\n", all_ok)
    } else {
        (text, all_ok)
    }
}
