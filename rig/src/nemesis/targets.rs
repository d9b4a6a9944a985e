//! What a fault aims at, resolved against the job and the cluster, and the
//! proxy rule a network or protocol fault installs.
pub use crate::runner::faults::{broker_target, peer_group, proxy_rule, worker_targets, BrokerTarget};
