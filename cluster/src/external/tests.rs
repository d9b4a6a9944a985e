use super::*;
use crate::ClusterNodes;
use sinkhole_scenario::{Commands, ExternalSpec};

fn fault(v: serde_json::Value) -> FaultSpec {
    serde_json::from_value(v).unwrap()
}

fn spec(commands: Commands) -> ExternalSpec {
    ExternalSpec {
        bootstrap: vec!["127.0.0.1:9092".into()],
        commands,
        command_timeout_ms: 120_000,
        ..Default::default()
    }
}

#[test]
fn node_faults_need_their_commands_and_network_faults_the_client_side() {
    let at = serde_json::json!({"at_ms": 1000});
    let kill = fault(serde_json::json!({"kind": "broker-kill", "when": at, "target": [1], "duration_ms": 5000}));
    let restart =
        fault(serde_json::json!({"name": "r", "kind": "broker-restart", "when": at, "target": "txn-coordinator"}));
    let none = spec(Commands::default());
    let why = unsupported_fault(&kill, &none).unwrap();
    assert!(why.contains("broker-kill needs the kill and start command(s)"), "{why}");
    let why = unsupported_fault(&restart, &none).unwrap();
    assert!(why.starts_with("fault r: broker-restart needs the restart, or stop and start"), "{why}");
    let cmds = Commands {
        kill: Some("sinkhole cluster kill {id}".into()),
        start: Some("sinkhole cluster start {id}".into()),
        stop: Some("sinkhole cluster stop {id}".into()),
        ..Commands::default()
    };
    let some = spec(cmds);
    assert_eq!(unsupported_fault(&kill, &some), None);
    // stop and start stand in for a restart command.
    assert_eq!(unsupported_fault(&restart, &some), None);
    let pause = fault(serde_json::json!({"kind": "broker-pause", "when": at, "target": [1], "duration_ms": 500}));
    assert!(unsupported_fault(&pause, &some).unwrap().contains("pause and resume"));

    let w2b = fault(serde_json::json!({"kind": "net-partition", "when": at, "from": ["workers"], "to": ["broker-1"]}));
    assert_eq!(unsupported_fault(&w2b, &some), None);
    let b2b = fault(serde_json::json!({"kind": "net-partition", "when": at, "from": ["broker-1"], "to": ["brokers"]}));
    assert!(unsupported_fault(&b2b, &some).unwrap().contains("between broker groups"));
    let bh = fault(serde_json::json!({"kind": "net-blackhole", "when": at, "target": [1]}));
    assert!(unsupported_fault(&bh, &some).unwrap().contains("net-blackhole"));
    let mut tls = some.clone();
    tls.security = Some(Security {
        protocol: sinkhole_client::wire::security::Protocol::Ssl,
        ca_file: Some("/ca.pem".into()),
        ..Security::default()
    });
    assert!(unsupported_fault(&w2b, &tls).unwrap().contains("TLS"));
    assert_eq!(unsupported_fault(&kill, &tls), None);
}

/// A fake node: a listener that answers nothing (what a paused broker looks like) is down;
/// a closed port is down; the commands' failures are errors with their output.
#[tokio::test]
async fn a_failed_command_is_an_error_and_a_silent_node_reads_as_down() {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap().to_string();
    let seen = confirm::wait_for(&addr, Want::Down, &[1], Instant::now(), Duration::from_secs(5)).await;
    assert!(seen.confirmed && seen.observed.starts_with("not answering"), "{seen:?}");
    let seen = confirm::wait_for(&addr, Want::Up, &[1], Instant::now(), Duration::from_millis(300)).await;
    assert!(!seen.confirmed && seen.observed.starts_with("not ready"), "{seen:?}");

    let cmds = Commands { kill: Some("echo no such node {id} >&2; exit 4".into()), ..Commands::default() };
    let mut c = ExternalCluster {
        spec: spec(cmds),
        nodes: vec![ExtNode { id: 1, addr, proxied: None, intent: Intent::Running }],
        resolved: None,
        proxy: None,
        torn_down: false,
    };
    let e = c.act(1, NodeAction::Kill, Duration::from_secs(5)).await.unwrap_err().to_string();
    assert_eq!(e, "node 1: the kill command failed (exit 4): echo no such node 1 >&2; exit 4\nno such node 1");
    let e = c.act(1, NodeAction::Pause, Duration::from_secs(5)).await.unwrap_err().to_string();
    assert!(e.contains("has no pause command"), "{e}");
    let e = c.act(1, NodeAction::Resume, Duration::from_secs(5)).await.unwrap_err();
    assert!(matches!(e, ClusterError::WrongState { .. }), "{e}");
    assert!(matches!(c.act(7, NodeAction::Kill, Duration::from_secs(1)).await, Err(ClusterError::UnknownNode { .. })));
    drop(silent);
}
