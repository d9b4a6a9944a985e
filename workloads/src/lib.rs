//! Workloads for sinkhole: what runs against the cluster.
//!
//! - [`control`]: the coordinator ↔ worker channel;
//! - [`source`], [`sink`], [`worker`]: one subtask of the job;
//! - [`share`]: a share-group consumer (KIP-932) on the wire client.
//!
//! The Kafka client it writes with is `sinkhole-client`; the plain data the parts exchange
//! (modes, committables, control messages, history events) is `sinkhole-model`.
pub mod control;
pub mod share;
pub mod sink;
pub mod source;
pub mod worker;
