//! For the containers backend's tests: whether they can run here (an engine that answers, the
//! Kafka image, built from the cached jars when missing), taking turns, running the binary with
//! `--backend containers`, and the check every one ends with: nothing of the run is left on the
//! engine.
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::MutexGuard;

use sinkhole_cluster::containers;

/// One image build at a time: tests that do not take turns may ask for it together.
static IMAGE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The engine and the image, or the reason the test cannot run here (printed; the test returns).
pub async fn ready_to_run(test: &str) -> bool {
    if let Err(e) = containers::engine_available().await {
        eprintln!("SKIPPED {test}: {e}");
        return false;
    }
    let _one_build = IMAGE.lock().await;
    let docker = containers::engine().await.expect("engine");
    let tag = containers::image::default_tag("4.4.0");
    if docker.inspect_image(&tag).await.is_err() {
        // No registry here: build it from the cached jars, as `sinkhole image build` does.
        let dist = super::dist("4.4.0");
        let work = std::env::temp_dir().join(format!("sinkhole-it-image-{}", std::process::id()));
        let r = containers::image::build(&dist, &tag, &work, containers::docker_host().as_deref(), &mut |l| {
            eprintln!("image: {l}")
        })
        .expect("build the image");
        eprintln!("built {} in {:.1} s ({} bytes, JRE by {})", r.tag, r.elapsed_ms as f64 / 1e3, r.rootfs_bytes, r.jre);
    }
    true
}

/// The test's turn ([`super::serial`]) when it can run here, else `None` with the reason
/// printed: `let Some(_turn) = common::containers::turn("name").await else { return };`.
// The guard is held across the engine checks on purpose: clusters take turns.
#[allow(clippy::await_holding_lock)]
pub async fn turn(test: &str) -> Option<MutexGuard<'static, ()>> {
    let turn = super::serial();
    ready_to_run(test).await.then_some(turn)
}

/// Asserts the engine holds nothing labelled with `run_id`: no container, network or volume.
pub async fn assert_nothing_left(run_id: &str) {
    let docker = containers::engine().await.unwrap();
    let (cs, nets, vols) = containers::leftovers(&docker, run_id).await.unwrap();
    assert!(cs.is_empty() && nets.is_empty() && vols.is_empty(), "left: {cs:?} {nets:?} {vols:?}");
}

/// `sinkhole run SCENARIO --backend containers ARGS` with its results in the test directory
/// `name`: its output, the results directory and the run directory inside it.
pub async fn run_on_containers(name: &str, scenario: PathBuf, args: &[&str]) -> (Output, PathBuf, PathBuf) {
    let results = super::test_dir(name);
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let (out, results) = tokio::task::spawn_blocking(move || {
        let out = Command::new(super::bin())
            .arg("run")
            .arg(&scenario)
            .args(["--backend", "containers"])
            .args(&args)
            .arg("--results")
            .arg(&results)
            .output()
            .expect("run sinkhole");
        (out, results)
    })
    .await
    .unwrap();
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    let dir = super::run_dir(&results, &out);
    (out, results, dir)
}
