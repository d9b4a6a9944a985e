//! The state file of a cluster that outlives one command (`sinkhole cluster up`).
//!
//! `cluster up` starts detached JVMs and writes `cluster.json` in the cluster's
//! directory: versions, ports, and each node's process identity (pid + kernel
//! start time, so a reused pid is never signalled). Later commands adopt the
//! cluster from it. A state file whose nodes should be running but none of whose
//! processes is alive was left by a crashed run or a reboot: it is *stale*, and
//! is cleaned (directory removed) when a command finds it.
//!
//! `cluster up --backend containers` writes `containers.json` instead
//! ([`ContainersRecord`]): the containers, their network and host ports. The
//! engine keeps them running; the record finds them again. Both files are
//! written whole or not at all (temporary file, fsync, rename).
use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::local::{LocalCluster, LocalNodeRecord};
use super::Intent;
use sinkhole_install::KafkaDist;
use sinkhole_scenario::Jit;

fn tiered() -> Jit {
    Jit::Tiered
}

pub const STATE_FILE: &str = "cluster.json";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClusterState {
    pub name: String,
    pub version: String,
    /// The KAFKA_HOME in use, when not the cached install of `version`.
    pub kafka_home: Option<PathBuf>,
    pub cluster_id: String,
    pub dir: PathBuf,
    pub heap: String,
    /// The brokers' JIT compilers; a state file from before this field was written ran the
    /// JVM's default (`tiered`), and its restarts keep it.
    #[serde(default = "tiered")]
    pub jit: Jit,
    pub broker_config: BTreeMap<String, String>,
    pub nodes: Vec<LocalNodeRecord>,
    pub created_unix_ms: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("no cluster named '{name}' (no state file at {path}); start one with `sinkhole cluster up`")]
    Missing { name: String, path: PathBuf },
    #[error("the state file {path} is unreadable ({detail}); remove the directory {dir} after making sure no broker from it runs")]
    Corrupt { path: PathBuf, dir: PathBuf, detail: String },
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Writes `dir/file` through a temporary file, fsync and rename: a crash never leaves half a file.
fn write_whole(dir: &Path, file: &str, text: &str) -> Result<(), StateError> {
    let path = dir.join(file);
    let tmp = dir.join(format!(".{file}.tmp"));
    let write = || -> std::io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, &path)
    };
    write().map_err(|source| StateError::Write { path, source })
}

/// Where clusters named by the CLI live.
pub fn clusters_root() -> PathBuf {
    sinkhole_install::cache_root().join("clusters")
}

pub fn cluster_dir(name: &str) -> PathBuf {
    clusters_root().join(name)
}

/// Liveness of a state file's nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// At least one node process is alive.
    Live,
    /// Nodes should run but none of their processes is alive: a crashed run.
    Stale,
    /// Every node was stopped or killed on purpose and none runs.
    AllDown,
}

impl ClusterState {
    pub fn path(&self) -> PathBuf {
        self.dir.join(STATE_FILE)
    }

    pub fn load(name: &str) -> Result<ClusterState, StateError> {
        let dir = cluster_dir(name);
        Self::load_from(name, &dir)
    }

    pub fn load_from(name: &str, dir: &Path) -> Result<ClusterState, StateError> {
        let path = dir.join(STATE_FILE);
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StateError::Missing { name: name.to_string(), path })
            }
            Err(e) => return Err(StateError::Corrupt { path, dir: dir.to_path_buf(), detail: e.to_string() }),
        };
        serde_json::from_str(&text).map_err(|e| StateError::Corrupt {
            path,
            dir: dir.to_path_buf(),
            detail: format!("line {}, column {}: {e}", e.line(), e.column()),
        })
    }

    /// Write to a temporary file, fsync, rename: a crash never leaves half a file.
    pub fn save(&self) -> Result<(), StateError> {
        write_whole(&self.dir, STATE_FILE, &serde_json::to_string_pretty(self).expect("state serializes"))
    }

    pub fn liveness(&self) -> Liveness {
        let alive = self.nodes.iter().any(|n| n.process.is_some_and(|p| p.is_alive()));
        if alive {
            Liveness::Live
        } else if self.nodes.iter().any(|n| matches!(n.intent, Intent::Running | Intent::Paused)) {
            Liveness::Stale
        } else {
            Liveness::AllDown
        }
    }

    pub fn from_cluster(name: &str, kafka_home: Option<PathBuf>, cluster: LocalCluster) -> ClusterState {
        let version = cluster.version.clone();
        let cluster_id = cluster.cluster_id.clone();
        let dir = cluster.dir.clone();
        let heap = cluster.heap.clone();
        let jit = cluster.jit;
        let broker_config = cluster.broker_config.clone();
        let nodes = cluster.detach();
        ClusterState {
            name: name.to_string(),
            version,
            kafka_home,
            cluster_id,
            dir,
            heap,
            jit,
            broker_config,
            nodes,
            created_unix_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
        }
    }

    pub fn adopt(&self, dist: KafkaDist) -> LocalCluster {
        LocalCluster::adopt(
            dist,
            self.cluster_id.clone(),
            self.dir.clone(),
            self.heap.clone(),
            self.jit,
            self.broker_config.clone(),
            self.nodes.clone(),
        )
    }

    /// Takes the node records back from an adopted cluster after an action.
    pub fn update_from(&mut self, cluster: LocalCluster) {
        self.nodes = cluster.detach();
    }
}

/// The state file of a containers cluster in a cluster directory.
pub const CONTAINERS_STATE_FILE: &str = "containers.json";

/// A containers cluster as `sinkhole cluster up` leaves it: `containers.json` in its directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContainersRecord {
    pub version: String,
    pub image: String,
    pub cluster_id: String,
    pub run_id: String,
    pub network: String,
    pub dir: PathBuf,
    pub nodes: Vec<ContainersNodeRecord>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContainersNodeRecord {
    pub node_id: i32,
    pub name: String,
    pub host_port: u16,
    pub container_id: String,
    pub intent: Intent,
}

/// The state of a containers cluster named `name`, if that is what it is (no readable
/// `containers.json`: not a containers cluster).
pub fn containers_record(name: &str) -> Option<ContainersRecord> {
    containers_record_in(&cluster_dir(name))
}

fn containers_record_in(dir: &Path) -> Option<ContainersRecord> {
    serde_json::from_str(&fs::read_to_string(dir.join(CONTAINERS_STATE_FILE)).ok()?).ok()
}

/// Writes the record of the containers cluster named `name` into its directory.
pub fn save_containers_record(name: &str, rec: &ContainersRecord) -> Result<(), StateError> {
    save_containers_record_in(&cluster_dir(name), rec)
}

fn save_containers_record_in(dir: &Path, rec: &ContainersRecord) -> Result<(), StateError> {
    let text = serde_json::to_string_pretty(rec).expect("a record serializes") + "\n";
    write_whole(dir, CONTAINERS_STATE_FILE, &text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::local::NodeAddrRecord;
    use sinkhole_faults::process::ProcessId;

    fn state(dir: &Path, nodes: Vec<LocalNodeRecord>) -> ClusterState {
        ClusterState {
            name: "t".into(),
            version: "4.4.0".into(),
            kafka_home: None,
            cluster_id: "x".into(),
            dir: dir.to_path_buf(),
            heap: "512m".into(),
            jit: Jit::C1,
            broker_config: BTreeMap::new(),
            nodes,
            created_unix_ms: 0,
        }
    }

    fn rec(process: Option<ProcessId>, intent: Intent) -> LocalNodeRecord {
        LocalNodeRecord { addr: NodeAddrRecord { node_id: 1, broker_port: 1, controller_port: 2 }, process, intent }
    }

    #[test]
    fn a_state_file_from_before_jit_keeps_the_jvms_default() {
        let mut v = serde_json::to_value(state(Path::new("/d"), vec![])).unwrap();
        assert_eq!(v["jit"], "c1");
        v.as_object_mut().unwrap().remove("jit");
        let old: ClusterState = serde_json::from_value(v).unwrap();
        assert_eq!(old.jit, Jit::Tiered, "its brokers ran tiered: a restart keeps that");
    }

    #[test]
    fn round_trips_and_classifies_liveness() {
        let dir = std::env::temp_dir().join(format!("sinkhole-state-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let me = ProcessId::of(std::process::id() as i32).unwrap();
        let dead = ProcessId { start_ticks: me.start_ticks + 7, ..me };

        let s = state(&dir, vec![rec(Some(me), Intent::Running)]);
        s.save().unwrap();
        let back = ClusterState::load_from("t", &dir).unwrap();
        assert_eq!(back.nodes[0].process, Some(me));
        assert_eq!(back.liveness(), Liveness::Live);

        assert_eq!(state(&dir, vec![rec(Some(dead), Intent::Running)]).liveness(), Liveness::Stale);
        assert_eq!(state(&dir, vec![rec(Some(dead), Intent::Killed)]).liveness(), Liveness::AllDown);

        fs::write(dir.join(STATE_FILE), "{\n \"name\": 3\n}").unwrap();
        let err = ClusterState::load_from("t", &dir).unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
        let err = ClusterState::load_from("t", &dir).unwrap_err().to_string();
        assert!(err.contains("sinkhole cluster up"), "{err}");
    }

    #[test]
    fn a_containers_record_round_trips_and_an_unreadable_one_is_none() {
        let dir = std::env::temp_dir().join(format!("sinkhole-containers-state-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        assert!(containers_record_in(&dir).is_none(), "no file: not a containers cluster");
        let rec = ContainersRecord {
            version: "4.4.0".into(),
            image: "localhost/sinkhole-kafka:4.4.0".into(),
            cluster_id: "x".into(),
            run_id: "cluster-t".into(),
            network: "sinkhole-0000abcd".into(),
            dir: dir.clone(),
            nodes: vec![ContainersNodeRecord {
                node_id: 1,
                name: "sinkhole-0000abcd-kafka-1".into(),
                host_port: 40123,
                container_id: "c0ffee".into(),
                intent: Intent::Paused,
            }],
        };
        save_containers_record_in(&dir, &rec).unwrap();
        let back = containers_record_in(&dir).expect("the record reads back");
        assert_eq!((back.run_id.as_str(), back.nodes[0].host_port), ("cluster-t", 40123));
        assert_eq!(back.nodes[0].intent, Intent::Paused);
        assert!(!dir.join(format!(".{CONTAINERS_STATE_FILE}.tmp")).exists(), "the temporary file is renamed");
        fs::write(dir.join(CONTAINERS_STATE_FILE), "{ half a file").unwrap();
        assert!(containers_record_in(&dir).is_none());
        fs::remove_dir_all(&dir).unwrap();
    }
}
