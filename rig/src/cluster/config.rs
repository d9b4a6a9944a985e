//! Broker configuration for the local backend: what sinkhole sets per node, the
//! defaults it chooses for small test clusters, and user overrides.
//!
//! Every node is a KRaft *combined* node (`process.roles=broker,controller`)
//! with a static voter set (`controller.quorum.voters`), as Kafka's own
//! `config/server.properties` does for a single machine. Static voters let the
//! storage tool format each node independently with one shared cluster id.
use std::collections::BTreeMap;
use std::fmt::Write as _;

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

/// The ports and id of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeAddr {
    pub node_id: i32,
    pub broker_port: u16,
    pub controller_port: u16,
}

/// Defaults sized for a test cluster of `nodes` nodes. Replication of the
/// internal topics follows the cluster size (min.isr 2 on three nodes, as
/// Kafka's transactions system test runs them), topic auto-creation is off so a
/// typo in a topic name fails loudly, and the internal topics get fewer
/// partitions than Kafka's 50 so a 3-node cluster is ready sooner.
pub fn defaults(nodes: usize) -> BTreeMap<String, String> {
    let rf = nodes.min(3);
    let isr = if nodes >= 3 { 2 } else { 1 };
    [
        ("offsets.topic.replication.factor", rf.to_string()),
        ("offsets.topic.num.partitions", "10".into()),
        ("transaction.state.log.replication.factor", rf.to_string()),
        ("transaction.state.log.min.isr", isr.to_string()),
        ("transaction.state.log.num.partitions", "10".into()),
        ("default.replication.factor", rf.to_string()),
        ("group.initial.rebalance.delay.ms", "0".into()),
        ("auto.create.topics.enable", "false".into()),
        ("num.network.threads", "2".into()),
        ("num.io.threads", "4".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Renders `server.properties` for one node: the rig-owned wiring, then the
/// defaults overridden by the user's settings.
pub fn render(me: NodeAddr, all: &[NodeAddr], data_dir: &str, overrides: &BTreeMap<String, String>) -> String {
    let voters =
        all.iter().map(|n| format!("{}@127.0.0.1:{}", n.node_id, n.controller_port)).collect::<Vec<_>>().join(",");
    let mut out = String::new();
    let _ = writeln!(out, "# written by sinkhole for node {}", me.node_id);
    let mut put = |k: &str, v: &str| {
        let _ = writeln!(out, "{k}={v}");
    };
    put("process.roles", "broker,controller");
    put("node.id", &me.node_id.to_string());
    put("controller.quorum.voters", &voters);
    put(
        "listeners",
        &format!("PLAINTEXT://127.0.0.1:{},CONTROLLER://127.0.0.1:{}", me.broker_port, me.controller_port),
    );
    put("advertised.listeners", &format!("PLAINTEXT://127.0.0.1:{}", me.broker_port));
    put("controller.listener.names", "CONTROLLER");
    put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
    put("inter.broker.listener.name", "PLAINTEXT");
    put("log.dirs", data_dir);
    let mut merged = defaults(all.len());
    merged.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
    for (k, v) in &merged {
        put(k, v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_parse_and_bad_ones_say_why() {
        assert_eq!(
            parse_override("transaction.max.timeout.ms=5000").unwrap(),
            ("transaction.max.timeout.ms".into(), "5000".into())
        );
        assert_eq!(parse_override("a.b=").unwrap(), ("a.b".into(), "".into()));
        assert_eq!(parse_override("x.y=a=b").unwrap(), ("x.y".into(), "a=b".into()));
        assert_eq!(
            parse_override("transaction.max.timeout.ms"),
            Err(ConfigError::NotKeyValue("transaction.max.timeout.ms".into()))
        );
        assert_eq!(parse_override("=5"), Err(ConfigError::NotKeyValue("=5".into())));
        assert_eq!(parse_override("Bad Key=1"), Err(ConfigError::BadKey("Bad Key".into())));
        assert_eq!(parse_override("node.id=7"), Err(ConfigError::RigOwned("node.id".into())));
        let msg = parse_override("nope").unwrap_err().to_string();
        assert!(msg.contains("'nope'") && msg.contains("key=value"), "{msg}");
    }

    #[test]
    fn render_wires_voters_and_lets_overrides_win_over_defaults() {
        let nodes = [
            NodeAddr { node_id: 1, broker_port: 1001, controller_port: 1002 },
            NodeAddr { node_id: 2, broker_port: 2001, controller_port: 2002 },
            NodeAddr { node_id: 3, broker_port: 3001, controller_port: 3002 },
        ];
        let mut o = BTreeMap::new();
        o.insert("transaction.state.log.min.isr".to_string(), "1".to_string());
        let text = render(nodes[1], &nodes, "/d", &o);
        assert!(text.contains("node.id=2\n"));
        assert!(text.contains("controller.quorum.voters=1@127.0.0.1:1002,2@127.0.0.1:2002,3@127.0.0.1:3002\n"));
        assert!(text.contains("listeners=PLAINTEXT://127.0.0.1:2001,CONTROLLER://127.0.0.1:2002\n"));
        assert!(text.contains("advertised.listeners=PLAINTEXT://127.0.0.1:2001\n"));
        assert!(text.contains("transaction.state.log.replication.factor=3\n"));
        assert!(text.contains("transaction.state.log.min.isr=1\n"));
        assert!(!text.contains("transaction.state.log.min.isr=2"));
        assert!(text.contains("log.dirs=/d\n"));
    }
}
