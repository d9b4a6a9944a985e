//! Broker settings a scenario or the command line may give (`key=value`), and
//! the keys the rig owns: a rule of the scenario language, applied by the
//! loader and by `sinkhole cluster up --broker-config` alike.
use std::collections::BTreeMap;

/// Keys sinkhole sets per node; an override of one of them would break the
/// cluster's wiring (ports, ids, directories), so it is refused.
pub const RIG_OWNED_KEYS: &[&str] = &[
    "process.roles",
    "node.id",
    "listeners",
    "advertised.listeners",
    "controller.listener.names",
    "controller.quorum.voters",
    "controller.quorum.bootstrap.servers",
    "listener.security.protocol.map",
    "inter.broker.listener.name",
    "log.dirs",
    "log.dir",
    "metadata.log.dir",
];

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("broker config '{0}': expected key=value, e.g. transaction.max.timeout.ms=900000")]
    NotKeyValue(String),
    #[error("broker config '{0}': the key may only hold lowercase letters, digits, '.', '_' and '-'")]
    BadKey(String),
    #[error("broker config '{0}' is set by sinkhole for each node (ports, ids, directories) and cannot be overridden")]
    RigOwned(String),
}

/// Parses one `key=value` override. The value may be empty (Kafka accepts empty
/// values for some settings) but the `=` is required.
pub fn parse_override(item: &str) -> Result<(String, String), ConfigError> {
    let (key, value) = item.split_once('=').ok_or_else(|| ConfigError::NotKeyValue(item.to_string()))?;
    let key = key.trim();
    if key.is_empty() {
        return Err(ConfigError::NotKeyValue(item.to_string()));
    }
    if !key.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')) {
        return Err(ConfigError::BadKey(key.to_string()));
    }
    if RIG_OWNED_KEYS.contains(&key) {
        return Err(ConfigError::RigOwned(key.to_string()));
    }
    Ok((key.to_string(), value.trim().to_string()))
}

/// Parses a list of overrides; later items win.
pub fn parse_overrides<S: AsRef<str>>(items: &[S]) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut out = BTreeMap::new();
    for item in items {
        let (k, v) = parse_override(item.as_ref())?;
        out.insert(k, v);
    }
    Ok(out)
}
