//! `sinkhole image build`: a Kafka image for the containers backend, built
//! with no registry ([`sinkhole_rig::image`]).
use super::args::ImageCmd;
use super::{bad, Failure};
use anyhow::anyhow;
#[cfg(feature = "containers")]
use {
    super::{install_failure, progress},
    anyhow::Context,
};

pub fn run(cmd: ImageCmd) -> Result<(), Failure> {
    match cmd {
        ImageCmd::Build { kafka, tag, json } => build(&kafka, tag, json),
    }
}

#[cfg(not(feature = "containers"))]
fn build(_: &str, _: Option<String>, _: bool) -> Result<(), Failure> {
    Err(bad(anyhow!(sinkhole_rig::run::CONTAINERS_NOT_BUILT)))
}

#[cfg(feature = "containers")]
fn build(kafka: &str, tag: Option<String>, json: bool) -> Result<(), Failure> {
    let v = sinkhole_install::parse_versions(kafka).map_err(bad)?;
    if v.len() != 1 {
        return Err(bad(anyhow!("--kafka takes one version here, got {}", v.join(","))));
    }
    let dist = sinkhole_install::ensure(&v[0], &mut |l| progress(l)).map_err(install_failure)?;
    let tag = tag.unwrap_or_else(|| sinkhole_cluster::containers::image::default_tag(&v[0]));
    let work = std::env::temp_dir().join(format!("sinkhole-image-{}", std::process::id()));
    let host = sinkhole_cluster::containers::docker_host();
    let r = sinkhole_cluster::containers::image::build(&dist, &tag, &work, host.as_deref(), &mut |l| progress(l))
        .context("building the image")?;
    if json {
        print!("{}", sinkhole_base::provenance::to_json(&r)?);
    } else {
        println!(
            "image {}: Kafka {}, JRE by {}, {:.0} MiB root filesystem, built and imported ({}) in {:.1} s",
            r.tag,
            r.kafka,
            r.jre,
            r.rootfs_bytes as f64 / 1048576.0,
            r.imported_with,
            r.elapsed_ms as f64 / 1000.0
        );
    }
    Ok(())
}
