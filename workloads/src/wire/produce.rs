//! Produce (API 0): record batches for partitions, sent to their leader.
//!
//! On the wire: the transactional id (v3+), `acks`, a timeout, and per topic
//! and partition one record batch (magic 2, written by the producer's
//! accumulator), answered per partition with an error code, the base offset
//! of the batch, the log start offset and, from v8, record errors. From v12
//! (Transactions V2, KIP-890) a transactional Produce adds its partition to
//! the transaction implicitly. This is the exchange of Java's `Sender`
//! (`sendProduceRequest` / `handleProduceResponse`); deciding what each
//! partition's error means is the producer's (`Sender.completeBatch`), not
//! this module's.
use kafka_protocol::messages::{ApiKey, ProduceRequest, ProduceResponse};

use super::client::{decode_body, encode_body, Client};
use super::error::WireError;

impl Client {
    /// One Produce exchange with the broker `node_id` (a partition leader),
    /// at the highest version in `min_version..=max_version` the broker also
    /// supports. Not retried: per-partition error codes come back in the
    /// reply for the caller to classify (Java's `Sender.completeBatch` decides
    /// per batch), and a transport error drops the connection and is returned.
    /// Returns the reply and the version that was sent.
    pub async fn produce(
        &mut self,
        node_id: i32,
        request: &ProduceRequest,
        min_version: i16,
        max_version: i16,
    ) -> Result<(ProduceResponse, i16), WireError> {
        self.ensure_known(node_id).await?;
        let version = self.conn(node_id).await?.versions.negotiate(ApiKey::Produce, min_version, max_version)?;
        let body = encode_body(request, version, "Produce")?;
        let reply = self.send_raw_to(node_id, ApiKey::Produce, version, &body).await?;
        Ok((decode_body::<ProduceResponse>(reply, version, "Produce")?, version))
    }
}
