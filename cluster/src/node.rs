//! What a node is on every backend: the lifecycle actions the rig takes on it, what the rig
//! last asked of it, the effect an action had, and why an action failed.
//!
//! A local node is a JVM (the kernel confirms its signals); a containers node is a container
//! (the engine confirms its state). Both report in these types, so the runner's fault records
//! read the same whichever backend ran them.
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sinkhole_client::wire::SaslPlain;
use sinkhole_faults::process::SignalEffect;

use super::ports::PortError;

/// What the rig last asked of a node; compared with what the kernel (or the engine) shows, it
/// tells an intended kill from a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Intent {
    Running,
    Paused,
    Stopped,
    Killed,
}

/// A lifecycle action on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum NodeAction {
    /// SIGTERM, then wait for a controlled shutdown (SIGKILL after the timeout).
    Stop,
    /// SIGKILL.
    Kill,
    /// SIGSTOP: the JVM freezes with its sockets open.
    Pause,
    /// SIGCONT.
    Resume,
    /// Start a stopped or killed node again (same id, same data).
    Start,
    /// Stop (gracefully) if running, then start with the same id and data.
    Restart,
}

/// What a lifecycle action did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeEffect {
    pub node_id: i32,
    pub action: NodeAction,
    /// Signals delivered and what was seen after each.
    pub signals: Vec<SignalEffect>,
    /// New pid after start/restart.
    pub new_pid: Option<i32>,
    /// The node answered again (start/restart/resume) within the timeout.
    pub ready: Option<bool>,
    pub elapsed_ms: u64,
    /// External clusters: the node-control commands run, each with what the protocol showed
    /// after it (there is no pid to watch). Left out when empty, so the effects of the other
    /// backends serialise as they always have.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<CommandEffect>,
}

impl NodeEffect {
    /// The effect of `action` on `node_id` before anything was done.
    pub fn new(node_id: i32, action: NodeAction) -> NodeEffect {
        NodeEffect { node_id, action, signals: vec![], new_pid: None, ready: None, elapsed_ms: 0, commands: vec![] }
    }
}

/// One node-control command of an external cluster and its effect, confirmed through the
/// protocol: the node stops answering (kill, stop, pause), or answers again and Metadata lists
/// it (start, resume, restart).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandEffect {
    /// `kill`, `stop`, `start`, … (the template's name).
    pub action: String,
    /// The command as run (placeholders filled in, secrets taken out).
    pub command: String,
    /// Its exit code; None when it was killed at its timeout or could not start.
    pub exit: Option<i32>,
    /// How long the command ran.
    pub ran_ms: u64,
    /// The last lines of its output (secrets taken out), when it printed any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
    /// What the protocol showed: `not answering`, `answering, listed in Metadata`, …
    pub observed: String,
    /// The state the action was for was seen before the deadline.
    pub confirmed: bool,
    /// From the command's start to the protocol's confirmation (or the last look).
    pub after_ms: u64,
    /// The `status` command's output after the action, when one is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// Told the moment a node is down during an action, with the effect so far: for `start` and
/// `restart`, after the old process (or container) is confirmed gone and before the new one
/// starts (the stop half's signals, no new pid); for `kill` and `stop`, when the action ends.
/// `pause` and `resume` never take a node down: their sender is dropped unsent.
///
/// A restart is a stop and a start; whoever must act in between (record the outage's start,
/// fire a fault into the gap) waits on this instead of on the whole restart.
pub type OnDown = tokio::sync::oneshot::Sender<NodeEffect>;

/// Sends `effect` (with its elapsed time) to whoever waits for the node to be down, once.
pub(crate) fn tell_down(on_down: &mut Option<OnDown>, effect: &NodeEffect, started: std::time::Instant) {
    if let Some(tx) = on_down.take() {
        let mut down = effect.clone();
        down.elapsed_ms = started.elapsed().as_millis() as u64;
        // The receiver may have stopped waiting; the action goes on regardless.
        let _ = tx.send(down);
    }
}

/// What a network action did to a node: the networks the backend lists on it after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkEffect {
    pub node_id: i32,
    /// `disconnect` or `connect` (from the run's network).
    pub action: String,
    pub networks: Vec<String>,
    pub confirmed: bool,
    pub elapsed_ms: u64,
}

/// Where the sink workers connect in ACL scenarios, and as whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkListener {
    pub bootstrap: Vec<String>,
    pub sasl: SaslPlain,
}

/// Why an action is illegal in a node's state: the lifecycle's refusal
/// ([`crate::lifecycle::transition`]), carried by [`ClusterError::WrongState`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("nothing of it runs")]
    Down,
    #[error("only a node meant to run can be paused")]
    NotRunning,
    #[error("it is frozen already")]
    Frozen,
    #[error("only a paused node can be resumed")]
    NotPaused,
    #[error("it is meant to be running: restart it instead")]
    MeantToRun,
}

/// Why a cluster operation failed. The variants up to `Unsupported` mean the same on every
/// backend; what only one backend can fail at (a signal the kernel refused, the container
/// engine) is that backend's own error, carried as [`ClusterError::Backend`] and shown as it is.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Ports(#[from] PortError),
    #[error("node {node} exited while {during} (exit {code}); last lines of {log}:\n{tail}")]
    NodeExited { node: i32, during: String, code: String, log: PathBuf, tail: String },
    #[error("the cluster was not ready after {secs:.1}s: {detail}")]
    NotReady { secs: f64, detail: String },
    #[error("there is no node {id}; nodes are {known:?}")]
    UnknownNode { id: i32, known: Vec<i32> },
    /// The lifecycle refused the action in the node's state ([`crate::lifecycle::transition`]).
    #[error("node {id} is {state:?}: cannot {action:?} it ({why})")]
    WrongState { id: i32, state: Intent, action: NodeAction, why: Refusal },
    #[error("a KRaft cluster of {0} node(s) is not supported: use 1, 3 or 5 (an even quorum tolerates no more failures than the odd one below it)")]
    NodeCount(usize),
    /// A request the rig sent the brokers to find something out (the coordinator, the
    /// controller, a leader) failed, or its answer did not have it.
    #[error("{0}")]
    Lookup(String),
    /// This cluster cannot do that at all (a backend without node isolation; no cluster).
    #[error("{0}")]
    Unsupported(String),
    /// A failure only one backend can have, in that backend's words
    /// ([`super::local::LocalError`], [`super::containers::ContainersError`]).
    #[error(transparent)]
    Backend(Box<dyn std::error::Error + Send + Sync + 'static>),
}

/// `map_err(io("what was being done"))`.
pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ClusterError {
    let what = what.into();
    move |source| ClusterError::Io { what, source }
}

/// A Kafka cluster id: 16 random bytes, base64url without padding (22 characters), never
/// starting with '-' (Kafka's `Uuid.randomUuid` avoids those too, because command-line tools
/// would read them as options). Both backends format their nodes' storage with one.
pub fn new_cluster_id() -> String {
    use base64::Engine;
    loop {
        let bytes: [u8; 16] = rand::random();
        let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        if !id.starts_with('-') {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_down_signal_is_sent_once_with_the_time_so_far() {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut on_down = Some(tx);
        let started = std::time::Instant::now() - std::time::Duration::from_millis(40);
        let mut e = NodeEffect::new(2, NodeAction::Restart);
        e.elapsed_ms = 7;
        tell_down(&mut on_down, &e, started);
        assert!(on_down.is_none(), "sent once");
        tell_down(&mut on_down, &e, started);
        let down = rx.await.unwrap();
        assert_eq!((down.node_id, down.action, down.new_pid), (2, NodeAction::Restart, None));
        assert!(down.elapsed_ms >= 40, "{down:?}");
        // A receiver that stopped waiting does not stop the action.
        let (tx, rx) = tokio::sync::oneshot::channel::<NodeEffect>();
        drop(rx);
        tell_down(&mut Some(tx), &e, started);
    }

    #[test]
    fn cluster_ids_are_22_characters_and_never_start_with_a_dash() {
        for _ in 0..200 {
            let id = new_cluster_id();
            assert_eq!(id.len(), 22);
            assert!(!id.starts_with('-'), "{id}");
        }
    }
}
