//! `sinkhole cluster up|down|status|kill|stop|pause|resume|start|restart`: a named cluster that
//! outlives one command, on either backend. `up` leaves the nodes running (detached JVMs, or
//! containers labelled `detached`) and writes the cluster's state file in its directory
//! ([`sinkhole_cluster::state`]); every later command finds the cluster from that file, acts, and
//! writes the file again. A local cluster whose processes all died is *stale* and is cleaned
//! when a command finds it.
//!
//! Errors are [`Failure`]s: bad input (a name, a node, a setting, a node in the wrong state for
//! the action) exits 2, a failure of the work exits 1.
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use clap::{Args, Subcommand};

use sinkhole_base::procs::Lifetime;
use sinkhole_cluster::local::LocalCluster;
use sinkhole_cluster::state::{self, ClusterState, Liveness};
use sinkhole_cluster::{ClusterError, ClusterNodes, NodeAction, NodeEffect};
use sinkhole_install::KafkaDist;

use super::args::{ClusterShape, KafkaSel};
use super::{bad, dist_for, progress, spec_from, Failure};

/// The containers backend's commands, or, in a build without it, one error that says how to
/// get it (the backend is a cargo feature: its engine client is a quarter of the binary's
/// dependencies).
#[cfg(feature = "containers")]
mod containers;
#[cfg(not(feature = "containers"))]
mod containers {
    use super::{ClusterShape, Failure, KafkaSel, NodeArgs};
    use sinkhole_cluster::state::ContainersRecord;
    use sinkhole_cluster::NodeAction;

    fn not_built() -> Failure {
        super::bad(anyhow::anyhow!(sinkhole_rig::run::CONTAINERS_NOT_BUILT))
    }
    pub async fn up(_: &str, _: &KafkaSel, _: &ClusterShape, _: Option<String>, _: bool) -> Result<(), Failure> {
        Err(not_built())
    }
    pub async fn down(_: &str, _: bool) -> Result<(), Failure> {
        Err(not_built())
    }
    pub async fn status(_: &str, _: bool) -> Result<(), Failure> {
        Err(not_built())
    }
    pub async fn node_action(_: NodeArgs, _: NodeAction, _: ContainersRecord) -> Result<(), Failure> {
        Err(not_built())
    }
}

#[derive(Subcommand)]
pub enum ClusterCmd {
    /// Start a cluster and leave it running; prints its bootstrap servers.
    Up {
        #[arg(long, default_value = "default")]
        name: String,
        #[command(flatten)]
        kafka: KafkaSel,
        #[command(flatten)]
        shape: ClusterShape,
        /// Print the state as JSON.
        #[arg(long)]
        json: bool,
        /// Where the nodes run: local JVMs, or containers (Docker/Podman API; see docs/GUIDE.md).
        #[arg(long, default_value = "local", value_parser = ["local", "containers"])]
        backend: String,
        /// Container image (containers backend); default localhost/sinkhole-kafka:<version>,
        /// else apache/kafka:<version>.
        #[arg(long)]
        image: Option<String>,
    },
    /// Kill every node and remove the cluster's directory.
    Down {
        #[arg(long, default_value = "default")]
        name: String,
        /// Keep the directory (data and logs).
        #[arg(long)]
        keep_data: bool,
    },
    /// Nodes, pids, ports, and whether each runs.
    Status {
        #[arg(long, default_value = "default")]
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// SIGKILL a node.
    Kill(NodeArgs),
    /// SIGTERM a node and wait for its controlled shutdown.
    Stop(NodeArgs),
    /// SIGSTOP a node.
    Pause(NodeArgs),
    /// SIGCONT a paused node.
    Resume(NodeArgs),
    /// Start a stopped or killed node.
    Start(NodeArgs),
    /// Stop a node (if running) and start it again with the same id and data.
    Restart(NodeArgs),
}

#[derive(Args)]
pub struct NodeArgs {
    /// Node id (1-based).
    pub node: i32,
    #[arg(long, default_value = "default")]
    pub name: String,
    /// Seconds to wait for a stop or for the node to be ready again.
    #[arg(long, default_value_t = 60)]
    pub timeout: u64,
    #[arg(long)]
    pub json: bool,
}

/// A cluster's `--json` output (`up`, `status`): its state, with the
/// provenance every JSON output leads with. The state's own `version` (the
/// Kafka version) is `kafka` here, as in every other file of the rig: `version`
/// is the rig's.
/// What `cluster up --json` prints: the state file's content, its bootstrap and how long the
/// nodes took to be ready (either backend).
fn up_json(state: &impl serde::Serialize, bootstrap: &str, ready: Duration) -> anyhow::Result<String> {
    let mut v = serde_json::to_value(state)?;
    v["bootstrap"] = bootstrap.into();
    v["ready_ms"] = (ready.as_millis() as u64).into();
    cluster_json(v)
}

fn cluster_json(mut v: serde_json::Value) -> anyhow::Result<String> {
    if let Some(o) = v.as_object_mut() {
        if let Some(k) = o.remove("version") {
            o.insert("kafka".to_string(), k);
        }
    }
    Ok(sinkhole_base::provenance::to_json(&v)?)
}

/// Loads a named cluster's state, cleaning it if it is stale.
fn load_state(name: &str) -> Result<ClusterState, Failure> {
    let st = ClusterState::load(name).map_err(bad)?;
    if st.liveness() == Liveness::Stale {
        clean_stale(&st);
        return Err(bad(anyhow!(
            "cluster '{name}' was left by a run that crashed (no node process is alive): its state was cleaned; start a new one with `sinkhole cluster up`"
        )));
    }
    Ok(st)
}

fn clean_stale(st: &ClusterState) {
    eprintln!(
        "sinkhole: cluster '{}' at {} is stale (none of its node processes is alive): removing it",
        st.name,
        st.dir.display()
    );
    let _ = std::fs::remove_dir_all(&st.dir);
}

fn dist_of_state(st: &ClusterState) -> Result<KafkaDist, Failure> {
    sinkhole_install::resolve(Some(&st.version), st.kafka_home.as_deref()).map_err(super::install_failure)
}

/// `sinkhole cluster SUBCOMMAND`. A cluster named `name` is a containers cluster when its
/// directory holds `containers.json`, else a local one.
pub async fn run(cmd: ClusterCmd) -> Result<(), Failure> {
    match cmd {
        ClusterCmd::Up { name, kafka, shape, json, backend, image } if backend == "containers" => {
            containers::up(&name, &kafka, &shape, image, json).await
        }
        ClusterCmd::Up { name, kafka, shape, json, .. } => local_up(&name, &kafka, &shape, json).await,
        ClusterCmd::Down { name, keep_data } if state::containers_record(&name).is_some() => {
            containers::down(&name, keep_data).await
        }
        ClusterCmd::Down { name, keep_data } => local_down(&name, keep_data),
        ClusterCmd::Status { name, json } if state::containers_record(&name).is_some() => {
            containers::status(&name, json).await
        }
        ClusterCmd::Status { name, json } => local_status(&name, json),
        ClusterCmd::Kill(a) => node_action(a, NodeAction::Kill).await,
        ClusterCmd::Stop(a) => node_action(a, NodeAction::Stop).await,
        ClusterCmd::Pause(a) => node_action(a, NodeAction::Pause).await,
        ClusterCmd::Resume(a) => node_action(a, NodeAction::Resume).await,
        ClusterCmd::Start(a) => node_action(a, NodeAction::Start).await,
        ClusterCmd::Restart(a) => node_action(a, NodeAction::Restart).await,
    }
}

/// `cluster up` (local): detached JVMs, `cluster.json` in the cluster directory.
async fn local_up(name: &str, kafka: &KafkaSel, shape: &ClusterShape, json: bool) -> Result<(), Failure> {
    let dir = state::cluster_dir(name);
    match ClusterState::load(name) {
        Ok(st) => match st.liveness() {
            Liveness::Stale => clean_stale(&st),
            _ => {
                return Err(bad(anyhow!(
                    "cluster '{name}' already exists (bootstrap {}); `sinkhole cluster down --name {name}` first, or pick another --name",
                    st.nodes.iter().map(|n| format!("127.0.0.1:{}", n.addr.broker_port)).collect::<Vec<_>>().join(",")
                )))
            }
        },
        Err(state::StateError::Missing { .. }) => {
            if dir.exists() {
                // A directory without a state file: left by a crash during
                // `up`, or kept by `down --keep-data`.
                progress(&format!("removing the leftover directory {} (no cluster state in it)", dir.display()));
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
        Err(e) => return Err(bad(e)),
    }
    let dist = dist_for(kafka)?;
    let mut spec = spec_from(shape, dist, dir)?;
    spec.lifetime = Lifetime::Detached;
    let t0 = Instant::now();
    progress(&format!("starting {} node(s) of Kafka {} …", spec.nodes, spec.dist.version));
    let cluster = LocalCluster::start(spec).await.context("starting the cluster")?;
    let ready = t0.elapsed();
    let bootstrap = cluster.bootstrap();
    let st = ClusterState::from_cluster(name, kafka.kafka_home.clone(), cluster);
    st.save()?;
    if json {
        print!("{}", up_json(&st, &bootstrap, ready)?);
    } else {
        println!(
            "cluster '{name}' ready in {:.1} s: Kafka {}, {} node(s)",
            ready.as_secs_f64(),
            st.version,
            st.nodes.len()
        );
        println!("bootstrap: {bootstrap}");
        println!("state:     {}", st.path().display());
    }
    Ok(())
}

/// `cluster down` (local): SIGKILL to every node's process group, the directory removed unless
/// `--keep-data`.
fn local_down(name: &str, keep_data: bool) -> Result<(), Failure> {
    let st = match ClusterState::load(name) {
        Ok(st) => st,
        Err(e) => return Err(bad(e)),
    };
    let dist = dist_of_state(&st).ok();
    let live: Vec<_> = st.nodes.iter().filter_map(|n| n.process).filter(|p| p.is_alive()).collect();
    match dist {
        Some(d) => st.adopt(d).force_teardown(!keep_data),
        None => {
            for p in &live {
                let _ = p.signal_group(nix::sys::signal::Signal::SIGKILL, Duration::from_secs(5));
            }
            if !keep_data {
                let _ = std::fs::remove_dir_all(&st.dir);
            }
        }
    }
    let left: Vec<i32> = live.iter().filter(|p| p.is_alive()).map(|p| p.pid).collect();
    if !left.is_empty() {
        return Err(Failure::Failed(anyhow!("processes still alive after SIGKILL: {left:?}")));
    }
    if keep_data {
        // Data and logs stay, but the cluster is gone: without its state
        // file no later command mistakes the directory for a live cluster.
        let _ = std::fs::remove_file(st.path());
    }
    println!(
        "cluster '{name}' is down: killed {} node process(es){}",
        live.len(),
        if keep_data { ", data kept" } else { ", directory removed" }
    );
    Ok(())
}

/// `cluster status` (local): each node's pid, ports, intent and what the kernel shows.
fn local_status(name: &str, json: bool) -> Result<(), Failure> {
    let st = load_state(name)?;
    let dist = dist_of_state(&st)?;
    let mut c = st.adopt(dist);
    let status = c.status();
    if json {
        print!(
            "{}",
            cluster_json(serde_json::json!({
                "name": name, "kafka": st.version, "cluster_id": st.cluster_id,
                "bootstrap": st.nodes.iter().map(|n| format!("127.0.0.1:{}", n.addr.broker_port)).collect::<Vec<_>>().join(","),
                "nodes": status,
            }))?
        );
    } else {
        println!("cluster '{name}': Kafka {}, cluster id {}", st.version, st.cluster_id);
        println!(
            "{:<5} {:<8} {:<7} {:<11} {:<10} {:<9} log",
            "node", "pid", "broker", "controller", "intent", "observed"
        );
        for s in status {
            println!(
                "{:<5} {:<8} {:<7} {:<11} {:<10} {:<9} {}",
                s.node_id,
                s.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
                s.broker_port,
                s.controller_port,
                format!("{:?}", s.intent).to_lowercase(),
                format!("{:?}", s.observed).to_lowercase(),
                s.log.display()
            );
        }
    }
    Ok(())
}

async fn node_action(a: NodeArgs, action: NodeAction) -> Result<(), Failure> {
    if let Some(rec) = state::containers_record(&a.name) {
        return containers::node_action(a, action, rec).await;
    }
    let mut st = load_state(&a.name)?;
    let dist = dist_of_state(&st)?;
    let mut c = st.adopt(dist);
    check_node(&a, c.node_ids())?;
    let res = c.act(a.node, action, Duration::from_secs(a.timeout)).await;
    st.update_from(c);
    st.save()?;
    let effect = effect_of(res)?;
    let sigs: Vec<String> = effect
        .signals
        .iter()
        .map(|s| {
            format!(
                "{} → {:?}{} after {} ms",
                s.signal,
                s.observed,
                if s.confirmed { " (confirmed)" } else { " (NOT confirmed)" },
                s.after_ms
            )
            .to_lowercase()
        })
        .collect();
    let detail = format!(
        "{}{}",
        if sigs.is_empty() { String::new() } else { format!("; {}", sigs.join("; ")) },
        effect.new_pid.map(|p| format!("; new pid {p}")).unwrap_or_default()
    );
    print_effect(&a, action, &effect, &detail)
}

/// Refuses a node the cluster does not have (bad input).
fn check_node(a: &NodeArgs, ids: Vec<i32>) -> Result<(), Failure> {
    if ids.contains(&a.node) {
        Ok(())
    } else {
        Err(bad(anyhow!("cluster '{}' has no node {}; its nodes are {:?}", a.name, a.node, ids)))
    }
}

/// A node action's effect, or its error: bad input when the node was in the wrong state for the
/// action, else a failure of the work.
fn effect_of(res: Result<NodeEffect, ClusterError>) -> Result<NodeEffect, Failure> {
    res.map_err(|e| match e {
        ClusterError::WrongState { .. } => bad(e),
        e => Failure::Failed(e.into()),
    })
}

/// What a node action did: its effect as JSON, or one line with the backend's own `detail` (the
/// signals and what followed them) between the time it took and whether the node answers again.
fn print_effect(a: &NodeArgs, action: NodeAction, effect: &NodeEffect, detail: &str) -> Result<(), Failure> {
    if a.json {
        print!("{}", sinkhole_base::provenance::to_json(effect)?);
    } else {
        println!(
            "node {}: {:?} done in {} ms{detail}{}",
            a.node,
            action,
            effect.elapsed_ms,
            match effect.ready {
                Some(true) => "; answering again",
                Some(false) => "; NOT answering yet",
                None => "",
            }
        );
    }
    Ok(())
}
