//! Loading: the typed parse, a located shadow tree of the same text (kept in
//! `located`, which names the field at a parse error and locates fields for
//! the semantic checks), the semantic checks (`validate`), and problems
//! rendered as `file:line:column: field: message`.
use std::path::Path;

use serde_saphyr::Location;

use super::fault_serde::split_param_error;
use super::located::{key, render_path, Locs, Problem};
use super::Scenario;

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{path}: cannot read the scenario: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// One line per problem (`file:line:column: field: message`).
    #[error("{}", .problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n"))]
    Invalid {
        problems: Vec<Problem>,
        /// For syntax and type errors: serde-saphyr's rendering with the
        /// offending lines of the file (without its own headline).
        snippet: Option<String>,
    },
}

impl ScenarioError {
    pub fn problems(&self) -> &[Problem] {
        match self {
            ScenarioError::Invalid { problems, .. } => problems,
            ScenarioError::Read { .. } => &[],
        }
    }

    /// The problems, then the source excerpt where there is one: what a user reads.
    pub fn render(&self) -> String {
        match self {
            ScenarioError::Invalid { snippet: Some(s), .. } => format!("{self}\n{s}"),
            _ => self.to_string(),
        }
    }
}

/// Reads and validates a scenario file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read { path: name.clone(), source })?;
    from_str(&text, &name)
}

/// Parses and validates a scenario; `source_name` names the file in errors.
pub fn from_str(text: &str, source_name: &str) -> Result<Scenario, ScenarioError> {
    // A shadow parse into a generic tree of located nodes: the typed parse
    // below says *what* is wrong and where, this one names the *field* there
    // and locates fields for the semantic checks (the scenario types stay
    // plain, without `Spanned` wrappers).
    let locs = Locs::parse(text, yaml_options());
    let scenario: Scenario = match serde_saphyr::from_str_with_options(text, yaml_options()) {
        Ok(s) => s,
        Err(e) => return Err(syntax_problem(&e, text, source_name, &locs)),
    };
    let problems = super::validate::validate(&scenario, &locs, source_name);
    if problems.is_empty() {
        Ok(scenario)
    } else {
        Err(ScenarioError::Invalid { problems, snippet: None })
    }
}

/// Budgets against alias bombs and absurd inputs: a scenario is a few hundred
/// nodes, so generous limits still stop a billion-laughs file at once.
fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_aliases: 1_000,
            max_anchors: 1_000,
            max_nodes: 200_000,
            max_depth: 64,
            max_documents: 1,
            max_total_scalar_bytes: 4 << 20,
        },
        with_snippet: true,
    }
}

fn syntax_problem(e: &serde_saphyr::Error, text: &str, file: &str, locs: &Locs) -> ScenarioError {
    use serde_saphyr::MessageFormatter;
    let loc = e.location().unwrap_or(Location::UNKNOWN);
    let (mut line, mut column) = (loc.line(), loc.column());
    let raw = serde_saphyr::DefaultMessageFormatter.format_message(e.without_snippet()).into_owned();
    // A fault's parameters are read after its whole entry (see fault_serde):
    // such an error sits at the entry's start and names the parameter; point
    // at the parameter (its value; the entry itself when it is missing).
    if let (Some((param, message)), Some(mut path)) = (split_param_error(&raw), locs.node_at(line, column)) {
        path.push(key(param));
        // A field that should not be there is shown at its key, as serde
        // shows unknown fields elsewhere; any other at its value.
        (line, column) = match locs.key_at(&path) {
            Some(at) if message.starts_with("unknown field") => at,
            _ => locs.at(&path),
        };
        let field = render_path(&path);
        let message = explain_untagged(message, &field);
        let snippet = excerpt(text, line, column).map(|x| format!(" --> {file}:{line}:{column}\n{x}"));
        return ScenarioError::Invalid {
            problems: vec![Problem { file: file.to_string(), line, column, field, message }],
            snippet,
        };
    }
    let field = if raw.starts_with("missing field") {
        // serde reports a missing field at the end of its mapping: name the
        // mapping, at its key.
        match locs.mapping_at(line, column) {
            Some((path, l, c)) => {
                (line, column) = (l, c);
                path
            }
            None => field_by_indent(text, line as usize),
        }
    } else {
        locs.field_at(line, column).unwrap_or_else(|| field_by_indent(text, line as usize))
    };
    let message = explain_untagged(&raw, &field);
    let rendered = e.render_with_options(serde_saphyr::render_options! { source_name: Some(file) });
    // serde-saphyr's first line repeats the message; keep the excerpt.
    let snippet: Vec<&str> = rendered.lines().skip(1).collect();
    let snippet = if snippet.is_empty() { None } else { Some(snippet.join("\n")) };
    ScenarioError::Invalid { problems: vec![Problem { file: file.to_string(), line, column, field, message }], snippet }
}

/// The source line of a problem with a caret under its column, like rustc's
/// excerpts: what a user needs to find the spot without opening the file.
pub fn excerpt(text: &str, line: u64, column: u64) -> Option<String> {
    let src = text.lines().nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
    let num = line.to_string();
    let pad = " ".repeat(num.len());
    let caret_at = usize::try_from(column.max(1) - 1).unwrap_or(0);
    // Columns count characters; keep tabs so the caret lines up under them.
    let lead: String = src.chars().take(caret_at).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
    Some(format!("{pad} |\n{num} | {src}\n{pad} | {lead}^"))
}

/// Untagged enums fail with "did not match any variant": say what is accepted there.
fn explain_untagged(raw: &str, field: &str) -> String {
    if !raw.contains("did not match any variant") {
        return raw.to_string();
    }
    let top = field.split(['.', '[']).next().unwrap_or("");
    let hint = if raw.contains("Expectation") || top == "expect" {
        let counts: Vec<&str> = crate::CountName::ALL.iter().map(|c| c.key()).collect();
        &format!(
            "expected `clean`, `job-failed`, {{job_failed: TEXT}}, or a map of counts ({}) to conditions (0, \">0\", \">=N\", \"<N\", \"==N\")",
            counts.join(", ")
        )
    } else if raw.contains("Condition") {
        "expected a count (0) or a condition string (\">0\", \">=N\", \"<N\", \"==N\")"
    } else if raw.contains("Target") || field.ends_with("target") {
        "expected `all`, `txn-coordinator`, a list of ids, {txn-coordinator: SUBTASK} or {txn-log-follower: SUBTASK}"
    } else if raw.contains("ConfigValue") || top == "cluster" {
        "expected a scalar (string, number or boolean)"
    } else {
        return raw.to_string();
    };
    format!("{hint} ({raw})")
}

/// For syntax errors (no tree): the block-style key path leading to `line`,
/// from indentation. Flow collections are not followed: good enough to point
/// at the right key in a broken file.
fn field_by_indent(text: &str, line: usize) -> String {
    let mut stack: Vec<(usize, String)> = Vec::new();
    for l in text.lines().take(line.max(1)) {
        let trimmed = l.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = l.len() - trimmed.len();
        let body = trimmed.trim_start_matches("- ");
        let Some((key, _)) = body.split_once(':') else { continue };
        if key.is_empty() || key.contains([' ', '{', '[', '"', '\'']) {
            continue;
        }
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        stack.push((indent, key.to_string()));
    }
    if stack.is_empty() {
        "(document)".to_string()
    } else {
        stack.into_iter().map(|(_, k)| k).collect::<Vec<_>>().join(".")
    }
}
