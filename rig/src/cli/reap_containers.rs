//! `sinkhole reap-containers` (hidden): started by the containers backend,
//! removes a run's containers and network once stdin closes, so a rig killed
//! by a signal leaves nothing on the engine.
use super::args::ReapContainersArgs;
use super::Failure;

#[cfg(not(feature = "containers"))]
pub async fn run(_: ReapContainersArgs) -> Result<(), Failure> {
    Err(super::bad(anyhow::anyhow!(sinkhole_rig::run::CONTAINERS_NOT_BUILT)))
}

#[cfg(feature = "containers")]
pub async fn run(a: ReapContainersArgs) -> Result<(), Failure> {
    let (c, n) = sinkhole_cluster::containers::reap_when_stdin_closes(&a.run).await?;
    eprintln!("sinkhole reaper: run {}: removed {c} container(s), {n} network(s)", a.run);
    Ok(())
}
