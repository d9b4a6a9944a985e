//! `sinkhole setup`: installs Kafka versions from Maven Central into the
//! cache (idempotent); see [`sinkhole_rig::install`].
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
    Ok(())
}
