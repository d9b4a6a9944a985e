//! A share-group consumer (KIP-932) on the rig's wire client.
//!
//! Why the rig's own: the rig must see and steer what the broker sees — which
//! records were acquired with which delivery count, when an acknowledgement
//! left and what the broker answered it — and kill a member between its
//! acknowledgement and its sink's commit. librdkafka has no share consumer and
//! the Java one decides when acknowledgements are sent, so the consumer here
//! speaks ShareGroupHeartbeat, ShareFetch and ShareAcknowledge itself
//! (`sinkhole_client::wire`; `docs/PROTOCOL.md` §6) and records what came back.
//!
//! What it mirrors in Java's client (`clients/.../consumer/internals/`):
//! * [`membership`][]: `ShareHeartbeatRequestManager` and
//!   `ShareMembershipManager` — join, heartbeat on a task of its own, follow
//!   the assignment, rejoin when fenced, leave with epoch -1;
//! * [`consumer`][]: `ShareConsumeRequestManager` and `ShareSessionHandler` —
//!   one share session per leader (epoch 0 opens it, then +1 per request,
//!   reset to 0 after SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH or
//!   a transport error), acknowledgements piggy-backed on the next ShareFetch
//!   of their partition or sent with ShareAcknowledge (`commitSync`), and on
//!   close ShareAcknowledge with epoch -1 before the leave heartbeat;
//! * [`acks`][]: `ShareCompletedFetch` (acquired ranges, delivery counts, gaps)
//!   and `Acknowledgements` (acknowledgement batches).
//!
//! * [`source`][]: the worker's share-group source on top of the consumer —
//!   what the rig's acknowledgement policies acknowledge, and when.
//!
//! Acknowledgement is explicit only (Java's `share.acknowledgement.mode=explicit`):
//! the caller decides when each record is done, which is what the rig's
//! acknowledgement policies need.
pub mod acks;
pub mod consumer;
pub mod membership;
pub mod source;

pub use acks::ShareRecord;
pub use consumer::{random_member_id, AckResult, ShareConsumer, ShareConsumerConfig};
pub use membership::Membership;
