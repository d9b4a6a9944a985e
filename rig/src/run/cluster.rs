//! The run's cluster: started on the scenario's backend, with the sink's
//! ACLs in ACL scenarios.
use std::time::Duration;

use anyhow::{anyhow, Context};
use sinkhole_client::wire::acls::{self, AclBinding};
use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_client::wire::SaslPlain;

use super::{broker_config, progress, Plan, RunError};
#[cfg(feature = "containers")]
use sinkhole_cluster::containers::{ContainersCluster, ContainersSpec};
use sinkhole_cluster::external::ExternalCluster;
use sinkhole_cluster::local::{LocalCluster, LocalSpec};
use sinkhole_cluster::{Cluster, ClusterError, ClusterNodes};
use sinkhole_scenario::{Backend, Jit};

/// Starts the scenario's cluster on its backend: local JVMs, or containers (see
/// [`sinkhole_cluster::containers`]); the containers' logs go to `cluster/node-<id>/server.log`.
pub(super) async fn start_cluster(plan: &Plan) -> Result<Box<dyn Cluster>, RunError> {
    let s = &plan.scenario;
    match s.cluster.backend {
        Backend::Local => {
            let dist = sinkhole_install::ensure(&s.cluster.kafka, &mut |l| progress(l)).map_err(|e| {
                if e.is_bad_input() {
                    RunError::BadInput(e.into())
                } else {
                    RunError::Failed(e.into())
                }
            })?;
            progress(&format!("starting {} broker(s) of Kafka {} …", s.cluster.brokers, s.cluster.kafka));
            let mut spec = LocalSpec::new(dist, s.cluster.brokers, plan.dir.cluster().path().to_path_buf());
            spec.broker_config = broker_config(s);
            spec.jit = s.cluster.jit;
            spec.remove_dir_on_teardown = false;
            spec.drop_data_on_teardown = plan.drop_data;
            // Network and protocol faults act through the proxy (cluster.proxy, default: when one needs it).
            if s.needs_proxy() {
                spec.proxy = Some(plan.seed);
            }
            if s.cluster.authorizer.is_some() {
                // The sink's principal; the password only has to match the broker's JAAS line.
                spec.sink_sasl = Some(SaslPlain::new(SINK_USER, &format!("sink-{}", plan.short_id)));
            }
            let cluster = LocalCluster::start(spec).await.context("starting the cluster")?;
            if let Some(a) = &s.cluster.authorizer {
                grant_sink_acls(plan, &cluster, a.two_phase_commit_acl).await.context("creating the sink's ACLs")?;
            }
            Ok(Box::new(cluster))
        }
        Backend::External => {
            let spec = s.cluster.external.clone().unwrap_or_default();
            if spec.bootstrap.is_empty() {
                return Err(RunError::BadInput(anyhow!(
                    "backend external needs the cluster's bootstrap: cluster.external.bootstrap or --bootstrap"
                )));
            }
            if let Some(why) = s.faults.iter().find_map(|f| sinkhole_cluster::external::unsupported_fault(f, &spec)) {
                return Err(RunError::BadInput(anyhow!(why)));
            }
            if !s.cluster.broker_config.is_empty() {
                progress("cluster.broker_config is not applied: the rig did not start this cluster");
            }
            if s.cluster.jit != Jit::default() {
                progress("cluster.jit is not applied: the rig did not start this cluster");
            }
            progress(&format!("connecting to the external cluster at {} …", spec.bootstrap.join(",")));
            let seed = s.needs_proxy().then_some(plan.seed);
            let c = ExternalCluster::connect(spec, s.cluster.brokers, seed).await.map_err(|e| match e {
                ClusterError::Unsupported(_) => RunError::BadInput(e.into()),
                e => RunError::Failed(anyhow::Error::from(e).context("connecting to the external cluster")),
            })?;
            Ok(Box::new(c))
        }
        #[cfg(not(feature = "containers"))]
        Backend::Containers => Err(RunError::BadInput(anyhow!(CONTAINERS_NOT_BUILT))),
        #[cfg(feature = "containers")]
        Backend::Containers => {
            if s.cluster.authorizer.is_some() {
                return Err(RunError::BadInput(anyhow!(
                    "cluster.authorizer needs the local backend (the containers backend has no SASL listener yet)"
                )));
            }
            // The proxy fronts the host-facing listeners only: refuse what needs broker↔broker traffic through it.
            if let Some(why) = s.faults.iter().find_map(sinkhole_cluster::containers::unsupported_fault) {
                return Err(RunError::BadInput(anyhow!(why)));
            }
            progress(&format!("starting {} container(s) of Kafka {} …", s.cluster.brokers, s.cluster.kafka));
            let mut spec = ContainersSpec::new(
                &s.cluster.kafka,
                s.cluster.brokers,
                plan.dir.cluster().path().to_path_buf(),
                &plan.run_id,
            );
            spec.image = s.cluster.image.clone();
            spec.broker_config = broker_config(s);
            spec.jit = s.cluster.jit;
            if s.needs_proxy() {
                spec.proxy = Some(plan.seed);
            }
            // The reaper is this binary's `reap-containers`: only when running as `sinkhole`.
            spec.reaper = std::env::current_exe().ok().filter(|p| {
                p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n == "sinkhole" || n.starts_with("sinkhole-"))
            });
            let c = ContainersCluster::start(spec).await.context("starting the containers cluster")?;
            progress(&format!("containers from {} on network {}", c.image, c.network));
            Ok(Box::new(c))
        }
    }
}

/// What a build without the containers backend (a cargo feature, off by default: its engine
/// client is a quarter of the binary's dependencies) says when a scenario or a command asks for it.
pub const CONTAINERS_NOT_BUILT: &str = "this sinkhole was built without the containers backend: build it with \
     `cargo build --release -p sinkhole --features containers` (or `make build FEATURES=containers`)";

/// The sink workers' user in ACL scenarios (`User:sink`).
pub const SINK_USER: &str = "sink";

/// What `User:sink` may do in an ACL scenario: write and describe the run's
/// topics (`sinkhole-` prefix) and transactional ids (the run's prefix), and,
/// only when `two_phase_commit` is set, TWO_PHASE_COMMIT on those ids (KIP-939:
/// InitProducerId with Enable2Pc needs it). No IDEMPOTENT_WRITE on the
/// cluster: a transactional InitProducerId is checked against the id alone,
/// and the id-less one (at-least-once) is allowed by WRITE on any topic.
pub fn sink_acls(tid_prefix: &str, two_phase_commit: bool) -> Vec<AclBinding> {
    let p = format!("User:{SINK_USER}");
    let mut v = vec![
        AclBinding::allow_prefixed(&p, acls::resource::TOPIC, "sinkhole-", acls::op::WRITE),
        AclBinding::allow_prefixed(&p, acls::resource::TOPIC, "sinkhole-", acls::op::DESCRIBE),
        AclBinding::allow_prefixed(&p, acls::resource::TRANSACTIONAL_ID, tid_prefix, acls::op::WRITE),
        AclBinding::allow_prefixed(&p, acls::resource::TRANSACTIONAL_ID, tid_prefix, acls::op::DESCRIBE),
    ];
    if two_phase_commit {
        v.push(AclBinding::allow_prefixed(
            &p,
            acls::resource::TRANSACTIONAL_ID,
            tid_prefix,
            acls::op::TWO_PHASE_COMMIT,
        ));
    }
    v
}

/// Creates [`sink_acls`] as the rig's super user, waits until every broker
/// enforces them, and writes them to `acls.json` in the run directory.
async fn grant_sink_acls(plan: &Plan, cluster: &LocalCluster, two_phase_commit: bool) -> anyhow::Result<()> {
    // Every mode's prefix is `sinkhole-<short>-<mode>`.
    let want = sink_acls(&format!("sinkhole-{}-", plan.short_id), two_phase_commit);
    let mut client = Client::connect(&cluster.bootstrap_list(), ClientConfig::default()).await?;
    acls::create_acls(&mut client, &want).await?;
    acls::await_acls(&mut client, &want, Duration::from_secs(30)).await?;
    std::fs::write(plan.dir.acls(), serde_json::to_string_pretty(&want)? + "\n").context("writing acls.json")?;
    for a in &want {
        progress(&format!("ACL: {a}"));
    }
    Ok(())
}
