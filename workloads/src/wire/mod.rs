//! The rig's own Kafka wire client.
//!
//! # Why the rig speaks the protocol itself
//!
//! sinkhole compares sink behaviours that no released client can produce on
//! its own: no Java client exposes KIP-939's `prepareTransaction` /
//! `initTransactions(keepPreparedTxn)`, the Java client caps InitProducerId at
//! the last *stable* version (v5) so it cannot send `Enable2Pc`, and librdkafka
//! speaks only the V1 transaction protocol and cannot inject a producer id and
//! epoch the way Flink does by reflection. So the rig sends the transaction
//! RPCs itself and records exactly what the broker answered. The codecs come
//! from the `kafka-protocol` crate; the one request that crate cannot encode
//! (InitProducerId v6) is encoded by hand in [`init_producer_id`].
//!
//! # Layers (bottom up)
//!
//! * [`frame`]: Kafka's size-prefixed framing and request/response headers,
//!   pure functions over byte buffers (like mini-redis's `frame.rs`).
//! * [`connection`]: one TCP connection, a read buffer that keeps partial
//!   frames, correlation ids (like mini-redis's `connection.rs`).
//! * [`versions`]: the ApiVersions exchange and version negotiation.
//! * [`init_producer_id`]: InitProducerId v0–v6 request encoding.
//! * [`sasl`]: SASL/PLAIN on a new connection (when the client is configured
//!   with credentials); [`acls`]: CreateAcls and DescribeAcls.
//! * [`error`]: [`WireError`], Kafka error codes with their Java names, and
//!   the retry classification the client uses.
//! * [`client`]: a small cluster-aware client: bootstrap, metadata, one
//!   connection per broker, coordinator discovery and the retry loop, with the
//!   transaction RPCs the sink modes and probes need.
//!
//! Faithful error semantics matter more than speed here: the retry rules
//! mirror Kafka's Java `TransactionManager` (see `PROTOCOL.md` §2) and every
//! non-retriable answer reaches the caller with its exact error code.

pub mod acls;
pub mod client;
pub mod connection;
pub mod error;
pub mod frame;
pub mod init_producer_id;
pub mod sasl;
pub mod versions;

pub use client::{
    BrokerInfo, Client, ClientConfig, ClusterMetadata, EndTxnOutcome, InitProducerIdAnswer, InitProducerIdOutcome,
    ListedTxn, PartitionInfo, RequestCounts, TopicInfo, TxnDescription,
};
pub use connection::Connection;
pub use error::{coordinator_retry, CoordinatorAction, KafkaCode, WireError};
pub use init_producer_id::InitProducerIdParams;
pub use sasl::SaslPlain;
pub use versions::ApiVersionsInfo;
