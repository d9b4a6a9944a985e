//! `sinkhole probe`: what a broker supports for two-phase commit (KIP-939),
//! on a running cluster or on a throwaway local one ([`sinkhole_rig::probe`]).
use sinkhole_cluster::ClusterNodes as _;
use std::time::Instant;

use anyhow::{anyhow, Context};
use sinkhole_cluster::local::LocalCluster;
use sinkhole_cluster::state;
use sinkhole_rig::probe;

use super::args::{ClusterShape, KafkaSel, ProbeArgs};
use super::{bad, dist_for, progress, spec_from, Failure};

/// A probe killed by a signal cannot remove its throwaway cluster's directory
/// (its brokers die with it; their data stays). The next probe removes the
/// directories of probes whose process is gone.
fn sweep_dead_probe_dirs() {
    let Ok(entries) = std::fs::read_dir(state::clusters_root()) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("probe-")).and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if sinkhole_faults::process::ProcessId::of(pid).is_none() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

pub async fn run(p: ProbeArgs) -> Result<(), Failure> {
    let mut opts = probe::ProbeOptions { short_timeout_ms: p.short_timeout_ms, progress: true, ..Default::default() };
    // The throwaway cluster lives until the end of this function (Drop kills it).
    let mut _cluster = None;
    if let Some(b) = &p.bootstrap {
        opts.bootstrap = b.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
        if opts.bootstrap.is_empty() || opts.bootstrap.iter().any(|s| !s.contains(':')) {
            return Err(bad(anyhow!("--bootstrap '{b}': expected host:port[,host:port...]")));
        }
    } else {
        let dist = dist_for(&KafkaSel { kafka: p.kafka.clone(), kafka_home: p.kafka_home.clone() })?;
        sweep_dead_probe_dirs();
        let dir = state::clusters_root().join(format!("probe-{}", std::process::id()));
        let shape = ClusterShape {
            nodes: p.nodes,
            broker_config: p.broker_config.clone(),
            base_port: None,
            heap: "512m".into(),
            jit: sinkhole_scenario::Jit::C1,
            ready_timeout: 120,
        };
        let mut spec = spec_from(&shape, dist, dir)?;
        // What KIP-939 needs, and a quick timeout-abort scan so the check is short.
        for (k, v) in [
            ("transaction.two.phase.commit.enable", "true"),
            ("unstable.api.versions.enable", "true"),
            ("transaction.abort.timed.out.transaction.cleanup.interval.ms", "500"),
        ] {
            spec.broker_config.entry(k.to_string()).or_insert_with(|| v.to_string());
        }
        spec.remove_dir_on_teardown = true;
        let t0 = Instant::now();
        progress(&format!("starting a throwaway {}-node Kafka {} cluster …", spec.nodes, spec.dist.version));
        opts.release = Some(spec.dist.version.clone());
        let c = LocalCluster::start(spec).await.context("starting the probe cluster")?;
        progress(&format!("ready in {:.1} s at {}", t0.elapsed().as_secs_f64(), c.bootstrap()));
        opts.bootstrap = c.bootstrap_list();
        _cluster = Some(c);
    }
    let report = probe::run(opts).await.context("probing the broker")?;
    if p.json {
        print!("{}", sinkhole_base::provenance::to_json(&report)?);
    } else {
        print!("{}", probe::render_table(&report));
    }
    Ok(())
}
