//! A class-data sharing archive for the brokers' JVMs: faster cluster starts.
//!
//! Why: a Kafka broker loads about 9,000 classes before it answers, and on a
//! 2-core machine that class loading is most of the seconds a cluster start
//! takes — time that is not the scenario's own, paid again by every fresh
//! cluster, every `restart` fault and every storage format. The JVM can map
//! already-parsed classes from an archive instead (JEP 350, dynamic CDS, in
//! every JDK since 13): `-XX:ArchiveClassesAtExit` writes one when a JVM exits
//! normally, `-XX:SharedArchiveFile` uses it. It changes how fast classes are
//! loaded, nothing the broker does.
//!
//! The archive is made once per Kafka version and JVM by [`build`] (`sinkhole
//! setup` calls it): a 1-node cluster starts with `ArchiveClassesAtExit`, waits
//! until it answers, and is stopped with SIGTERM (Kafka's controlled shutdown,
//! then a normal JVM exit, which writes the archive). Its name carries a
//! fingerprint of the `java` binary, so a different JVM never picks up an
//! archive it cannot use; a JVM that still finds it unusable (jars changed)
//! says so in the node's log and starts without it (`-Xshare:auto`, the
//! default). `SINKHOLE_CDS=off` starts brokers without the archive.
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::{LocalCluster, LocalSpec};
use crate::node::io;
use crate::{ClusterError, ClusterNodes, NodeAction};
use sinkhole_install::{cache_root, KafkaDist};

/// What a node's JVM does with the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClassArchive {
    /// No archive (none made yet, or `SINKHOLE_CDS=off`).
    Off,
    /// Map the classes from this archive.
    Use(PathBuf),
    /// Write an archive here when the JVM exits normally ([`build`] only).
    DumpAtExit(PathBuf),
}

impl ClassArchive {
    /// The archive a broker of `dist` uses: the one [`build`] made, if it exists.
    pub fn for_dist(dist: &KafkaDist) -> ClassArchive {
        if std::env::var("SINKHOLE_CDS").is_ok_and(|v| v == "off") {
            return ClassArchive::Off;
        }
        match archive_path(dist) {
            Some(p) if p.is_file() => ClassArchive::Use(p),
            _ => ClassArchive::Off,
        }
    }

    /// The JVM options.
    pub fn jvm_args(&self) -> Vec<String> {
        match self {
            ClassArchive::Off => vec![],
            ClassArchive::Use(p) => vec![format!("-XX:SharedArchiveFile={}", p.display())],
            ClassArchive::DumpAtExit(p) => vec![format!("-XX:ArchiveClassesAtExit={}", p.display())],
        }
    }
}

/// Where the archive of `dist` on this machine's `java` lives (None when the
/// `java` binary cannot be found to fingerprint it).
pub fn archive_path(dist: &KafkaDist) -> Option<PathBuf> {
    let java = fs::canonicalize(dist.java()).ok()?;
    let key = fingerprint(&java, &dist.lib_dir)?;
    Some(cache_root().join("cds").join(format!("kafka-{}-{key}.jsa", dist.version)))
}

/// The java binary (path, size, modification time) and the jar directory: an
/// archive is only valid for the JVM build and the classpath that made it.
fn fingerprint(java: &Path, lib_dir: &Path) -> Option<String> {
    let meta = fs::metadata(java).ok()?;
    let mtime = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    let mut h = Sha256::new();
    h.update(format!("{}\n{}\n{}\n{}", java.display(), meta.len(), mtime, lib_dir.display()));
    Some(h.finalize().iter().take(6).map(|b| format!("{b:02x}")).collect())
}

/// What [`build`] did.
#[derive(Debug)]
pub enum Built {
    Made {
        path: PathBuf,
        bytes: u64,
        elapsed: Duration,
    },
    AlreadyThere(PathBuf),
    /// Not made, and why; brokers start without it (slower, same behaviour).
    Skipped(String),
}

/// Makes the archive of `dist` if it is missing (see the module doc).
pub async fn build(dist: &KafkaDist) -> Result<Built, ClusterError> {
    let Some(path) = archive_path(dist) else {
        return Ok(Built::Skipped(format!("cannot fingerprint the java binary {}", dist.java().display())));
    };
    if path.is_file() {
        return Ok(Built::AlreadyThere(path));
    }
    let dir = path.parent().expect("the archive path has a directory");
    fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    let started = std::time::Instant::now();
    let tmp = dir.join(format!(".kafka-{}-{}.jsa.tmp", dist.version, std::process::id()));
    let _ = fs::remove_file(&tmp);
    let work = std::env::temp_dir().join(format!("sinkhole-cds-{}-{}", dist.version, std::process::id()));
    let mut spec = LocalSpec::new(dist.clone(), 1, work);
    spec.remove_dir_on_teardown = true;
    spec.class_archive = ClassArchive::DumpAtExit(tmp.clone());
    let mut cluster = LocalCluster::start(spec).await?;
    // A graceful stop: the JVM exits normally and writes the archive on its way out.
    let stopped = cluster.act(1, NodeAction::Stop, Duration::from_secs(60)).await;
    cluster.teardown();
    stopped?;
    match fs::metadata(&tmp) {
        Ok(m) if m.len() > 0 => {
            fs::rename(&tmp, &path).map_err(io(format!("renaming {} to {}", tmp.display(), path.display())))?;
            Ok(Built::Made { path, bytes: m.len(), elapsed: started.elapsed() })
        }
        _ => {
            let _ = fs::remove_file(&tmp);
            Ok(Built::Skipped("the broker JVM exited without writing a class-data archive".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_choice_gives_its_jvm_option() {
        assert!(ClassArchive::Off.jvm_args().is_empty());
        assert_eq!(ClassArchive::Use("/a/k.jsa".into()).jvm_args(), vec!["-XX:SharedArchiveFile=/a/k.jsa"]);
        assert_eq!(ClassArchive::DumpAtExit("/a/k.jsa".into()).jvm_args(), vec!["-XX:ArchiveClassesAtExit=/a/k.jsa"]);
    }

    #[test]
    fn the_fingerprint_follows_the_jvm_and_the_jars() {
        let dir = std::env::temp_dir().join(format!("sinkhole-cds-fp-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let java = dir.join("java");
        fs::write(&java, b"one").unwrap();
        let a = fingerprint(&java, Path::new("/libs/4.4.0")).unwrap();
        assert_eq!(a, fingerprint(&java, Path::new("/libs/4.4.0")).unwrap(), "stable");
        assert_ne!(a, fingerprint(&java, Path::new("/libs/4.2.0")).unwrap(), "other jars");
        fs::write(&java, b"another build").unwrap();
        assert_ne!(a, fingerprint(&java, Path::new("/libs/4.4.0")).unwrap(), "another JVM");
        let _ = fs::remove_dir_all(&dir);
    }
}
