//! Kafka's framing and names: the layer under every part of sinkhole that
//! speaks the protocol.
//!
//! The rig's wire client (`sinkhole-workloads`) and its Kafka-aware fault
//! proxy (`sinkhole-faults`) both cut frames out of a byte stream and read or
//! write request and response headers; the scenario loader, the proxy and the
//! client all name Kafka APIs and error codes. This crate is the one copy of
//! that:
//!
//! * [`frame`]: the 4-byte size prefix, splitting a buffer into whole frames
//!   with a size limit, and [`FrameError`];
//! * [`header`]: request and response headers (API key, version, correlation
//!   id, client id, the flexible header versions of KIP-482), read in place;
//! * [`encode`]: writing a whole frame around a header and a body;
//! * [`primitives`]: the protocol's unsigned varints and nullable strings, for
//!   the few bodies read or written by hand;
//! * [`api`]: API names and keys (`EndTxn` = 26), as Kafka spells them;
//! * [`errors`]: error codes and Kafka's names for them ([`KafkaCode`]), and
//!   error names as scenarios write them ([`ErrorName`]).
//!
//! # Why it is shaped so
//!
//! As in tokio-rs/mini-redis, a connection owns its read buffer and asks
//! [`frame::split_frame`] for the next whole frame in it; nothing here does
//! I/O. The hard cases of a byte stream — a frame split across reads, two
//! frames in one read, a length that is garbage because the stream is out of
//! step — are therefore unit-tested on byte slices, once, for both users.
//!
//! A frame is always the bytes on the wire, size prefix included: the proxy
//! forwards most frames unchanged, so splitting one off is a shared slice of
//! the buffer (no copy) and forwarding it is one write; the headers are read
//! at fixed offsets of that same slice.
//!
//! The files use each other one way, bottom up: `frame` and `primitives`;
//! `api` (its `api_key_of` fails with a `FrameError`) and `header`; `errors`
//! (Kafka's error names, folded like API names); `encode` (headers, API keys
//! and the size prefix together).
//!
//! Message bodies are the `kafka-protocol` crate's; this crate is the layer
//! under it, plus what that crate does not do: reading a header without
//! decoding the body behind it (the proxy must not decode every Produce), and
//! writing a request header around a body encoded by hand (InitProducerId v6,
//! which the crate cannot encode).
pub mod api;
pub mod encode;
pub mod errors;
pub mod frame;
pub mod header;
pub mod primitives;

pub use errors::{ErrorName, KafkaCode};
pub use frame::FrameError;
