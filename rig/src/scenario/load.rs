//! Loading: the typed parse, a located shadow tree of the same text (which
//! names the field at a parse error and locates fields for the semantic
//! checks), and problems rendered as `file:line:column: field: message`.
use std::fmt;
use std::path::Path;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_saphyr::{Location, Spanned};

use super::fault_serde::split_param_error;
use super::Scenario;

/// One thing wrong with a scenario, located in its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub file: String,
    /// 1-based; 0 when the location is unknown.
    pub line: u64,
    pub column: u64,
    /// The field, as a path: `job.parallelism`, `faults[0].duration_ms`,
    /// `cluster.broker_config[transaction.max.timeout.ms]`.
    pub field: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}: {}", self.file, self.line, self.column, self.field, self.message)
    }
}

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
    let tree = serde_saphyr::from_str_with_options::<Spanned<Node>>(text, yaml_options()).ok();
    let locs = Locs::new(tree.as_ref());
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
        "expected `clean`, `job-failed`, or a map of lost/duplicated/unexpected to conditions (0, \">0\", \">=N\", \"<N\", \"==N\")"
    } else if raw.contains("Condition") {
        "expected a count (0) or a condition string (\">0\", \">=N\", \"<N\", \"==N\")"
    } else if raw.contains("Target") || field.ends_with("target") {
        "expected `all`, `txn-coordinator`, a list of ids, or {txn-coordinator: SUBTASK}"
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

// ---------------------------------------------------------------------------
// The located tree

/// A YAML node with the locations of its children (from `Spanned`).
#[derive(Debug)]
enum Node {
    Scalar,
    Seq(Vec<Spanned<Node>>),
    Map(Vec<(Spanned<String>, Spanned<Node>)>),
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Node;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any YAML node")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_i128<E: de::Error>(self, _: i128) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_u128<E: de::Error>(self, _: u128) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_none<E: de::Error>(self) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Node, D2::Error> {
                Node::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
                let mut v = Vec::new();
                while let Some(n) = a.next_element::<Spanned<Node>>()? {
                    v.push(n);
                }
                Ok(Node::Seq(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
                let mut v = Vec::new();
                while let Some(k) = a.next_key::<Spanned<KeyText>>()? {
                    let val = a.next_value::<Spanned<Node>>()?;
                    v.push((Spanned::new(k.value.0, k.referenced, k.defined), val));
                }
                Ok(Node::Map(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// A mapping key of any scalar type, as text.
struct KeyText(String);

impl<'de> Deserialize<'de> for KeyText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<KeyText, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyText;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a scalar key")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<KeyText, E> {
                Ok(KeyText(b.to_string()))
            }
            fn visit_i64<E: de::Error>(self, x: i64) -> Result<KeyText, E> {
                Ok(KeyText(x.to_string()))
            }
            fn visit_u64<E: de::Error>(self, x: u64) -> Result<KeyText, E> {
                Ok(KeyText(x.to_string()))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<KeyText, E> {
                Ok(KeyText(x.to_string()))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<KeyText, E> {
                Ok(KeyText(s.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<KeyText, E> {
                Ok(KeyText("~".to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Seg {
    Key(String),
    Index(usize),
}

pub(super) fn render_path(path: &[Seg]) -> String {
    let mut out = String::new();
    for s in path {
        match s {
            Seg::Key(k) if k.contains('.') => {
                out.push('[');
                out.push_str(k);
                out.push(']');
            }
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    if out.is_empty() {
        "(document)".to_string()
    } else {
        out
    }
}

/// Every node's and key's location, by path.
#[derive(Debug, Default)]
pub(super) struct Locs {
    /// (path, line, column, is_key)
    entries: Vec<(Vec<Seg>, u64, u64, bool)>,
}

impl Locs {
    fn new(root: Option<&Spanned<Node>>) -> Locs {
        let mut l = Locs::default();
        if let Some(r) = root {
            l.walk(&mut Vec::new(), r);
        }
        l
    }

    fn walk(&mut self, path: &mut Vec<Seg>, n: &Spanned<Node>) {
        self.entries.push((path.clone(), n.referenced.line(), n.referenced.column(), false));
        match &n.value {
            Node::Scalar => {}
            Node::Seq(items) => {
                for (i, it) in items.iter().enumerate() {
                    path.push(Seg::Index(i));
                    self.walk(path, it);
                    path.pop();
                }
            }
            Node::Map(entries) => {
                for (k, v) in entries {
                    path.push(Seg::Key(k.value.clone()));
                    self.entries.push((path.clone(), k.referenced.line(), k.referenced.column(), true));
                    self.walk(path, v);
                    path.pop();
                }
            }
        }
    }

    /// The shallowest node that starts exactly at (line, column): a mapping
    /// whose first key shares its position is the mapping.
    pub(super) fn node_at(&self, line: u64, column: u64) -> Option<Vec<Seg>> {
        let hit = self.entries.iter().filter(|(_, l, c, _)| (*l, *c) == (line, column) && line > 0);
        hit.min_by_key(|e| e.0.len()).map(|e| e.0.clone())
    }

    /// The location of the key of the mapping entry at `path`.
    pub(super) fn key_at(&self, path: &[Seg]) -> Option<(u64, u64)> {
        self.entries.iter().find(|(q, l, _, is_key)| q == path && *is_key && *l > 0).map(|e| (e.1, e.2))
    }

    /// Whether the file has a node at exactly `path`.
    pub(super) fn has(&self, path: &[Seg]) -> bool {
        self.entries.iter().any(|(q, l, _, _)| q == path && *l > 0)
    }

    /// The location of the value at `path`, or of its nearest existing
    /// ancestor (a missing field is reported where its parent is).
    pub(super) fn at(&self, path: &[Seg]) -> (u64, u64) {
        for len in (0..=path.len()).rev() {
            let p = &path[..len];
            // A value's own location; for a missing value, its key.
            let hit = self
                .entries
                .iter()
                .find(|(q, l, _, is_key)| q == p && !is_key && *l > 0)
                .or_else(|| self.entries.iter().find(|(q, l, _, _)| q == p && *l > 0));
            if let Some((_, l, c, _)) = hit {
                return (*l, *c);
            }
        }
        (1, 1)
    }

    /// The mapping that holds the key at (line, column): its path and the
    /// location of its own key (the document start for the top level).
    fn mapping_at(&self, line: u64, column: u64) -> Option<(String, u64, u64)> {
        let (path, ..) = self
            .entries
            .iter()
            .filter(|(_, l, c, _)| (*l, *c) <= (line, column) && *l > 0)
            .max_by(|a, b| (a.1, a.2).cmp(&(b.1, b.2)).then(a.3.cmp(&b.3)))?;
        let parent = &path[..path.len().saturating_sub(1)];
        let (l, c) = self
            .entries
            .iter()
            .find(|(q, l, _, is_key)| q == parent && *is_key && *l > 0)
            .map(|e| (e.1, e.2))
            .unwrap_or_else(|| self.at(parent));
        Some((render_path(parent), l, c))
    }

    /// The field a parse error at (line, column) is about: an exact match
    /// (the shallowest: "missing field" errors point at the mapping, whose
    /// first key shares its position), else the last node before it.
    fn field_at(&self, line: u64, column: u64) -> Option<String> {
        if self.entries.is_empty() || line == 0 {
            return None;
        }
        let exact = self.entries.iter().filter(|(_, l, c, _)| *l == line && *c == column).min_by_key(|e| e.0.len());
        let best = exact.or_else(|| {
            self.entries
                .iter()
                .filter(|(_, l, c, _)| (*l, *c) <= (line, column) && *l > 0)
                .max_by(|a, b| (a.1, a.2).cmp(&(b.1, b.2)).then(b.0.len().cmp(&a.0.len())))
        })?;
        Some(render_path(&best.0))
    }
}

pub(super) fn key(k: &str) -> Seg {
    Seg::Key(k.to_string())
}
