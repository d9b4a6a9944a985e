//! One node's container: the engine's view of it, the lifecycle's steps through the engine
//! ([`NodeOps`]: kill, stop with a grace period, the cgroup freezer, start), each confirmed by
//! inspecting the container afterwards, and the waits until the nodes answer. When each step
//! runs is [`crate::lifecycle`]'s to decide. The readiness rule is the local backend's
//! ([`node_sees`]).
use std::fs;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sinkhole_faults::process::{RunState, SignalEffect};
use testcontainers::bollard::models::ContainerStateStatusEnum;
use testcontainers::bollard::query_parameters::{KillContainerOptionsBuilder, StopContainerOptionsBuilder};

use super::engine::{engine_err, ContainersError};
use super::{ContainersCluster, ContainersNode};
use crate::lifecycle::{NodeEntry, NodeOps, Sight, Signal};
use crate::lookup::node_sees;
use crate::{ClusterError, Intent, NodeEffect};

/// What the engine says about a container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineState {
    /// `running`, `paused`, `exited`, … as the engine names it.
    pub status: String,
    pub pid: Option<i64>,
    pub exit_code: Option<i64>,
}

impl EngineState {
    /// The process view the faults record: a paused container is a stopped process.
    pub fn run_state(&self) -> RunState {
        match self.status.as_str() {
            "running" => RunState::Running,
            "paused" => RunState::Stopped,
            _ => RunState::Gone,
        }
    }
}

impl ContainersCluster {
    /// The engine's view of node `id`'s container. Podman may briefly report a state bollard
    /// cannot parse right after an exit: retried for a second.
    pub async fn engine_state(&self, id: i32) -> Result<EngineState, ClusterError> {
        let cid = &self.nodes[self.index(id)?].container_id;
        let mut last = String::new();
        for _ in 0..10 {
            match self.docker.inspect_container(cid, None).await {
                Ok(r) => {
                    let s = r.state.unwrap_or_default();
                    let status = match s.status {
                        Some(ContainerStateStatusEnum::RUNNING) if s.paused == Some(true) => "paused".to_string(),
                        Some(st) => st.to_string(),
                        None => "unknown".to_string(),
                    };
                    return Ok(EngineState { status, pid: s.pid.filter(|p| *p > 0), exit_code: s.exit_code });
                }
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(ContainersError::Engine(format!("inspecting node {id}'s container: {last}")).into())
    }

    /// Polls the engine until `done` holds for the container's state, or `within` passes.
    async fn await_state(
        &self,
        id: i32,
        within: Duration,
        done: impl Fn(&EngineState) -> bool,
    ) -> Result<(EngineState, bool, u64), ClusterError> {
        let t0 = Instant::now();
        loop {
            let s = self.engine_state(id).await?;
            if done(&s) {
                return Ok((s, true, t0.elapsed().as_millis() as u64));
            }
            if t0.elapsed() >= within {
                return Ok((s, false, t0.elapsed().as_millis() as u64));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The container's log (stdout, then stderr) as the engine has it now.
    pub async fn logs(&self, id: i32) -> String {
        let Ok(i) = self.index(id) else { return String::new() };
        let Some(c) = self.nodes[i].container.as_ref() else { return String::new() };
        let out = c.stdout_to_vec().await.unwrap_or_default();
        let err = c.stderr_to_vec().await.unwrap_or_default();
        let mut s = String::from_utf8_lossy(&out).into_owned();
        if !err.is_empty() {
            s.push_str("\n--- stderr ---\n");
            s.push_str(&String::from_utf8_lossy(&err));
        }
        s
    }

    /// Writes every node's log into `node-<id>/server.log`.
    pub async fn collect_logs(&self) {
        for n in &self.nodes {
            let text = self.logs(n.node_id).await;
            if text.is_empty() {
                continue; // an adopted cluster has no log handle; keep what was collected
            }
            let path = self.log_path(n.node_id);
            if let Some(p) = path.parent() {
                let _ = fs::create_dir_all(p);
            }
            if let Err(e) = fs::write(&path, text) {
                tracing::warn!(node = n.node_id, "could not write {}: {e}", path.display());
            }
        }
    }

    pub(super) async fn exited_error(&self, id: i32, during: &str, state: &EngineState) -> ClusterError {
        let logs = self.logs(id).await;
        let path = self.log_path(id);
        if let Some(p) = path.parent() {
            let _ = fs::create_dir_all(p);
        }
        let _ = fs::write(&path, &logs);
        let lines: Vec<&str> = logs.lines().collect();
        ClusterError::NodeExited {
            node: id,
            during: during.to_string(),
            code: format!("container {} (exit {:?})", state.status, state.exit_code),
            log: path,
            tail: lines[lines.len().saturating_sub(25)..].join("\n"),
        }
    }

    /// Ready = every node meant to run answers ApiVersions on its published port and its Metadata
    /// lists every node meant to run (the local backend's rule).
    pub(super) async fn await_ready(&mut self, timeout: Duration) -> Result<(), ClusterError> {
        let want: Vec<i32> = self.nodes.iter().filter(|n| n.intent == Intent::Running).map(|n| n.node_id).collect();
        let started = Instant::now();
        let mut last = String::from("no node answered yet");
        loop {
            for &id in &want {
                let s = self.engine_state(id).await?;
                if s.run_state() == RunState::Gone {
                    return Err(self.exited_error(id, "the rig waited for the cluster to be ready", &s).await);
                }
            }
            let mut all = true;
            for &id in &want {
                if let Err(e) = node_sees(&self.node(id)?.bootstrap(), &want).await {
                    last = format!("node {id}: {e}");
                    all = false;
                    break;
                }
            }
            if all {
                tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, nodes = ?want, "containers cluster ready");
                return Ok(());
            }
            if started.elapsed() >= timeout {
                return Err(ClusterError::NotReady { secs: started.elapsed().as_secs_f64(), detail: last });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn wait_node_ready(&self, id: i32, timeout: Duration) -> Result<(), ClusterError> {
        let expected: Vec<i32> = self.nodes.iter().filter(|n| n.intent == Intent::Running).map(|n| n.node_id).collect();
        let started = Instant::now();
        loop {
            let s = self.engine_state(id).await?;
            if s.run_state() == RunState::Gone {
                return Err(self.exited_error(id, "it was starting", &s).await);
            }
            match node_sees(&self.node(id)?.bootstrap(), &expected).await {
                Ok(()) => return Ok(()),
                Err(e) if started.elapsed() >= timeout => {
                    return Err(ClusterError::NotReady { secs: started.elapsed().as_secs_f64(), detail: e })
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    /// A [`SignalEffect`] from the engine's answer: `signal` names what the engine was asked,
    /// `observed` is the container's state seen after, `pid` the container's process before.
    fn effect(signal: &str, before: &EngineState, after: &EngineState, confirmed: bool, after_ms: u64) -> SignalEffect {
        SignalEffect {
            pid: before.pid.unwrap_or(0) as i32,
            signal: format!(
                "{signal} [engine: {} → {}{}]",
                before.status,
                after.status,
                after.exit_code.filter(|_| after.status == "exited").map(|c| format!(", exit {c}")).unwrap_or_default()
            ),
            confirmed,
            observed: after.run_state(),
            after_ms,
        }
    }

    /// The engine's stop: SIGTERM, then SIGKILL after `timeout` (a paused container is thawed
    /// first, or it could not act on SIGTERM).
    async fn graceful_stop(&mut self, i: usize, timeout: Duration) -> Result<Vec<SignalEffect>, ClusterError> {
        let id = self.nodes[i].node_id;
        let mut out = Vec::new();
        let mut before = self.engine_state(id).await?;
        if before.status == "paused" {
            let cid = self.nodes[i].container_id.clone();
            self.docker.unpause_container(&cid).await.map_err(engine_err("unpausing a container"))?;
            let (after, ok, ms) = self.await_state(id, Duration::from_secs(5), |s| s.status == "running").await?;
            out.push(Self::effect("SIGCONT (container unpause)", &before, &after, ok, ms));
            before = after;
        }
        if before.run_state() == RunState::Gone {
            return Ok(out);
        }
        let secs = timeout.as_secs().max(1) as i32;
        let t0 = Instant::now();
        let cid = self.nodes[i].container_id.clone();
        self.docker
            .stop_container(&cid, Some(StopContainerOptionsBuilder::new().t(secs).build()))
            .await
            .map_err(engine_err("stopping a container"))?;
        let (after, ok, _) = self.await_state(id, Duration::from_secs(10), |s| s.run_state() == RunState::Gone).await?;
        let ms = t0.elapsed().as_millis() as u64;
        // Exit 137 is SIGKILL: the broker did not finish its controlled shutdown in time.
        let graceful = ok && after.exit_code != Some(137);
        out.push(Self::effect("SIGTERM (container stop)", &before, &after, graceful, ms));
        if ok && !graceful {
            out.push(Self::effect("SIGKILL (container stop timeout)", &before, &after, true, ms));
        }
        Ok(out)
    }
}

impl NodeEntry for ContainersNode {
    fn id(&self) -> i32 {
        self.node_id
    }
    fn intent(&self) -> Intent {
        self.intent
    }
    fn set_intent(&mut self, to: Intent) {
        self.intent = to;
    }
    fn bootstrap(&self) -> String {
        ContainersNode::bootstrap(self)
    }
}

/// A containers node's steps are the engine's operations on its container, each confirmed by
/// inspecting the container after it; the hold on a live node is the engine's state of it when
/// the action began (what the effects report as "before").
impl NodeOps for ContainersCluster {
    type Node = ContainersNode;
    type Hold = EngineState;

    fn nodes(&self) -> &[ContainersNode] {
        &self.nodes
    }

    fn nodes_mut(&mut self) -> &mut [ContainersNode] {
        &mut self.nodes
    }

    async fn look(&mut self, i: usize) -> Result<Sight<EngineState>, ClusterError> {
        let s = self.engine_state(self.nodes[i].node_id).await?;
        Ok(match s.run_state() {
            RunState::Running => Sight::Up(s),
            RunState::Stopped => Sight::Frozen(s),
            _ => Sight::Down,
        })
    }

    /// A stop is the engine's stop with the action's timeout as its grace period: the engine's
    /// own default is not to be relied on (a container created through Podman's Docker API has
    /// none). The others are the engine's kill and cgroup freezer, confirmed within 5 s.
    async fn signal(
        &mut self,
        i: usize,
        before: &EngineState,
        signal: Signal,
        timeout: Duration,
        effect: &mut NodeEffect,
    ) -> Result<(), ClusterError> {
        let (id, cid) = (self.nodes[i].node_id, self.nodes[i].container_id.clone());
        let docker = &self.docker;
        let (asked, label, done): (_, _, fn(&EngineState) -> bool) = match signal {
            Signal::Stop => {
                effect.signals.extend(self.graceful_stop(i, timeout).await?);
                return Ok(());
            }
            Signal::Kill => (
                docker
                    .kill_container(&cid, Some(KillContainerOptionsBuilder::new().signal("KILL").build()))
                    .await
                    .map_err(engine_err("killing a container")),
                "SIGKILL (container kill)",
                |s| s.run_state() == RunState::Gone,
            ),
            Signal::Pause => (
                docker.pause_container(&cid).await.map_err(engine_err("pausing a container")),
                "SIGSTOP (container pause: cgroup freezer)",
                |s| s.status == "paused",
            ),
            Signal::Resume => (
                docker.unpause_container(&cid).await.map_err(engine_err("unpausing a container")),
                "SIGCONT (container unpause)",
                |s| s.status == "running",
            ),
        };
        asked?;
        let (after, ok, ms) = self.await_state(id, Duration::from_secs(5), done).await?;
        effect.signals.push(Self::effect(label, before, &after, ok, ms));
        Ok(())
    }

    /// The same container started again: same node id, the data in its own layer.
    async fn start(&mut self, i: usize, _: Duration, effect: &mut NodeEffect) -> Result<(), ClusterError> {
        let (id, cid) = (self.nodes[i].node_id, self.nodes[i].container_id.clone());
        self.docker.start_container(&cid, None).await.map_err(engine_err("starting a container"))?;
        let (after, _, _) = self.await_state(id, Duration::from_secs(5), |s| s.status == "running").await?;
        effect.new_pid = after.pid.map(|p| p as i32);
        Ok(())
    }

    /// A container that exited is an error; a broker still not answering is reported, not one.
    async fn await_node_ready(
        &mut self,
        i: usize,
        timeout: Duration,
        effect: &mut NodeEffect,
    ) -> Result<(), ClusterError> {
        let ready = self.wait_node_ready(self.nodes[i].node_id, timeout).await;
        effect.ready = Some(ready.is_ok());
        match ready {
            Err(e @ ClusterError::NodeExited { .. }) => Err(e),
            _ => Ok(()),
        }
    }

    async fn await_ready(&mut self, timeout: Duration) -> Result<(), ClusterError> {
        ContainersCluster::await_ready(self, timeout).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paused_containers_are_stopped_processes() {
        let s = |st: &str| EngineState { status: st.into(), pid: None, exit_code: None };
        assert_eq!(s("running").run_state(), RunState::Running);
        assert_eq!(s("paused").run_state(), RunState::Stopped);
        assert_eq!(s("exited").run_state(), RunState::Gone);
    }
}
