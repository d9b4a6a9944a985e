//! What a containerised node runs: its `server.properties` (the rig-owned listener wiring, then
//! the shared defaults and the user's settings, as the local backend's) and the container's
//! command, which writes it, formats the storage and execs the broker.
use std::collections::BTreeMap;

use crate::config;

/// Container ports (the same in every container; only `EXTERNAL` is published).
const INTERNAL_PORT: u16 = 9092;
const CONTROLLER_PORT: u16 = 9093;
pub(super) const EXTERNAL_PORT: u16 = 9094;

/// `server.properties` of one containerised node: the rig-owned wiring (listeners by container
/// name, `EXTERNAL` advertised on `host_port`: the published port, or the proxy's), then [`config::defaults`] overridden by the
/// user's settings, as the local backend does.
pub fn render(node_id: i32, names: &[(i32, String)], host_port: u16, overrides: &BTreeMap<String, String>) -> String {
    let voters = names.iter().map(|(id, n)| format!("{id}@{n}:{CONTROLLER_PORT}")).collect::<Vec<_>>().join(",");
    let me = &names.iter().find(|(id, _)| *id == node_id).expect("the node is in the list").1;
    let mut out = format!("# written by sinkhole for node {node_id} (containers backend)\n");
    let mut put = |k: &str, v: &str| {
        out.push_str(k);
        out.push('=');
        out.push_str(v);
        out.push('\n');
    };
    put("process.roles", "broker,controller");
    put("node.id", &node_id.to_string());
    put("controller.quorum.voters", &voters);
    put(
        "listeners",
        &format!(
            "INTERNAL://0.0.0.0:{INTERNAL_PORT},EXTERNAL://0.0.0.0:{EXTERNAL_PORT},CONTROLLER://0.0.0.0:{CONTROLLER_PORT}"
        ),
    );
    put("advertised.listeners", &format!("INTERNAL://{me}:{INTERNAL_PORT},EXTERNAL://127.0.0.1:{host_port}"));
    put("controller.listener.names", "CONTROLLER");
    put("listener.security.protocol.map", "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT");
    put("inter.broker.listener.name", "INTERNAL");
    put("log.dirs", "/var/lib/kafka/data");
    let mut merged = config::defaults(names.len());
    merged.extend(
        overrides
            .iter()
            .filter(|(k, _)| !config::RIG_OWNED_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    for (k, v) in &merged {
        put(k, v);
    }
    out
}

/// The container's command: write the configuration, format the storage (a no-op when it is
/// formatted, so a restarted container keeps its data), exec the broker with the JVM options
/// of [`crate::jvm::broker_options`] (`$SINKHOLE_JVM_OPTS`: words without spaces, split by the
/// shell). Works in `localhost/sinkhole-kafka` and in `apache/kafka` (both
/// have `/opt/kafka/libs` and `java` on PATH).
pub(super) const ENTRY_SCRIPT: &str = r#"set -e
printf '%s\n' "$SINKHOLE_SERVER_PROPERTIES" > /tmp/server.properties
L=/opt/kafka/config/sinkhole-log4j2.xml
[ -f "$L" ] || L=/opt/kafka/config/log4j2.yaml
java -Xmx256m "-Dlog4j2.configurationFile=$L" -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format --ignore-formatted -t "$SINKHOLE_CLUSTER_ID" -c /tmp/server.properties
echo "sinkhole: storage of node $SINKHOLE_NODE_ID formatted; starting the broker"
exec java "-Xmx$SINKHOLE_HEAP" -Xms128m $SINKHOLE_JVM_OPTS "-Dlog4j2.configurationFile=$L" -Dkafka.logs.dir=/tmp/kafka-logs -cp '/opt/kafka/libs/*' kafka.Kafka /tmp/server.properties
"#;

/// `name[:tag]` → (name, tag); a missing tag is `latest`.
pub(super) fn split_image(image: &str) -> (String, String) {
    let slash = image.rfind('/').map(|i| i + 1).unwrap_or(0);
    match image[slash..].rfind(':') {
        Some(i) => (image[..slash + i].to_string(), image[slash + i + 1..].to_string()),
        None => (image.to_string(), "latest".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_split_into_name_and_tag() {
        assert_eq!(split_image("localhost/sinkhole-kafka:4.4.0"), ("localhost/sinkhole-kafka".into(), "4.4.0".into()));
        assert_eq!(split_image("apache/kafka:4.0.2"), ("apache/kafka".into(), "4.0.2".into()));
        assert_eq!(split_image("registry:5000/kafka"), ("registry:5000/kafka".into(), "latest".into()));
    }

    #[test]
    fn render_wires_listeners_by_container_name_and_advertises_the_host_port() {
        let names = vec![(1, "a-kafka-1".to_string()), (2, "a-kafka-2".to_string()), (3, "a-kafka-3".to_string())];
        let mut o = BTreeMap::new();
        o.insert("transaction.state.log.min.isr".to_string(), "1".to_string());
        o.insert("node.id".to_string(), "9".to_string());
        let text = render(2, &names, 40123, &o);
        assert!(text.contains("node.id=2\n"), "{text}");
        assert!(!text.contains("node.id=9"), "rig-owned keys are not overridden");
        assert!(text.contains("controller.quorum.voters=1@a-kafka-1:9093,2@a-kafka-2:9093,3@a-kafka-3:9093\n"));
        assert!(text.contains("advertised.listeners=INTERNAL://a-kafka-2:9092,EXTERNAL://127.0.0.1:40123\n"));
        assert!(text.contains("inter.broker.listener.name=INTERNAL\n"));
        assert!(text.contains("transaction.state.log.replication.factor=3\n"));
        assert!(text.contains("transaction.state.log.min.isr=1\n"));
    }
}
