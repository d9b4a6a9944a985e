//! The brokers' and Flink's own log lines, as a story cites them: each line with its time on
//! the history's clock (Unix ms) and where it is (file and line number), kept only when it
//! names what a chain is about — a transactional id, a producer id, a partition of the
//! output topic — or is one of the few cluster events that decide what becomes of a
//! transaction in flight without naming one ([`CLUSTER_EVENTS`]).
//!
//! Kafka's `server.log` stamps a line `[2026-12-07 21:02:26,390]` in the broker JVM's time
//! zone; the rig starts its brokers on the machine's clock, and the times are read as UTC (the
//! rig's own machines run in UTC; a story from a machine in another zone says so by its
//! offsets). The Flink subject's logs are stamped in Unix ms (`subject::flink::logs::PATTERN`).
use std::path::Path;

use sinkhole_base::utc::Utc;

/// Lines of a broker's log about the cluster itself that decide the fate of a transaction in
/// flight without naming it: what the line holds, and what it means. The order is the one a
/// reader meets them in after a node dies.
pub const CLUSTER_EVENTS: &[(&str, &str)] = &[
    (
        "DUPLICATE_BROKER_REGISTRATION",
        "a restarted broker cannot register while its killed incarnation's session lasts",
    ),
    ("Fencing broker", "the controller fenced a broker: a partition whose only replica it held has no leader now"),
    ("Successfully registered broker", "a broker registered with the controller again"),
    ("likely deleted", "the transaction marker manager took partitions without a leader for deleted and skipped them"),
];

/// Which kind of log a file is, so its times are read right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    /// A Kafka broker's `server.log`.
    Broker,
    /// A Flink JobManager's or TaskManager's log.
    Flink,
}

/// One log record's first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub wall_ms: u64,
    /// 1-based, in its file.
    pub line_no: usize,
    pub text: String,
}

/// A log file, read: its name as a story cites it (relative to the run directory) and its
/// timed lines (continuation lines of a stack trace are left out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFile {
    pub name: String,
    pub kind: LogKind,
    pub lines: Vec<LogLine>,
}

impl LogFile {
    pub fn parse(name: &str, kind: LogKind, text: &str) -> LogFile {
        let lines = text
            .lines()
            .enumerate()
            .filter_map(|(i, l)| {
                let at = match kind {
                    LogKind::Broker => broker_time(l),
                    LogKind::Flink => flink_time(l),
                }?;
                Some(LogLine { wall_ms: at, line_no: i + 1, text: l.to_string() })
            })
            .collect();
        LogFile { name: name.to_string(), kind, lines }
    }

    /// Reads `path`, cited as `name`; None when it cannot be read (a story says so).
    pub fn read(path: &Path, name: &str, kind: LogKind) -> Option<LogFile> {
        let bytes = std::fs::read(path).ok()?;
        Some(LogFile::parse(name, kind, &String::from_utf8_lossy(&bytes)))
    }
}

/// `[2026-12-07 21:02:26,390] INFO …` → Unix ms, read as UTC.
pub fn broker_time(line: &str) -> Option<u64> {
    let t = line.strip_prefix('[')?.get(..23)?;
    let num = |r: std::ops::Range<usize>| t.get(r)?.parse::<u32>().ok();
    if t.as_bytes().get(4) != Some(&b'-') || t.as_bytes().get(10) != Some(&b' ') || t.as_bytes().get(19) != Some(&b',')
    {
        return None;
    }
    let utc = Utc {
        year: i64::from(num(0..4)?),
        month: num(5..7)?,
        day: num(8..10)?,
        hour: num(11..13)?,
        minute: num(14..16)?,
        second: num(17..19)?,
    };
    Some(utc.to_unix()? * 1000 + u64::from(num(20..23)?))
}

/// `1765141089812 INFO  …` → Unix ms.
pub fn flink_time(line: &str) -> Option<u64> {
    let (ms, _) = line.split_once(' ')?;
    (ms.len() == 13).then(|| ms.parse().ok()).flatten()
}

/// What a chain's log lines must name (any of).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needles {
    pub transactional_id: Option<String>,
    pub producer_id: Option<i64>,
    /// `topic-partition` names, as Kafka writes them.
    pub partitions: Vec<String>,
    /// The run's id: a partition's and a data directory's names hold it (and with it the
    /// scenario's name, which may hold any word), so it is taken out before a line is read for
    /// [`PARTITION_WORDS`].
    pub run_id: String,
}

/// Words that make a line naming only a partition worth citing: it is about the partition's
/// leader or a transaction in it, not about loading its segments (which a restart logs by the
/// dozen).
pub const PARTITION_WORDS: &[&str] =
    &["marker", "txn", "transaction", "leader endpoint", "no leader", "offline", "fenc"];

impl Needles {
    /// Whether `line` names one of them; a transactional id is matched whole (`…-0-5` is not
    /// `…-0-50`), a producer id only after the words Kafka puts before it, a partition only in
    /// a line about its leader or a transaction ([`PARTITION_WORDS`]).
    pub fn named_in(&self, line: &str) -> bool {
        self.transactional_id.as_deref().is_some_and(|t| has_word(line, t))
            || self.producer_id.is_some_and(|p| names_producer(line, p))
            || (self.partitions.iter().any(|p| has_word(line, p)) && {
                let rest = if self.run_id.is_empty() { line.to_string() } else { line.replace(&self.run_id, "") };
                let rest = rest.replace("__transaction_state", "");
                let lower = rest.to_ascii_lowercase();
                PARTITION_WORDS.iter().any(|w| lower.contains(w))
            })
    }
}

/// `word` in `line` with no id character right after it (ids run on with `-`, digits, letters).
fn has_word(line: &str, word: &str) -> bool {
    line.match_indices(word).any(|(i, _)| {
        let next = line[i + word.len()..].chars().next();
        let prev = line[..i].chars().next_back();
        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            && !prev.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

/// Kafka's ways of writing a producer id: `producerId=8`, `producerId 8`, `producer id 8`,
/// `ProducerId 8`.
fn names_producer(line: &str, pid: i64) -> bool {
    let lower = line.to_ascii_lowercase();
    let n = pid.to_string();
    ["producerid=", "producerid ", "producer id ", "producerid: "].iter().any(|p| {
        lower.match_indices(p).any(|(i, _)| {
            let rest = &lower[i + p.len()..];
            rest.starts_with(&n) && !rest[n.len()..].starts_with(|c: char| c.is_ascii_digit())
        })
    })
}

/// The cluster event a line is, if any: its meaning from [`CLUSTER_EVENTS`].
pub fn cluster_event(line: &str) -> Option<&'static str> {
    CLUSTER_EVENTS.iter().find(|(k, _)| line.contains(k)).map(|(_, what)| *what)
}

/// A log line cut for a story: its message without the timestamp, at most `max` characters.
pub fn excerpt(line: &LogLine, kind: LogKind, max: usize) -> String {
    let text = match kind {
        LogKind::Broker => line.text.split_once("] ").map_or(line.text.as_str(), |(_, r)| r),
        LogKind::Flink => line.text.split_once(' ').map_or(line.text.as_str(), |(_, r)| r),
    };
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let cut: String = text.chars().take(max).collect();
        format!("{cut} …")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FENCING: &str = "[2026-12-07 21:02:26,390] INFO [QuorumController id=1] Fencing broker 1 at epoch 12 because its session has timed out. (org.apache.kafka.controller.ReplicationControlManager)";

    #[test]
    fn a_brokers_time_is_read_as_utc_and_a_continuation_line_has_none() {
        let ms = broker_time(FENCING).unwrap();
        assert_eq!(Utc::from_unix(ms / 1000).rfc3339(), "2026-12-07T21:02:26Z");
        assert_eq!(ms % 1000, 390);
        assert_eq!(broker_time("\tat kafka.Foo.bar(Foo.scala:1)"), None);
        assert_eq!(broker_time("[not a time] x"), None);
        assert_eq!(flink_time("1765141089812 INFO  org.x [main] y"), Some(1_765_141_089_812));
        assert_eq!(flink_time("12 INFO x"), None);
        let f = LogFile::parse("cluster/node-1/server.log", LogKind::Broker, &format!("{FENCING}\n\tat x\n{FENCING}"));
        assert_eq!(f.lines.iter().map(|l| l.line_no).collect::<Vec<_>>(), [1, 3]);
    }

    #[test]
    fn needles_match_whole_ids_and_producer_ids_only_as_kafka_writes_them() {
        let n = Needles {
            transactional_id: Some("sinkhole-x-legacy-0-5".into()),
            producer_id: Some(8),
            partitions: vec!["sinkhole-run-markers-1-legacy-1".into()],
            run_id: "run-markers-1".into(),
        };
        assert!(n.named_in("Sending txn markers for sinkhole-x-legacy-0-5, coordinatorEpoch=0"));
        assert!(!n.named_in("Initialized transactionalId sinkhole-x-legacy-0-50 with producerId 9"));
        assert!(n.named_in("TransactionMetadata(transactionalId=y, producerId=8, prevProducerId=8)"));
        assert!(n.named_in("Initialized transactionalId y with producerId 8 and producer epoch 0"));
        assert!(!n.named_in("producerId=80, epoch 8"));
        assert!(n.named_in("Couldn't find leader endpoint for partitions Set(sinkhole-run-markers-1-legacy-1, x-0)"));
        assert!(!n.named_in("Created log for partition sinkhole-run-markers-1-legacy-10 with no leader"));
        // Loading a partition's segments is noise, though the run's name says "markers".
        assert!(!n.named_in("[LogLoader partition=sinkhole-run-markers-1-legacy-1, dir=/r/run-markers-1/data] Loading"));
        assert_eq!(
            cluster_event(FENCING),
            Some("the controller fenced a broker: a partition whose only replica it held has no leader now")
        );
        assert_eq!(cluster_event("INFO nothing to see"), None);
    }

    #[test]
    fn an_excerpt_drops_the_time_and_cuts_long_lines() {
        let l = LogLine { wall_ms: 0, line_no: 1, text: FENCING.into() };
        assert!(excerpt(&l, LogKind::Broker, 400).starts_with("INFO [QuorumController id=1] Fencing broker 1"));
        assert_eq!(excerpt(&l, LogKind::Broker, 10), "INFO [Quor …");
    }
}
