//! `explore.log` (and `sinkhole replay`'s `replay.log`): the runs' own progress lines and
//! the campaign's, each stamped with its UTC time to the millisecond.
//!
//! Why stamped: a campaign's hour is spent in pieces no summary adds up — a cluster start,
//! the job, the drain, a teardown, a shrink, the files written between runs — and the gaps
//! between stamped lines are where to read them (each run's `summary.json` has its own
//! phases; the log has what lies between runs as well).
use std::fs::File;
use std::io::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::run::ProgressSink;

/// An append-only log file shared by the campaign and the runs' progress sink. A file that
/// cannot be opened or written leaves the campaign without its log, never stops it.
#[derive(Clone)]
pub struct Log(Arc<Mutex<Option<File>>>);

impl Log {
    pub fn open(path: &Path) -> Log {
        let f = std::fs::OpenOptions::new().create(true).append(true).open(path).ok();
        Log(Arc::new(Mutex::new(f)))
    }

    /// Appends `line` with the time now (a line of several: the rest indented under the first).
    pub fn line(&self, line: &str) {
        if let Some(f) = self.0.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            let text = line.trim_end().replace('\n', &format!("\n{:13}", ""));
            let _ = writeln!(f, "{} {text}", stamp(sinkhole_base::utc::now_ms()));
        }
    }

    /// A progress sink for the runs ([`crate::run::set_progress_sink`]) writing into this log.
    pub fn sink(&self) -> ProgressSink {
        let log = self.clone();
        Box::new(move |line: &str| log.line(line))
    }
}

/// `19:20:29.123`: the UTC time of day of Unix milliseconds (the campaign's directory names
/// the day).
pub fn stamp(unix_ms: u64) -> String {
    let t = sinkhole_base::utc::Utc::from_unix(unix_ms / 1000);
    format!("{:02}:{:02}:{:02}.{:03}", t.hour, t.minute, t.second, unix_ms % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_stamped_with_the_utc_time_of_day_to_the_millisecond() {
        assert_eq!(stamp(1_787_400_000_000 + 3_723_045), "13:02:03.045");
        let dir = std::env::temp_dir().join(format!("sinkhole-explore-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = Log::open(&dir.join("x.log"));
        log.line("one");
        (log.sink())("two\nthree\n");
        let text = std::fs::read_to_string(dir.join("x.log")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        for (l, want) in lines[..2].iter().zip(["one", "two"]) {
            let (t, rest) = l.split_once(' ').unwrap();
            assert_eq!((t.len(), &t[2..3], &t[8..9], rest), (12, ":", ".", want), "{l}");
        }
        assert_eq!(lines[2], format!("{:13}three", ""), "a line's continuation is indented under it");
    }
}
