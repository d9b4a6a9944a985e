//! Where things are in a scenario file: a located shadow tree of the text
//! (every node's and key's line and column, by field path), field paths as
//! users read them (`faults[0].duration_ms`), and [`Problem`], one thing
//! wrong at one place.
//!
//! Below both the loader, which locates parse errors with it, and the
//! semantic checks (`validate`), which report each problem at the field it
//! is about; the loader runs the checks, so neither could hold this for the
//! other without the two files importing each other.
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

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
    /// A shadow parse of `text` into a generic tree of located nodes: empty
    /// when the text is not YAML at all (a syntax error is then located by
    /// indentation, `load::field_by_indent`).
    pub(super) fn parse(text: &str, options: serde_saphyr::Options) -> Locs {
        let tree = serde_saphyr::from_str_with_options::<Spanned<Node>>(text, options).ok();
        let mut l = Locs::default();
        if let Some(r) = &tree {
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
    pub(super) fn mapping_at(&self, line: u64, column: u64) -> Option<(String, u64, u64)> {
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
    pub(super) fn field_at(&self, line: u64, column: u64) -> Option<String> {
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
