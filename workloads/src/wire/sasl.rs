//! SASL/PLAIN on a new connection (KIP-43 framing, KIP-152 SaslAuthenticate).
//!
//! The exchange the Java client's `SaslClientAuthenticator` runs when a
//! listener's security protocol is `SASL_PLAINTEXT`: ApiVersions (allowed
//! before authentication; [`network`](super::network) has already sent it),
//! then SaslHandshake v1 naming the mechanism, then one SaslAuthenticate
//! carrying the PLAIN token of RFC 4616 (`authzid NUL authcid NUL passwd`,
//! with an empty authzid). Handshake v1 means the token travels inside a
//! SaslAuthenticate request rather than as a raw frame (v0), so the whole
//! exchange stays in Kafka's request/response framing and the connection's
//! correlation ids.
//!
//! A refusal arrives as a Kafka error code (UNSUPPORTED_SASL_MECHANISM,
//! SASL_AUTHENTICATION_FAILED with the broker's message); the broker closes
//! the connection afterwards, so the caller must not reuse it. The rig uses
//! SASL only to give the sink workers a principal the authorizer can deny
//! (`User:sink`), not for secrecy: the password travels in clear text, as
//! PLAIN over a PLAINTEXT transport always does.
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::StrBytes;
use serde::{Deserialize, Serialize};
use tracing::debug;

use super::api_versions::ApiVersionsInfo;
use super::connection::Connection;
use super::error::{KafkaCode, WireError};

/// The mechanism the rig speaks.
pub const MECHANISM_PLAIN: &str = "PLAIN";

/// SASL/PLAIN credentials of a client.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SaslPlain {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for SaslPlain {
    // The password stays out of logs and debug output.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslPlain").field("username", &self.username).field("password", &"***").finish()
    }
}

impl SaslPlain {
    pub fn new(username: &str, password: &str) -> SaslPlain {
        SaslPlain { username: username.to_string(), password: password.to_string() }
    }

    /// The principal a broker's default `KafkaPrincipalBuilder` gives this
    /// user: `User:<username>`.
    pub fn principal(&self) -> String {
        format!("User:{}", self.username)
    }

    /// RFC 4616's message with an empty authorization identity.
    pub fn token(&self) -> Vec<u8> {
        let mut t = Vec::with_capacity(self.username.len() + self.password.len() + 2);
        t.push(0);
        t.extend_from_slice(self.username.as_bytes());
        t.push(0);
        t.extend_from_slice(self.password.as_bytes());
        t
    }
}

/// Authenticates `conn` with SASL/PLAIN. `versions` is the broker's
/// ApiVersions answer on this connection. On any error the connection must be
/// dropped: the broker closes it after a failed authentication.
pub async fn authenticate(
    conn: &mut Connection,
    versions: &ApiVersionsInfo,
    creds: &SaslPlain,
    timeout: Duration,
) -> Result<(), WireError> {
    // v1 is required: v0 would send the token as a raw, unframed packet.
    let hv = versions.negotiate(ApiKey::SaslHandshake, 1, 1)?;
    let req = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(MECHANISM_PLAIN));
    let resp = conn.send(&req, hv, timeout).await?;
    let code = KafkaCode(resp.error_code);
    if !code.is_ok() {
        let offered: Vec<String> = resp.mechanisms.iter().map(|m| m.to_string()).collect();
        return Err(WireError::Kafka {
            api: "SaslHandshake".into(),
            code,
            message: Some(format!("{MECHANISM_PLAIN} refused; the listener offers [{}]", offered.join(", "))),
        });
    }
    let av = versions.negotiate(ApiKey::SaslAuthenticate, 0, 2)?;
    let req = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(creds.token()));
    let resp = conn.send(&req, av, timeout).await?;
    let code = KafkaCode(resp.error_code);
    if !code.is_ok() {
        return Err(WireError::Kafka {
            api: "SaslAuthenticate".into(),
            code,
            message: resp.error_message.map(|m| m.to_string()),
        });
    }
    debug!(peer = conn.peer(), user = creds.username, "SASL/PLAIN authenticated");
    Ok(())
}

impl WireError {
    /// The broker refused the SASL exchange (mechanism or credentials): no
    /// retry can change that.
    pub fn is_authentication_error(&self) -> bool {
        matches!(
            self,
            WireError::Kafka { api, code, .. }
                if api.starts_with("Sasl")
                    && matches!(
                        *code,
                        KafkaCode::UNSUPPORTED_SASL_MECHANISM
                            | KafkaCode::ILLEGAL_SASL_STATE
                            | KafkaCode::SASL_AUTHENTICATION_FAILED
                    )
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_token_is_rfc4616_without_authzid() {
        let c = SaslPlain::new("sink", "s3cret");
        assert_eq!(c.token(), b"\0sink\0s3cret".to_vec());
        assert_eq!(c.principal(), "User:sink");
        let dbg = format!("{c:?}");
        assert!(dbg.contains("sink") && !dbg.contains("s3cret"), "{dbg}");
    }

    #[test]
    fn sasl_refusals_are_authentication_errors() {
        let e = |api: &str, code| WireError::Kafka { api: api.into(), code: KafkaCode(code), message: None };
        assert!(e("SaslAuthenticate", 58).is_authentication_error());
        assert!(e("SaslHandshake", 33).is_authentication_error());
        assert!(!e("InitProducerId", 53).is_authentication_error());
        assert!(!e("SaslAuthenticate", 7).is_authentication_error());
    }
}
