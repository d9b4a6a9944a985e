//! The `cluster.external` section: a cluster the rig did not start (`backend: external`) —
//! where its clients bootstrap, how they authenticate, and how the rig acts on a node it
//! cannot signal: a command per lifecycle action, a template over the node's id and its host
//! or pod (`ssh {host} sudo systemctl kill -s KILL kafka`,
//! `kubectl -n kafka delete pod {pod} --grace-period=0 --force`). The backend that runs them
//! is `cluster::external`; this is the section's shape and its checks, each at its field.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sinkhole_model::security::Security;

use super::located::{key, Seg};

/// `external: {bootstrap, security, nodes, commands, command_timeout_ms}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalSpec {
    /// Where the rig's clients bootstrap (`host:port`); `sinkhole run --bootstrap` sets it too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bootstrap: Vec<String>,
    /// The listener's security; default PLAINTEXT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<Security>,
    /// Per node id, where its commands reach it (`{host}`, `{pod}` in the templates).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub nodes: BTreeMap<i32, NodeTarget>,
    /// The node-control adapter: one command template per action.
    #[serde(default, skip_serializing_if = "Commands::is_empty")]
    pub commands: Commands,
    /// How long one command may run before it is killed (default 120 s).
    #[serde(default = "default_command_timeout", skip_serializing_if = "is_default_timeout")]
    pub command_timeout_ms: u64,
}

/// The section as `--bootstrap` makes it when the file has none: the file's defaults.
impl Default for ExternalSpec {
    fn default() -> ExternalSpec {
        ExternalSpec {
            bootstrap: Vec::new(),
            security: None,
            nodes: BTreeMap::new(),
            commands: Commands::default(),
            command_timeout_ms: default_command_timeout(),
        }
    }
}

/// A node's host (SSH) or pod (Kubernetes), as its commands name it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeTarget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
}

/// Command templates, run with `sh -c`; `{id}`, `{host}` and `{pod}` are replaced by the
/// node's. `status` is optional evidence, run after each action and kept with its effect.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Commands {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

impl Commands {
    pub fn is_empty(&self) -> bool {
        self.each().iter().all(|(_, c)| c.is_none())
    }

    /// Every template with its field name.
    pub fn each(&self) -> [(&'static str, Option<&str>); 7] {
        [
            ("kill", self.kill.as_deref()),
            ("stop", self.stop.as_deref()),
            ("start", self.start.as_deref()),
            ("pause", self.pause.as_deref()),
            ("resume", self.resume.as_deref()),
            ("restart", self.restart.as_deref()),
            ("status", self.status.as_deref()),
        ]
    }
}

/// The placeholders a template may use.
pub const PLACEHOLDERS: [&str; 3] = ["id", "host", "pod"];

fn default_command_timeout() -> u64 {
    120_000
}
fn is_default_timeout(ms: &u64) -> bool {
    *ms == default_command_timeout()
}

/// The `{name}`s of a template, or why it does not parse (an unclosed brace). `{{` and `}}`
/// stand for literal braces.
pub fn placeholders(template: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        let (c, after) = (rest.as_bytes()[i], &rest[i + 1..]);
        if after.starts_with(c as char) {
            rest = &after[1..];
            continue;
        }
        if c == b'}' {
            return Err(format!(
                "a '}}' without its '{{' at byte {} (write '}}}}' for a brace)",
                template.len() - rest.len() + i
            ));
        }
        let end = after.find('}').ok_or_else(|| "a '{' that is never closed (write '{{' for a brace)".to_string())?;
        out.push(after[..end].to_string());
        rest = &after[end + 1..];
    }
    Ok(out)
}

/// The section's problems (the private `validate`'s) with their paths written out
/// (`cluster.external.bootstrap[0]`), for settings that came from the command line rather than
/// a file.
pub fn problems(e: &ExternalSpec, brokers: usize) -> Vec<(String, String)> {
    validate(e, brokers).into_iter().map(|(p, m)| (super::located::render_path(&p), m)).collect()
}

/// Problems of the section: (path under `cluster.external`, message). `brokers` is
/// `cluster.brokers`.
pub(super) fn validate(e: &ExternalSpec, brokers: usize) -> Vec<(Vec<Seg>, String)> {
    let mut out = Vec::new();
    let at = |field: &str| vec![key("cluster"), key("external"), key(field)];
    for (i, b) in e.bootstrap.iter().enumerate() {
        let ok = b.rsplit_once(':').is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0));
        if !ok {
            out.push((
                vec![key("cluster"), key("external"), key("bootstrap"), Seg::Index(i)],
                format!("{b:?}: use host:port"),
            ));
        }
    }
    if let Some(s) = &e.security {
        for (field, message) in s.problems() {
            out.push((vec![key("cluster"), key("external"), key("security"), key(field)], message));
        }
        if let Some(ca) = &s.ca_file {
            if !ca.is_file() {
                out.push((
                    vec![key("cluster"), key("external"), key("security"), key("ca_file")],
                    format!("{}: no such file", ca.display()),
                ));
            }
        }
    }
    let used: Vec<String> =
        e.commands.each().iter().filter_map(|(_, c)| *c).filter_map(|c| placeholders(c).ok()).flatten().collect();
    for (field, template) in e.commands.each() {
        let Some(t) = template else { continue };
        let path = vec![key("cluster"), key("external"), key("commands"), key(field)];
        if t.trim().is_empty() {
            out.push((path, "an empty command: remove it, or write the command".into()));
            continue;
        }
        match placeholders(t) {
            Err(why) => out.push((path, why)),
            Ok(names) => {
                for n in names.iter().filter(|n| !PLACEHOLDERS.contains(&n.as_str())) {
                    out.push((path.clone(), format!("{{{n}}}: templates know {{id}}, {{host}} and {{pod}}")));
                }
            }
        }
    }
    for (id, n) in &e.nodes {
        let path = vec![key("cluster"), key("external"), key("nodes"), key(&id.to_string())];
        if *id < 0 {
            out.push((path.clone(), format!("{id}: a Kafka node id is ≥ 0")));
        }
        for (name, value) in [("host", &n.host), ("pod", &n.pod)] {
            let Some(v) = value else { continue };
            if !used.iter().any(|u| u == name) {
                out.push((
                    {
                        let mut p = path.clone();
                        p.push(key(name));
                        p
                    },
                    format!("no command uses {{{name}}}"),
                ));
            } else if v.is_empty() || v.contains(['\'', '\n', '\0']) {
                out.push((
                    {
                        let mut p = path.clone();
                        p.push(key(name));
                        p
                    },
                    format!("{v:?}: not a {name} name"),
                ));
            }
        }
    }
    for name in ["host", "pod"] {
        if !used.iter().any(|u| u == name) {
            continue;
        }
        let missing: Vec<i32> = e
            .nodes
            .iter()
            .filter(|(_, n)| if name == "host" { n.host.is_none() } else { n.pod.is_none() })
            .map(|(id, _)| *id)
            .collect();
        if e.nodes.is_empty() {
            out.push((at("nodes"), format!("the commands use {{{name}}}: give each node's {name} under nodes")));
        } else if !missing.is_empty() {
            out.push((at("nodes"), format!("the commands use {{{name}}}, but nodes {missing:?} have none")));
        }
    }
    if !e.nodes.is_empty() && e.nodes.len() != brokers {
        out.push((at("nodes"), format!("{} node(s) listed, but cluster.brokers is {brokers}", e.nodes.len())));
    }
    if e.command_timeout_ms < 1_000 {
        out.push((at("command_timeout_ms"), format!("{} ms: at least 1000 ms", e.command_timeout_ms)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_section_is_the_file_s_defaults() {
        let e = ExternalSpec { bootstrap: vec!["127.0.0.1:9092".into()], ..ExternalSpec::default() };
        assert_eq!(e.command_timeout_ms, 120_000);
        assert!(validate(&e, 3).is_empty(), "{:?}", validate(&e, 3));
        let parsed: ExternalSpec = serde_json::from_str(r#"{"bootstrap": ["127.0.0.1:9092"]}"#).unwrap();
        assert_eq!(parsed, e);
    }

    #[test]
    fn placeholders_are_read_and_braces_escaped() {
        assert_eq!(placeholders("ssh {host} sudo kill {id}").unwrap(), vec!["host", "id"]);
        assert_eq!(placeholders("awk '{{print $1}}' {id}").unwrap(), vec!["id"]);
        assert!(placeholders("echo {id").unwrap_err().contains("never closed"));
        assert!(placeholders("echo id}").unwrap_err().contains("without its"));
    }

    #[test]
    fn the_section_is_checked_field_by_field() {
        let mut e = ExternalSpec {
            bootstrap: vec!["127.0.0.1:9092".into(), "nohost".into()],
            command_timeout_ms: 120_000,
            ..ExternalSpec::default()
        };
        e.commands.kill = Some("ssh {host} kill {node}".into());
        e.commands.start = Some(" ".into());
        e.nodes.insert(1, NodeTarget { host: Some("k1".into()), pod: Some("p".into()) });
        e.nodes.insert(2, NodeTarget::default());
        let got: Vec<String> = validate(&e, 3)
            .into_iter()
            .map(|(p, m)| format!("{}: {m}", super::super::located::render_path(&p)))
            .collect();
        assert_eq!(
            got,
            vec![
                "cluster.external.bootstrap[1]: \"nohost\": use host:port",
                "cluster.external.commands.kill: {node}: templates know {id}, {host} and {pod}",
                "cluster.external.commands.start: an empty command: remove it, or write the command",
                "cluster.external.nodes.1.pod: no command uses {pod}",
                "cluster.external.nodes: the commands use {host}, but nodes [2] have none",
                "cluster.external.nodes: 2 node(s) listed, but cluster.brokers is 3",
            ],
        );
    }

    #[test]
    fn flink_kafkasink_is_refused_on_a_secured_listener() {
        let dir = std::env::temp_dir().join(format!("sinkhole-ext-flink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ca.pem"), "").unwrap();
        let text = |security: &str| {
            format!(
                "name: ext\ncluster:\n  brokers: 1\n  backend: external\n  external:\n    bootstrap: [127.0.0.1:9093]\n    \
                 security: {security}\ntopic: {{partitions: 1, replication_factor: 1}}\njob: {{parallelism: 1, \
                 records_per_subtask: 10, rate_per_subtask: 10, checkpoint_interval_ms: 1000, \
                 transaction_timeout_ms: 60000, restart_delay_ms: 500}}\nmodes: [legacy, flink-kafkasink]\n"
            )
        };
        let ssl = format!("{{protocol: SSL, ca_file: {}}}", dir.join("ca.pem").display());
        let e = crate::from_str(&text(&ssl), "ext.yaml").unwrap_err().to_string();
        assert!(e.contains("modes: flink-kafkasink gets no client security settings"), "{e}");
        // On a PLAINTEXT listener the mode is taken.
        let plain = crate::from_str(&text("{protocol: PLAINTEXT}"), "ext.yaml");
        assert!(plain.is_ok(), "{}", plain.err().map(|e| e.render()).unwrap_or_default());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_s_problems_are_located_at_their_fields() {
        let text = "name: ext\ncluster:\n  brokers: 3\n  backend: external\n  external:\n    bootstrap: [nohost]\n    \
                    security: {protocol: SASL_SSL, mechanism: SCRAM-SHA-512, username: sink}\n    commands:\n      \
                    kill: ssh {host} kill {nodeid}\n    nodes: {1: {host: a}, 2: {host: b}, 3: {host: c}}\n\
                    topic: {partitions: 3, replication_factor: 3}\njob: {parallelism: 2, records_per_subtask: 10, rate_per_subtask: 10, \
                    checkpoint_interval_ms: 1000, transaction_timeout_ms: 60000, restart_delay_ms: 500}\nmodes: [legacy]\n";
        let e = crate::from_str(text, "ext.yaml").unwrap_err().to_string();
        for want in [
            "ext.yaml:6:17: cluster.external.bootstrap[0]: \"nohost\": use host:port",
            "ext.yaml:7:15: cluster.external.security.password_env: SASL_SSL needs the password",
            "cluster.external.security.ca_file: TLS needs ca_file",
            "ext.yaml:9:13: cluster.external.commands.kill: {nodeid}: templates know {id}, {host} and {pod}",
        ] {
            assert!(e.contains(want), "{want:?} not in:\n{e}");
        }
        // Every node has the host its commands use: nothing said about nodes.
        assert!(!e.contains("cluster.external.nodes"), "{e}");
    }

    #[test]
    fn the_resolved_scenario_written_to_results_holds_no_secret() {
        let dir = std::env::temp_dir().join(format!("sinkhole-ext-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pw = dir.join("pw");
        std::fs::write(&pw, "s3cret-Zebra\n").unwrap();
        let text = format!(
            "name: ext\ncluster:\n  brokers: 1\n  backend: external\n  external:\n    bootstrap: [127.0.0.1:9092]\n    \
             security: {{protocol: SASL_PLAINTEXT, mechanism: SCRAM-SHA-512, username: sink, password_file: {}}}\n\
             topic: {{partitions: 1, replication_factor: 1}}\njob: {{parallelism: 1, records_per_subtask: 10, \
             rate_per_subtask: 10, checkpoint_interval_ms: 1000, transaction_timeout_ms: 60000, restart_delay_ms: 500}}\n\
             modes: [legacy]\n",
            pw.display()
        );
        let s = crate::from_str(&text, "ext.yaml").unwrap_or_else(|e| panic!("{}", e.render()));
        let security = s.cluster.external.as_ref().unwrap().security.as_ref().unwrap();
        use sinkhole_client::wire::security::ResolveSecurity;
        let resolved = security.resolve().unwrap();
        assert_eq!(resolved.sasl.as_ref().unwrap().password, "s3cret-Zebra");
        // What `run` writes as scenario.yaml, and what a worker's configuration carries.
        let yaml = serde_saphyr::to_string(&s).unwrap();
        assert!(yaml.contains("password_file") && !yaml.contains("s3cret"), "{yaml}");
        assert!(!serde_json::to_string(security).unwrap().contains("s3cret"));
        assert!(!format!("{resolved:?}").contains("s3cret"));
        assert_eq!(
            resolved.redact("SaslAuthenticate failed for sink/s3cret-Zebra"),
            "SaslAuthenticate failed for sink/***"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
