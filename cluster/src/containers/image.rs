//! `sinkhole image build`: a Kafka container image made without any registry.
//!
//! The containers backend runs `apache/kafka:<version>` where the engine can pull it. Where no
//! registry is reachable, this builds an equivalent image from what the machine already has:
//! the Kafka jars of the cache (`sinkhole setup`, see [`sinkhole_install`]) and the host's Java
//! runtime. The image is a plain root filesystem — no base image — imported into the engine
//! (`docker import` / `podman import`, the engine's `POST /images/create?fromSrc=-`):
//!
//! - `/opt/java/openjdk`: a JRE. With the host JDK's `jlink` and `jmods` it is a jlinked runtime
//!   of the modules a broker uses (much smaller than the JDK); otherwise the host's Java home,
//!   copied with its symbolic links resolved (Debian's point into `/etc`).
//! - the shared libraries the JRE and `/bin/sh` load, found with `ldd`, at their host paths, and
//!   the dynamic loader;
//! - `/opt/kafka/libs/*.jar` and `/opt/kafka/config/sinkhole-log4j2.xml` (everything to stdout, so
//!   the engine's log is the broker's log);
//! - `/var/lib/kafka/data`, `/tmp`, a minimal `/etc/passwd`, `/etc/group`, `/etc/nsswitch.conf`.
//!
//! The same paths (`/opt/kafka/libs`, `/opt/java/openjdk/bin`) exist in the `apache/kafka` image,
//! so the backend starts both with one command line.
use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{anyhow, bail, Context};
use serde::Serialize;

use sinkhole_install::KafkaDist;

/// The tag `sinkhole image build` gives the image of Kafka `version`, and the image the
/// containers backend looks for first. An explicit tag (not `latest`) keeps testcontainers from
/// trying to pull it.
pub fn default_tag(version: &str) -> String {
    format!("localhost/sinkhole-kafka:{version}")
}

/// The official image of Kafka `version`, used when no local image exists.
pub fn upstream_tag(version: &str) -> String {
    format!("apache/kafka:{version}")
}

/// Modules of a broker's runtime: what Kafka and its dependencies use (JMX, SASL/GSSAPI, JNDI,
/// `sun.misc.Unsafe`, the JFR and management extensions, zip file systems). `java.se` brings the
/// standard API whole, so a dependency reaching for `java.beans` or `java.sql` still finds it.
const JRE_MODULES: &str = "java.se,jdk.unsupported,jdk.management,jdk.management.agent,jdk.crypto.ec,\
jdk.security.auth,jdk.security.jgss,jdk.naming.dns,jdk.zipfs,jdk.jfr,jdk.net,jdk.charsets,jdk.localedata";

#[derive(Debug, Clone, Serialize)]
pub struct BuildReport {
    pub tag: String,
    pub kafka: String,
    /// `jlink` or `copy`: how the JRE was made.
    pub jre: String,
    /// Bytes of the root filesystem (the image's one layer, uncompressed).
    pub rootfs_bytes: u64,
    pub elapsed_ms: u64,
    /// Which command imported it.
    pub imported_with: String,
}

/// Builds and imports the image of `dist` as `tag`. `work` is a scratch directory (removed
/// after). `docker_host`, when known, is handed to the `docker` command line.
pub fn build(
    dist: &KafkaDist,
    tag: &str,
    work: &Path,
    docker_host: Option<&str>,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<BuildReport> {
    let t0 = Instant::now();
    let _ = fs::remove_dir_all(work);
    let root = work.join("rootfs");
    fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    let result = (|| {
        let java_home = java_home(&dist.java())?;
        progress(&format!("JRE from {}", java_home.display()));
        let jre_dir = root.join("opt/java/openjdk");
        let jre = make_jre(&java_home, &jre_dir)?;
        progress(&format!("JRE made by {jre}; copying shared libraries"));
        let sh = fs::canonicalize("/bin/sh").context("resolving /bin/sh")?;
        copy_file(&sh, &root.join("bin/sh"))?;
        let mut elves = vec![sh];
        collect_elves(&jre_dir, &mut elves)?;
        let libs = shared_libraries(&elves)?;
        for lib in &libs {
            let real = fs::canonicalize(lib).with_context(|| format!("resolving {}", lib.display()))?;
            copy_file(&real, &root.join(lib.strip_prefix("/").unwrap_or(lib)))?;
        }
        progress(&format!("{} shared libraries; copying the Kafka {} jars", libs.len(), dist.version));
        let libs_dir = root.join("opt/kafka/libs");
        fs::create_dir_all(&libs_dir)?;
        let mut jars = 0;
        for e in fs::read_dir(&dist.lib_dir).with_context(|| format!("reading {}", dist.lib_dir.display()))? {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "jar") {
                copy_file(&p, &libs_dir.join(p.file_name().expect("a jar has a name")))?;
                jars += 1;
            }
        }
        if jars == 0 {
            bail!("no jars in {}: run `sinkhole setup --kafka {}` first", dist.lib_dir.display(), dist.version);
        }
        copy_file(&dist.log4j_config(), &root.join("opt/kafka/config/sinkhole-log4j2.xml"))?;
        for d in ["var/lib/kafka/data", "tmp", "etc", "root"] {
            fs::create_dir_all(root.join(d))?;
        }
        fs::set_permissions(root.join("tmp"), fs::Permissions::from_mode(0o1777))?;
        fs::write(root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n")?;
        fs::write(root.join("etc/group"), "root:x:0:\n")?;
        // glibc resolves container hostnames through the engine's /etc/hosts and DNS.
        fs::write(root.join("etc/nsswitch.conf"), "hosts: files dns\n")?;
        let bytes = dir_bytes(&root)?;
        progress(&format!("root filesystem: {:.0} MiB; importing as {tag}", bytes as f64 / 1048576.0));
        let imported_with = import(&root, tag, &dist.version, docker_host)?;
        Ok(BuildReport {
            tag: tag.to_string(),
            kafka: dist.version.clone(),
            jre,
            rootfs_bytes: bytes,
            elapsed_ms: 0,
            imported_with,
        })
    })();
    let _ = fs::remove_dir_all(work);
    let mut report = result?;
    report.elapsed_ms = t0.elapsed().as_millis() as u64;
    Ok(report)
}

/// The Java home of a `java` launcher (`<home>/bin/java`, symbolic links resolved).
fn java_home(java: &Path) -> anyhow::Result<PathBuf> {
    let java = if java.components().count() == 1 {
        sinkhole_install::find_in_path(&java.to_string_lossy()).ok_or_else(|| anyhow!("no `java` on PATH"))?
    } else {
        java.to_path_buf()
    };
    let real = fs::canonicalize(&java).with_context(|| format!("resolving {}", java.display()))?;
    real.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .ok_or_else(|| anyhow!("{} is not <java home>/bin/java", real.display()))
}

/// A JRE at `out`: jlinked when the JDK can (smaller), else the Java home copied.
fn make_jre(home: &Path, out: &Path) -> anyhow::Result<String> {
    let jlink = home.join("bin/jlink");
    if jlink.is_file() && home.join("jmods").is_dir() {
        let o = Command::new(&jlink)
            .args(["--add-modules", JRE_MODULES, "--strip-debug", "--no-header-files", "--no-man-pages"])
            .args(["--compress=2", "--output"])
            .arg(out)
            .output()
            .context("running jlink")?;
        if o.status.success() {
            return Ok("jlink".into());
        }
        tracing::warn!(stderr = %String::from_utf8_lossy(&o.stderr), "jlink failed; copying the Java home instead");
        let _ = fs::remove_dir_all(out);
    }
    for part in ["bin", "lib", "conf", "release"] {
        let src = home.join(part);
        if src.exists() {
            copy_tree(&src, &out.join(part))?;
        }
    }
    // The JDK's sources and module files are not needed to run.
    for junk in ["lib/src.zip", "lib/ct.sym"] {
        let _ = fs::remove_file(out.join(junk));
    }
    Ok("copy".into())
}

/// Copies a tree, following symbolic links (dangling ones are skipped).
fn copy_tree(src: &Path, dst: &Path) -> anyhow::Result<()> {
    let meta = match fs::metadata(src) {
        Ok(m) => m,
        Err(_) => return Ok(()), // a dangling link
    };
    if meta.is_dir() {
        fs::create_dir_all(dst)?;
        for e in fs::read_dir(src)? {
            let e = e?;
            copy_tree(&e.path(), &dst.join(e.file_name()))?;
        }
        Ok(())
    } else {
        copy_file(src, dst)
    }
}

fn copy_file(src: &Path, dst: &Path) -> anyhow::Result<()> {
    if let Some(p) = dst.parent() {
        fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))?;
    }
    fs::copy(src, dst).with_context(|| format!("copying {} to {}", src.display(), dst.display()))?;
    Ok(())
}

/// Executables and shared objects under `dir`.
fn collect_elves(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for e in fs::read_dir(dir)? {
        let p = e?.path();
        let meta = fs::symlink_metadata(&p)?;
        if meta.is_dir() {
            collect_elves(&p, out)?;
        } else if meta.is_file() {
            let mut magic = [0u8; 4];
            if let Ok(mut f) = fs::File::open(&p) {
                use std::io::Read;
                if f.read_exact(&mut magic).is_ok() && magic == *b"\x7fELF" {
                    out.push(p);
                }
            }
        }
    }
    Ok(())
}

/// The host paths of the shared libraries (and the dynamic loader) that `elves` load, by `ldd`.
/// Libraries `ldd` cannot find (the JRE's X11 and sound back ends) are left out: a headless
/// broker never loads them.
fn shared_libraries(elves: &[PathBuf]) -> anyhow::Result<BTreeSet<PathBuf>> {
    let mut out = BTreeSet::new();
    for chunk in elves.chunks(64) {
        let o = Command::new("ldd").args(chunk).stderr(Stdio::null()).output().context("running ldd")?;
        for line in String::from_utf8_lossy(&o.stdout).lines() {
            out.extend(parse_ldd_line(line));
        }
    }
    Ok(out)
}

/// `libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x…)` or `/lib64/ld-linux-x86-64.so.2 (0x…)`.
fn parse_ldd_line(line: &str) -> Option<PathBuf> {
    let line = line.trim();
    // With several files, ldd heads each list with "<file>:".
    if line.ends_with(':') {
        return None;
    }
    let path = match line.split_once("=>") {
        Some((_, rest)) => rest.split_whitespace().next()?,
        None => line.split_whitespace().next()?,
    };
    path.starts_with('/').then(|| PathBuf::from(path))
}

fn dir_bytes(dir: &Path) -> anyhow::Result<u64> {
    let mut n = 0;
    for e in fs::read_dir(dir)? {
        let e = e?;
        let m = fs::symlink_metadata(e.path())?;
        n += if m.is_dir() { dir_bytes(&e.path())? } else { m.len() };
    }
    Ok(n)
}

/// `tar | docker import` (through the engine's API at `docker_host`), else `tar | podman import`.
fn import(root: &Path, tag: &str, version: &str, docker_host: Option<&str>) -> anyhow::Result<String> {
    let cli = ["docker", "podman"]
        .into_iter()
        .find(|c| sinkhole_install::find_in_path(c).is_some())
        .ok_or_else(|| anyhow!("neither `docker` nor `podman` is on PATH: cannot import the image"))?;
    let mut tar = Command::new("tar")
        .args(["--numeric-owner", "--owner=0", "--group=0", "-C"])
        .arg(root)
        .args(["-cf", "-", "."])
        .stdout(Stdio::piped())
        .spawn()
        .context("running tar")?;
    let mut cmd = Command::new(cli);
    cmd.args(["import", "--change", "ENV PATH=/opt/java/openjdk/bin:/usr/bin:/bin"])
        .args(["--change", &format!("LABEL sinkhole.kafka={version}")])
        .args(["--change", "CMD [\"/bin/sh\"]", "-", tag])
        .stdin(tar.stdout.take().expect("piped"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if cli == "docker" {
        if let Some(h) = docker_host {
            cmd.env("DOCKER_HOST", h);
        }
    }
    let o = cmd.output().with_context(|| format!("running {cli} import"))?;
    let tar_status = tar.wait()?;
    if !o.status.success() || !tar_status.success() {
        bail!(
            "{cli} import {tag} failed ({}; tar {tar_status}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(cli.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_lines_give_host_paths_and_skip_what_is_missing() {
        assert_eq!(
            parse_ldd_line("\tlibz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x00007f)"),
            Some(PathBuf::from("/lib/x86_64-linux-gnu/libz.so.1"))
        );
        assert_eq!(
            parse_ldd_line("\t/lib64/ld-linux-x86-64.so.2 (0x00007f)"),
            Some(PathBuf::from("/lib64/ld-linux-x86-64.so.2"))
        );
        assert_eq!(parse_ldd_line("\tlinux-vdso.so.1 (0x00007ffd)"), None);
        assert_eq!(parse_ldd_line("\tlibX11.so.6 => not found"), None);
        assert_eq!(parse_ldd_line("/usr/lib/jvm/x/bin/java:"), None);
    }

    #[test]
    fn tags() {
        assert_eq!(default_tag("4.4.0"), "localhost/sinkhole-kafka:4.4.0");
        assert_eq!(upstream_tag("4.4.0"), "apache/kafka:4.4.0");
    }
}
