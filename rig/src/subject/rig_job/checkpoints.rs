//! The durable store of complete checkpoints: `<dir>/checkpoints/chk-<id>.json`.
//!
//! Mirrors what Flink's `CheckpointCoordinator` relies on from its
//! `CompletedCheckpointStore` and checkpoint storage: a checkpoint is *complete*
//! only once its metadata is durably written, and a restore reads the latest
//! complete one. The write is crash-safe: the record goes to a temp file, which
//! is fsynced, renamed into place (atomic on POSIX), and then the directory is
//! fsynced so the rename itself survives a machine crash. A temp file left by a
//! crash mid-write is never mistaken for a checkpoint.
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use sinkhole_model::CheckpointRecord;

const PREFIX: &str = "chk-";
const SUFFIX: &str = ".json";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("checkpoint file {path} is not a valid checkpoint record: {source}")]
    Corrupt {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

fn io_err<'p>(what: &'static str, path: &'p Path) -> impl FnOnce(io::Error) -> StoreError + 'p {
    move |source| StoreError::Io { what, path: path.to_path_buf(), source }
}

/// Complete checkpoints of one mode's run.
#[derive(Debug, Clone)]
pub struct CheckpointStore {
    dir: PathBuf,
}

impl CheckpointStore {
    /// Opens (creating it if needed) the checkpoint directory.
    pub fn open(dir: impl Into<PathBuf>) -> Result<CheckpointStore, StoreError> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(io_err("creating", &dir))?;
        Ok(CheckpointStore { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where checkpoint `id` lives once complete.
    pub fn path_of(&self, id: u64) -> PathBuf {
        self.dir.join(format!("{PREFIX}{id}{SUFFIX}"))
    }

    /// Writes `record` durably; when this returns Ok the checkpoint is complete.
    pub fn persist(&self, record: &CheckpointRecord) -> Result<PathBuf, StoreError> {
        let path = self.path_of(record.id);
        let tmp = self.dir.join(format!("{PREFIX}{}{SUFFIX}.tmp", record.id));
        let bytes = serde_json::to_vec_pretty(record).expect("a checkpoint record always serializes");
        {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&tmp)
                .map_err(io_err("creating", &tmp))?;
            f.write_all(&bytes).map_err(io_err("writing", &tmp))?;
            f.sync_all().map_err(io_err("fsyncing", &tmp))?;
        }
        fs::rename(&tmp, &path).map_err(io_err("renaming into place", &path))?;
        File::open(&self.dir).and_then(|d| d.sync_all()).map_err(io_err("fsyncing the directory", &self.dir))?;
        Ok(path)
    }

    /// Ids of the complete checkpoints, ascending. Temp files and foreign
    /// names are ignored.
    pub fn ids(&self) -> Result<Vec<u64>, StoreError> {
        let mut ids = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(io_err("listing", &self.dir))? {
            let entry = entry.map_err(io_err("listing", &self.dir))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(id) =
                name.strip_prefix(PREFIX).and_then(|r| r.strip_suffix(SUFFIX)).and_then(|n| n.parse().ok())
            {
                ids.push(id);
            }
        }
        ids.sort_unstable();
        Ok(ids)
    }

    /// Reads checkpoint `id`.
    pub fn load(&self, id: u64) -> Result<CheckpointRecord, StoreError> {
        let path = self.path_of(id);
        let text = fs::read(&path).map_err(io_err("reading", &path))?;
        serde_json::from_slice(&text).map_err(|source| StoreError::Corrupt { path, source })
    }

    /// The latest complete checkpoint, what a restore starts from (Flink:
    /// `CompletedCheckpointStore.getLatestCheckpoint`).
    pub fn latest(&self) -> Result<Option<CheckpointRecord>, StoreError> {
        match self.ids()?.last() {
            Some(&id) => self.load(id).map(Some),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkhole_model::{Committable, SubtaskState, TxnProtocol};

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sinkhole-chk-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    fn record(id: u64) -> CheckpointRecord {
        CheckpointRecord {
            id,
            subtasks: vec![
                SubtaskState { next_seq: id * 10, committables: vec![] },
                SubtaskState {
                    next_seq: id * 20,
                    committables: vec![Committable {
                        checkpoint: id,
                        transactional_id: format!("p-1-{id}"),
                        producer_id: 7,
                        producer_epoch: 0,
                        protocol: TxnProtocol::V1,
                        records: 20,
                        first_seq: Some(0),
                        last_seq: Some(19),
                    }],
                },
            ],
            persisted_wall_ms: 1,
        }
    }

    #[test]
    fn latest_is_the_highest_complete_id_and_round_trips() {
        let dir = temp_dir("latest");
        let store = CheckpointStore::open(&dir).unwrap();
        assert_eq!(store.latest().unwrap(), None);
        for id in [1, 2, 10, 9] {
            let p = store.persist(&record(id)).unwrap();
            assert_eq!(p, dir.join(format!("chk-{id}.json")));
        }
        // 10 > 9 numerically, not as text ("10" < "9").
        assert_eq!(store.ids().unwrap(), vec![1, 2, 9, 10]);
        assert_eq!(store.latest().unwrap(), Some(record(10)));
        assert_eq!(store.load(2).unwrap(), record(2));
        // No temp file remains after a successful persist.
        let names: Vec<String> =
            fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_leftover_temp_file_from_a_crash_is_ignored() {
        let dir = temp_dir("crash");
        let store = CheckpointStore::open(&dir).unwrap();
        store.persist(&record(3)).unwrap();
        // A crash between writing the temp file of 4 and renaming it, and a
        // torn temp file: neither is a complete checkpoint.
        fs::write(dir.join("chk-4.json.tmp"), b"{\"id\":4,\"subtasks\":[").unwrap();
        fs::write(dir.join("notes.txt"), b"not a checkpoint").unwrap();
        assert_eq!(store.ids().unwrap(), vec![3]);
        assert_eq!(store.latest().unwrap().map(|c| c.id), Some(3));
        // The next persist of 4 overwrites the leftover and completes.
        store.persist(&record(4)).unwrap();
        assert_eq!(store.latest().unwrap(), Some(record(4)));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_corrupt_complete_file_is_an_error_naming_it() {
        let dir = temp_dir("corrupt");
        let store = CheckpointStore::open(&dir).unwrap();
        fs::write(dir.join("chk-5.json"), b"{").unwrap();
        let e = store.latest().unwrap_err().to_string();
        assert!(e.contains("chk-5.json"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
