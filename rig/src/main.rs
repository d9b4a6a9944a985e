//! The `sinkhole` command line: the commands (clap) and where each one goes —
//! one file per command under `cli/` (see [`cli`] for what they share and the
//! exit codes) — and, still here, the `cluster` command for both backends.
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use clap::{Args, Parser, Subcommand};
use sinkhole_rig::cluster::config::parse_overrides;
use sinkhole_rig::cluster::local::{LocalCluster, NodeAction};
use sinkhole_rig::cluster::state::{self, ClusterState, Liveness};
use sinkhole_rig::install::{self, KafkaDist};
use sinkhole_rig::procs::Lifetime;
use sinkhole_rig::DEFAULT_KAFKA;

mod cli;

use cli::args::{self, ClusterShape, KafkaSel};
use cli::{bad, dist_for, install_failure, progress, spec_from, Failure};

#[derive(Parser)]
#[command(name = "sinkhole", version, about = "A Jepsen-style chaos and correctness rig for Kafka transactional sinks")]
struct Cli {
    /// More log output on stderr (-v info, -vv debug). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Install Kafka versions from Maven Central into the cache (idempotent).
    Setup(args::SetupArgs),
    /// A local cluster that outlives one command.
    #[command(subcommand)]
    Cluster(ClusterCmd),
    /// Report what a broker supports for two-phase commit (KIP-939).
    Probe(args::ProbeArgs),
    /// Run a scenario: every mode in turn on one local cluster, then check the
    /// output and judge it against the scenario's expectations.
    Run(args::RunCmd),
    /// Run scenarios × Kafka versions × seeds (one `run` per cell) and compare:
    /// matrix.json, matrix.html, junit.xml and a table of scenario × mode.
    Matrix(args::MatrixCmd),
    /// Re-run the checker offline on a stored run (a results/<run-id>
    /// directory, or one mode directory in it): rewrites verdict.json,
    /// summary.json and junit.xml and prints the table. No cluster needed.
    Check(args::CheckArgs),
    /// Render report.html again for a stored run (results/<run-id>), from
    /// its verdicts and histories: after an upgrade of the rig, or to read
    /// an old run with the current report. No cluster needed.
    Report(args::ReportArgs),
    /// Check scenario files without running them: every problem as
    /// `file:line:column: field: message` with the line (exit 0 when all are
    /// valid, 2 otherwise). The format: docs/SCENARIOS.md.
    Validate(args::ValidateArgs),
    /// Print a scenario's resolved fault schedule: its explicit faults, then
    /// the faults its random `schedule` generates for the seed.
    Schedule(args::ScheduleArgs),
    /// Benchmark the checker on synthetic records (records/s, peak memory).
    #[command(hide = true)]
    BenchChecker(args::BenchCheckerArgs),
    /// Container images for the containers backend.
    #[command(subcommand)]
    Image(args::ImageCmd),
    /// Removes a run's containers and network once stdin closes (started by the containers
    /// backend, not by hand: it outlives a rig killed by a signal).
    #[command(hide = true)]
    ReapContainers(args::ReapContainersArgs),
    /// One subtask of a job (started by the runner, not by hand).
    #[command(hide = true)]
    Worker(args::WorkerArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    cli::init_logging(cli.verbose);
    if let Err(e) = sinkhole_rig::procs::install_signal_teardown() {
        eprintln!("sinkhole: cannot install the signal handlers: {e}");
        return ExitCode::from(1);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sinkhole: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    cli::exit(rt.block_on(dispatch(cli.command)))
}

async fn dispatch(cmd: Command) -> Result<(), Failure> {
    match cmd {
        Command::Setup(a) => cli::setup::run(a),
        Command::Cluster(c) => cluster(c).await,
        Command::Probe(a) => cli::probe::run(a).await,
        Command::Run(a) => cli::run::run(a).await,
        Command::Matrix(a) => cli::matrix::run(a).await,
        Command::Check(a) => cli::check::run(a),
        Command::Report(a) => cli::report::run(a),
        Command::Validate(a) => cli::validate::run(a),
        Command::Schedule(a) => cli::schedule::run(a),
        Command::BenchChecker(a) => cli::bench_checker::run(a),
        Command::Image(c) => cli::image::run(c),
        Command::ReapContainers(a) => cli::reap_containers::run(a).await,
        Command::Worker(a) => cli::worker::run(a).await,
    }
}

// ---------------------------------------------------------------------------
// `sinkhole cluster`: a named cluster that outlives one command, on either backend.

#[derive(Subcommand)]
enum ClusterCmd {
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
        /// Where the nodes run: local JVMs, or containers (Docker/Podman API; see README).
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
struct NodeArgs {
    /// Node id (1-based).
    node: i32,
    #[arg(long, default_value = "default")]
    name: String,
    /// Seconds to wait for a stop or for the node to be ready again.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    #[arg(long)]
    json: bool,
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
    install::resolve(Some(&st.version), st.kafka_home.as_deref()).map_err(install_failure)
}

async fn cluster(cmd: ClusterCmd) -> Result<(), Failure> {
    match cmd {
        ClusterCmd::Up { name, kafka, shape, json, backend, image } if backend == "containers" => {
            containers_up(&name, &kafka, &shape, image, json).await
        }
        ClusterCmd::Down { name, keep_data } if containers_record(&name).is_some() => {
            containers_down(&name, keep_data).await
        }
        ClusterCmd::Status { name, json } if containers_record(&name).is_some() => containers_status(&name, json).await,
        ClusterCmd::Up { name, kafka, shape, json, .. } => {
            let dir = state::cluster_dir(&name);
            match ClusterState::load(&name) {
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
            let dist = dist_for(&kafka)?;
            let mut spec = spec_from(&shape, dist, dir)?;
            spec.lifetime = Lifetime::Detached;
            let t0 = Instant::now();
            progress(&format!("starting {} node(s) of Kafka {} …", spec.nodes, spec.dist.version));
            let cluster = LocalCluster::start(spec).await.context("starting the cluster")?;
            let ready = t0.elapsed();
            let bootstrap = cluster.bootstrap();
            let st = ClusterState::from_cluster(&name, kafka.kafka_home.clone(), cluster);
            st.save()?;
            if json {
                let mut v = serde_json::to_value(&st)?;
                v["bootstrap"] = bootstrap.clone().into();
                v["ready_ms"] = (ready.as_millis() as u64).into();
                println!("{}", serde_json::to_string_pretty(&v)?);
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
        ClusterCmd::Down { name, keep_data } => {
            let st = match ClusterState::load(&name) {
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
        ClusterCmd::Status { name, json } => {
            let st = load_state(&name)?;
            let dist = dist_of_state(&st)?;
            let mut c = st.adopt(dist);
            let status = c.status();
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "name": name, "version": st.version, "cluster_id": st.cluster_id,
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
        ClusterCmd::Kill(a) => node_action(a, NodeAction::Kill).await,
        ClusterCmd::Stop(a) => node_action(a, NodeAction::Stop).await,
        ClusterCmd::Pause(a) => node_action(a, NodeAction::Pause).await,
        ClusterCmd::Resume(a) => node_action(a, NodeAction::Resume).await,
        ClusterCmd::Start(a) => node_action(a, NodeAction::Start).await,
        ClusterCmd::Restart(a) => node_action(a, NodeAction::Restart).await,
    }
}

async fn node_action(a: NodeArgs, action: NodeAction) -> Result<(), Failure> {
    if let Some(rec) = containers_record(&a.name) {
        return containers_node_action(a, action, rec).await;
    }
    let mut st = load_state(&a.name)?;
    let dist = dist_of_state(&st)?;
    let mut c = st.adopt(dist);
    if !c.node_ids().contains(&a.node) {
        return Err(bad(anyhow!("cluster '{}' has no node {}; its nodes are {:?}", a.name, a.node, c.node_ids())));
    }
    let res = c.act(a.node, action, Duration::from_secs(a.timeout)).await;
    st.update_from(c);
    st.save()?;
    let effect = res.map_err(|e| match e {
        sinkhole_rig::cluster::local::ClusterError::WrongState { .. } => bad(e),
        e => Failure::Failed(e.into()),
    })?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&effect)?);
    } else {
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
        println!(
            "node {}: {:?} done in {} ms{}{}{}",
            a.node,
            action,
            effect.elapsed_ms,
            if sigs.is_empty() { String::new() } else { format!("; {}", sigs.join("; ")) },
            effect.new_pid.map(|p| format!("; new pid {p}")).unwrap_or_default(),
            match effect.ready {
                Some(true) => "; answering again",
                Some(false) => "; NOT answering yet",
                None => "",
            }
        );
    }
    Ok(())
}

/// The state of a containers cluster named `name`, if that is what it is.
fn containers_record(name: &str) -> Option<sinkhole_rig::cluster::containers::ContainersRecord> {
    let path = state::cluster_dir(name).join(sinkhole_rig::cluster::containers::STATE_FILE);
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

fn save_containers_record(
    name: &str,
    rec: &sinkhole_rig::cluster::containers::ContainersRecord,
) -> Result<(), Failure> {
    let path = state::cluster_dir(name).join(sinkhole_rig::cluster::containers::STATE_FILE);
    std::fs::write(&path, serde_json::to_string_pretty(rec)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// `cluster up --backend containers`: the containers outlive the command (labelled `detached`),
/// `containers.json` in the cluster directory finds them again.
async fn containers_up(
    name: &str,
    kafka: &KafkaSel,
    shape: &ClusterShape,
    image: Option<String>,
    json: bool,
) -> Result<(), Failure> {
    use sinkhole_rig::cluster::containers::{ContainersCluster, ContainersSpec};
    let dir = state::cluster_dir(name);
    if containers_record(name).is_some() || ClusterState::load(name).is_ok() {
        return Err(bad(anyhow!(
            "cluster '{name}' already exists; `sinkhole cluster down --name {name}` first, or pick another --name"
        )));
    }
    if !matches!(shape.nodes, 1 | 3 | 5) {
        return Err(bad(anyhow!("--nodes {}: use 1, 3 or 5 KRaft nodes", shape.nodes)));
    }
    let v = install::parse_versions(kafka.kafka.as_deref().unwrap_or(DEFAULT_KAFKA)).map_err(bad)?;
    if v.len() != 1 {
        return Err(bad(anyhow!("--kafka takes one version here, got {}", v.join(","))));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let mut spec = ContainersSpec::new(&v[0], shape.nodes, dir, &format!("cluster-{name}"));
    spec.broker_config = parse_overrides(&shape.broker_config).map_err(bad)?;
    spec.heap = shape.heap.clone();
    spec.ready_timeout = Duration::from_secs(shape.ready_timeout);
    spec.image = image;
    spec.detached = true;
    let t0 = Instant::now();
    progress(&format!("starting {} container(s) of Kafka {} …", spec.nodes, spec.version));
    let cluster = ContainersCluster::start(spec).await.context("starting the containers cluster")?;
    let ready = t0.elapsed();
    let bootstrap = cluster.bootstrap();
    let rec = cluster.detach();
    save_containers_record(name, &rec)?;
    if json {
        let mut v = serde_json::to_value(&rec)?;
        v["bootstrap"] = bootstrap.clone().into();
        v["ready_ms"] = (ready.as_millis() as u64).into();
        println!("{}", serde_json::to_string_pretty(&v)?);
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

async fn containers_down(name: &str, keep_data: bool) -> Result<(), Failure> {
    use sinkhole_rig::cluster::containers::{self, ContainersCluster};
    let rec = containers_record(name).ok_or_else(|| bad(anyhow!("no containers cluster named '{name}'")))?;
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
        let _ = std::fs::remove_file(rec.dir.join(containers::STATE_FILE));
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

async fn containers_status(name: &str, json: bool) -> Result<(), Failure> {
    use sinkhole_rig::cluster::containers::ContainersCluster;
    let rec = containers_record(name).ok_or_else(|| bad(anyhow!("no containers cluster named '{name}'")))?;
    let c = ContainersCluster::adopt(rec.clone()).await?;
    let mut rows = Vec::new();
    for n in &rec.nodes {
        let state = c.engine_state(n.node_id).await.map(|s| s.status).unwrap_or_else(|e| format!("unknown ({e})"));
        rows.push(serde_json::json!({"node_id": n.node_id, "container": n.name, "port": n.host_port,
            "intent": n.intent, "engine": state}));
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"name": name, "backend": "containers",
            "version": rec.version, "image": rec.image, "bootstrap": c.bootstrap(), "nodes": rows}))?
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

async fn containers_node_action(
    a: NodeArgs,
    action: NodeAction,
    rec: sinkhole_rig::cluster::containers::ContainersRecord,
) -> Result<(), Failure> {
    use sinkhole_rig::cluster::containers::{ContainersCluster, ContainersError};
    let mut c = ContainersCluster::adopt(rec).await?;
    if !c.node_ids().contains(&a.node) {
        return Err(bad(anyhow!("cluster '{}' has no node {}; its nodes are {:?}", a.name, a.node, c.node_ids())));
    }
    let res = c.act(a.node, action, Duration::from_secs(a.timeout)).await;
    save_containers_record(&a.name, &c.record())?;
    let effect = res.map_err(|e| match e {
        ContainersError::Cluster(sinkhole_rig::cluster::local::ClusterError::WrongState { .. }) => bad(e),
        e => Failure::Failed(e.into()),
    })?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&effect)?);
    } else {
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
        println!(
            "node {}: {:?} done in {} ms; {}{}",
            a.node,
            action,
            effect.elapsed_ms,
            sigs.join("; "),
            match effect.ready {
                Some(true) => "; answering again",
                Some(false) => "; NOT answering yet",
                None => "",
            }
        );
    }
    Ok(())
}
