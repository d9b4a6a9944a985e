//! `history.jsonl`: one [`Event`] a line, written as it happens.
//!
//! Jepsen's history is the only thing its checker trusts, so it must survive a
//! crash of the rig: every line is handed to the kernel with one `write` as soon
//! as the event is recorded (no user-space buffer that a crash would lose), and
//! the coordinator's and faults' events are also fsynced, so a checkpoint the
//! history calls persisted, or a fault it calls fired, is on disk. A reader
//! tolerates a torn last line (the rig died in the middle of a write).
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use sinkhole_workloads::model::{Event, EventKind, SinkMode, Source};

/// Appends events to one mode's history.
#[derive(Debug)]
pub struct History {
    file: File,
    path: PathBuf,
    mode: SinkMode,
    start: Instant,
    lines: u64,
}

fn wall_ms_at(at: Instant) -> u64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let ago = Instant::now().saturating_duration_since(at);
    now.saturating_sub(ago).as_millis() as u64
}

impl History {
    /// Creates (or truncates) the file. `start` is the run's monotonic origin.
    pub fn create(path: impl Into<PathBuf>, mode: SinkMode, start: Instant) -> io::Result<History> {
        let path = path.into();
        let file = OpenOptions::new().write(true).create(true).truncate(true).open(&path)?;
        Ok(History { file, path, mode, start, lines: 0 })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Events written so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Records an event that happened at `at` (e.g. when a worker's message
    /// arrived, which may be earlier than now if the coordinator was busy).
    pub fn record_at(&mut self, at: Instant, source: Source, kind: EventKind) -> io::Result<Event> {
        let event = Event {
            wall_ms: wall_ms_at(at),
            mono_us: at.saturating_duration_since(self.start).as_micros() as u64,
            mode: self.mode,
            source,
            kind,
        };
        let mut line = serde_json::to_vec(&event).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        if !matches!(event.source, Source::Worker { .. }) {
            self.file.sync_data()?;
        }
        self.lines += 1;
        Ok(event)
    }

    pub fn record(&mut self, source: Source, kind: EventKind) -> io::Result<Event> {
        self.record_at(Instant::now(), source, kind)
    }

    /// Flushes everything to disk.
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_all()
    }
}

/// Reads a history file. A torn last line (no newline, not valid JSON) is
/// skipped; a bad line elsewhere is an error naming its line number.
pub fn read(path: &Path) -> io::Result<Vec<Event>> {
    let f = File::open(path)?;
    let lines: Vec<String> = BufReader::new(f).lines().collect::<io::Result<_>>()?;
    let mut out = Vec::with_capacity(lines.len());
    let n = lines.len();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Event>(line) {
            Ok(e) => out.push(e),
            Err(_) if i + 1 == n => break,
            Err(e) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} line {}: {e}", path.display(), i + 1),
                ))
            }
        }
    }
    Ok(out)
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
        let mut h = History::create(&path, SinkMode::Legacy, start).unwrap();
        h.record(Source::Coordinator, EventKind::JobStarted { attempt: 0, restored_from: None }).unwrap();
        // Read while the writer is still open: nothing is held back.
        let seen = read(&path).unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].kind, EventKind::JobStarted { attempt: 0, restored_from: None });
        assert_eq!(seen[0].source, Source::Coordinator);
        assert_eq!(seen[0].mode, SinkMode::Legacy);

        std::thread::sleep(Duration::from_millis(3));
        let e = h.record(Source::Worker { subtask: 2 }, EventKind::Note { text: "hello".into() }).unwrap();
        assert!(e.mono_us >= 3_000, "{}", e.mono_us);
        let seen = read(&path).unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1], e);
        assert!(seen[0].mono_us <= seen[1].mono_us);
        assert!(seen[0].wall_ms <= seen[1].wall_ms);
        assert_eq!(h.lines(), 2);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn an_event_is_stamped_with_when_it_happened() {
        let path = temp("stamp");
        let start = Instant::now();
        let mut h = History::create(&path, SinkMode::Kip939, start).unwrap();
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
        let mut h = History::create(&path, SinkMode::Legacy, Instant::now()).unwrap();
        h.record(Source::Coordinator, EventKind::CheckpointTriggered { id: 1 }).unwrap();
        h.record(Source::Coordinator, EventKind::CheckpointTriggered { id: 2 }).unwrap();
        drop(h);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"wall_ms\":1,\"mono");
        std::fs::write(&path, &text).unwrap();
        assert_eq!(read(&path).unwrap().len(), 2);
        let bad = text.replacen("{\"wall_ms\"", "garbage{", 1) + "\n{}";
        std::fs::write(&path, bad).unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
        std::fs::remove_file(&path).unwrap();
    }
}
