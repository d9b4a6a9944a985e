//! A client's security settings as a scenario and a worker's configuration hold them: the
//! listener's security protocol (Kafka's `security.protocol`), the SASL mechanism, and the
//! secret *by reference only* (the name of an environment variable or the path of a file,
//! never the password itself), so that these values can be written into `scenario.yaml` and
//! `worker-*.json` as they are. Reading the secret and building a TLS configuration is the
//! client's (`sinkhole_client::wire::security`): this crate does no I/O.
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Kafka's `security.protocol` of a listener.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Protocol {
    #[default]
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Plaintext => "PLAINTEXT",
            Protocol::Ssl => "SSL",
            Protocol::SaslPlaintext => "SASL_PLAINTEXT",
            Protocol::SaslSsl => "SASL_SSL",
        }
    }
    pub fn tls(self) -> bool {
        matches!(self, Protocol::Ssl | Protocol::SaslSsl)
    }
    pub fn sasl(self) -> bool {
        matches!(self, Protocol::SaslPlaintext | Protocol::SaslSsl)
    }
}

/// The SASL mechanism (Kafka's `sasl.mechanism`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mechanism {
    #[serde(rename = "PLAIN")]
    Plain,
    #[serde(rename = "SCRAM-SHA-256")]
    ScramSha256,
    #[serde(rename = "SCRAM-SHA-512")]
    ScramSha512,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }
}

/// How a client authenticates to a cluster, with its secret by reference only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Security {
    #[serde(default)]
    pub protocol: Protocol,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<Mechanism>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The environment variable that holds the password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
    /// A file whose content (without a trailing newline) is the password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_file: Option<PathBuf>,
    /// PEM file of the CA (or CAs) the brokers' certificates chain to (SSL, SASL_SSL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
}

/// Why security settings cannot be used; never carries a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecurityError {
    /// A setting is missing or does not fit the protocol: (field, why).
    #[error("{0}: {1}")]
    Field(&'static str, String),
}

impl Security {
    /// What is wrong with the settings as written: (field, message) pairs, nothing read yet
    /// (the environment variable and the files are looked at by [`Security::resolve`]).
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let p = self.protocol.name();
        if self.protocol.sasl() {
            if self.mechanism.is_none() {
                out.push(("mechanism", format!("{p} needs a mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")));
            }
            if self.username.as_deref().is_none_or(str::is_empty) {
                out.push(("username", format!("{p} needs a username")));
            }
            match (&self.password_env, &self.password_file) {
                (None, None) => out.push((
                    "password_env",
                    format!("{p} needs the password: password_env (a variable's name) or password_file"),
                )),
                (Some(_), Some(_)) => {
                    out.push(("password_file", "give password_env or password_file, not both".into()))
                }
                (Some(v), None) if v.is_empty() || v.contains(['=', '\0']) => {
                    out.push(("password_env", format!("{v:?} is not an environment variable's name")))
                }
                _ => {}
            }
        } else {
            for (field, set) in [
                ("mechanism", self.mechanism.is_some()),
                ("username", self.username.is_some()),
                ("password_env", self.password_env.is_some()),
                ("password_file", self.password_file.is_some()),
            ] {
                if set {
                    out.push((field, format!("{p} does not authenticate with SASL: use SASL_PLAINTEXT or SASL_SSL")));
                }
            }
        }
        if self.ca_file.is_none() && self.protocol.tls() {
            out.push(("ca_file", "TLS needs ca_file: the PEM file of the brokers' CA".into()));
        }
        if self.ca_file.is_some() && !self.protocol.tls() {
            out.push(("ca_file", format!("{p} has no TLS: use SSL or SASL_SSL, or remove ca_file")));
        }
        out
    }
}

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
