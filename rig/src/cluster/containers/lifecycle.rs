//! One node's container: the engine's view of it, lifecycle actions through the engine (kill,
//! stop with a grace period, the cgroup freezer, start), each confirmed by inspecting the
//! container afterwards, and the waits until the nodes answer. The readiness rule is the local
//! backend's ([`node_sees`]).
use std::fs;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sinkhole_faults::process::{RunState, SignalEffect};
use testcontainers::bollard::models::ContainerStateStatusEnum;
use testcontainers::bollard::query_parameters::{KillContainerOptionsBuilder, StopContainerOptionsBuilder};

use super::engine::{engine_err, ContainersError};
use super::ContainersCluster;
use crate::cluster::lookup::node_sees;
use crate::cluster::node::tell_down;
use crate::cluster::{ClusterError, Intent, NodeAction, NodeEffect, OnDown};

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
    async fn stop(&mut self, i: usize, timeout: Duration) -> Result<Vec<SignalEffect>, ClusterError> {
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

    /// Applies a lifecycle action to node `id` and reports the engine's view of its effect
    /// ([`Cluster::act_with`]).
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
        let intent = self.nodes[i].intent;
        let before = self.engine_state(id).await?;
        let wrong = || ClusterError::WrongState { id, state: intent, action };
        match action {
            NodeAction::Kill => {
                if before.run_state() == RunState::Gone {
                    return Err(wrong());
                }
                let cid = self.nodes[i].container_id.clone();
                self.docker
                    .kill_container(&cid, Some(KillContainerOptionsBuilder::new().signal("KILL").build()))
                    .await
                    .map_err(engine_err("killing a container"))?;
                let (after, ok, ms) =
                    self.await_state(id, Duration::from_secs(5), |s| s.run_state() == RunState::Gone).await?;
                effect.signals.push(Self::effect("SIGKILL (container kill)", &before, &after, ok, ms));
                self.nodes[i].intent = Intent::Killed;
                tell_down(&mut on_down, &effect, started);
            }
            NodeAction::Stop => {
                if before.run_state() == RunState::Gone {
                    return Err(wrong());
                }
                effect.signals.extend(self.stop(i, timeout).await?);
                self.nodes[i].intent = Intent::Stopped;
                tell_down(&mut on_down, &effect, started);
            }
            NodeAction::Pause => {
                if intent != Intent::Running || before.status != "running" {
                    return Err(wrong());
                }
                let cid = self.nodes[i].container_id.clone();
                self.docker.pause_container(&cid).await.map_err(engine_err("pausing a container"))?;
                let (after, ok, ms) = self.await_state(id, Duration::from_secs(5), |s| s.status == "paused").await?;
                effect.signals.push(Self::effect("SIGSTOP (container pause: cgroup freezer)", &before, &after, ok, ms));
                self.nodes[i].intent = Intent::Paused;
            }
            NodeAction::Resume => {
                if intent != Intent::Paused {
                    return Err(wrong());
                }
                let cid = self.nodes[i].container_id.clone();
                self.docker.unpause_container(&cid).await.map_err(engine_err("unpausing a container"))?;
                let (after, ok, ms) = self.await_state(id, Duration::from_secs(5), |s| s.status == "running").await?;
                effect.signals.push(Self::effect("SIGCONT (container unpause)", &before, &after, ok, ms));
                self.nodes[i].intent = Intent::Running;
            }
            NodeAction::Start | NodeAction::Restart => {
                if action == NodeAction::Start && matches!(intent, Intent::Running | Intent::Paused) {
                    return Err(wrong());
                }
                if before.run_state() != RunState::Gone {
                    effect.signals.extend(self.stop(i, timeout).await?);
                }
                // The engine shows the container exited (or it was not running): down, and not
                // yet started again.
                tell_down(&mut on_down, &effect, started);
                let cid = self.nodes[i].container_id.clone();
                self.docker.start_container(&cid, None).await.map_err(engine_err("starting a container"))?;
                self.nodes[i].intent = Intent::Running;
                let (after, _, _) = self.await_state(id, Duration::from_secs(5), |s| s.status == "running").await?;
                effect.new_pid = after.pid.map(|p| p as i32);
                let ready = self.wait_node_ready(id, timeout).await;
                effect.ready = Some(ready.is_ok());
                if let Err(e @ ClusterError::NodeExited { .. }) = ready {
                    return Err(e);
                }
            }
        }
        effect.elapsed_ms = started.elapsed().as_millis() as u64;
        tracing::info!(node = id, ?action, signals = ?effect.signals.iter().map(|s| &s.signal).collect::<Vec<_>>(), "container action");
        Ok(effect)
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
