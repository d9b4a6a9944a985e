//! Record layout (the checker parses what the source writes).
/// Header names carried by every record.
pub const H_RUN: &str = "sinkhole.run";
pub const H_SUBTASK: &str = "sinkhole.subtask";
pub const H_SEQ: &str = "sinkhole.seq";
/// Produce time, Unix microseconds.
pub const H_TIME_US: &str = "sinkhole.produced_us";
pub const H_TID: &str = "sinkhole.tid";

/// The record key: `"{subtask}-{seq}"`; the value repeats it with the run
/// id so a record is attributable even if headers were stripped.
pub fn key(subtask: u32, seq: u64) -> String {
    format!("{subtask}-{seq}")
}

pub fn value(run_id: &str, subtask: u32, seq: u64) -> String {
    format!("{run_id}:{subtask}:{seq}")
}

/// Parses a value back into (run id, subtask, seq).
pub fn parse_value(v: &[u8]) -> Option<(&str, u32, u64)> {
    let s = std::str::from_utf8(v).ok()?;
    let mut it = s.rsplitn(3, ':');
    let seq = it.next()?.parse().ok()?;
    let subtask = it.next()?.parse().ok()?;
    let run = it.next()?;
    Some((run, subtask, seq))
}
