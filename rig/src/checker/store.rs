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

pub const FILE_NAME: &str = "drained.bin";
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
/// to `drained.bin`.
pub const PARTITIONS_FILE: &str = "drained.partitions.json";

pub fn write_partitions(path: &Path, partitions: &[PartitionDrain]) -> Result<(), CheckerError> {
    let io = |source| CheckerError::Io { what: "writing drain positions to", path: path.to_path_buf(), source };
    let text = serde_json::to_string_pretty(partitions).map_err(|e| io(std::io::Error::other(e)))?;
    std::fs::write(path, text + "\n").map_err(io)
}

pub fn read_partitions(path: &Path) -> Result<Vec<PartitionDrain>, CheckerError> {
    let io = |source| CheckerError::Io { what: "reading drain positions from", path: path.to_path_buf(), source };
    let text = std::fs::read_to_string(path).map_err(io)?;
    serde_json::from_str(&text).map_err(|e| CheckerError::Other(format!("{}: {e}", path.display())))
}

/// Streams `drained.bin` without loading it: calls `f` with each record's
/// index and a view that lives until the next call; stops after `limit`
/// records when given. Returns the number of records read.
pub fn for_each(path: &Path, limit: Option<u64>, mut f: impl FnMut(u64, RecordRef<'_>)) -> Result<u64, CheckerError> {
    let io = |source| CheckerError::Io { what: "reading drained records from", path: path.to_path_buf(), source };
    let bad = |i: u64, m: &str| CheckerError::Other(format!("{}: record {i}: {m}", path.display()));
    let mut r = BufReader::with_capacity(1 << 20, File::open(path).map_err(io)?);
    let mut magic = vec![0u8; MAGIC.len()];
    if r.read_exact(&mut magic).is_err() || magic != MAGIC {
        return Err(CheckerError::Other(format!("{}: not a sinkhole drain file (bad magic)", path.display())));
    }
    let (mut tid, mut value) = (Vec::new(), Vec::new());
    let mut head = [0u8; 22];
    let mut i = 0u64;
    loop {
        if limit.is_some_and(|l| i >= l) {
            return Ok(i);
        }
        // A clean end lies exactly between records.
        match r.read(&mut head[..1]).map_err(io)? {
            0 => return Ok(i),
            _ => r.read_exact(&mut head[1..]).map_err(|_| bad(i, "truncated"))?,
        }
        let partition = i32::from_le_bytes(head[0..4].try_into().unwrap());
        let offset = i64::from_le_bytes(head[4..12].try_into().unwrap());
        let tl = u16::from_le_bytes(head[20..22].try_into().unwrap());
        let has_tid = tl != 0xFFFF;
        tid.resize(if has_tid { tl as usize } else { 0 }, 0);
        r.read_exact(&mut tid).map_err(|_| bad(i, "truncated"))?;
        let mut vl = [0u8; 4];
        r.read_exact(&mut vl).map_err(|_| bad(i, "truncated"))?;
        value.resize(u32::from_le_bytes(vl) as usize, 0);
        r.read_exact(&mut value).map_err(|_| bad(i, "truncated"))?;
        let tid_str =
            if has_tid { Some(std::str::from_utf8(&tid).map_err(|_| bad(i, "tid is not UTF-8"))?) } else { None };
        f(i, RecordRef { partition, offset, value: &value, tid: tid_str });
        i += 1;
    }
}

pub fn read(path: &Path) -> Result<Vec<DrainedRecord>, CheckerError> {
    let io = |source| CheckerError::Io { what: "reading drained records from", path: path.to_path_buf(), source };
    let mut buf = Vec::new();
    BufReader::new(File::open(path).map_err(io)?).read_to_end(&mut buf).map_err(io)?;
    decode(&buf).map_err(|m| CheckerError::Other(format!("{}: {m}", path.display())))
}

pub fn decode(buf: &[u8]) -> Result<Vec<DrainedRecord>, String> {
    let mut b = buf.strip_prefix(MAGIC).ok_or("not a sinkhole drain file (bad magic)")?;
    let mut out = Vec::new();
    fn take<'a>(b: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
        if b.len() < n {
            return Err("truncated".to_string());
        }
        let (h, t) = b.split_at(n);
        *b = t;
        Ok(h)
    }
    while !b.is_empty() {
        let partition = i32::from_le_bytes(take(&mut b, 4)?.try_into().unwrap());
        let offset = i64::from_le_bytes(take(&mut b, 8)?.try_into().unwrap());
        let produced = i64::from_le_bytes(take(&mut b, 8)?.try_into().unwrap());
        let tl = u16::from_le_bytes(take(&mut b, 2)?.try_into().unwrap());
        let tid =
            if tl == 0xFFFF { None } else { Some(String::from_utf8_lossy(take(&mut b, tl as usize)?).into_owned()) };
        let vl = u32::from_le_bytes(take(&mut b, 4)?.try_into().unwrap());
        let value = take(&mut b, vl as usize)?.to_vec();
        out.push(DrainedRecord { partition, offset, value, tid, produced_us: (produced >= 0).then_some(produced) });
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
        assert_eq!(decode(&bytes[..bytes.len() - 1]).unwrap_err(), "truncated");
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
        assert!(e.ends_with("drained.bin: record 1: truncated"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
