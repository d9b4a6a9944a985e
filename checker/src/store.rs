//! `drained.bin`: the records a drain read, kept with the run so a later
//! checker can re-check offline without the cluster.
//!
//! Format (little endian): the magic `SINKHOLE-DRAIN-1\n`, then per record
//! partition i32, offset i64, produced_us i64 (-1 = none), tid length u16
//! (0xFFFF = none) and bytes, value length u32 and bytes. About 40 bytes a
//! record for the rig's `run:subtask:seq` values.
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use super::count::RecordRef;
use super::{CheckerError, DrainedRecord, PartitionDrain};

/// The name on disk ([`sinkhole_base::rundir::ModeDir::drained`]).
pub const FILE_NAME: &str = sinkhole_base::rundir::names::DRAINED;
const MAGIC: &[u8] = b"SINKHOLE-DRAIN-1\n";

pub fn write(path: &Path, records: &[DrainedRecord]) -> Result<(), CheckerError> {
    let io = |source| CheckerError::Io { what: "writing drained records to", path: path.to_path_buf(), source };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut w = BufWriter::new(File::create(path).map_err(io)?);
    w.write_all(&encode(records)).map_err(io)?;
    w.into_inner().map_err(|e| io(e.into_error()))?.sync_all().map_err(io)
}

pub fn encode(records: &[DrainedRecord]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + records.len() * 48);
    out.extend_from_slice(MAGIC);
    for r in records {
        out.extend_from_slice(&r.partition.to_le_bytes());
        out.extend_from_slice(&r.offset.to_le_bytes());
        out.extend_from_slice(&r.produced_us.unwrap_or(-1).to_le_bytes());
        match &r.tid {
            Some(t) => {
                let b = &t.as_bytes()[..t.len().min(0xFFFE)];
                out.extend_from_slice(&(b.len() as u16).to_le_bytes());
                out.extend_from_slice(b);
            }
            None => out.extend_from_slice(&0xFFFFu16.to_le_bytes()),
        }
        out.extend_from_slice(&(r.value.len() as u32).to_le_bytes());
        out.extend_from_slice(&r.value);
    }
    out
}

/// Where each partition's drain ended (for the uncommitted tail), kept next
/// to `drained.bin` ([`sinkhole_base::rundir::ModeDir::drained_partitions`]).
pub const PARTITIONS_FILE: &str = sinkhole_base::rundir::names::DRAINED_PARTITIONS;

pub fn write_partitions(path: &Path, partitions: &[PartitionDrain]) -> Result<(), CheckerError> {
    let io = |source| CheckerError::Io { what: "writing drain positions to", path: path.to_path_buf(), source };
    let text = serde_json::to_string_pretty(partitions).map_err(|e| io(std::io::Error::other(e)))?;
    std::fs::write(path, text + "\n").map_err(io)
}

pub fn read_partitions(path: &Path) -> Result<Vec<PartitionDrain>, CheckerError> {
    let io = |source| CheckerError::Io { what: "reading drain positions from", path: path.to_path_buf(), source };
    let text = std::fs::read_to_string(path).map_err(io)?;
    // serde_json's message carries the line and column; recursion is capped
    // (128 levels) by serde_json itself.
    serde_json::from_str(&text).map_err(|e| {
        CheckerError::Other(format!(
            "{}: damaged drain positions (expected a list of {{partition, low_watermark, high_watermark, position, \
             records}}): {e}",
            path.display()
        ))
    })
}

/// Where a drain file stops making sense: the record, the byte it starts
/// at, and what is wrong there. Every length field is checked against the
/// bytes that follow it before anything is allocated for it, so a corrupt
/// length is this error, never a huge allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The index of the record (0 = the first after the magic).
    pub record: u64,
    /// The byte offset in the file where that record starts.
    pub at: u64,
    /// `truncated`, `tid is not UTF-8`, or [`BAD_MAGIC`].
    pub what: &'static str,
    /// Which field ran past the end, where, and by how much.
    pub detail: Option<String>,
}

pub const BAD_MAGIC: &str = "not a sinkhole drain file (bad magic)";
/// partition i32, offset i64, produced_us i64, tid length u16.
const HEAD: u64 = 22;

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.what == BAD_MAGIC {
            return f.write_str(BAD_MAGIC);
        }
        write!(f, "record {} at byte {}: {}", self.record, self.at, self.what)?;
        match &self.detail {
            Some(d) => write!(f, " ({d})"),
            None => Ok(()),
        }
    }
}

impl Damage {
    fn into_error(self, path: &Path) -> CheckerError {
        CheckerError::Other(format!("{}: {self}", path.display()))
    }
}

/// `Ok` when `need` bytes of `field` (at byte `field_at`) are among the
/// `left` still in the file; else the record is cut there.
fn fits(record: (u64, u64), field: &str, field_at: u64, need: u64, left: u64) -> Result<(), Damage> {
    if need <= left {
        return Ok(());
    }
    let detail = format!("{field} at byte {field_at} needs {need} bytes, {left} are left");
    Err(Damage { record: record.0, at: record.1, what: "truncated", detail: Some(detail) })
}

/// Streams `drained.bin` without loading it: calls `f` with each record's
/// index and a view that lives until the next call; stops after `limit`
/// records when given. Returns the number of records read.
pub fn for_each(path: &Path, limit: Option<u64>, mut f: impl FnMut(u64, RecordRef<'_>)) -> Result<u64, CheckerError> {
    let io = |source| CheckerError::Io { what: "reading drained records from", path: path.to_path_buf(), source };
    let file = File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut magic = vec![0u8; MAGIC.len()];
    if r.read_exact(&mut magic).is_err() || magic != MAGIC {
        return Err(CheckerError::Other(format!("{}: {BAD_MAGIC}", path.display())));
    }
    let (mut tid, mut value) = (Vec::new(), Vec::new());
    let mut head = [0u8; HEAD as usize];
    let mut i = 0u64;
    let mut pos = MAGIC.len() as u64;
    let check =
        |rec, field, at, need| fits(rec, field, at, need, size.saturating_sub(at)).map_err(|d| d.into_error(path));
    loop {
        // A clean end lies exactly between records.
        if limit.is_some_and(|l| i >= l) || pos >= size {
            return Ok(i);
        }
        let rec = (i, pos);
        check(rec, "the header", pos, HEAD)?;
        r.read_exact(&mut head).map_err(io)?;
        pos += HEAD;
        let partition = i32::from_le_bytes(head[0..4].try_into().unwrap());
        let offset = i64::from_le_bytes(head[4..12].try_into().unwrap());
        let tl = u16::from_le_bytes(head[20..22].try_into().unwrap());
        let has_tid = tl != 0xFFFF;
        let tl = if has_tid { u64::from(tl) } else { 0 };
        check(rec, "the tid", pos, tl)?;
        tid.resize(tl as usize, 0);
        r.read_exact(&mut tid).map_err(io)?;
        pos += tl;
        check(rec, "the value length", pos, 4)?;
        let mut vl = [0u8; 4];
        r.read_exact(&mut vl).map_err(io)?;
        pos += 4;
        let vl = u64::from(u32::from_le_bytes(vl));
        check(rec, "the value", pos, vl)?;
        value.resize(vl as usize, 0);
        r.read_exact(&mut value).map_err(io)?;
        pos += vl;
        let tid_str = if has_tid {
            let not_utf8 = || Damage { record: i, at: rec.1, what: "tid is not UTF-8", detail: None }.into_error(path);
            Some(std::str::from_utf8(&tid).map_err(|_| not_utf8())?)
        } else {
            None
        };
        f(i, RecordRef { partition, offset, value: &value, tid: tid_str });
        i += 1;
    }
}

pub fn read(path: &Path) -> Result<Vec<DrainedRecord>, CheckerError> {
    let io = |source| CheckerError::Io { what: "reading drained records from", path: path.to_path_buf(), source };
    let mut buf = Vec::new();
    BufReader::new(File::open(path).map_err(io)?).read_to_end(&mut buf).map_err(io)?;
    decode(&buf).map_err(|d| d.into_error(path))
}

/// The records of a whole drain file in memory. A tid that is not UTF-8 is
/// read lossily here (the streaming reader refuses it).
pub fn decode(buf: &[u8]) -> Result<Vec<DrainedRecord>, Damage> {
    let mut b = buf.strip_prefix(MAGIC).ok_or(Damage { record: 0, at: 0, what: BAD_MAGIC, detail: None })?;
    let mut out = Vec::new();
    let size = buf.len() as u64;
    // Checks `n` against the bytes left before taking them.
    fn take<'a>(b: &mut &'a [u8], size: u64, rec: (u64, u64), field: &str, n: u64) -> Result<&'a [u8], Damage> {
        fits(rec, field, size - b.len() as u64, n, b.len() as u64)?;
        let (h, t) = b.split_at(n as usize);
        *b = t;
        Ok(h)
    }
    let mut i = 0u64;
    while !b.is_empty() {
        let rec = (i, size - b.len() as u64);
        let head = take(&mut b, size, rec, "the header", HEAD)?;
        let partition = i32::from_le_bytes(head[0..4].try_into().unwrap());
        let offset = i64::from_le_bytes(head[4..12].try_into().unwrap());
        let produced = i64::from_le_bytes(head[12..20].try_into().unwrap());
        let tl = u16::from_le_bytes(head[20..22].try_into().unwrap());
        let tid = match tl {
            0xFFFF => None,
            n => Some(String::from_utf8_lossy(take(&mut b, size, rec, "the tid", u64::from(n))?).into_owned()),
        };
        let vl = u32::from_le_bytes(take(&mut b, size, rec, "the value length", 4)?.try_into().unwrap());
        let value = take(&mut b, size, rec, "the value", u64::from(vl))?.to_vec();
        out.push(DrainedRecord { partition, offset, value, tid, produced_us: (produced >= 0).then_some(produced) });
        i += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let recs = vec![
            DrainedRecord {
                partition: 2,
                offset: 99,
                value: b"r:1:2".to_vec(),
                tid: Some("p-1-3".into()),
                produced_us: Some(5),
            },
            DrainedRecord { partition: 0, offset: 0, value: vec![], tid: None, produced_us: None },
        ];
        let bytes = encode(&recs);
        assert_eq!(decode(&bytes).unwrap(), recs);
        assert_eq!(decode(&bytes[..bytes.len() - 1]).unwrap_err().what, "truncated");
        assert!(decode(b"nope").is_err());

        let dir = std::env::temp_dir().join(format!("sinkhole-store-{}", std::process::id()));
        let path = dir.join(FILE_NAME);
        write(&path, &recs).unwrap();
        let mut seen = Vec::new();
        let n = for_each(&path, None, |i, r| {
            seen.push((i, r.partition, r.offset, r.value.to_vec(), r.tid.map(str::to_string)))
        })
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!(seen[0], (0, 2, 99, b"r:1:2".to_vec(), Some("p-1-3".to_string())));
        assert_eq!(seen[1], (1, 0, 0, vec![], None));
        assert_eq!(for_each(&path, Some(1), |_, _| {}).unwrap(), 1);
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let e = for_each(&path, None, |_, _| {}).unwrap_err().to_string();
        assert!(e.contains("drained.bin: record 1 at byte 53: truncated"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn one_record() -> Vec<u8> {
        encode(&[DrainedRecord {
            partition: 1,
            offset: 7,
            value: b"r:0:1".to_vec(),
            tid: Some("t".into()),
            produced_us: None,
        }])
    }

    /// Byte offsets in `one_record()`: magic 17, header 22, tid 1.
    const TID_LEN_AT: usize = 17 + 20;
    const VALUE_LEN_AT: usize = 17 + 22 + 1;

    fn stream(bytes: &[u8], name: &str) -> Result<u64, String> {
        let dir = std::env::temp_dir().join(format!("sinkhole-store-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(FILE_NAME);
        std::fs::write(&path, bytes).unwrap();
        let r = for_each(&path, None, |_, _| {}).map_err(|e| e.to_string());
        let whole = read(&path).map(|v| v.len() as u64).map_err(|e| e.to_string());
        std::fs::remove_dir_all(&dir).unwrap();
        // Both readers agree on where the file breaks.
        match (&r, &whole) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(a), Err(b)) => assert_eq!(a, b),
            _ => panic!("the readers disagree: {r:?} / {whole:?}"),
        }
        r
    }

    #[test]
    fn an_absurd_length_is_an_error_naming_the_file_and_offset_not_an_allocation() {
        let mut b = one_record();
        b[VALUE_LEN_AT..VALUE_LEN_AT + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = stream(&b, "vlen").unwrap_err();
        assert!(
            e.ends_with(
                "drained.bin: record 0 at byte 17: truncated (the value at byte 44 needs 4294967295 bytes, 5 are left)"
            ),
            "{e}"
        );
        let d = decode(&b).unwrap_err();
        assert_eq!((d.record, d.at, d.what), (0, 17, "truncated"));

        let mut b = one_record();
        b[TID_LEN_AT..TID_LEN_AT + 2].copy_from_slice(&0xFFFEu16.to_le_bytes());
        let e = stream(&b, "tlen").unwrap_err();
        assert!(
            e.ends_with("record 0 at byte 17: truncated (the tid at byte 39 needs 65534 bytes, 10 are left)"),
            "{e}"
        );
    }

    #[test]
    fn a_cut_file_names_the_record_and_the_field() {
        let full = [one_record(), one_record()[MAGIC.len()..].to_vec()].concat();
        assert_eq!(stream(&full, "full"), Ok(2));
        let second = one_record().len() as u64;
        for (cut, field) in [(5, "the header"), (22, "the tid"), (25, "the value length"), (28, "the value")] {
            let e = stream(&full[..second as usize + cut], "cut").unwrap_err();
            assert!(
                e.contains(&format!("drained.bin: record 1 at byte {second}: truncated ({field} at byte")),
                "{cut}: {e}"
            );
        }
        // The magic alone is an empty drain; less is not a drain file.
        assert_eq!(stream(MAGIC, "magic"), Ok(0));
        assert!(stream(&MAGIC[..5], "short").unwrap_err().ends_with(BAD_MAGIC));
        assert_eq!(decode(&MAGIC[..5]).unwrap_err().to_string(), BAD_MAGIC);
    }

    #[test]
    fn damaged_drain_positions_are_an_error_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("sinkhole-store-parts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(PARTITIONS_FILE);
        let good = [PartitionDrain { partition: 0, low_watermark: 0, high_watermark: 9, position: 9, records: 3 }];
        write_partitions(&path, &good).unwrap();
        assert_eq!(read_partitions(&path).unwrap(), good);
        let text = std::fs::read_to_string(&path).unwrap();
        for damaged in [
            text[..text.len() / 2].to_string(),
            text.replace("9", "99999999999999999999"),
            text.replace("\"position\": 9", "\"position\": \"x\""),
            "null".to_string(),
            "[".repeat(10_000),
        ] {
            std::fs::write(&path, &damaged).unwrap();
            let e = read_partitions(&path).unwrap_err().to_string();
            assert!(e.starts_with(&format!("{}: damaged drain positions", path.display())), "{e}");
            assert!(e.contains(" at line "), "{e}");
        }
        std::fs::write(&path, [0xFFu8, 0xFE]).unwrap();
        let e = read_partitions(&path).unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
