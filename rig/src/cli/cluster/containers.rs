//! `sinkhole cluster … --backend containers`: the containers outlive the command (labelled
//! `detached`), and `containers.json` in the cluster directory finds them again.
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};

use sinkhole_cluster::config::parse_overrides;
use sinkhole_cluster::containers::{self, ContainersCluster, ContainersSpec};
use sinkhole_cluster::state::{self, ClusterState, ContainersRecord};
use sinkhole_cluster::{ClusterNodes, NodeAction};
use sinkhole_install::DEFAULT_KAFKA;

use super::{check_node, cluster_json, effect_of, print_effect, up_json, NodeArgs};
use crate::cli::args::{ClusterShape, KafkaSel};
use crate::cli::{bad, progress, Failure};

/// `cluster up --backend containers`: the containers outlive the command (labelled `detached`),
/// `containers.json` in the cluster directory finds them again.
pub async fn up(
    name: &str,
    kafka: &KafkaSel,
    shape: &ClusterShape,
    image: Option<String>,
    json: bool,
) -> Result<(), Failure> {
    let dir = state::cluster_dir(name);
    if state::containers_record(name).is_some() || ClusterState::load(name).is_ok() {
        return Err(bad(anyhow!(
            "cluster '{name}' already exists; `sinkhole cluster down --name {name}` first, or pick another --name"
        )));
    }
    if !matches!(shape.nodes, 1 | 3 | 5) {
        return Err(bad(anyhow!("--nodes {}: use 1, 3 or 5 KRaft nodes", shape.nodes)));
    }
    let v = sinkhole_install::parse_versions(kafka.kafka.as_deref().unwrap_or(DEFAULT_KAFKA)).map_err(bad)?;
    if v.len() != 1 {
        return Err(bad(anyhow!("--kafka takes one version here, got {}", v.join(","))));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let mut spec = ContainersSpec::new(&v[0], shape.nodes, dir, &format!("cluster-{name}"));
    spec.broker_config = parse_overrides(&shape.broker_config).map_err(bad)?;
    spec.heap = shape.heap.clone();
    spec.jit = shape.jit;
    spec.ready_timeout = Duration::from_secs(shape.ready_timeout);
    spec.image = image;
    spec.detached = true;
    let t0 = Instant::now();
    progress(&format!("starting {} container(s) of Kafka {} …", spec.nodes, spec.version));
    let cluster = ContainersCluster::start(spec).await.context("starting the containers cluster")?;
    let ready = t0.elapsed();
    let bootstrap = cluster.bootstrap();
    let rec = cluster.detach();
    state::save_containers_record(name, &rec)?;
    if json {
        print!("{}", up_json(&rec, &bootstrap, ready)?);
    } else {
        println!(
            "cluster '{name}' ready in {:.1} s: Kafka {}, {} container(s) from {} on network {}",
            ready.as_secs_f64(),
            rec.version,
            rec.nodes.len(),
            rec.image,
            rec.network
        );
        println!("bootstrap: {bootstrap}");
    }
    Ok(())
}

pub async fn down(name: &str, keep_data: bool) -> Result<(), Failure> {
    let rec = state::containers_record(name).ok_or_else(|| bad(anyhow!("no containers cluster named '{name}'")))?;
    let mut c = ContainersCluster::adopt(rec.clone()).await?;
    c.force_teardown().await;
    let docker = containers::engine().await?;
    let (cs, nets, _) = containers::leftovers(&docker, &rec.run_id).await?;
    if !cs.is_empty() || !nets.is_empty() {
        return Err(Failure::Failed(anyhow!(
            "still on the engine after removal: containers {cs:?}, networks {nets:?}"
        )));
    }
    if keep_data {
        let _ = std::fs::remove_file(rec.dir.join(state::CONTAINERS_STATE_FILE));
    } else {
        let _ = std::fs::remove_dir_all(&rec.dir);
    }
    println!(
        "cluster '{name}' is down: removed {} container(s) and network {}{}",
        rec.nodes.len(),
        rec.network,
        if keep_data { ", logs kept" } else { ", directory removed" }
    );
    Ok(())
}

pub async fn status(name: &str, json: bool) -> Result<(), Failure> {
    let rec = state::containers_record(name).ok_or_else(|| bad(anyhow!("no containers cluster named '{name}'")))?;
    let c = ContainersCluster::adopt(rec.clone()).await?;
    let mut rows = Vec::new();
    for n in &rec.nodes {
        let state = c.engine_state(n.node_id).await.map(|s| s.status).unwrap_or_else(|e| format!("unknown ({e})"));
        rows.push(serde_json::json!({"node_id": n.node_id, "container": n.name, "port": n.host_port,
            "intent": n.intent, "engine": state}));
    }
    if json {
        print!(
            "{}",
            cluster_json(serde_json::json!({"name": name, "backend": "containers",
            "kafka": rec.version, "image": rec.image, "bootstrap": c.bootstrap(), "nodes": rows}))?
        );
    } else {
        println!("cluster '{name}': Kafka {} in containers from {} (network {})", rec.version, rec.image, rec.network);
        println!("{:<5} {:<7} {:<10} {:<9} container", "node", "port", "intent", "engine");
        for r in rows {
            println!(
                "{:<5} {:<7} {:<10} {:<9} {}",
                r["node_id"].as_i64().unwrap_or(0),
                r["port"].as_u64().unwrap_or(0),
                r["intent"].as_str().unwrap_or("?"),
                r["engine"].as_str().unwrap_or("?"),
                r["container"].as_str().unwrap_or("?")
            );
        }
    }
    Ok(())
}

pub async fn node_action(a: NodeArgs, action: NodeAction, rec: ContainersRecord) -> Result<(), Failure> {
    let mut c = ContainersCluster::adopt(rec).await?;
    check_node(&a, c.node_ids())?;
    let res = c.act(a.node, action, Duration::from_secs(a.timeout)).await;
    state::save_containers_record(&a.name, &c.record())?;
    let effect = effect_of(res)?;
    let sigs: Vec<String> = effect
        .signals
        .iter()
        .map(|s| {
            format!(
                "{}{} after {} ms",
                s.signal,
                if s.confirmed { " (confirmed)" } else { " (NOT confirmed)" },
                s.after_ms
            )
        })
        .collect();
    print_effect(&a, action, &effect, &format!("; {}", sigs.join("; ")))
}
