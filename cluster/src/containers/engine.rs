//! The container engine as a whole: where it listens, a client of it, the labels that tie
//! containers and networks to a run and to the rig process that made them, and their removal —
//! at teardown, by the reaper when the rig dies by a signal, and at the next start for what a
//! dead rig left behind.
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use sinkhole_faults::process::ProcessId;
use testcontainers::bollard::query_parameters::{
    ListContainersOptionsBuilder, ListNetworksOptionsBuilder, ListVolumesOptionsBuilder, RemoveContainerOptionsBuilder,
};
use testcontainers::bollard::Docker;

use crate::ClusterError;

/// The label every container and network of a run carries; its value is the run id.
pub const RUN_LABEL: &str = "sinkhole.run";
/// `<pid>:<start ticks>` of the rig process that created it: a leftover whose owner is gone is
/// removed by the next start.
pub const OWNER_LABEL: &str = "sinkhole.owner";
/// The owner of a cluster meant to outlive the command (`sinkhole cluster up`): only `cluster
/// down` removes it.
pub const DETACHED_OWNER: &str = "detached";

#[derive(Debug, thiserror::Error)]
pub enum ContainersError {
    #[error("no container engine answers{}: {detail}. Start Docker, or Podman's service (`scripts/podman-service.sh start` prints the DOCKER_HOST to export)", host.as_deref().map(|h| format!(" at {h}")).unwrap_or_default())]
    NoEngine { host: Option<String>, detail: String },
    #[error("the container engine: {0}")]
    Engine(String),
    #[error("image {image} is not available ({detail}); with no registry, build it: `sinkhole image build --kafka {version}`")]
    NoImage { image: String, version: String, detail: String },
}

impl From<ContainersError> for ClusterError {
    fn from(e: ContainersError) -> Self {
        ClusterError::Backend(Box::new(e))
    }
}

pub(super) fn engine_err(what: &str) -> impl FnOnce(testcontainers::bollard::errors::Error) -> ContainersError + '_ {
    move |e| ContainersError::Engine(format!("{what}: {e}"))
}

/// Where the Podman service of `scripts/podman-service.sh` listens.
pub fn podman_service_socket() -> PathBuf {
    PathBuf::from(std::env::var("SINKHOLE_PODMAN_DIR").unwrap_or_else(|_| "/tmp/sinkhole-podman".into()))
        .join("podman.sock")
}

/// Docker's default socket, which testcontainers also tries when `DOCKER_HOST` is unset.
const DOCKER_DEFAULT_SOCKET: &str = "/var/run/docker.sock";

/// The engine address: `DOCKER_HOST` when set, else the first socket that exists of Docker's
/// default, the service of `scripts/podman-service.sh`, and Podman's rootful and rootless
/// defaults. Found once and kept; the environment is only read, never written (see
/// [`export_docker_host`] for testcontainers, which reads the address from there).
pub fn docker_host() -> Option<String> {
    static FOUND: OnceLock<Option<String>> = OnceLock::new();
    FOUND.get_or_init(|| resolve_host(std::env::var("DOCKER_HOST").ok(), &socket_candidates())).clone()
}

fn socket_candidates() -> Vec<PathBuf> {
    let mut candidates = vec![PathBuf::from(DOCKER_DEFAULT_SOCKET), podman_service_socket()];
    candidates.push(PathBuf::from("/run/podman/podman.sock"));
    if let Ok(x) = std::env::var("XDG_RUNTIME_DIR") {
        candidates.push(PathBuf::from(x).join("podman/podman.sock"));
    }
    candidates
}

/// A non-empty `DOCKER_HOST` wins; else the first candidate socket that exists.
fn resolve_host(env: Option<String>, candidates: &[PathBuf]) -> Option<String> {
    if let Some(h) = env.filter(|h| !h.is_empty()) {
        return Some(h);
    }
    candidates.iter().find(|p| p.exists()).map(|p| format!("unix://{}", p.display()))
}

/// Whether testcontainers, which takes the engine address from `DOCKER_HOST` alone (falling back
/// to Docker's default socket), reaches the engine at `host`.
fn testcontainers_reaches(host: &str, env: Option<&str>) -> bool {
    match env.filter(|h| !h.is_empty()) {
        Some(h) => h == host,
        None => host == format!("unix://{DOCKER_DEFAULT_SOCKET}"),
    }
}

/// Exports the engine address as `DOCKER_HOST` when it was found by looking for sockets:
/// testcontainers starts containers through a client of its own, built from `DOCKER_HOST`, and
/// takes no address from its caller. The rig's own engine client ([`engine`]) is given the
/// address explicitly and needs none of this.
///
/// # Safety
///
/// Writing the environment while another thread reads it is undefined behaviour (`setenv` and
/// `getenv` race in libc): call this before any other thread exists — first thing in `main`,
/// before the async runtime and the signal thread start.
pub unsafe fn export_docker_host() {
    if std::env::var_os("DOCKER_HOST").is_some_and(|h| !h.is_empty()) {
        return;
    }
    if let Some(h) = docker_host() {
        std::env::set_var("DOCKER_HOST", h);
    }
}

/// Refuses a start that testcontainers could not carry out: the engine was found at a socket
/// `DOCKER_HOST` does not name, in a process that did not export it (the `sinkhole` binary
/// does, through [`export_docker_host`]; a library caller must).
pub(super) fn check_testcontainers_reaches(host: Option<&str>) -> Result<(), ContainersError> {
    match host {
        Some(h) if !testcontainers_reaches(h, std::env::var("DOCKER_HOST").ok().as_deref()) => {
            Err(ContainersError::NoEngine {
                host: Some(h.to_string()),
                detail: format!(
                    "testcontainers finds the engine only through DOCKER_HOST; export DOCKER_HOST={h} before \
                     starting (the sinkhole binary does this itself)"
                ),
            })
        }
        _ => Ok(()),
    }
}

/// A client of the engine that answered a ping, connected to [`docker_host`] (or bollard's
/// defaults when no engine address was found).
pub async fn engine() -> Result<Docker, ContainersError> {
    let host = docker_host();
    let docker = match &host {
        Some(h) => Docker::connect_with_host(h),
        None => Docker::connect_with_defaults(),
    }
    .map_err(|e| ContainersError::NoEngine { host: host.clone(), detail: e.to_string() })?;
    match tokio::time::timeout(Duration::from_secs(5), docker.ping()).await {
        Ok(Ok(_)) => Ok(docker),
        Ok(Err(e)) => Err(ContainersError::NoEngine { host, detail: e.to_string() }),
        Err(_) => Err(ContainersError::NoEngine { host, detail: "no answer to a ping within 5 s".into() }),
    }
}

/// Whether an engine answers (for tests that skip without one).
pub async fn engine_available() -> Result<(), String> {
    engine().await.map(|_| ()).map_err(|e| e.to_string())
}

/// `<pid>:<start ticks>` of this process.
pub(super) fn owner() -> String {
    match ProcessId::of(std::process::id() as i32) {
        Some(p) => format!("{}:{}", p.pid, p.start_ticks),
        None => format!("{}:0", std::process::id()),
    }
}

fn owner_alive(label: &str) -> bool {
    let Some((pid, ticks)) = label.split_once(':') else { return false };
    let (Ok(pid), Ok(ticks)) = (pid.parse::<i32>(), ticks.parse::<u64>()) else { return false };
    ProcessId { pid, start_ticks: ticks }.is_alive()
}

/// 8 hex digits naming the run's network and containers (names must be unique on the engine,
/// and short: a container name is a hostname).
pub(super) fn short_name(run_id: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    for b in format!("{run_id}/{}/{nanos}", std::process::id()).bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

/// Removes every container (with its anonymous volumes) and network labelled
/// `sinkhole.run=<run_id>`. Returns (containers, networks) removed.
pub async fn remove_run(docker: &Docker, run_id: &str) -> Result<(usize, usize), ContainersError> {
    let filters: HashMap<String, Vec<String>> =
        HashMap::from([("label".into(), vec![format!("{RUN_LABEL}={run_id}")])]);
    remove_matching(docker, &filters, |_| true).await
}

/// Removes what rigs that are no longer running left behind (their owner label names a dead
/// process): a run killed with `kill -9` before its reaper could act, or one without a reaper.
pub async fn remove_orphans(docker: &Docker) -> Result<(usize, usize), ContainersError> {
    let filters: HashMap<String, Vec<String>> = HashMap::from([("label".into(), vec![OWNER_LABEL.to_string()])]);
    remove_matching(docker, &filters, |labels| {
        labels.get(OWNER_LABEL).is_some_and(|o| o != DETACHED_OWNER && !owner_alive(o))
    })
    .await
}

async fn remove_matching(
    docker: &Docker,
    filters: &HashMap<String, Vec<String>>,
    pick: impl Fn(&HashMap<String, String>) -> bool,
) -> Result<(usize, usize), ContainersError> {
    let containers = docker
        .list_containers(Some(ListContainersOptionsBuilder::new().all(true).filters(filters).build()))
        .await
        .map_err(engine_err("listing containers"))?;
    let mut removed = 0;
    for c in containers {
        if !pick(&c.labels.clone().unwrap_or_default()) {
            continue;
        }
        let Some(id) = c.id else { continue };
        match docker.remove_container(&id, Some(RemoveContainerOptionsBuilder::new().force(true).v(true).build())).await
        {
            Ok(()) => removed += 1,
            Err(e) if e.to_string().contains("404") || e.to_string().contains("no such container") => {}
            Err(e) => return Err(ContainersError::Engine(format!("removing container {id}: {e}"))),
        }
    }
    let networks = docker
        .list_networks(Some(ListNetworksOptionsBuilder::new().filters(filters).build()))
        .await
        .map_err(engine_err("listing networks"))?;
    let mut nets = 0;
    for n in networks {
        if !pick(&n.labels.clone().unwrap_or_default()) {
            continue;
        }
        let Some(name) = n.name.or(n.id) else { continue };
        match docker.remove_network(&name).await {
            Ok(()) => nets += 1,
            Err(e) if e.to_string().contains("404") => {}
            Err(e) => return Err(ContainersError::Engine(format!("removing network {name}: {e}"))),
        }
    }
    Ok((removed, nets))
}

/// What the engine still holds of a run: containers, networks and volumes labelled with it.
pub async fn leftovers(
    docker: &Docker,
    run_id: &str,
) -> Result<(Vec<String>, Vec<String>, Vec<String>), ContainersError> {
    let filters: HashMap<String, Vec<String>> =
        HashMap::from([("label".into(), vec![format!("{RUN_LABEL}={run_id}")])]);
    let containers = docker
        .list_containers(Some(ListContainersOptionsBuilder::new().all(true).filters(&filters).build()))
        .await
        .map_err(engine_err("listing containers"))?
        .into_iter()
        .map(|c| c.names.unwrap_or_default().join(","))
        .collect();
    let networks = docker
        .list_networks(Some(ListNetworksOptionsBuilder::new().filters(&filters).build()))
        .await
        .map_err(engine_err("listing networks"))?
        .into_iter()
        .filter_map(|n| n.name)
        .collect();
    let volumes = docker
        .list_volumes(Some(ListVolumesOptionsBuilder::new().filters(&filters).build()))
        .await
        .map_err(engine_err("listing volumes"))?
        .volumes
        .unwrap_or_default()
        .into_iter()
        .map(|v| v.name)
        .collect();
    Ok((containers, networks, volumes))
}

/// Runs `fut` to completion on a runtime of its own thread: for Drop, which may run inside or
/// outside an async context.
pub(super) fn block_on_own_thread<F: std::future::Future<Output = ()> + Send + 'static>(fut: F) {
    let _ = std::thread::spawn(move || {
        if let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() {
            rt.block_on(fut);
        }
    })
    .join();
}

/// Starts `<sinkhole> reap-containers --run <id>`: a process of its own session that waits for
/// its stdin (our pipe) to close, then removes the run's containers and network. It outlives a
/// rig killed by any signal, `kill -9` included, since the kernel closes the pipe then.
pub(super) fn spawn_reaper(bin: &Path, run_id: &str, dir: &Path) -> Option<Child> {
    let log = fs::File::create(dir.join("reaper.log")).ok();
    let mut cmd = Command::new(bin);
    cmd.args(["reap-containers", "--run", run_id]).stdin(Stdio::piped()).stdout(Stdio::null());
    match log {
        Some(f) => cmd.stderr(f),
        None => cmd.stderr(Stdio::null()),
    };
    match sinkhole_base::procs::spawn(cmd, sinkhole_base::procs::Lifetime::Detached) {
        Ok((child, _)) => Some(child),
        Err(e) => {
            tracing::warn!("no reaper process ({e}): a rig killed by a signal would leave containers behind");
            None
        }
    }
}

/// The reaper's body: wait for stdin to close, then remove the run's containers and network.
pub async fn reap_when_stdin_closes(run_id: &str) -> Result<(usize, usize), ContainersError> {
    tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    })
    .await
    .map_err(|e| ContainersError::Engine(e.to_string()))?;
    let docker = engine().await?;
    remove_run(&docker, run_id).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_alive_only_while_their_process_is() {
        assert!(owner_alive(&owner()));
        assert!(!owner_alive("999999999:1"));
        assert!(!owner_alive("garbage"));
        let me = ProcessId::of(std::process::id() as i32).unwrap();
        assert!(!owner_alive(&format!("{}:{}", me.pid, me.start_ticks + 1)), "a reused pid is not the owner");
    }

    #[test]
    fn the_engine_address_is_docker_host_or_the_first_socket_that_exists() {
        let dir = std::env::temp_dir().join(format!("sinkhole-engine-host-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let sock = dir.join("podman.sock");
        fs::write(&sock, "").unwrap();
        let candidates = vec![dir.join("docker.sock"), sock.clone()];
        let found = format!("unix://{}", sock.display());
        assert_eq!(resolve_host(None, &candidates), Some(found.clone()));
        assert_eq!(resolve_host(Some(String::new()), &candidates), Some(found.clone()), "an empty one is unset");
        assert_eq!(
            resolve_host(Some("tcp://127.0.0.1:2375".into()), &candidates).as_deref(),
            Some("tcp://127.0.0.1:2375")
        );
        assert_eq!(resolve_host(None, &candidates[..1]), None);
        fs::remove_dir_all(&dir).unwrap();

        // testcontainers reaches a found socket only through DOCKER_HOST, or at Docker's default.
        assert!(!testcontainers_reaches(&found, None));
        assert!(testcontainers_reaches(&found, Some(&found)));
        assert!(!testcontainers_reaches(&found, Some("unix:///elsewhere.sock")));
        assert!(testcontainers_reaches("unix:///var/run/docker.sock", None));
        assert!(testcontainers_reaches("unix:///var/run/docker.sock", Some("")));
    }

    #[test]
    fn finding_the_engine_never_writes_the_environment() {
        let before = std::env::var_os("DOCKER_HOST");
        let _ = docker_host();
        assert_eq!(std::env::var_os("DOCKER_HOST"), before);
    }
}
