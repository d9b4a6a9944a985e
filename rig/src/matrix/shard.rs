//! Sharded campaigns: `sinkhole matrix --shard I/N` runs a fixed 1/N of the
//! matrix's cells, so N hosts (a CI system's job matrix, a Kubernetes Indexed
//! Job) run one campaign between them and `sinkhole merge` joins the shards
//! ([`super::merge`]); docs/CAMPAIGNS.md shows both set-ups.
//!
//! The split depends on the cell list alone, never on the machine: the list
//! is the same for the same arguments (files in the order given, a
//! directory's sorted by name, then versions, then seeds — seeds must be
//! named, not drawn), and cell k (0-based) belongs to shard (k mod N) + 1.
//! Round robin rather than N slices: a scenario's versions and seeds sit next
//! to each other in the list, so slices would put a slow scenario's every
//! cell on one host.
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// `--shard I/N`: shard I (1-based) of N.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Whether cell `k` (0-based, in the whole matrix) is this shard's.
    pub fn takes(&self, k: usize) -> bool {
        k % self.count as usize == (self.index - 1) as usize
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("--shard {s}: expected I/N with 1 ≤ I ≤ N, e.g. 2/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u32, u32) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if index < 1 || count < 1 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// What `matrix.json` of a shard says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    pub index: u32,
    pub count: u32,
    /// How many cells the whole matrix has (every shard's together).
    pub cells_total: usize,
}

impl ShardInfo {
    pub fn shard(&self) -> Shard {
        Shard { index: self.index, count: self.count }
    }
}

/// One scenario file of a matrix, and a digest of its text: two shards ran
/// the same library when their entries are equal (paths may differ between
/// hosts; names and texts may not).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryEntry {
    pub scenario: String,
    pub file: PathBuf,
    /// FNV-1a 64 of the file's bytes, 16 hex digits (a change detector, not a
    /// signature).
    pub digest: String,
}

/// FNV-1a 64 of `bytes`, as 16 hex digits.
pub fn digest(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_i_of_n_and_refuses_the_rest() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        assert_eq!("1/1".parse::<Shard>().unwrap().to_string(), "1/1");
        for bad in ["0/3", "4/3", "1", "a/b", "1/0", "-1/2", "1/2/3"] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(e.starts_with(&format!("--shard {bad}: expected I/N")), "{e}");
        }
    }

    #[test]
    fn every_cell_in_exactly_one_shard_round_robin() {
        for n in 1..=5u32 {
            for total in 0..12usize {
                for k in 0..total {
                    let owners: Vec<u32> = (1..=n).filter(|&i| Shard { index: i, count: n }.takes(k)).collect();
                    assert_eq!(owners, vec![(k % n as usize) as u32 + 1], "cell {k} of {total}, {n} shards");
                }
            }
        }
    }

    #[test]
    fn digest_is_fnv1a_64() {
        assert_eq!(digest(b""), "cbf29ce484222325");
        assert_eq!(digest(b"a"), "af63dc4c8601ec8c");
        assert_ne!(digest(b"name: x\n"), digest(b"name: y\n"));
    }
}
