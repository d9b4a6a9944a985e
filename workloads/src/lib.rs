//! Workloads for sinkhole: what runs against the cluster.
//!
//! For now this is the rig's own Kafka wire client ([`wire`]). Sources, the sink
//! modes and the worker entry point come with the sinks issue.
pub mod wire;
