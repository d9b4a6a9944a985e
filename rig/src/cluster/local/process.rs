//! One local node's JVM: how it is started (the command line `kafka-server-start.sh` would
//! build), signalled and stopped, and what the kernel shows of it. A node is stopped the way an
//! operator stops a broker: SIGTERM, a wait for Kafka's controlled shutdown
//! (`KafkaRaftServer.shutdown`), SIGKILL only after the timeout.
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use sinkhole_faults::process::{ProcessId, RunState, SignalEffect};

use super::{LocalCluster, LocalError};
use crate::cluster::config::NodeAddr;
use crate::cluster::node::{io, tell_down};
use crate::cluster::{ClusterError, Intent, NodeAction, NodeEffect, OnDown};
use crate::procs;

/// One node: its address, directory and the JVM currently running it.
#[derive(Debug)]
pub struct LocalNode {
    pub addr: NodeAddr,
    pub dir: PathBuf,
    pub process: Option<ProcessId>,
    /// Present when this process started the JVM (so it can reap it).
    pub(super) child: Option<Child>,
    pub intent: Intent,
    /// The proxy port clients reach the broker listener at (advertised), when
    /// the cluster is proxied.
    pub proxy_port: Option<u16>,
}

impl LocalNode {
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.proxy_port.unwrap_or(self.addr.broker_port))
    }
    pub(super) fn config_path(&self) -> PathBuf {
        self.dir.join("server.properties")
    }

    /// The kernel's view: reaps our own child first so a dead JVM is `Gone`.
    pub fn observed(&mut self) -> RunState {
        if let Some(child) = self.child.as_mut() {
            if let Ok(Some(_)) = child.try_wait() {
                self.child = None;
                if let Some(p) = self.process {
                    procs::forget(p.pid);
                }
                return RunState::Gone;
            }
        }
        self.process.map(|p| p.state()).unwrap_or(RunState::Gone)
    }

    pub(super) fn exit_code(&mut self) -> String {
        match self.child.as_mut().map(|c| c.try_wait()) {
            Some(Ok(Some(status))) => status.to_string(),
            _ => "unknown".into(),
        }
    }
}

/// The last `lines` lines of a file (at most the last 64 KiB are read).
pub fn tail(path: &Path, lines: usize) -> String {
    let Ok(mut f) = File::open(path) else {
        return format!("(no log at {})", path.display());
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut s = String::new();
    let _ = f.read_to_string(&mut s);
    let all: Vec<&str> = s.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

impl LocalCluster {
    /// Starts the JVM of node index `i`.
    pub(super) fn launch(&mut self, i: usize) -> Result<(), ClusterError> {
        let node = &self.nodes[i];
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(node.log_path())
            .map_err(io(format!("opening {}", node.log_path().display())))?;
        let log2 = log.try_clone().map_err(io("duplicating the log handle"))?;
        let mut cmd = Command::new(self.dist.java());
        cmd.arg(format!("-Xmx{}", self.heap))
            .arg("-Xms128m")
            // As kafka-run-class.sh does for the broker.
            .args(["-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35"])
            .args(["-XX:+ExplicitGCInvokesConcurrent", "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true"])
            .args(self.class_archive.jvm_args())
            .arg(format!("-Dlog4j2.configurationFile={}", self.dist.log4j_config().display()))
            .arg(format!("-Dkafka.logs.dir={}", node.dir.join("logs").display()))
            .arg("-cp")
            .arg(self.dist.classpath())
            .arg("kafka.Kafka")
            .arg(node.config_path())
            .current_dir(&node.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        let (child, id) = procs::spawn(cmd, self.lifetime).map_err(io("starting a Kafka broker JVM"))?;
        let node = &mut self.nodes[i];
        node.process = Some(id);
        node.child = Some(child);
        node.intent = Intent::Running;
        Ok(())
    }

    /// Applies a lifecycle action to node `id` and reports its effect ([`Cluster::act_with`]).
    pub(super) async fn apply(
        &mut self,
        id: i32,
        action: NodeAction,
        timeout: Duration,
        mut on_down: Option<OnDown>,
    ) -> Result<NodeEffect, ClusterError> {
        let i = self.index(id)?;
        let started = Instant::now();
        let mut effect = NodeEffect::new(id, action);
        let state = self.nodes[i].intent;
        match action {
            NodeAction::Kill => {
                let p = self.require_process(i, action)?;
                effect.signals.push(self.signal(i, p, Signal::SIGKILL, Duration::from_secs(5))?);
                self.reap(i);
                self.nodes[i].intent = Intent::Killed;
                tell_down(&mut on_down, &effect, started);
            }
            NodeAction::Stop => {
                let p = self.require_process(i, action)?;
                effect.signals.extend(self.stop(i, p, timeout).await?);
                self.nodes[i].intent = Intent::Stopped;
                tell_down(&mut on_down, &effect, started);
            }
            NodeAction::Pause => {
                if state != Intent::Running {
                    return Err(ClusterError::WrongState { id, state, action });
                }
                let p = self.require_process(i, action)?;
                effect.signals.push(self.signal(i, p, Signal::SIGSTOP, Duration::from_secs(5))?);
                self.nodes[i].intent = Intent::Paused;
            }
            NodeAction::Resume => {
                if state != Intent::Paused {
                    return Err(ClusterError::WrongState { id, state, action });
                }
                let p = self.require_process(i, action)?;
                effect.signals.push(self.signal(i, p, Signal::SIGCONT, Duration::from_secs(5))?);
                self.nodes[i].intent = Intent::Running;
            }
            NodeAction::Start | NodeAction::Restart => {
                if action == NodeAction::Start && matches!(state, Intent::Running | Intent::Paused) {
                    return Err(ClusterError::WrongState { id, state, action });
                }
                if let Some(p) = self.nodes[i].process {
                    if p.is_alive() {
                        effect.signals.extend(self.stop(i, p, timeout).await?);
                    }
                }
                // The old JVM is reaped (or there was none): down, and not yet started again.
                tell_down(&mut on_down, &effect, started);
                self.launch(i)?;
                effect.new_pid = self.nodes[i].process.map(|p| p.pid);
                effect.ready = Some(self.wait_node_ready(i, timeout).await.is_ok());
                if effect.ready == Some(false) {
                    // Say why: a broker that exited is an error, a slow one is reported.
                    self.wait_node_ready(i, Duration::ZERO).await?;
                }
            }
        }
        effect.elapsed_ms = started.elapsed().as_millis() as u64;
        Ok(effect)
    }

    fn require_process(&mut self, i: usize, action: NodeAction) -> Result<ProcessId, ClusterError> {
        let id = self.nodes[i].addr.node_id;
        match (self.nodes[i].process, self.nodes[i].observed()) {
            (Some(p), RunState::Running | RunState::Stopped) => Ok(p),
            _ => Err(ClusterError::WrongState { id, state: self.nodes[i].intent, action }),
        }
    }

    fn signal(&mut self, i: usize, p: ProcessId, sig: Signal, within: Duration) -> Result<SignalEffect, ClusterError> {
        let id = self.nodes[i].addr.node_id;
        let e = p.signal_group(sig, within).map_err(|source| LocalError::Signal { id, source })?;
        tracing::info!(node = id, signal = %sig, confirmed = e.confirmed, observed = ?e.observed, "signal delivered");
        Ok(e)
    }

    /// SIGTERM (with SIGCONT, in case the node is paused: a stopped JVM would
    /// hold the SIGTERM pending forever), wait, then SIGKILL.
    async fn stop(&mut self, i: usize, p: ProcessId, timeout: Duration) -> Result<Vec<SignalEffect>, ClusterError> {
        let mut out = vec![self.signal(i, p, Signal::SIGTERM, Duration::ZERO)?];
        if p.state() == RunState::Stopped {
            out.push(self.signal(i, p, Signal::SIGCONT, Duration::from_secs(1))?);
        }
        let started = Instant::now();
        while started.elapsed() < timeout {
            if matches!(self.nodes[i].observed(), RunState::Gone | RunState::Zombie) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let last = out.last_mut().expect("one signal at least");
        last.observed = p.state();
        if matches!(self.nodes[i].observed(), RunState::Running | RunState::Stopped) {
            tracing::warn!(node = self.nodes[i].addr.node_id, "no exit after SIGTERM within {timeout:?}: SIGKILL");
            out.push(self.signal(i, p, Signal::SIGKILL, Duration::from_secs(5))?);
        } else if let Some(first) = out.first_mut() {
            first.confirmed = true;
            first.observed = RunState::Gone;
            first.after_ms = started.elapsed().as_millis() as u64;
        }
        self.reap(i);
        Ok(out)
    }

    pub(super) fn reap(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        if let Some(mut child) = node.child.take() {
            let _ = child.wait();
        }
        if let Some(p) = node.process {
            procs::forget(p.pid);
        }
    }
}
