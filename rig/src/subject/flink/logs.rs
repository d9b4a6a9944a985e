//! The Flink processes' logs, read as they are written: the events the subject reports
//! (checkpoints triggered, completed and aborted, restores, the job's state) come from the
//! JobManager's log, and the sink's (the job's `CheckpointLog` lines, KafkaCommitter's
//! commits and the ones it dropped, the provenance of the connector's classes) from the
//! TaskManagers' logs.
//!
//! Every line carries Flink's own time (log4j's `%d{UNIX_MILLIS}`, the JVM's clock at the
//! moment of the call), so a notice is stamped with when Flink did it, not when the rig read
//! it: how late a trigger fires is then measured honestly.
//!
//! [`parse`] is pure (unit-tested on lines seen from Flink 2.2.1 and connector 5.0.0-2.2);
//! [`follow`] tails a file on its own task.
use std::io::SeekFrom;
use std::path::PathBuf;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio::sync::mpsc;

/// The layout the subject's log4j configuration writes (see `cluster::LOG4J`).
pub const PATTERN: &str = "%d{UNIX_MILLIS} %-5p %c [%t] %m%n";

/// How often a followed file is read.
const POLL: Duration = Duration::from_millis(20);

/// One log record's first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub wall_ms: u64,
    pub level: String,
    /// The logger's full name (a class).
    pub logger: String,
    pub thread: String,
    pub message: String,
}

impl LogLine {
    /// The logger's simple class name (connector 3.x and 4.x+ put KafkaCommitter in different packages).
    pub fn class(&self) -> &str {
        self.logger.rsplit('.').next().unwrap_or(&self.logger)
    }
}

/// What a followed file yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Record(LogLine),
    /// A line that is not a record's start: a stack trace or a multi-line message.
    Cont(String),
}

/// Splits a line written with [`PATTERN`].
pub fn split(line: &str) -> Line {
    let record = (|| {
        let (ms, rest) = line.split_once(' ')?;
        let wall_ms: u64 = ms.parse().ok()?;
        let rest = rest.trim_start();
        let (level, rest) = rest.split_once(' ')?;
        let rest = rest.trim_start();
        let (logger, rest) = rest.split_once(' ')?;
        let rest = rest.strip_prefix('[')?;
        let (thread, message) = rest.split_once("] ").or_else(|| rest.strip_suffix(']').map(|t| (t, "")))?;
        Some(LogLine {
            wall_ms,
            level: level.to_string(),
            logger: logger.to_string(),
            thread: thread.to_string(),
            message: message.to_string(),
        })
    })();
    match record {
        Some(r) => Line::Record(r),
        None => Line::Cont(line.to_string()),
    }
}

/// What the subject reads in a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    // --- the JobManager ---
    /// `CheckpointCoordinator - Triggering checkpoint N (type=…) @ TS for job J.`
    Triggered { id: u64, at_ms: u64, job: String },
    /// `CheckpointCoordinator - Completed checkpoint N for job J (B bytes, checkpointDuration=D ms, …).`
    Completed { id: u64, job: String, duration_ms: Option<u64> },
    /// A checkpoint that will not complete (expired, declined, failed).
    Aborted { id: u64, reason: String },
    /// `Restoring job J from Checkpoint N @ …` (also `from Savepoint N`, for a resubmission).
    Restored { job: String, id: u64 },
    /// `Job NAME (J) switched from state A to B.`
    JobState { job: String, from: String, to: String },
    // --- the TaskManagers: the job's lines ---
    /// `sinkhole checkpoint N subtask I source S first_seq A next_seq K records C`
    /// (`records 0`: nothing since the last one).
    Snapshot { id: u64, subtask: u32, source: Option<u32>, first_seq: u64, next_seq: u64, records: u64 },
    /// `sinkhole slow snapshot subtask I checkpoint N held MS ms` (`flink.slow_snapshot`)
    SlowSnapshot { subtask: u32, id: u64, ms: u64 },
    /// `sinkhole restore subtask I checkpoint N`
    TaskRestored { subtask: u32, id: Option<u64> },
    /// `sinkhole provenance (…): class=C jar=URL sha256=H`
    Provenance { class: String, jar: String, sha256: String },
    // --- the TaskManagers: the connector's lines ---
    /// ExactlyOnceKafkaWriter (DEBUG): `Prepare KafkaCommittable{producerId=P, epoch=E, transactionalId='X', …}.`
    Prepared { tid: String, producer_id: i64, epoch: i16 },
    /// FlinkKafkaInternalProducer: `Attempting to resume transaction X with producerId P and epoch E`
    Resuming { tid: String },
    /// KafkaCommitter (DEBUG): `Committing Kafka transaction X`
    Committing { tid: String },
    /// KafkaCommitter: `Unable to commit transaction (…) because …`: logged and dropped.
    CommitDropped { tid: String, because: String },
    /// KafkaCommitter: `Transaction (…) encountered error and data has been potentially lost.` (failover)
    CommitFailed { tid: String },
    /// KafkaCommitter: `Encountered retriable exception while committing X.`
    CommitRetry { tid: String },
    /// TaskManagerRunner's `Classpath:` line at startup.
    Classpath { entries: String },
}

fn num<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.trim_matches(|c: char| !c.is_ascii_digit() && c != '-').parse().ok()
}

/// The value after `key` up to the next space (or the end).
fn after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let at = text.find(key)? + key.len();
    Some(text[at..].split(' ').next().unwrap_or(""))
}

/// `transactionalId='x'` (4.x/5.x) or `transactionalId=x` (3.x).
fn tid_in(text: &str) -> Option<String> {
    let at = text.find("transactionalId=")? + "transactionalId=".len();
    let rest = text[at..].trim_start_matches('\'');
    let end = rest.find(['\'', ',', '}']).unwrap_or(rest.len());
    (end > 0).then(|| rest[..end].to_string())
}

/// The event a record is, if the subject reads it.
pub fn parse(l: &LogLine) -> Option<Event> {
    let m = l.message.as_str();
    if let Some(rest) = m.strip_prefix("sinkhole checkpoint ") {
        let id = num(rest.split(' ').next()?)?;
        let subtask = num(after(rest, " subtask ")?)?;
        let records: u64 = num(after(rest, " records ")?)?;
        let source = after(rest, " source ").and_then(num);
        let first_seq = after(rest, " first_seq ").and_then(num).unwrap_or(0);
        let next_seq = after(rest, " next_seq ").and_then(num).unwrap_or(0);
        return Some(Event::Snapshot { id, subtask, source, first_seq, next_seq, records });
    }
    if let Some(rest) = m.strip_prefix("sinkhole slow snapshot subtask ") {
        let subtask = num(rest.split(' ').next()?)?;
        let id = num(after(rest, " checkpoint ")?)?;
        return Some(Event::SlowSnapshot { subtask, id, ms: num(after(rest, " held ")?)? });
    }
    if let Some(rest) = m.strip_prefix("sinkhole restore subtask ") {
        let subtask = num(rest.split(' ').next()?)?;
        return Some(Event::TaskRestored { subtask, id: after(rest, " checkpoint ").and_then(num) });
    }
    if m.starts_with("sinkhole provenance") {
        return Some(Event::Provenance {
            class: after(m, "class=")?.to_string(),
            jar: after(m, "jar=")?.to_string(),
            sha256: after(m, "sha256=").unwrap_or("unknown").to_string(),
        });
    }
    match l.class() {
        "CheckpointCoordinator" => {
            if let Some(rest) = m.strip_prefix("Triggering checkpoint ") {
                let id = num(rest.split(' ').next()?)?;
                let at_ms = num(after(rest, " @ ")?)?;
                let job = after(rest, " for job ")?.trim_end_matches('.').to_string();
                return Some(Event::Triggered { id, at_ms, job });
            }
            if let Some(rest) = m.strip_prefix("Completed checkpoint ") {
                let id = num(rest.split(' ').next()?)?;
                let job = after(rest, " for job ")?.to_string();
                return Some(Event::Completed {
                    id,
                    job,
                    duration_ms: after(rest, "checkpointDuration=").and_then(num),
                });
            }
            if let Some(rest) = m.strip_prefix("Checkpoint ") {
                if m.contains("expired before completing") {
                    return Some(Event::Aborted { id: num(rest.split(' ').next()?)?, reason: m.to_string() });
                }
            }
            if let Some(rest) = m.strip_prefix("Decline checkpoint ") {
                return Some(Event::Aborted { id: num(rest.split(' ').next()?)?, reason: m.to_string() });
            }
            if let Some(rest) = m.strip_prefix("Restoring job ") {
                let job = rest.split(' ').next()?.to_string();
                let id = after(rest, " from Checkpoint ").or_else(|| after(rest, " from Savepoint ")).and_then(num)?;
                return Some(Event::Restored { job, id });
            }
            None
        }
        "JobMaster" | "ExecutionGraph" | "DefaultExecutionGraph"
            if m.starts_with("Job ") && m.contains(" switched from state ") =>
        {
            let open = m.rfind(" (")?;
            let job = m[open + 2..].split(')').next()?.to_string();
            let states = m.split(" switched from state ").nth(1)?;
            let (from, to) = states.split_once(" to ")?;
            Some(Event::JobState { job, from: from.to_string(), to: to.trim_end_matches('.').to_string() })
        }
        "ExactlyOnceKafkaWriter" if m.starts_with("Prepare KafkaCommittable{") => Some(Event::Prepared {
            tid: tid_in(m)?,
            producer_id: after(m, "producerId=").and_then(num).unwrap_or(-1),
            epoch: after(m, "epoch=").and_then(num).unwrap_or(-1),
        }),
        "FlinkKafkaInternalProducer" => {
            let rest = m.strip_prefix("Attempting to resume transaction ")?;
            Some(Event::Resuming { tid: rest.split(' ').next()?.to_string() })
        }
        "KafkaCommitter" => {
            if let Some(rest) = m.strip_prefix("Committing Kafka transaction ") {
                return Some(Event::Committing { tid: rest.trim().to_string() });
            }
            if m.starts_with("Unable to commit transaction (") {
                let because = m.split(") because ").nth(1).unwrap_or("").split('.').next().unwrap_or("").to_string();
                return Some(Event::CommitDropped { tid: tid_in(m)?, because });
            }
            if m.starts_with("Transaction (") && m.contains("potentially lost") {
                return Some(Event::CommitFailed { tid: tid_in(m)? });
            }
            let rest = m.strip_prefix("Encountered retriable exception while committing ")?;
            Some(Event::CommitRetry { tid: rest.trim_end_matches('.').to_string() })
        }
        "TaskManagerRunner" => {
            m.trim_start().strip_prefix("Classpath: ").map(|c| Event::Classpath { entries: c.to_string() })
        }
        _ => None,
    }
}

/// Follows `path` from `from` (bytes) as it grows, sending each line; a file that shrinks
/// (replaced) is read again from its start. Ends when the receiver is gone.
pub async fn follow(path: PathBuf, source: usize, from: u64, tx: mpsc::UnboundedSender<(usize, Line)>) {
    let mut offset = from;
    let mut partial: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        if tx.is_closed() {
            return;
        }
        if let Ok(mut f) = tokio::fs::File::open(&path).await {
            let len = f.metadata().await.map(|m| m.len()).unwrap_or(0);
            if len < offset {
                offset = 0;
                partial.clear();
            }
            if len > offset && f.seek(SeekFrom::Start(offset)).await.is_ok() {
                while let Ok(n) = f.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    offset += n as u64;
                    partial.extend_from_slice(&buf[..n]);
                    while let Some(nl) = partial.iter().position(|&b| b == b'\n') {
                        let line: Vec<u8> = partial.drain(..=nl).collect();
                        let text = String::from_utf8_lossy(&line[..line.len() - 1]).trim_end_matches('\r').to_string();
                        if tx.send((source, split(&text))).is_err() {
                            return;
                        }
                    }
                }
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests;
