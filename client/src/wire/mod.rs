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
//! Each file uses only the files listed before it (`scripts/check-layers.sh`
//! refuses an import cycle between them):
//!
//! * `sinkhole-kafka` (a crate of its own, shared with the fault proxy):
//!   Kafka's size-prefixed framing, request and response headers, API names
//!   and error codes ([`KafkaCode`]); pure functions over byte buffers.
//! * [`error`]: [`WireError`] and the retry classification the client uses.
//! * [`security`]: a listener's security protocol, SASL mechanism and CA; the
//!   password by reference in what is written, resolved only in memory.
//! * [`connection`]: one TCP (or TLS) connection that owns its read buffer (partial
//!   frames stay in it), correlation ids (like mini-redis's `connection.rs`).
//! * The connection bring-up, on one connection before a client exists:
//!   [`api_versions`] (ApiVersions and version negotiation), [`scram`]
//!   (RFC 5802's client messages) and [`sasl`] (SaslHandshake and
//!   SaslAuthenticate on a new connection, when the client is configured with
//!   credentials: PLAIN or SCRAM).
//! * [`client`]: a small cluster-aware client's state: its settings, one
//!   connection per broker, the metadata cache, the request counters, the
//!   retry bookkeeping (`Retrier`) and what every request shares.
//! * One file per RPC, each saying what it means on the wire and which Java
//!   class it mirrors (like mini-redis's `cmd/`): [`metadata`],
//!   [`find_coordinator`], [`init_producer_id`] (v0–v6, v6 encoded by hand),
//!   [`produce`], [`add_partitions_to_txn`], [`end_txn`],
//!   [`describe_transactions`], [`list_transactions`], [`create_topics`], [`delete_topics`],
//!   [`describe_quorum`], [`describe_configs`] and [`acls`] (CreateAcls,
//!   DescribeAcls).
//! * [`network`]: bootstrap, connections and the retry loop every RPC sends
//!   through (it reads Metadata at bootstrap, so it sits above that file).
//! * Share groups (KIP-932; `docs/PROTOCOL.md` §6): [`share_group_heartbeat`],
//!   [`share_group_describe`], [`share_fetch`] and [`share_acknowledge`]
//!   (v2 of both encoded by hand), [`describe_share_group_offsets`] (v1's lag
//!   decoded by hand), [`read_share_group_state`] (the share coordinator's
//!   persisted state) and [`incremental_alter_configs`] (group configs). The
//!   consumer on top of them is `crate::share`.
//!
//! Faithful error semantics matter more than speed here: the retry rules
//! mirror Kafka's Java `TransactionManager` (see `docs/PROTOCOL.md` §2) and every
//! non-retriable answer reaches the caller with its exact error code.

pub mod acls;
pub mod add_partitions_to_txn;
pub mod api_versions;
pub mod client;
pub mod connection;
pub mod create_topics;
pub mod delete_topics;
pub mod describe_configs;
pub mod describe_producers;
pub mod describe_quorum;
pub mod describe_share_group_offsets;
pub mod describe_transactions;
pub mod end_txn;
pub mod error;
pub mod find_coordinator;
pub mod incremental_alter_configs;
pub mod init_producer_id;
pub mod list_transactions;
pub mod metadata;
pub mod network;
pub mod produce;
pub mod read_share_group_state;
pub mod sasl;
pub mod scram;
pub mod security;
pub mod share_acknowledge;
pub mod share_fetch;
pub mod share_group_describe;
pub mod share_group_heartbeat;

pub use api_versions::ApiVersionsInfo;
pub use client::{BrokerInfo, Client, ClientConfig, ClusterMetadata, PartitionInfo, RequestCounts, TopicInfo};
pub use connection::Connection;
pub use describe_transactions::TxnDescription;
pub use end_txn::EndTxnOutcome;
pub use error::{coordinator_retry, CoordinatorAction, KafkaCode, WireError};
pub use init_producer_id::InitProducerIdParams;
pub use init_producer_id::{InitProducerIdAnswer, InitProducerIdOutcome};
pub use list_transactions::ListedTxn;
pub use sasl::SaslPlain;
