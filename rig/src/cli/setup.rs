//! `sinkhole setup`: installs Kafka versions from Maven Central into the
//! cache (idempotent), and with `--flink` the Flink subject's cluster
//! classpath and job; see [`sinkhole_install`].
use sinkhole_cluster::local::cds;
use sinkhole_install::flink::{self, FlinkError, FlinkOutcome};
use sinkhole_install::InstallOutcome;

use super::args::SetupArgs;
use super::{bad, install_failure, progress, Failure};

pub async fn run(a: SetupArgs) -> Result<(), Failure> {
    let versions = sinkhole_install::parse_versions(&a.kafka).map_err(bad)?;
    // Each version's class-data archive (a broker started and stopped: seconds of JVM work) is
    // made beside the next version's install and the Flink one, which mostly copy files; each
    // archive's broker has its own ports and directory. Three versions and Flink took 56 s one
    // after another in CI.
    let mut archives = tokio::task::JoinSet::new();
    for v in versions {
        let dist = match sinkhole_install::install(&v, &mut |l| progress(l)) {
            Ok(InstallOutcome::Installed { dist, jars, elapsed }) => {
                println!(
                    "Kafka {v}: installed {jars} jars in {:.1} s at {}",
                    elapsed.as_secs_f64(),
                    dist.home.display()
                );
                dist
            }
            Ok(InstallOutcome::AlreadyInstalled { dist }) => {
                println!("Kafka {v}: already installed at {} (nothing to do)", dist.home.display());
                dist
            }
            Err(e) => return Err(install_failure(e)),
        };
        archives.spawn(async move { class_archive(&v, &dist).await });
    }
    if let Some(f) = &a.flink {
        let connector = match &a.connector {
            Some(c) => c.clone(),
            None => flink::default_connector(f)
                .ok_or_else(|| {
                    bad(anyhow::anyhow!("--flink {f}: no connector is known for it; name one with --connector"))
                })?
                .to_string(),
        };
        let (flink_version, c) = (f.clone(), connector.clone());
        let installed = tokio::task::spawn_blocking(move || flink::install(&flink_version, &c, &mut |l| progress(l)))
            .await
            .map_err(|e| Failure::Failed(e.into()))?;
        match installed {
            Ok(FlinkOutcome::Installed { dist, jars, elapsed }) => println!(
                "Flink {f} / flink-connector-kafka {connector}: installed {jars} jars and the job in {:.1} s at {}",
                elapsed.as_secs_f64(),
                dist.home.display()
            ),
            Ok(FlinkOutcome::AlreadyInstalled { dist }) => println!(
                "Flink {f} / flink-connector-kafka {connector}: already installed at {} (nothing to do)",
                dist.home.display()
            ),
            Err(e) => return Err(flink_failure(e)),
        }
    }
    while let Some(done) = archives.join_next().await {
        done.map_err(|e| Failure::Failed(e.into()))?;
    }
    if let Some(jar) = &a.connector_jar {
        let j = flink::check_connector_jar(jar).map_err(flink_failure)?;
        println!("{}: a flink-connector-kafka jar, {} bytes, sha256 {}", j.path.display(), j.size, j.sha256);
    }
    Ok(())
}

/// The brokers' class-data archive for `dist` (made once; see `cluster::local::cds`).
async fn class_archive(v: &str, dist: &sinkhole_install::KafkaDist) {
    if std::env::var("SINKHOLE_CDS").is_ok_and(|v| v == "off") {
        return;
    }
    if !matches!(cds::archive_path(dist), Some(p) if p.is_file()) {
        progress(&format!(
            "Kafka {v}: making the brokers' class-data archive (a 1-node cluster starts and stops once)"
        ));
    }
    match cds::build(dist).await {
        Ok(cds::Built::Made { path, bytes, elapsed }) => println!(
            "Kafka {v}: class-data archive of {:.1} MiB made in {:.1} s at {}",
            bytes as f64 / (1024.0 * 1024.0),
            elapsed.as_secs_f64(),
            path.display()
        ),
        Ok(cds::Built::AlreadyThere(_)) => {}
        Ok(cds::Built::Skipped(why)) => println!("Kafka {v}: no class-data archive ({why}); brokers start without it"),
        // Only start-up speed is at stake: say why, and go on without it.
        Err(e) => println!("Kafka {v}: no class-data archive (making it failed: {e}); brokers start without it"),
    }
}

/// Exit 2 for the user's input (versions, a jar that is no connector), 1 for the machine.
pub fn flink_failure(e: FlinkError) -> Failure {
    if e.is_bad_input() {
        bad(e)
    } else {
        Failure::Failed(e.into())
    }
}
