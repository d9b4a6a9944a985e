//! Reading `history.jsonl`: one [`Event`] a line, fsynced as the run goes.
//! A run killed mid-write leaves at most a torn last line, which is skipped
//! and counted; any other unreadable line is an error naming the line.
use std::path::Path;

use sinkhole_workloads::model::Event;

use super::CheckerError;

#[derive(Debug, Default)]
pub struct History {
    pub events: Vec<Event>,
    /// A torn last line (the writer died mid-line).
    pub torn_tail: bool,
}

pub fn read(path: &Path) -> Result<History, CheckerError> {
    let text = std::fs::read_to_string(path).map_err(|source| CheckerError::Io {
        what: "reading the history",
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text, path)
}

pub fn parse(text: &str, path: &Path) -> Result<History, CheckerError> {
    let mut h = History::default();
    let lines: Vec<&str> = text.split('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Event>(line) {
            Ok(e) => h.events.push(e),
            // The last line without its newline: torn by a crash.
            Err(_) if i + 1 == lines.len() => h.torn_tail = true,
            Err(e) => {
                // serde's "at line 1 column N" counts within this one line.
                let what = e.to_string();
                let what = what.rsplit_once(" at line ").map_or(what.as_str(), |(w, _)| w).to_string();
                let message = format!("column {}: damaged history line, not an event: {what}", e.column());
                return Err(CheckerError::History { path: path.to_path_buf(), line: i + 1, message });
            }
        }
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torn_tail_is_skipped_and_bad_lines_are_named() {
        let ok = r#"{"wall_ms":1,"mono_us":2,"mode":"legacy","by":"coordinator","type":"checkpoint-triggered","id":1}"#;
        let h = parse(&format!("{ok}\n{ok}\n{{\"wall_ms\":"), Path::new("h.jsonl")).unwrap();
        assert_eq!(h.events.len(), 2);
        assert!(h.torn_tail);
        let e = parse(&format!("{ok}\nnot json\n{ok}\n"), Path::new("h.jsonl")).unwrap_err();
        assert!(e.to_string().starts_with("h.jsonl:2: "), "{e}");
    }
}
