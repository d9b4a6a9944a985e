//! What the live readers saw: `readers.jsonl`, one [`ReadEvent`] a line, beside a mode's
//! `history.jsonl`.
//!
//! A scenario's `readers:` are read_committed consumers of the mode's output topic that run
//! while the job and the faults do (Kafka's own `transactions_test.py` keeps such a consumer
//! going through its bounces; Jepsen's Kafka workload records every poll). Each poll of each
//! record is a line here, written as it happens and kept out of memory: a run's readers may see
//! millions of records, and the checker streams them back ([`read`]).
//!
//! The lines carry the wall clock the history's `wall_ms` is on (the readers and the
//! coordinator share the rig's machine), so the checker can put a poll before or after a
//! checkpoint the coordinator recorded.
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::Stamp;

/// One reader's life: a consumer incarnation (a restart makes a new one) and what it did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ReadKind {
    /// A consumer was created (`group` when it subscribes; none when it assigns itself).
    Started {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
    },
    /// The partitions this incarnation now reads (once for `assign`, at every rebalance for
    /// `subscribe`): a nonmonotonic poll is judged within one assignment; a poll-skip within one
    /// and across them (per group, or per reader across its incarnations).
    Assigned { partitions: Vec<i32> },
    /// One record polled. `subtask`/`seq` when its value is one the run's source wrote.
    Polled {
        partition: i32,
        offset: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subtask: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seq: Option<u64>,
    },
    /// The consumer was closed (the run ended, or a fault killed it).
    Stopped { reason: String },
}

/// A line of `readers.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadEvent {
    pub wall_ms: u64,
    pub reader: u32,
    /// 0 for the reader's first consumer, then one more at each restart.
    pub incarnation: u32,
    #[serde(flatten)]
    pub kind: ReadKind,
}

/// Appends read events; cloned into every reader thread. Buffered (a poll is a line, and
/// readers poll thousands a second): [`ReadsWriter::flush`] at the end of the run. A crash
/// of the rig loses the buffer's tail, which the checker then sees as records unseen, never
/// as records seen wrongly.
#[derive(Debug, Clone)]
pub struct ReadsWriter {
    out: Arc<Mutex<BufWriter<File>>>,
}

impl ReadsWriter {
    /// Creates (or truncates) the file.
    pub fn create(path: &Path) -> io::Result<ReadsWriter> {
        let file = File::create(path)?;
        Ok(ReadsWriter { out: Arc::new(Mutex::new(BufWriter::with_capacity(1 << 16, file))) })
    }

    pub fn record(&self, reader: u32, incarnation: u32, kind: ReadKind) -> io::Result<()> {
        let event = ReadEvent { wall_ms: Stamp::now().wall_ms, reader, incarnation, kind };
        let mut line = serde_json::to_vec(&event).map_err(io::Error::other)?;
        line.push(b'\n');
        self.out.lock().unwrap_or_else(|p| p.into_inner()).write_all(&line)
    }

    pub fn flush(&self) -> io::Result<()> {
        self.out.lock().unwrap_or_else(|p| p.into_inner()).flush()
    }
}

/// Streams `readers.jsonl` to `each`, in file order. A torn last line (the rig crashed while
/// writing it) is skipped; any other line that is not a read event is an error naming it.
pub fn read(path: &Path, mut each: impl FnMut(ReadEvent)) -> io::Result<u64> {
    let mut lines = BufReader::new(File::open(path)?).lines().enumerate().peekable();
    let mut n = 0;
    while let Some((i, line)) = lines.next() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<ReadEvent>(&line) {
            Ok(e) => {
                each(e);
                n += 1;
            }
            Err(_) if lines.peek().is_none() => break,
            Err(e) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}:{}:{}: not a read event: {e}", path.display(), i + 1, e.column()),
                ))
            }
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("sinkhole-reads-{name}-{}.jsonl", std::process::id()))
    }

    #[test]
    fn written_events_read_back_in_order_and_a_torn_tail_is_skipped() {
        let path = temp("order");
        let w = ReadsWriter::create(&path).unwrap();
        w.record(0, 0, ReadKind::Started { group: None }).unwrap();
        w.record(0, 0, ReadKind::Assigned { partitions: vec![0, 1] }).unwrap();
        w.record(0, 0, ReadKind::Polled { partition: 1, offset: 7, subtask: Some(0), seq: Some(3) }).unwrap();
        w.flush().unwrap();
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"wall_ms\":1,\"rea");
        std::fs::write(&path, &text).unwrap();
        let mut seen = vec![];
        assert_eq!(read(&path, |e| seen.push(e.kind)).unwrap(), 3);
        assert_eq!(seen[2], ReadKind::Polled { partition: 1, offset: 7, subtask: Some(0), seq: Some(3) });
        assert_eq!(seen[1], ReadKind::Assigned { partitions: vec![0, 1] });
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_damaged_line_in_the_middle_is_an_error_with_its_line() {
        let path = temp("damaged");
        std::fs::write(
            &path,
            "not json\n{\"wall_ms\":1,\"reader\":0,\"incarnation\":0,\"type\":\"stopped\",\"reason\":\"end\"}\n",
        )
        .unwrap();
        let e = read(&path, |_| {}).unwrap_err();
        assert!(e.to_string().contains(&format!("{}:1:", path.display())), "{e}");
        let _ = std::fs::remove_file(&path);
    }
}
