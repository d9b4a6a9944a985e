//! Workloads for sinkhole: what runs against the cluster.
//!
//! - [`wire`]: the rig's own Kafka wire client;
//! - [`producer`]: a transactional producer on that client, mirroring Kafka's
//!   Java `TransactionManager`;
//! - [`model`]: the plain data the parts exchange (modes, committables,
//!   control messages, history events);
//! - [`control`]: the coordinator ↔ worker channel;
//! - [`source`], [`sink`], [`worker`]: one subtask of the job;
//! - [`share`]: a share-group consumer (KIP-932) on the wire client.
pub mod control;
pub mod model;
pub mod producer;
pub mod share;
pub mod sink;
pub mod source;
pub mod wire;
pub mod worker;
