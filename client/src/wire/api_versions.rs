//! ApiVersions (API 18): what a broker supports, and version negotiation.
//!
//! On the wire: the client's software name and version (v3+), answered with
//! the (min, max) version of every API the broker supports and, from v3, its
//! supported and finalized features (KIP-584). Every connection starts with
//! ApiVersions (as in Java's `NetworkClient`),
//! for two reasons: each request must be sent at a version both sides know,
//! and the reply carries the cluster's *finalized features*. The rig needs
//! `transaction.version` from them: with `transaction.version` ≥ 2
//! (Transactions V2, KIP-890) EndTxn v5 bumps the epoch on every commit and
//! Produce v12+ adds partitions implicitly, so the rig must know which
//! protocol it is speaking, and record it.
//!
//! The ApiVersions request itself is sent at v3 (the first version that
//! carries the client's software name and version). A broker that does not
//! know v3 answers UNSUPPORTED_VERSION in the v0 format, listing the
//! ApiVersions versions it does support; like Java's `NetworkClient`
//! (`handleApiVersionsResponse`), the client then retries at the highest of
//! those, or at v0 when the broker lists none.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::{Decodable, Encodable, Request, StrBytes};
use sinkhole_kafka::api::api_key_of;
use tracing::debug;

use super::connection::Connection;
use super::error::{KafkaCode, WireError};

/// The ApiVersions version tried first.
pub const API_VERSIONS_VERSION: i16 = 3;

/// Client software name sent in ApiVersions v3+ (shows up in broker metrics).
pub const CLIENT_SOFTWARE_NAME: &str = "sinkhole";

/// Feature name of the transaction protocol version (KIP-890).
pub const TRANSACTION_VERSION_FEATURE: &str = "transaction.version";

/// Feature name of the KRaft metadata version.
pub const METADATA_VERSION_FEATURE: &str = "metadata.version";

/// What one broker said in its ApiVersions reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiVersionsInfo {
    /// API key → (min, max) supported version.
    pub ranges: BTreeMap<i16, (i16, i16)>,
    /// Feature → (min, max) level this broker supports.
    pub supported_features: BTreeMap<String, (i16, i16)>,
    /// Feature → finalized (cluster-wide) max level.
    pub finalized_features: BTreeMap<String, i16>,
    /// Epoch of the finalized features; -1 = unknown (then
    /// `finalized_features` is empty).
    pub finalized_features_epoch: i64,
}

impl ApiVersionsInfo {
    /// Builds the info from a decoded ApiVersions response (any version;
    /// features are only present from v3).
    pub fn from_response(resp: &ApiVersionsResponse) -> Self {
        let ranges = resp.api_keys.iter().map(|k| (k.api_key, (k.min_version, k.max_version))).collect();
        let supported_features =
            resp.supported_features.iter().map(|f| (f.name.to_string(), (f.min_version, f.max_version))).collect();
        // KIP-584: finalized features are only meaningful with a valid epoch.
        let finalized_features = if resp.finalized_features_epoch >= 0 {
            resp.finalized_features.iter().map(|f| (f.name.to_string(), f.max_version_level)).collect()
        } else {
            BTreeMap::new()
        };
        ApiVersionsInfo {
            ranges,
            supported_features,
            finalized_features,
            finalized_features_epoch: resp.finalized_features_epoch,
        }
    }

    /// The broker's (min, max) for `key`, if it supports the API at all.
    pub fn range(&self, key: ApiKey) -> Option<(i16, i16)> {
        self.ranges.get(&(key as i16)).copied()
    }

    pub fn max_version(&self, key: ApiKey) -> Option<i16> {
        self.range(key).map(|(_, max)| max)
    }

    /// The highest version both the broker and the client (`client_min..=client_max`) support.
    pub fn negotiate(&self, key: ApiKey, client_min: i16, client_max: i16) -> Result<i16, WireError> {
        let unsupported = |broker| WireError::UnsupportedVersion {
            api: format!("{key:?}"),
            broker,
            client: (client_min, client_max),
        };
        let (broker_min, broker_max) = self.range(key).ok_or_else(|| unsupported(None))?;
        let lo = broker_min.max(client_min);
        let hi = broker_max.min(client_max);
        if lo > hi {
            return Err(unsupported(Some((broker_min, broker_max))));
        }
        Ok(hi)
    }

    /// [`negotiate`](Self::negotiate) with the client range being what the
    /// `kafka-protocol` crate can encode for `R`.
    pub fn negotiate_request<R: Request>(&self) -> Result<i16, WireError> {
        self.negotiate(api_key_of::<R>()?, R::VERSIONS.min, R::VERSIONS.max)
    }

    /// The finalized level of a feature, if finalized.
    pub fn feature_level(&self, name: &str) -> Option<i16> {
        self.finalized_features.get(name).copied()
    }

    /// The finalized `transaction.version`: 0 when absent (a cluster that
    /// predates the feature speaks Transactions V1), 2 for Transactions V2.
    pub fn transaction_version(&self) -> i16 {
        self.feature_level(TRANSACTION_VERSION_FEATURE).unwrap_or(0)
    }

    /// The finalized `metadata.version` level (KRaft), if reported.
    pub fn metadata_version_level(&self) -> Option<i16> {
        self.feature_level(METADATA_VERSION_FEATURE)
    }
}

fn request_body(version: i16) -> Result<BytesMut, WireError> {
    let req = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str(CLIENT_SOFTWARE_NAME))
        .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
    let mut body = BytesMut::new();
    req.encode(&mut body, version).map_err(|e| WireError::codec("encoding ApiVersions request", e))?;
    Ok(body)
}

/// The ApiVersions version that reports features whose lowest supported
/// level is 0 (`share.version`, `transaction.version`, …): below v4 a broker
/// leaves them out of `SupportedFeatures` (KAFKA-17011,
/// `ApiVersionsRequest.json`). The probe asks at v4 for the supported ranges.
pub const API_VERSIONS_FEATURES_VERSION: i16 = 4;

/// Runs the ApiVersions exchange on `conn`, with the version fallback
/// described in the module docs.
pub async fn fetch_api_versions(conn: &mut Connection, timeout: Duration) -> Result<ApiVersionsInfo, WireError> {
    fetch_api_versions_from(conn, timeout, API_VERSIONS_VERSION).await
}

/// [`fetch_api_versions`] starting at `version` (e.g.
/// [`API_VERSIONS_FEATURES_VERSION`]), with the same fallback.
pub async fn fetch_api_versions_from(
    conn: &mut Connection,
    timeout: Duration,
    version: i16,
) -> Result<ApiVersionsInfo, WireError> {
    let mut version = version;
    loop {
        let body = request_body(version)?;
        let mut reply = conn.send_raw(ApiKey::ApiVersions, version, &body, timeout).await?;
        // The error code leads the body in every version, and a broker that
        // does not know `version` replies in the v0 format: peek first.
        if reply.len() < 2 {
            return Err(WireError::Codec(format!("ApiVersions reply of {} bytes from {}", reply.len(), conn.peer())));
        }
        let code = KafkaCode((&reply[..2]).get_i16());
        if code == KafkaCode::UNSUPPORTED_VERSION && version > 0 {
            let v0 = ApiVersionsResponse::decode(&mut reply, 0)
                .map_err(|e| WireError::codec("decoding ApiVersions v0 error reply", e))?;
            let fallback = v0
                .api_keys
                .iter()
                .find(|k| k.api_key == ApiKey::ApiVersions as i16)
                .map(|k| k.max_version.min(version - 1))
                .unwrap_or(0)
                .max(0);
            debug!(peer = conn.peer(), version, fallback, "ApiVersions: UNSUPPORTED_VERSION, retrying");
            version = fallback;
            continue;
        }
        if !code.is_ok() {
            return Err(WireError::kafka("ApiVersions", code, None));
        }
        let resp = ApiVersionsResponse::decode(&mut reply, version)
            .map_err(|e| WireError::codec(&format!("decoding ApiVersions v{version} reply"), e))?;
        let info = ApiVersionsInfo::from_response(&resp);
        debug!(
            peer = conn.peer(),
            version,
            apis = info.ranges.len(),
            transaction_version = info.transaction_version(),
            "ApiVersions"
        );
        return Ok(info);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;
    use kafka_protocol::messages::api_versions_response::{ApiVersion, FinalizedFeatureKey, SupportedFeatureKey};
    use kafka_protocol::messages::{InitProducerIdRequest, MetadataRequest};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    fn api(key: ApiKey, min: i16, max: i16) -> ApiVersion {
        ApiVersion::default().with_api_key(key as i16).with_min_version(min).with_max_version(max)
    }

    fn response(features: &[(&'static str, i16)], epoch: i64) -> ApiVersionsResponse {
        ApiVersionsResponse::default()
            .with_api_keys(vec![
                api(ApiKey::InitProducerId, 0, 6),
                api(ApiKey::EndTxn, 0, 5),
                api(ApiKey::Metadata, 0, 13),
                api(ApiKey::DescribeTransactions, 0, 0),
            ])
            .with_supported_features(vec![SupportedFeatureKey::default()
                .with_name(StrBytes::from_static_str("transaction.version"))
                .with_min_version(0)
                .with_max_version(2)])
            .with_finalized_features_epoch(epoch)
            .with_finalized_features(
                features
                    .iter()
                    .map(|(name, level)| {
                        FinalizedFeatureKey::default()
                            .with_name(StrBytes::from_static_str(name))
                            .with_min_version_level(*level)
                            .with_max_version_level(*level)
                    })
                    .collect(),
            )
    }

    #[test]
    fn negotiate_picks_highest_common_version() {
        let info = ApiVersionsInfo::from_response(&response(&[], 0));
        assert_eq!(info.max_version(ApiKey::InitProducerId), Some(6));
        assert_eq!(info.negotiate(ApiKey::InitProducerId, 0, 5).unwrap(), 5);
        assert_eq!(info.negotiate(ApiKey::InitProducerId, 0, 9).unwrap(), 6);
        assert_eq!(info.negotiate(ApiKey::InitProducerId, 6, 6).unwrap(), 6);
        assert_eq!(info.negotiate(ApiKey::EndTxn, 0, 4).unwrap(), 4);
        assert_eq!(info.negotiate(ApiKey::DescribeTransactions, 0, 0).unwrap(), 0);
        // The crate encodes InitProducerId only up to v5, Metadata up to v13.
        assert_eq!(info.negotiate_request::<InitProducerIdRequest>().unwrap(), 5);
        assert_eq!(info.negotiate_request::<MetadataRequest>().unwrap(), 13);
    }

    #[test]
    fn negotiate_without_overlap_or_api_fails() {
        let info = ApiVersionsInfo::from_response(&response(&[], 0));
        let err = info.negotiate(ApiKey::EndTxn, 6, 7).unwrap_err();
        match err {
            WireError::UnsupportedVersion { api, broker, client } => {
                assert_eq!(api, "EndTxn");
                assert_eq!(broker, Some((0, 5)));
                assert_eq!(client, (6, 7));
            }
            other => panic!("{other}"),
        }
        let err = info.negotiate(ApiKey::ListTransactions, 0, 2).unwrap_err();
        assert!(matches!(err, WireError::UnsupportedVersion { broker: None, .. }));
        assert_eq!(info.max_version(ApiKey::ListTransactions), None);
    }

    #[test]
    fn transaction_version_from_finalized_features() {
        let v2 = ApiVersionsInfo::from_response(&response(&[("transaction.version", 2), ("metadata.version", 33)], 7));
        assert_eq!(v2.transaction_version(), 2);
        assert_eq!(v2.metadata_version_level(), Some(33));
        assert_eq!(v2.finalized_features_epoch, 7);
        assert_eq!(v2.supported_features["transaction.version"], (0, 2));

        let absent = ApiVersionsInfo::from_response(&response(&[("metadata.version", 20)], 3));
        assert_eq!(absent.transaction_version(), 0);

        // An unknown epoch (-1) means the finalized list must be ignored.
        let unknown = ApiVersionsInfo::from_response(&response(&[("transaction.version", 2)], -1));
        assert_eq!(unknown.transaction_version(), 0);
        assert_eq!(unknown.metadata_version_level(), None);
    }

    /// A peer that knows ApiVersions only up to v2: it answers the v3 request
    /// with UNSUPPORTED_VERSION in v0 format listing 0..=2, then answers the
    /// retry, which must come at v2.
    #[tokio::test]
    async fn falls_back_to_the_version_the_broker_lists() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut versions_seen = vec![];
            for _ in 0..2 {
                let mut size = [0u8; 4];
                sock.read_exact(&mut size).await.unwrap();
                let mut req = vec![0u8; i32::from_be_bytes(size) as usize];
                sock.read_exact(&mut req).await.unwrap();
                let version = i16::from_be_bytes([req[2], req[3]]);
                versions_seen.push(version);
                let corr = i32::from_be_bytes([req[4], req[5], req[6], req[7]]);
                let (resp, v) = if version > 2 {
                    (
                        ApiVersionsResponse::default().with_error_code(35).with_api_keys(vec![api(
                            ApiKey::ApiVersions,
                            0,
                            2,
                        )]),
                        0,
                    )
                } else {
                    (
                        ApiVersionsResponse::default()
                            .with_api_keys(vec![api(ApiKey::ApiVersions, 0, 2), api(ApiKey::InitProducerId, 0, 4)]),
                        version,
                    )
                };
                let mut body = BytesMut::new();
                resp.encode(&mut body, v).unwrap();
                let mut frame = BytesMut::new();
                frame.put_i32(4 + body.len() as i32);
                frame.put_i32(corr); // ApiVersions: response header v0
                frame.put_slice(&body);
                sock.write_all(&frame).await.unwrap();
            }
            versions_seen
        });
        let mut conn = Connection::connect(&addr, "t", Duration::from_secs(5)).await.unwrap();
        let info = fetch_api_versions(&mut conn, Duration::from_secs(5)).await.unwrap();
        assert_eq!(info.max_version(ApiKey::InitProducerId), Some(4));
        assert_eq!(server.await.unwrap(), vec![3, 2]);
    }
}
