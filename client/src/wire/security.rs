//! Client security for a real cluster: the listener's security protocol (Kafka's
//! `security.protocol`: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), the SASL mechanism (PLAIN,
//! SCRAM-SHA-256, SCRAM-SHA-512) and the CA that signs the brokers' certificates.
//!
//! Two shapes, because a secret must never reach a file the rig writes:
//! - [`Security`] is what a scenario (and a worker's configuration file) holds: names and
//!   paths only — the password as the *name* of an environment variable or the *path* of a
//!   file, never its value. It serialises into `scenario.yaml` and `worker-*.json` as it is.
//! - [`Resolved`] is what a process builds from it when it connects: the password read, the CA
//!   loaded into a TLS configuration. Its `Debug` hides the password, and [`Resolved::redact`]
//!   takes it out of any text the rig is about to show (a command's output, an error).
//!
//! The rig talks to one cluster per process (a run's cluster, or a worker's), so the resolved
//! security is installed once per process ([`install`]) and every [`ClientConfig`] made after
//! that carries it (`ClientConfig::default()`); librdkafka clients take the same settings as
//! configuration keys ([`Resolved::rdkafka`]). The mirror in Java is the client's
//! `security.protocol`/`sasl.mechanism`/`sasl.jaas.config`/`ssl.truststore.*` settings read by
//! `ChannelBuilders.clientChannelBuilder`.
//!
//! [`ClientConfig`]: super::client::ClientConfig
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

pub use sinkhole_model::security::{Mechanism, Protocol, Security, SecurityError};

/// Reads what [`Security`] only names: the password and the CA, what a process needs to
/// connect. A trait because the settings are the shared vocabulary's (`sinkhole_model`),
/// which does no I/O.
pub trait ResolveSecurity {
    fn resolve(&self) -> Result<Resolved, SecurityError>;
}

impl ResolveSecurity for Security {
    /// Reads the password and the CA: what a process needs to connect.
    fn resolve(&self) -> Result<Resolved, SecurityError> {
        if let Some((field, message)) = self.problems().into_iter().next() {
            return Err(SecurityError::Field(field, message));
        }
        let password = if let Some(var) = &self.password_env {
            let v = std::env::var(var).map_err(|_| {
                SecurityError::Field("password_env", format!("the environment variable {var} is not set"))
            })?;
            Some(v)
        } else if let Some(path) = &self.password_file {
            let v = std::fs::read_to_string(path).map_err(|e| {
                SecurityError::Field("password_file", format!("cannot read {}: {}", path.display(), e.kind()))
            })?;
            Some(v.strip_suffix('\n').map(|s| s.strip_suffix('\r').unwrap_or(s)).unwrap_or(&v).to_string())
        } else {
            None
        };
        let sasl = match (self.mechanism, password) {
            (Some(m), Some(pw)) if self.protocol.sasl() => {
                Some(Sasl { mechanism: m, username: self.username.clone().unwrap_or_default(), password: pw })
            }
            _ => None,
        };
        let tls = if self.protocol.tls() { Some(tls_config(self.ca_file.as_deref())?) } else { None };
        Ok(Resolved { protocol: self.protocol, sasl, tls, ca_file: self.ca_file.clone() })
    }
}

/// SASL credentials, resolved.
#[derive(Clone, PartialEq, Eq)]
pub struct Sasl {
    pub mechanism: Mechanism,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Sasl {
    // The password stays out of logs and debug output.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sasl")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("password", &"***")
            .finish()
    }
}

/// A TLS client configuration and the name the brokers' certificates are checked against
/// (the host of the address connected to, as Java's `SslFactory` does with endpoint
/// identification `https`).
#[derive(Clone)]
pub struct Tls {
    pub config: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls")
    }
}

/// Security settings with the secret read: what connections use.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub protocol: Protocol,
    pub sasl: Option<Sasl>,
    pub tls: Option<Tls>,
    pub ca_file: Option<PathBuf>,
}

impl Resolved {
    /// `text` with every secret replaced by `***`: for anything shown or written.
    pub fn redact(&self, text: &str) -> String {
        match &self.sasl {
            Some(s) if !s.password.is_empty() => text.replace(&s.password, "***"),
            _ => text.to_string(),
        }
    }

    /// librdkafka's configuration keys for these settings (`security.protocol`,
    /// `sasl.mechanisms`, `sasl.username`, `sasl.password`, `ssl.ca.location`).
    pub fn rdkafka(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![("security.protocol", self.protocol.name().to_ascii_lowercase())];
        if let Some(s) = &self.sasl {
            v.push(("sasl.mechanisms", s.mechanism.name().to_string()));
            v.push(("sasl.username", s.username.clone()));
            v.push(("sasl.password", s.password.clone()));
        }
        if let Some(ca) = &self.ca_file {
            v.push(("ssl.ca.location", ca.display().to_string()));
        }
        v
    }
}

/// A rustls client configuration trusting the CAs of `ca_file` (PEM), or, without one, the
/// machine's CA store is not consulted: a CA file is required for TLS here, since the rig
/// tests clusters whose CA it is told about.
fn tls_config(ca_file: Option<&Path>) -> Result<Tls, SecurityError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let path = ca_file
        .ok_or_else(|| SecurityError::Field("ca_file", "TLS needs ca_file: the PEM file of the brokers' CA".into()))?;
    let mut roots = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| SecurityError::Field("ca_file", format!("cannot read {}: {e}", path.display())))?;
    for cert in certs {
        let cert = cert.map_err(|e| SecurityError::Field("ca_file", format!("{}: {e}", path.display())))?;
        roots.add(cert).map_err(|e| SecurityError::Field("ca_file", format!("{}: {e}", path.display())))?;
    }
    if roots.is_empty() {
        return Err(SecurityError::Field("ca_file", format!("{} holds no certificate", path.display())));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| SecurityError::Field("ca_file", e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Tls { config: Arc::new(config) })
}

static INSTALLED: RwLock<Option<Arc<Resolved>>> = RwLock::new(None);

/// Makes `security` the one every client of this process made from now on uses (`None`:
/// plain connections again).
pub fn install(security: Option<Arc<Resolved>>) {
    *INSTALLED.write().unwrap_or_else(|p| p.into_inner()) = security;
}

/// The security installed for this process, if any.
pub fn installed() -> Option<Arc<Resolved>> {
    INSTALLED.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// `c` with the installed security's librdkafka keys set ([`Resolved::rdkafka`]; nothing when
/// none is installed): every librdkafka client of the process (the rdkafka-txn sink, the
/// checker's drain, the latency tail) reaches the cluster as the wire client does.
pub fn rdkafka_config(c: &mut rdkafka::ClientConfig) -> &mut rdkafka::ClientConfig {
    if let Some(sec) = installed() {
        for (k, v) in sec.rdkafka() {
            c.set(k, v);
        }
    }
    c
}

/// Takes every installed secret out of `text`.
pub fn redact(text: &str) -> String {
    match installed() {
        Some(r) => r.redact(text),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sasl(protocol: Protocol) -> Security {
        Security {
            protocol,
            mechanism: Some(Mechanism::ScramSha512),
            username: Some("sink".into()),
            password_env: Some("SINKHOLE_TEST_PW_UNSET_1".into()),
            ..Security::default()
        }
    }

    #[test]
    fn the_settings_fit_the_protocol_or_say_which_field_is_wrong() {
        assert!(Security::default().problems().is_empty());
        assert!(sasl(Protocol::SaslPlaintext).problems().is_empty());
        let mut s = sasl(Protocol::Plaintext);
        s.ca_file = Some("/ca.pem".into());
        let fields: Vec<_> = s.problems().into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, vec!["mechanism", "username", "password_env", "ca_file"]);
        let mut s = sasl(Protocol::SaslSsl);
        s.mechanism = None;
        s.password_file = Some("/pw".into());
        let p = s.problems();
        assert_eq!(p.iter().map(|(f, _)| *f).collect::<Vec<_>>(), vec!["mechanism", "password_file", "ca_file"]);
        assert!(p[1].1.contains("not both"), "{p:?}");
    }

    #[test]
    fn a_password_is_read_from_its_variable_or_file_and_never_shown() {
        let dir = std::env::temp_dir().join(format!("sinkhole-sec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("pw");
        std::fs::write(&file, "hunter2-s3cret\n").unwrap();
        let mut s = sasl(Protocol::SaslPlaintext);
        s.password_env = None;
        s.password_file = Some(file.clone());
        let r = s.resolve().unwrap();
        let creds = r.sasl.as_ref().unwrap();
        assert_eq!((creds.username.as_str(), creds.password.as_str()), ("sink", "hunter2-s3cret"));
        assert!(!format!("{r:?}").contains("hunter2"), "{r:?}");
        assert_eq!(r.redact("auth failed for sink:hunter2-s3cret!"), "auth failed for sink:***!");
        let keys = r.rdkafka();
        assert!(keys.contains(&("security.protocol", "sasl_plaintext".into())), "{keys:?}");
        assert!(keys.contains(&("sasl.mechanisms", "SCRAM-SHA-512".into())), "{keys:?}");
        // A variable that is not set is named, with no value.
        let e = sasl(Protocol::SaslPlaintext).resolve().unwrap_err();
        assert_eq!(e.to_string(), "password_env: the environment variable SINKHOLE_TEST_PW_UNSET_1 is not set");
        // Serialised, the settings hold references only.
        let yaml = serde_json::to_string(&s).unwrap();
        assert!(!yaml.contains("hunter2") && yaml.contains("password_file"), "{yaml}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tls_needs_a_ca_file_with_a_certificate() {
        let s = Security { protocol: Protocol::Ssl, ..Security::default() };
        assert!(s.resolve().unwrap_err().to_string().starts_with("ca_file: TLS needs ca_file"));
        let dir = std::env::temp_dir().join(format!("sinkhole-sec-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("empty.pem"), "").unwrap();
        let s = Security { protocol: Protocol::Ssl, ca_file: Some(dir.join("empty.pem")), ..Security::default() };
        assert!(s.resolve().unwrap_err().to_string().contains("holds no certificate"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
