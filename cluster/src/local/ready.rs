//! When local nodes are ready: every node meant to run answers and lists the others
//! ([`node_sees`]); a node that exited meanwhile is an error naming it, with its log's tail.
use std::time::{Duration, Instant};

use sinkhole_faults::process::RunState;

use super::{tail, LocalCluster};
use crate::lookup::node_sees;
use crate::{ClusterError, Intent};

impl LocalCluster {
    /// Ready = every node meant to run answers ApiVersions and its Metadata
    /// lists every node meant to run.
    pub(super) async fn await_ready(&mut self, timeout: Duration) -> Result<(), ClusterError> {
        let want: Vec<usize> = (0..self.nodes.len()).filter(|&i| self.nodes[i].intent == Intent::Running).collect();
        let started = Instant::now();
        let mut last = String::from("no node answered yet");
        loop {
            for &i in &want {
                if self.nodes[i].observed() == RunState::Gone || self.nodes[i].observed() == RunState::Zombie {
                    let node = &mut self.nodes[i];
                    return Err(ClusterError::NodeExited {
                        node: node.addr.node_id,
                        during: "the rig waited for the cluster to be ready".into(),
                        code: node.exit_code(),
                        log: node.log_path(),
                        tail: tail(&node.log_path(), 25),
                    });
                }
            }
            let ids: Vec<i32> = want.iter().map(|&i| self.nodes[i].addr.node_id).collect();
            let mut all = true;
            for &i in &want {
                match node_sees(&self.nodes[i].bootstrap(), &ids).await {
                    Ok(()) => {}
                    Err(e) => {
                        last = format!("node {}: {e}", self.nodes[i].addr.node_id);
                        all = false;
                        break;
                    }
                }
            }
            if all {
                tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, nodes = ?ids, "cluster ready");
                return Ok(());
            }
            if started.elapsed() >= timeout {
                return Err(ClusterError::NotReady { secs: started.elapsed().as_secs_f64(), detail: last });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub(super) async fn wait_node_ready(&mut self, i: usize, timeout: Duration) -> Result<(), ClusterError> {
        let started = Instant::now();
        let expected: Vec<i32> =
            self.nodes.iter().filter(|n| n.intent == Intent::Running).map(|n| n.addr.node_id).collect();
        loop {
            if matches!(self.nodes[i].observed(), RunState::Gone | RunState::Zombie) {
                let node = &mut self.nodes[i];
                return Err(ClusterError::NodeExited {
                    node: node.addr.node_id,
                    during: "it was starting".into(),
                    code: node.exit_code(),
                    log: node.log_path(),
                    tail: tail(&node.log_path(), 25),
                });
            }
            let res = node_sees(&self.nodes[i].bootstrap(), &expected).await;
            match res {
                Ok(()) => return Ok(()),
                Err(e) if started.elapsed() >= timeout => {
                    return Err(ClusterError::NotReady { secs: started.elapsed().as_secs_f64(), detail: e })
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }
}
