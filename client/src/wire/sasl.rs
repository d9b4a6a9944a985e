//! SASL on a new connection (KIP-43 framing, KIP-152 SaslAuthenticate): PLAIN, and SCRAM
//! (KIP-84) through [`scram`](super::scram).
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
use tracing::debug;

use super::api_versions::ApiVersionsInfo;
use super::connection::Connection;
use super::error::{KafkaCode, WireError};
use super::scram::{self, Hash, ScramClient};
use super::security::{Mechanism, Sasl};

/// The mechanism the rig speaks.
pub const MECHANISM_PLAIN: &str = "PLAIN";

pub use sinkhole_model::security::SaslPlain;

/// Authenticates `conn` with SASL/PLAIN. `versions` is the broker's
/// ApiVersions answer on this connection. On any error the connection must be
/// dropped: the broker closes it after a failed authentication.
pub async fn authenticate(
    conn: &mut Connection,
    versions: &ApiVersionsInfo,
    creds: &SaslPlain,
    timeout: Duration,
) -> Result<(), WireError> {
    let sasl = Sasl { mechanism: Mechanism::Plain, username: creds.username.clone(), password: creds.password.clone() };
    authenticate_with(conn, versions, &sasl, timeout).await
}

/// Authenticates `conn` with the mechanism of `sasl`: PLAIN's one token, or SCRAM's two
/// rounds ([`scram`](super::scram)), each in a SaslAuthenticate request.
pub async fn authenticate_with(
    conn: &mut Connection,
    versions: &ApiVersionsInfo,
    sasl: &Sasl,
    timeout: Duration,
) -> Result<(), WireError> {
    let mech = sasl.mechanism.name();
    // v1 is required: v0 would send the token as a raw, unframed packet.
    let hv = versions.negotiate(ApiKey::SaslHandshake, 1, 1)?;
    let req = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mech));
    let resp = conn.send(&req, hv, timeout).await?;
    let code = KafkaCode(resp.error_code);
    if !code.is_ok() {
        let offered: Vec<String> = resp.mechanisms.iter().map(|m| m.to_string()).collect();
        return Err(WireError::Kafka {
            api: "SaslHandshake".into(),
            code,
            message: Some(format!("{mech} refused; the listener offers [{}]", offered.join(", "))),
        });
    }
    let av = versions.negotiate(ApiKey::SaslAuthenticate, 0, 2)?;
    let refused = |message: String| WireError::Kafka {
        api: "SaslAuthenticate".into(),
        code: KafkaCode::SASL_AUTHENTICATION_FAILED,
        message: Some(message),
    };
    match Hash::of(sasl.mechanism) {
        None => {
            let token = SaslPlain::new(&sasl.username, &sasl.password).token();
            round(conn, av, token, timeout).await?;
        }
        Some(hash) => {
            let mut client = ScramClient::new(hash, &sasl.username, &sasl.password, &scram::new_nonce());
            let server_first = round(conn, av, client.first().into_bytes(), timeout).await?;
            let server_first = String::from_utf8_lossy(&server_first).into_owned();
            let last = client.reply(&server_first).map_err(refused)?;
            let server_final = round(conn, av, last.into_bytes(), timeout).await?;
            client.verify(&String::from_utf8_lossy(&server_final)).map_err(refused)?;
        }
    }
    debug!(peer = conn.peer(), user = sasl.username, mechanism = mech, "SASL authenticated");
    Ok(())
}

/// One SaslAuthenticate round: the client's bytes out, the broker's back.
async fn round(conn: &mut Connection, version: i16, bytes: Vec<u8>, timeout: Duration) -> Result<Bytes, WireError> {
    let req = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(bytes));
    let resp = conn.send(&req, version, timeout).await?;
    let code = KafkaCode(resp.error_code);
    if !code.is_ok() {
        return Err(WireError::Kafka {
            api: "SaslAuthenticate".into(),
            code,
            message: resp.error_message.map(|m| m.to_string()),
        });
    }
    Ok(resp.auth_bytes)
}

impl WireError {
    /// The broker refused the SASL exchange (mechanism or credentials) or the
    /// TLS handshake: no retry can change that.
    pub fn is_authentication_error(&self) -> bool {
        matches!(self, WireError::Tls { .. })
            || matches!(
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
        assert!(WireError::Tls { peer: "b:1".into(), detail: "unknown issuer".into() }.is_authentication_error());
    }
}
