//! One local node's JVM: how it is started (the command line `kafka-server-start.sh` would
//! build), signalled and stopped, and what the kernel shows of it. A node is stopped the way an
//! operator stops a broker: SIGTERM, a wait for Kafka's controlled shutdown
//! (`KafkaRaftServer.shutdown`), SIGKILL only after the timeout. These are the local backend's
//! steps of the node lifecycle ([`NodeOps`]); whether an action is legal, and which steps it
//! takes, is [`crate::lifecycle`]'s.
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use sinkhole_faults::process::{ProcessId, RunState, SignalEffect};

use super::{LocalCluster, LocalError};
use crate::config::NodeAddr;
use crate::lifecycle::{self, NodeEntry, NodeOps, Sight};
use crate::node::io;
use crate::{ClusterError, Intent, NodeEffect};
use sinkhole_base::procs;
use sinkhole_base::rundir::names;

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
        self.dir.join(names::SERVER_LOG)
    }
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.proxy_port.unwrap_or(self.addr.broker_port))
    }
    pub(super) fn config_path(&self) -> PathBuf {
        self.dir.join(names::SERVER_PROPERTIES)
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
    /// Starts the JVM of node index `i` (what the rig asks of it is the caller's to record).
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
            .args(crate::jvm::broker_options(self.jit))
            .args(self.class_archive.jvm_args())
            .arg(format!("-Dlog4j2.configurationFile={}", self.dist.log4j_config().display()))
            .arg(format!("-Dkafka.logs.dir={}", node.dir.join(names::NODE_LOGS).display()))
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
        Ok(())
    }

    fn deliver(&mut self, i: usize, p: ProcessId, sig: Signal, within: Duration) -> Result<SignalEffect, ClusterError> {
        let id = self.nodes[i].addr.node_id;
        let e = p.signal_group(sig, within).map_err(|source| LocalError::Signal { id, source })?;
        tracing::info!(node = id, signal = %sig, confirmed = e.confirmed, observed = ?e.observed, "signal delivered");
        Ok(e)
    }

    /// SIGTERM (with SIGCONT, in case the node is paused: a stopped JVM would
    /// hold the SIGTERM pending forever), wait, then SIGKILL.
    async fn graceful_stop(
        &mut self,
        i: usize,
        p: ProcessId,
        timeout: Duration,
    ) -> Result<Vec<SignalEffect>, ClusterError> {
        let mut out = vec![self.deliver(i, p, Signal::SIGTERM, Duration::ZERO)?];
        if p.state() == RunState::Stopped {
            out.push(self.deliver(i, p, Signal::SIGCONT, Duration::from_secs(1))?);
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
            out.push(self.deliver(i, p, Signal::SIGKILL, Duration::from_secs(5))?);
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

impl NodeEntry for LocalNode {
    fn id(&self) -> i32 {
        self.addr.node_id
    }
    fn intent(&self) -> Intent {
        self.intent
    }
    fn set_intent(&mut self, to: Intent) {
        self.intent = to;
    }
    fn bootstrap(&self) -> String {
        LocalNode::bootstrap(self)
    }
}

/// A local node's steps are signals to its JVM's process group, each confirmed by the kernel,
/// and a new JVM for a start; the hold on a live node is its process identity (pid and start
/// time, so a reused pid is never signalled).
impl NodeOps for LocalCluster {
    type Node = LocalNode;
    type Hold = ProcessId;

    fn nodes(&self) -> &[LocalNode] {
        &self.nodes
    }

    fn nodes_mut(&mut self) -> &mut [LocalNode] {
        &mut self.nodes
    }

    async fn look(&mut self, i: usize) -> Result<Sight<ProcessId>, ClusterError> {
        Ok(match (self.nodes[i].process, self.nodes[i].observed()) {
            (Some(p), RunState::Running) => Sight::Up(p),
            (Some(p), RunState::Stopped) => Sight::Frozen(p),
            _ => Sight::Down,
        })
    }

    async fn signal(
        &mut self,
        i: usize,
        p: &ProcessId,
        signal: lifecycle::Signal,
        timeout: Duration,
        effect: &mut NodeEffect,
    ) -> Result<(), ClusterError> {
        let sig = match signal {
            lifecycle::Signal::Stop => {
                effect.signals.extend(self.graceful_stop(i, *p, timeout).await?);
                return Ok(());
            }
            lifecycle::Signal::Kill => Signal::SIGKILL,
            lifecycle::Signal::Pause => Signal::SIGSTOP,
            lifecycle::Signal::Resume => Signal::SIGCONT,
        };
        effect.signals.push(self.deliver(i, *p, sig, Duration::from_secs(5))?);
        if sig == Signal::SIGKILL {
            self.reap(i);
        }
        Ok(())
    }

    async fn start(&mut self, i: usize, _: Duration, effect: &mut NodeEffect) -> Result<(), ClusterError> {
        self.launch(i)?;
        effect.new_pid = self.nodes[i].process.map(|p| p.pid);
        Ok(())
    }

    /// A broker that exited is an error, and so is one still not answering after the timeout.
    async fn await_node_ready(
        &mut self,
        i: usize,
        timeout: Duration,
        effect: &mut NodeEffect,
    ) -> Result<(), ClusterError> {
        effect.ready = Some(self.wait_node_ready(i, timeout).await.is_ok());
        if effect.ready == Some(false) {
            // Say why: one last look, whose failure (exited, or not ready) is the error.
            self.wait_node_ready(i, Duration::ZERO).await?;
        }
        Ok(())
    }

    async fn await_ready(&mut self, timeout: Duration) -> Result<(), ClusterError> {
        LocalCluster::await_ready(self, timeout).await
    }
}
