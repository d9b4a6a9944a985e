//! The rig's own Kafka client, shared by the worker processes and the rig:
//! - [`wire`]: a client speaking Kafka's wire protocol directly (one file per RPC, each saying
//!   what it means on the wire and which Java class it mirrors), so that the rig can send
//!   exactly the requests a sink's recovery path sends — InitProducerId with KIP-939's flags,
//!   EndTxn with an injected producer id and epoch — and record the broker's exact answer;
//! - [`producer`]: a transactional producer on that client, after Kafka's Java
//!   `TransactionManager` (its states and their legal transitions in `producer/state.rs`),
//!   speaking Transactions V1 and V2.
//!
//! Framing (frames, headers, API and error names) is `sinkhole-kafka`'s; the values the
//! client reports into (transaction protocol, security settings) are `sinkhole-model`'s.
pub mod producer;
pub mod wire;
