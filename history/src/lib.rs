//! The history: `history.jsonl`, one [`Event`] a line — the only record the
//! checker, the verdict and the report trust.
//!
//! Jepsen's shape: the subject and the nemesis never talk to the checker;
//! they append plain, typed events here as things happen, and everything
//! after the run reads them back. So this module has exactly one writer
//! ([`Writer`], shared by the job's coordinator and the nemesis) and one
//! reader ([`read`]).
//!
//! It must survive a crash of the rig: every line goes to the kernel with one
//! `write` as soon as it is recorded (no user-space buffer a crash would
//! lose), and the coordinator's and the nemesis' lines are also fsynced, so a
//! checkpoint the history calls persisted, or a fault it calls fired, is on
//! disk. A crash can therefore leave at most a torn last line (no newline):
//! the reader skips it and says so. Any other line that is not an event is
//! damage, an error naming its line and column.
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use sinkhole_model::SinkMode;
pub use sinkhole_model::{Event, EventKind, Source};

pub mod fault;
pub mod observation;
pub mod outcome;
pub mod reads;
pub mod trigger;

pub use fault::FaultRecord;
pub use outcome::{JobOutcome, ModeOutcome};

/// Appends events to one mode's history. Cloning shares the file: the job's
/// coordinator and the nemesis write through clones of one writer, so their
/// lines interleave in the order they were recorded.
#[derive(Debug, Clone)]
pub struct Writer {
    inner: Arc<Mutex<Inner>>,
    path: PathBuf,
    mode: SinkMode,
    start: Instant,
}

#[derive(Debug)]
struct Inner {
    file: File,
    lines: u64,
}

/// A moment on both clocks: the monotonic one `mono_us` counts on and the
/// wall clock `wall_ms` shows. Taken once, it stamps one happening in several
/// histories (a cluster fault seen by every mode of a side-by-side run) at
/// the same moment, however long writing the first history took.
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    pub at: Instant,
    pub wall_ms: u64,
}

impl Stamp {
    pub fn now() -> Stamp {
        Stamp::of(Instant::now())
    }

    /// `at` on the wall clock: now, less the time since `at`.
    pub fn of(at: Instant) -> Stamp {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let ago = Instant::now().saturating_duration_since(at);
        Stamp { at, wall_ms: now.saturating_sub(ago).as_millis() as u64 }
    }
}

impl Writer {
    /// Creates (or truncates) the file. `start` is the run's monotonic origin.
    pub fn create(path: impl Into<PathBuf>, mode: SinkMode, start: Instant) -> io::Result<Writer> {
        let path = path.into();
        let file = OpenOptions::new().write(true).create(true).truncate(true).open(&path)?;
        Ok(Writer { inner: Arc::new(Mutex::new(Inner { file, lines: 0 })), path, mode, start })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The monotonic origin `mono_us` counts from.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// Events written so far (through every clone).
    pub fn lines(&self) -> u64 {
        self.lock().lines
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A writer that panicked mid-line left at worst a torn line, which
        // the reader tolerates: keep writing.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records an event that happened at `at` (e.g. when a worker's message
    /// arrived, which may be earlier than now if the coordinator was busy).
    pub fn record_at(&self, at: Instant, source: Source, kind: EventKind) -> io::Result<Event> {
        self.record_stamped(Stamp::of(at), source, kind)
    }

    /// Records an event at a moment stamped once for several histories.
    pub fn record_stamped(&self, stamp: Stamp, source: Source, kind: EventKind) -> io::Result<Event> {
        let event = Event {
            wall_ms: stamp.wall_ms,
            mono_us: stamp.at.saturating_duration_since(self.start).as_micros() as u64,
            mode: self.mode,
            source,
            kind,
        };
        let mut line = serde_json::to_vec(&event).map_err(io::Error::other)?;
        line.push(b'\n');
        let mut inner = self.lock();
        inner.file.write_all(&line)?;
        if !matches!(event.source, Source::Worker { .. }) {
            inner.file.sync_data()?;
        }
        inner.lines += 1;
        Ok(event)
    }

    pub fn record(&self, source: Source, kind: EventKind) -> io::Result<Event> {
        self.record_at(Instant::now(), source, kind)
    }

    /// Flushes everything to disk.
    pub fn sync(&self) -> io::Result<()> {
        self.lock().file.sync_all()
    }
}

/// A history as read back.
#[derive(Debug, Default, Clone)]
pub struct History {
    pub events: Vec<Event>,
    /// The last line had no newline and was not an event: the writer died
    /// in the middle of it. It is skipped.
    pub torn_tail: bool,
}

/// A line of a history file that is not an event.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("reading the history {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Displayed `file:line: column N: …`, the form every bad-input error takes.
    #[error("{}:{line}: column {column}: damaged history line, not an event: {message}", .path.display())]
    Damaged { path: PathBuf, line: usize, column: usize, message: String },
}

/// Reads a history file (see the module doc for what is tolerated).
pub fn read(path: &Path) -> Result<History, ReadError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReadError::Io { path: path.to_path_buf(), source })?;
    parse(&text, path)
}

/// Parses a history's text; `path` names it in errors.
pub fn parse(text: &str, path: &Path) -> Result<History, ReadError> {
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
                let message = what.rsplit_once(" at line ").map_or(what.as_str(), |(w, _)| w).to_string();
                return Err(ReadError::Damaged { path: path.to_path_buf(), line: i + 1, column: e.column(), message });
            }
        }
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("sinkhole-history-{name}-{}.jsonl", std::process::id()))
    }

    #[test]
    fn every_event_is_on_disk_as_soon_as_it_is_recorded() {
        let path = temp("flush");
        let start = Instant::now();
        let h = Writer::create(&path, SinkMode::Legacy, start).unwrap();
        h.record(Source::Coordinator, EventKind::JobStarted { attempt: 0, restored_from: None }).unwrap();
        // Read while the writer is still open: nothing is held back.
        let seen = read(&path).unwrap().events;
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].kind, EventKind::JobStarted { attempt: 0, restored_from: None });
        assert_eq!(seen[0].source, Source::Coordinator);
        assert_eq!(seen[0].mode, SinkMode::Legacy);

        std::thread::sleep(Duration::from_millis(3));
        let e = h.clone().record(Source::Worker { subtask: 2 }, EventKind::Note { text: "hello".into() }).unwrap();
        assert!(e.mono_us >= 3_000, "{}", e.mono_us);
        let seen = read(&path).unwrap().events;
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1], e);
        assert!(seen[0].mono_us <= seen[1].mono_us);
        assert!(seen[0].wall_ms <= seen[1].wall_ms);
        assert_eq!(h.lines(), 2, "clones share the count");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn an_event_is_stamped_with_when_it_happened() {
        let path = temp("stamp");
        let start = Instant::now();
        let h = Writer::create(&path, SinkMode::Kip939, start).unwrap();
        let at = Instant::now();
        std::thread::sleep(Duration::from_millis(20));
        let late = h.record(Source::Fault, EventKind::Note { text: "now".into() }).unwrap();
        let early = h.record_at(at, Source::Fault, EventKind::Note { text: "earlier".into() }).unwrap();
        assert!(early.mono_us + 15_000 <= late.mono_us, "{} vs {}", early.mono_us, late.mono_us);
        assert!(early.wall_ms + 15 <= late.wall_ms + 1, "{} vs {}", early.wall_ms, late.wall_ms);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_torn_last_line_is_skipped_but_a_bad_middle_line_is_an_error() {
        let path = temp("torn");
        let h = Writer::create(&path, SinkMode::Legacy, Instant::now()).unwrap();
        h.record(Source::Coordinator, EventKind::CheckpointTriggered { id: 1 }).unwrap();
        h.record(Source::Coordinator, EventKind::CheckpointTriggered { id: 2 }).unwrap();
        drop(h);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"wall_ms\":1,\"mono");
        std::fs::write(&path, &text).unwrap();
        let back = read(&path).unwrap();
        assert_eq!(back.events.len(), 2);
        assert!(back.torn_tail);
        let bad = text.replacen("{\"wall_ms\"", "garbage{", 1) + "\n{}";
        std::fs::write(&path, bad).unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains(":1: column 1: damaged history line"), "{e}");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn torn_tail_is_skipped_and_bad_lines_are_named() {
        let ok = r#"{"wall_ms":1,"mono_us":2,"mode":"legacy","by":"coordinator","type":"checkpoint-triggered","id":1}"#;
        let h = parse(&format!("{ok}\n{ok}\n{{\"wall_ms\":"), Path::new("h.jsonl")).unwrap();
        assert_eq!(h.events.len(), 2);
        assert!(h.torn_tail);
        let e = parse(&format!("{ok}\nnot json\n{ok}\n"), Path::new("h.jsonl")).unwrap_err();
        assert!(e.to_string().starts_with("h.jsonl:2: "), "{e}");
        // A complete (newline-ended) line that is not an event is damage, not a tear.
        let e = parse(&format!("{ok}\nnot json\n"), Path::new("h.jsonl")).unwrap_err();
        assert!(e.to_string().starts_with("h.jsonl:2: "), "{e}");
    }
}
