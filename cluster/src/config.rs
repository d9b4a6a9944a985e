//! Broker configuration for the local backend: what sinkhole sets per node, the
//! defaults it chooses for small test clusters, and user overrides.
//!
//! Every node is a KRaft *combined* node (`process.roles=broker,controller`)
//! with a static voter set (`controller.quorum.voters`), as Kafka's own
//! `config/server.properties` does for a single machine. Static voters let the
//! storage tool format each node independently with one shared cluster id.
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub use sinkhole_scenario::broker_config::{parse_override, parse_overrides, ConfigError, RIG_OWNED_KEYS};

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
///
/// The share coordinator's `__share_group_state` (KIP-932) is sized the same
/// way: with Kafka's defaults (replication factor 3, min.isr 2) it cannot be
/// created on a 1-node cluster, and then a share group's members join but never
/// get an assignment, because the group coordinator assigns a partition only
/// once its share state is initialised (measured on 4.4.0; `docs/PROTOCOL.md` §6).
pub fn defaults(nodes: usize) -> BTreeMap<String, String> {
    let rf = nodes.min(3);
    let isr = if nodes >= 3 { 2 } else { 1 };
    [
        ("offsets.topic.replication.factor", rf.to_string()),
        ("offsets.topic.num.partitions", "10".into()),
        ("transaction.state.log.replication.factor", rf.to_string()),
        ("transaction.state.log.min.isr", isr.to_string()),
        ("transaction.state.log.num.partitions", "10".into()),
        ("share.coordinator.state.topic.replication.factor", rf.to_string()),
        ("share.coordinator.state.topic.min.isr", isr.to_string()),
        ("share.coordinator.state.topic.num.partitions", "10".into()),
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

/// The listener the sink workers connect to in ACL scenarios.
pub const SINK_LISTENER: &str = "SINK";
/// The principal every PLAINTEXT connection gets (Kafka's default principal
/// builder without authentication): the rig's own clients, the inter-broker
/// and the controller listeners.
pub const RIG_PRINCIPAL: &str = "User:ANONYMOUS";
/// The authorizer of KRaft clusters.
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// Adds to a rendered `server.properties` a `SASL_PLAINTEXT` listener named
/// [`SINK_LISTENER`] on `port` whose only user is `user`/`password` (PLAIN),
/// and turns the `StandardAuthorizer` on with [`RIG_PRINCIPAL`] as the super
/// user. Everything else keeps working unauthenticated as that super user:
/// inter-broker and controller traffic and the rig's tools (topic creation,
/// the checker, the visibility tail) stay on their PLAINTEXT listeners, and
/// only the sink workers, on the new listener, are `User:<user>` and subject
/// to ACLs (`allow.everyone.if.no.acl.found` stays false).
///
/// Works on the text so it composes with whatever listeners [`render`] (or a
/// later step) wrote: the three listener lines get the new entry appended.
pub fn with_sink_listener(text: &str, port: u16, user: &str, password: &str) -> String {
    let l = SINK_LISTENER;
    let mut out = with_listener(text, l, "SASL_PLAINTEXT", port);
    let lower = l.to_ascii_lowercase();
    let _ = writeln!(out, "# the sink's own principal ({l} listener) under an authorizer");
    // SCRAM-SHA-512 too, for users the rig gives SCRAM credentials (AlterUserScramCredentials):
    // the tests of the wire client's SCRAM against a real broker.
    let _ = writeln!(out, "listener.name.{lower}.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512");
    let _ = writeln!(
        out,
        "listener.name.{lower}.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
    );
    // JAAS string escaping: the rig chooses both values (letters, digits, '-').
    let _ = writeln!(
        out,
        "listener.name.{lower}.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_{user}=\"{password}\";"
    );
    let _ = writeln!(out, "authorizer.class.name={STANDARD_AUTHORIZER}");
    let _ = writeln!(out, "super.users={RIG_PRINCIPAL}");
    out
}

/// Adds to a rendered `server.properties` a listener `name` on 127.0.0.1:`port` with security
/// protocol `protocol` (`SSL`, `SASL_SSL`, …): the `listeners`, `advertised.listeners` and
/// `listener.security.protocol.map` lines get the new entry appended. What the listener needs
/// besides (its keystore, its SASL mechanisms and JAAS login modules, as Kafka's
/// `listener.name.<name>.*` settings) comes from the broker settings; inter-broker and
/// controller traffic stay on their PLAINTEXT listeners.
pub fn with_listener(text: &str, name: &str, protocol: &str, port: u16) -> String {
    let mut out = String::with_capacity(text.len() + 128);
    for line in text.lines() {
        let extra = if line.starts_with("listeners=") || line.starts_with("advertised.listeners=") {
            Some(format!(",{name}://127.0.0.1:{port}"))
        } else if line.starts_with("listener.security.protocol.map=") {
            Some(format!(",{name}:{protocol}"))
        } else {
            None
        };
        out.push_str(line);
        if let Some(e) = extra {
            out.push_str(&e);
        }
        out.push('\n');
    }
    out
}

/// Points a rendered `server.properties` at the rig's proxy
/// (`sinkhole_faults::proxy`): the PLAINTEXT listener is advertised at the
/// node's proxy port, and the static voters (and bootstrap controllers, if
/// set) name the controllers' proxy ports, so client, replication and Raft
/// traffic all cross the proxy while every node binds its real ports.
/// `real[i]` and `proxied[i]` are the same node. Other listeners (an ACL
/// scenario's SASL listener) are left as they are.
pub fn via_proxy(text: &str, real: &[NodeAddr], proxied: &[NodeAddr]) -> String {
    let swap = |value: &str, broker: bool| -> String {
        value
            .split(',')
            .map(|tok| {
                for (r, p) in real.iter().zip(proxied) {
                    let (from, to) = if broker {
                        (
                            format!("PLAINTEXT://127.0.0.1:{}", r.broker_port),
                            format!("PLAINTEXT://127.0.0.1:{}", p.broker_port),
                        )
                    } else {
                        (format!("127.0.0.1:{}", r.controller_port), format!("127.0.0.1:{}", p.controller_port))
                    };
                    // Voters are `id@host:port`; bootstrap servers `host:port`.
                    if tok == from || tok.strip_suffix(&from).is_some_and(|id| id.ends_with('@')) {
                        return format!("{}{to}", &tok[..tok.len() - from.len()]);
                    }
                }
                tok.to_string()
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.lines() {
        match line.split_once('=') {
            Some((k @ "advertised.listeners", v)) => out.push_str(&format!("{k}={}", swap(v, true))),
            Some((k @ ("controller.quorum.voters" | "controller.quorum.bootstrap.servers"), v)) => {
                out.push_str(&format!("{k}={}", swap(v, false)))
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sink_listener_extends_the_listener_lines_and_adds_the_authorizer() {
        let nodes = [NodeAddr { node_id: 1, broker_port: 1001, controller_port: 1002 }];
        let text = with_sink_listener(&render(nodes[0], &nodes, "/d", &BTreeMap::new()), 1003, "sink", "pw-1");
        assert!(
            text.contains("\nlisteners=PLAINTEXT://127.0.0.1:1001,CONTROLLER://127.0.0.1:1002,SINK://127.0.0.1:1003\n")
        );
        assert!(text.contains("\nadvertised.listeners=PLAINTEXT://127.0.0.1:1001,SINK://127.0.0.1:1003\n"));
        assert!(text
            .contains("listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SINK:SASL_PLAINTEXT\n"));
        assert!(text.contains("listener.name.sink.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_sink=\"pw-1\";\n"));
        assert!(text.contains("listener.name.sink.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512\n"));
        assert!(text.contains("authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n"));
        assert!(text.contains("super.users=User:ANONYMOUS\n"));
        assert!(text.contains("inter.broker.listener.name=PLAINTEXT\n"), "inter-broker stays PLAINTEXT");
    }

    #[test]
    fn an_extra_listener_joins_the_three_listener_lines() {
        let nodes = [NodeAddr { node_id: 1, broker_port: 1001, controller_port: 1002 }];
        let text = with_listener(&render(nodes[0], &nodes, "/d", &BTreeMap::new()), "SECURE", "SASL_SSL", 1004);
        assert!(text
            .contains("\nlisteners=PLAINTEXT://127.0.0.1:1001,CONTROLLER://127.0.0.1:1002,SECURE://127.0.0.1:1004\n"));
        assert!(text.contains("\nadvertised.listeners=PLAINTEXT://127.0.0.1:1001,SECURE://127.0.0.1:1004\n"));
        assert!(
            text.contains("listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SECURE:SASL_SSL\n")
        );
        assert!(text.contains("inter.broker.listener.name=PLAINTEXT\n"), "inter-broker stays PLAINTEXT");
    }

    #[test]
    fn via_proxy_rewrites_advertised_listener_and_voters_only() {
        let real = [
            NodeAddr { node_id: 1, broker_port: 1001, controller_port: 1002 },
            NodeAddr { node_id: 2, broker_port: 2001, controller_port: 2002 },
        ];
        let proxied = [
            NodeAddr { node_id: 1, broker_port: 5001, controller_port: 5002 },
            NodeAddr { node_id: 2, broker_port: 6001, controller_port: 6002 },
        ];
        let text = via_proxy(&render(real[1], &real, "/d", &BTreeMap::new()), &real, &proxied);
        assert!(text.contains("\nlisteners=PLAINTEXT://127.0.0.1:2001,CONTROLLER://127.0.0.1:2002\n"), "{text}");
        assert!(text.contains("\nadvertised.listeners=PLAINTEXT://127.0.0.1:6001\n"), "{text}");
        assert!(text.contains("controller.quorum.voters=1@127.0.0.1:5002,2@127.0.0.1:6002\n"), "{text}");
    }

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

    #[test]
    fn the_share_state_topic_fits_the_cluster() {
        let one = defaults(1);
        assert_eq!(one["share.coordinator.state.topic.replication.factor"], "1");
        assert_eq!(one["share.coordinator.state.topic.min.isr"], "1");
        let three = defaults(3);
        assert_eq!(three["share.coordinator.state.topic.replication.factor"], "3");
        assert_eq!(three["share.coordinator.state.topic.min.isr"], "2");
        assert_eq!(three["share.coordinator.state.topic.num.partitions"], "10");
    }
}
