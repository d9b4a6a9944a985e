//! `sinkhole setup`: installs Kafka versions from Maven Central into the
//! cache (idempotent), and with `--flink` the Flink subject's cluster
//! classpath and job; see [`sinkhole_rig::install`].
use sinkhole_rig::install::flink::{self, FlinkError, FlinkOutcome};
use sinkhole_rig::install::{self, InstallOutcome};

use super::args::SetupArgs;
use super::{bad, install_failure, progress, Failure};

pub fn run(a: SetupArgs) -> Result<(), Failure> {
    let versions = install::parse_versions(&a.kafka).map_err(bad)?;
    for v in versions {
        match install::install(&v, &mut |l| progress(l)) {
            Ok(InstallOutcome::Installed { dist, jars, elapsed }) => println!(
                "Kafka {v}: installed {jars} jars in {:.1} s at {}",
                elapsed.as_secs_f64(),
                dist.home.display()
            ),
            Ok(InstallOutcome::AlreadyInstalled { dist }) => {
                println!("Kafka {v}: already installed at {} (nothing to do)", dist.home.display())
            }
            Err(e) => return Err(install_failure(e)),
        }
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
        match flink::install(f, &connector, &mut |l| progress(l)) {
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
    if let Some(jar) = &a.connector_jar {
        let j = flink::check_connector_jar(jar).map_err(flink_failure)?;
        println!("{}: a flink-connector-kafka jar, {} bytes, sha256 {}", j.path.display(), j.size, j.sha256);
    }
    Ok(())
}

/// Exit 2 for the user's input (versions, a jar that is no connector), 1 for the machine.
pub fn flink_failure(e: FlinkError) -> Failure {
    if e.is_bad_input() {
        bad(e)
    } else {
        Failure::Failed(e.into())
    }
}
