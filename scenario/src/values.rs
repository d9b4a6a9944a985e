//! The values fault parameters take: groups of nodes, targets, transactional
//! id selectors, frame directions and Kafka error names.
use std::fmt;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

/// A group of nodes for network faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    Workers,
    Worker(u32),
    Brokers,
    Broker(i32),
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Group::Workers => f.write_str("workers"),
            Group::Worker(n) => write!(f, "worker-{n}"),
            Group::Brokers => f.write_str("brokers"),
            Group::Broker(n) => write!(f, "broker-{n}"),
        }
    }
}

impl std::str::FromStr for Group {
    type Err = String;
    fn from_str(s: &str) -> Result<Group, String> {
        let bad = || format!("{s:?}: expected `workers`, `worker-N`, `brokers` or `broker-N`");
        match s {
            "workers" => Ok(Group::Workers),
            "brokers" => Ok(Group::Brokers),
            _ => {
                if let Some(n) = s.strip_prefix("worker-") {
                    n.parse().map(Group::Worker).map_err(|_| bad())
                } else if let Some(n) = s.strip_prefix("broker-") {
                    n.parse().map(Group::Broker).map_err(|_| bad())
                } else {
                    Err(bad())
                }
            }
        }
    }
}

impl Serialize for Group {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Group {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Group, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(de::Error::custom)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetDirection {
    OneWay,
    TwoWay,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrameDirection {
    Request,
    Response,
}

/// A Kafka error by name (`NOT_COORDINATOR`) or code (`16`).
pub use sinkhole_kafka::ErrorName;

/// Whose frames a protocol fault acts on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TidSelector {
    /// `{subtask: S}`: subtask S's transactional id at the moment the fault fires.
    Subtask {
        subtask: u32,
    },
    Literal(String),
}

/// What a fault acts on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Target {
    /// `all`, `txn-coordinator` (of subtask 0's current transactional id),
    /// `controller` (the KRaft quorum leader), `leader` (of partition 0),
    /// `group-coordinator` (of the share group a share-group source reads).
    Named(NamedTarget),
    /// Subtask ids (worker and coordinator faults) or node ids (broker faults).
    Ids(Vec<i64>),
    /// `{txn-coordinator: S}`: the coordinator of subtask S's current transactional id.
    Coordinator {
        #[serde(rename = "txn-coordinator")]
        txn_coordinator: u32,
    },
    /// `{leader: P}`: the leader of partition P of the scenario's topic.
    Leader { leader: u32 },
    /// `{txn-log-follower: S}`: a follower of the `__transaction_state`
    /// partition that holds subtask S's current transactional id (a replica
    /// other than its leader, the coordinator). With
    /// `transaction.state.log.min.isr` equal to the log's replication
    /// factor, stopping it makes that coordinator's writes fail without
    /// moving the coordinator (docs/PROTOCOL.md §3.5).
    TxnLogFollower {
        #[serde(rename = "txn-log-follower")]
        txn_log_follower: u32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NamedTarget {
    All,
    TxnCoordinator,
    Controller,
    Leader,
    /// The broker coordinating the mode's share group (FindCoordinator key
    /// type 0, the group id): share-group sources only.
    GroupCoordinator,
}
