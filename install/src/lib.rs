//! Kafka distributions for the `local` cluster backend.
//!
//! Released brokers come from Maven Central through the machine's `mvn`: a generated
//! pom (packaging `pom`) depends on `org.apache.kafka:kafka_2.13:<v>`,
//! `org.apache.kafka:kafka-tools:<v>`, log4j-core and an SLF4J binding, and
//! `mvn dependency:copy-dependencies -DincludeScope=runtime` copies the runtime
//! classpath into `<cache>/kafka/<v>/libs/`. The broker then runs as
//! `java -cp '<libs>/*' kafka.Kafka server.properties`.
//!
//! An install is built in a hidden directory next to its final place and renamed
//! into place only when complete (libs, log4j2 config, a successful smoke run of
//! `kafka.tools.StorageTool random-uuid`, and the marker file `sinkhole-dist.json`
//! listing every jar with its size). A Ctrl-C during the download leaves at most a
//! hidden `.<v>.partial-*` directory, which the next install removes.
//!
//! `mvn` and the `java` runs are owned processes ([`sinkhole_base::procs`]), like brokers:
//! each in a process group of its own, killed when the rig ends (Ctrl-C, a signal,
//! or the rig's own death), so an interrupted `sinkhole setup` leaves no Maven
//! (and no JVM it started) downloading on.
//!
//! Alternatively `KAFKA_HOME` (or `--kafka-home`) names any unpacked Kafka
//! distribution (a directory with `libs/*.jar`), e.g. a trunk build.
//!
//! Here: the distribution and error types, the cache, versions, the marker,
//! resolving and installing; `maven` runs Maven, `workdir` builds the install's
//! directory.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use sinkhole_base::procs;

pub mod flink;
mod maven;
#[cfg(test)]
mod tests;
mod workdir;

use maven::{artifacts, classify_failure, describe_status, kafka_goals, pom_xml, run_mvn};
pub use workdir::is_kafka_uuid;

/// The Kafka release the rig uses when none is named.
pub const DEFAULT_KAFKA: &str = "4.4.0";
use workdir::{
    list_jars, lock_version, prune_slf4j_bindings, remove_stale_work_dirs, smoke_test, unique, write_file,
    write_log4j_config, TempDir,
};

/// Main class of the Kafka broker (in the kafka_2.13 jar).
pub const BROKER_MAIN_CLASS: &str = "kafka.Kafka";
/// Main class of `kafka-storage.sh` (in the kafka_2.13 jar).
pub const STORAGE_TOOL_CLASS: &str = "kafka.tools.StorageTool";
/// Name of the marker written last into a complete cached install.
pub const MARKER_FILE: &str = "sinkhole-dist.json";
/// Name of the generated log4j2 configuration inside a cached install.
pub const LOG4J_CONFIG_FILE: &str = "log4j2.xml";
/// log4j2 version put on the classpath of cached installs. Our direct dependency wins
/// Maven's mediation over any version Kafka's poms declare, so this is what runs:
/// Kafka 4.4.0's kafka-server declares log4j-api/log4j-core 2.25.5 (4.0.x declares none).
pub const LOG4J_VERSION: &str = "2.25.5";
/// Environment variable overriding [`cache_root`].
pub const CACHE_ENV: &str = "SINKHOLE_CACHE";
/// Environment variable naming the Maven local repository (default: Maven's own, ~/.m2/repository).
pub const MAVEN_REPO_ENV: &str = "SINKHOLE_MAVEN_REPO";

const KAFKA_GROUP: &str = "org.apache.kafka";
const KAFKA_CORE_ARTIFACT: &str = "kafka_2.13";
const MARKER_FORMAT: u32 = 1;
/// Generated config used for a KAFKA_HOME without config/log4j2.yaml.
const KAFKA_HOME_LOG4J_FILE: &str = "log4j2-stdout.xml";
const MIN_JAVA: u32 = 17;
const TAIL_LINES: usize = 15;
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// A Kafka distribution the local cluster backend can start brokers from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaDist {
    pub version: String,
    pub home: PathBuf,
    pub lib_dir: PathBuf,
    pub source: DistSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistSource {
    /// Installed by `sinkhole setup` into [`cache_root`]`/kafka/<version>`.
    Cache,
    /// A distribution directory named by `--kafka-home` or `KAFKA_HOME`.
    KafkaHome,
}

impl KafkaDist {
    /// The JVM classpath: `<lib_dir>/*` (java expands the wildcard itself).
    pub fn classpath(&self) -> String {
        format!("{}/*", self.lib_dir.display())
    }

    /// A log4j2 configuration for brokers and tools. For a cached install it is the
    /// generated `log4j2.xml` (everything to stdout, INFO, chatty loggers at WARN).
    /// For a KAFKA_HOME it is `config/log4j2.yaml` when present (Kafka's own, which
    /// also writes files under `-Dkafka.logs.dir`, see [`KafkaDist::log4j_jvm_args`]),
    /// else a generated stdout config under [`cache_root`] (written by [`resolve`];
    /// this method writes it too if it is missing, best effort).
    pub fn log4j_config(&self) -> PathBuf {
        match self.source {
            DistSource::Cache => self.home.join(LOG4J_CONFIG_FILE),
            DistSource::KafkaHome => {
                let own = self.home.join("config").join("log4j2.yaml");
                if own.is_file() {
                    return own;
                }
                let generated = cache_root().join(KAFKA_HOME_LOG4J_FILE);
                if !generated.is_file() {
                    let _ = write_log4j_config(&generated);
                }
                generated
            }
        }
    }

    /// JVM options for logging: the log4j2 config and `kafka.logs.dir` (used by Kafka's
    /// own log4j2.yaml for its file appenders; harmless with the generated config).
    pub fn log4j_jvm_args(&self, logs_dir: &Path) -> Vec<String> {
        vec![
            format!("-Dlog4j2.configurationFile={}", self.log4j_config().display()),
            format!("-Dkafka.logs.dir={}", logs_dir.display()),
        ]
    }

    /// `$JAVA_HOME/bin/java` if JAVA_HOME is set, else `java` found on PATH
    /// (plain `java` if it is on neither; [`check_java`] reports that clearly).
    pub fn java(&self) -> PathBuf {
        java_path()
    }
}

/// Result of [`install`].
#[derive(Debug, Clone)]
pub enum InstallOutcome {
    Installed { dist: KafkaDist, jars: usize, elapsed: Duration },
    AlreadyInstalled { dist: KafkaDist },
}

impl InstallOutcome {
    pub fn dist(&self) -> &KafkaDist {
        match self {
            InstallOutcome::Installed { dist, .. } | InstallOutcome::AlreadyInstalled { dist } => dist,
        }
    }

    pub fn into_dist(self) -> KafkaDist {
        match self {
            InstallOutcome::Installed { dist, .. } | InstallOutcome::AlreadyInstalled { dist } => dist,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("invalid Kafka version \"{item}\": {reason} (expected digits and dots with an optional -suffix, e.g. 4.4.0 or 4.1.0-SNAPSHOT)")]
    InvalidVersion { item: String, reason: String },

    #[error("no Kafka version in \"{list}\" (expected a comma-separated list such as 4.4.0,4.0.2)")]
    EmptyVersionList { list: String },

    #[error("java not found: {detail}; install a JDK 17+, e.g. apt-get install openjdk-17-jre-headless (or set JAVA_HOME to one)")]
    JavaMissing { detail: String },

    #[error("{} is Java {version}, but Kafka 4.x needs Java 17 or newer; install a JDK 17+, e.g. apt-get install openjdk-17-jre-headless, and set JAVA_HOME to it", java.display())]
    JavaTooOld { java: PathBuf, version: String },

    #[error("mvn (Apache Maven) not found on PATH; sinkhole downloads Kafka from Maven Central with it: apt-get install maven")]
    MavenMissing,

    #[error("cannot download Kafka {version}: mvn cannot reach Maven Central: {line}\n  check the network, or the proxy and mirror settings in ~/.m2/settings.xml; full mvn log: {}", log.display())]
    MavenUnreachable { version: String, line: String, log: PathBuf },

    #[error("Kafka {version} is not published on Maven Central as org.apache.kafka:kafka_2.13; released 4.x versions look like 4.0.2 or 4.4.0 (mvn: {line}; full log: {})", log.display())]
    UnknownVersion { version: String, line: String, log: PathBuf },

    #[error("mvn failed ({status}) while resolving Kafka {version}; last lines of its output:\n{tail}\nfull mvn log: {}", log.display())]
    MavenFailed { version: String, status: String, tail: String, log: PathBuf },

    #[error("mvn reported success for Kafka {version} but did not copy {jar}; full mvn log: {}", log.display())]
    IncompleteDownload { version: String, jar: String, log: PathBuf },

    #[error("the downloaded Kafka {version} does not run: `{command}` {status}; its output:\n{output}")]
    SmokeTestFailed { version: String, command: String, status: String, output: String },

    #[error("Kafka {version} is not installed (looked in {}{}); run `sinkhole setup --kafka {version}`, or point --kafka-home / KAFKA_HOME at a Kafka distribution", home.display(), incomplete.as_ref().map(|r| format!(": an earlier install there is incomplete, {r}")).unwrap_or_default())]
    NotInstalled { version: String, home: PathBuf, incomplete: Option<String> },

    #[error("no Kafka version chosen: pass --kafka <version> (installed: {}) or --kafka-home <dir> / KAFKA_HOME", if installed.is_empty() { "none; install one with `sinkhole setup --kafka 4.4.0`".to_string() } else { installed.join(", ") })]
    NoVersion { installed: Vec<String> },

    #[error("KAFKA_HOME {} does not exist or is not a directory", path.display())]
    KafkaHomeNotFound { path: PathBuf },

    #[error("KAFKA_HOME {} has no libs/ directory; point it at an unpacked Kafka distribution (the directory holding bin/, config/ and libs/), e.g. a trunk build's core/build/distributions/kafka_2.13-<version>.tgz after ./gradlew releaseTarGz, unpacked", path.display())]
    KafkaHomeNoLibs { path: PathBuf },

    #[error("KAFKA_HOME {}: libs/ has no kafka_2.13-<version>.jar or kafka-clients-<version>.jar, so it is not a Kafka distribution (for a trunk build, run ./gradlew releaseTarGz and unpack core/build/distributions/kafka_2.13-*.tgz)", path.display())]
    KafkaHomeNoKafkaJar { path: PathBuf },

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}

impl InstallError {
    /// Whether the error is about the user's input (a version, a KAFKA_HOME, a missing
    /// `sinkhole setup`) rather than the machine (java, mvn, network, disk).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            InstallError::InvalidVersion { .. }
                | InstallError::EmptyVersionList { .. }
                | InstallError::UnknownVersion { .. }
                | InstallError::NotInstalled { .. }
                | InstallError::NoVersion { .. }
                | InstallError::KafkaHomeNotFound { .. }
                | InstallError::KafkaHomeNoLibs { .. }
                | InstallError::KafkaHomeNoKafkaJar { .. }
        )
    }
}

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> InstallError {
    let context = context.into();
    move |source| InstallError::Io { context, source }
}

// ---------------------------------------------------------------------------
// locations and tools

/// `$SINKHOLE_CACHE`, else `$XDG_CACHE_HOME/sinkhole`, else `~/.cache/sinkhole`
/// (made absolute against the current directory if relative).
pub fn cache_root() -> PathBuf {
    let root = if let Some(dir) = non_empty_env(CACHE_ENV) {
        PathBuf::from(dir)
    } else if let Some(xdg) = non_empty_env("XDG_CACHE_HOME").filter(|d| Path::new(d).is_absolute()) {
        PathBuf::from(xdg).join("sinkhole")
    } else if let Some(home) = non_empty_env("HOME") {
        PathBuf::from(home).join(".cache").join("sinkhole")
    } else {
        // SAFETY: getuid has no preconditions and cannot fail
        let uid = unsafe { libc::getuid() };
        std::env::temp_dir().join(format!("sinkhole-cache-{uid}"))
    };
    std::path::absolute(&root).unwrap_or(root)
}

fn non_empty_env(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// The first executable file called `name` in a directory of `$PATH`.
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn java_path() -> PathBuf {
    if let Some(home) = non_empty_env("JAVA_HOME") {
        return PathBuf::from(home).join("bin").join("java");
    }
    find_in_path("java").unwrap_or_else(|| PathBuf::from("java"))
}

/// The java that brokers will run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JavaInfo {
    pub path: PathBuf,
    /// The quoted version from `java -version`, e.g. "17.0.15".
    pub version: String,
    pub major: u32,
}

/// Checks that the java of [`KafkaDist::java`] exists and is 17 or newer.
pub fn check_java() -> Result<JavaInfo, InstallError> {
    let java = java_path();
    if let Some(home) = non_empty_env("JAVA_HOME") {
        if !is_executable(&java) {
            return Err(InstallError::JavaMissing {
                detail: format!(
                    "JAVA_HOME is {} but {} is not an executable file",
                    Path::new(&home).display(),
                    java.display()
                ),
            });
        }
    } else if !java.is_absolute() {
        return Err(InstallError::JavaMissing { detail: "JAVA_HOME is not set and there is no `java` on PATH".into() });
    }
    let mut cmd = Command::new(&java);
    cmd.arg("-version");
    let out = procs::output(cmd)
        .map_err(|e| InstallError::JavaMissing { detail: format!("cannot run {}: {e}", java.display()) })?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
    if !out.status.success() {
        return Err(InstallError::JavaMissing {
            detail: format!("`{} -version` failed ({}): {}", java.display(), describe_status(out.status), text.trim()),
        });
    }
    match parse_java_version(&text) {
        Some((version, major)) if major < MIN_JAVA => Err(InstallError::JavaTooOld { java, version }),
        Some((version, major)) => Ok(JavaInfo { path: java, version, major }),
        None => {
            tracing::warn!(java = %java.display(), output = %text.trim(), "cannot parse `java -version`; assuming Java 17+");
            Ok(JavaInfo { path: java, version: "unknown".into(), major: MIN_JAVA })
        }
    }
}

/// Parses `openjdk version "17.0.15" 2025-04-15` / `java version "1.8.0_292"`.
fn parse_java_version(output: &str) -> Option<(String, u32)> {
    let line = output.lines().find(|l| l.contains(" version \""))?;
    let quoted = line.split('"').nth(1)?.to_string();
    let mut parts = quoted.split(|c: char| !c.is_ascii_digit());
    let first: u32 = parts.next()?.parse().ok()?;
    let major = if first == 1 { parts.next()?.parse().ok()? } else { first };
    Some((quoted, major))
}

fn find_mvn() -> Result<PathBuf, InstallError> {
    find_in_path("mvn").ok_or(InstallError::MavenMissing)
}

// ---------------------------------------------------------------------------
// versions

/// Parses a comma- (or space-) separated list of Kafka versions: validated, deduplicated,
/// order kept. `"4.4.0,4.0.2"` → `["4.4.0", "4.0.2"]`.
pub fn parse_versions(list: &str) -> Result<Vec<String>, InstallError> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let items: Vec<&str> = list.split(',').collect();
    for (i, item) in items.iter().enumerate() {
        let item = item.trim();
        if item.is_empty() {
            // a trailing comma (or an empty list, reported below) is fine; ",," is not
            if i + 1 == items.len() {
                continue;
            }
            return Err(InstallError::InvalidVersion {
                item: list.to_string(),
                reason: format!("item {} of the list is empty", i + 1),
            });
        }
        for v in item.split_whitespace() {
            let v = validate_version(v)?;
            if seen.insert(v) {
                out.push(v.to_string());
            }
        }
    }
    if out.is_empty() {
        return Err(InstallError::EmptyVersionList { list: list.to_string() });
    }
    Ok(out)
}

/// One version: 2 to 4 dot-separated numbers, optionally `-suffix` of letters, digits, `.`, `_`, `-`.
fn validate_version(item: &str) -> Result<&str, InstallError> {
    let bad = |reason: &str| InstallError::InvalidVersion { item: item.to_string(), reason: reason.to_string() };
    let v = item.trim();
    if v.is_empty() {
        return Err(bad("empty"));
    }
    if let Some(rest) = v.strip_prefix(['v', 'V']) {
        if rest.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(bad(&format!("write it without the leading \"{}\": {rest}", &v[..1])));
        }
    }
    let (numbers, suffix) = match v.split_once('-') {
        Some((n, s)) => (n, Some(s)),
        None => (v, None),
    };
    let parts: Vec<&str> = numbers.split('.').collect();
    if parts.iter().any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return Err(bad("the part before any '-' must be numbers separated by single dots"));
    }
    if !(2..=4).contains(&parts.len()) {
        return Err(bad("needs 2 to 4 dot-separated numbers"));
    }
    if let Some(s) = suffix {
        if s.is_empty()
            || !s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
            || !s.as_bytes()[0].is_ascii_alphanumeric()
        {
            return Err(bad("the -suffix may only hold letters, digits, '.', '_' and '-'"));
        }
    }
    Ok(v)
}

/// The Kafka 4.x releases on Maven Central, oldest first: what `sinkhole bisect --kafka A..B`
/// walks. A release whose install fails on a machine (a mirror missing one of its jars) is
/// reported as not installable there, never taken for a boundary. Add a release here when it
/// is published.
pub const KAFKA_RELEASES: &[&str] = &[
    "4.0.0", "4.0.1", "4.0.2", "4.1.0", "4.1.1", "4.1.2", "4.2.0", "4.2.1", "4.2.2", "4.3.0", "4.3.1", "4.3.2", "4.4.0",
];

/// The versions from `lo` to `hi` (both included): the known releases and any other version
/// installed in the cache (a patch release newer than this table), oldest first.
pub fn releases_between(lo: &str, hi: &str) -> Result<Vec<String>, InstallError> {
    releases_between_in(&cache_root(), lo, hi)
}

/// [`releases_between`] with an explicit cache root.
pub fn releases_between_in(cache: &Path, lo: &str, hi: &str) -> Result<Vec<String>, InstallError> {
    let (lo, hi) = (validate_version(lo)?, validate_version(hi)?);
    let (klo, khi) = (version_key(lo), version_key(hi));
    if klo > khi {
        return Err(InstallError::InvalidVersion {
            item: format!("{lo}..{hi}"),
            reason: "the range runs backwards: write the older version first".into(),
        });
    }
    let mut all: Vec<String> = KAFKA_RELEASES.iter().map(|v| v.to_string()).collect();
    all.extend(installed_versions_in(cache));
    all.retain(|v| !v.contains('-') || v == lo || v == hi);
    all.retain(|v| (klo.clone()..=khi.clone()).contains(&version_key(v)));
    all.sort_by_key(|v| version_key(v));
    all.dedup();
    Ok(all)
}

/// Sort key: numeric parts, then releases after their pre-release suffixes.
pub fn version_key(v: &str) -> (Vec<u64>, bool, String) {
    let (numbers, suffix) = match v.split_once('-') {
        Some((n, s)) => (n, Some(s)),
        None => (v, None),
    };
    let nums = numbers.split('.').map(|p| p.parse().unwrap_or(0)).collect();
    (nums, suffix.is_none(), suffix.unwrap_or("").to_string())
}

// ---------------------------------------------------------------------------
// the marker

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Marker {
    format: u32,
    version: String,
    installed_at: String,
    installed_at_unix: u64,
    artifacts: Vec<String>,
    slf4j_binding: Option<String>,
    log4j_config: String,
    jars: Vec<JarEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct JarEntry {
    name: String,
    size: u64,
}

/// Why a cache directory is not a complete install.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Incomplete {
    /// Nothing there at all.
    Absent,
    /// Something there, but not usable: the reason.
    Broken(String),
}

/// Checks a cached install: the marker parses, names this version, and every jar it lists
/// is present with its recorded size, including the kafka_2.13 jar; the log4j2 config exists.
fn check_install(home: &Path, version: &str) -> Result<Marker, Incomplete> {
    if !home.exists() {
        return Err(Incomplete::Absent);
    }
    let marker_path = home.join(MARKER_FILE);
    let text = match fs::read_to_string(&marker_path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(Incomplete::Broken(format!("{MARKER_FILE} is missing")))
        }
        Err(e) => return Err(Incomplete::Broken(format!("cannot read {MARKER_FILE}: {e}"))),
    };
    let marker: Marker =
        serde_json::from_str(&text).map_err(|e| Incomplete::Broken(format!("{MARKER_FILE} is not valid: {e}")))?;
    if marker.format != MARKER_FORMAT {
        return Err(Incomplete::Broken(format!(
            "{MARKER_FILE} has format {} (this sinkhole writes {MARKER_FORMAT})",
            marker.format
        )));
    }
    if marker.version != version {
        return Err(Incomplete::Broken(format!("{MARKER_FILE} is for version {}, not {version}", marker.version)));
    }
    let core = core_jar_name(version);
    if !marker.jars.iter().any(|j| j.name == core) {
        return Err(Incomplete::Broken(format!("{MARKER_FILE} does not list {core}")));
    }
    let libs = home.join("libs");
    for jar in &marker.jars {
        match fs::metadata(libs.join(&jar.name)) {
            Ok(m) if m.len() == jar.size => {}
            Ok(m) => {
                return Err(Incomplete::Broken(format!(
                    "libs/{} has {} bytes, expected {}",
                    jar.name,
                    m.len(),
                    jar.size
                )))
            }
            Err(_) => return Err(Incomplete::Broken(format!("libs/{} is missing", jar.name))),
        }
    }
    if !home.join(&marker.log4j_config).is_file() {
        return Err(Incomplete::Broken(format!("{} is missing", marker.log4j_config)));
    }
    Ok(marker)
}

fn core_jar_name(version: &str) -> String {
    format!("{KAFKA_CORE_ARTIFACT}-{version}.jar")
}

fn cached_dist(home: PathBuf, version: &str) -> KafkaDist {
    KafkaDist { version: version.to_string(), lib_dir: home.join("libs"), home, source: DistSource::Cache }
}

/// Complete cached installs under [`cache_root`], oldest version first.
pub fn installed_versions() -> Vec<String> {
    installed_versions_in(&cache_root())
}

/// [`installed_versions`] for an explicit cache root.
pub fn installed_versions_in(cache: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(cache.join("kafka")) else {
        return Vec::new();
    };
    let mut versions: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| !name.starts_with('.') && validate_version(name).is_ok())
        .filter(|name| check_install(&cache.join("kafka").join(name), name).is_ok())
        .collect();
    versions.sort_by_key(|v| version_key(v));
    versions
}

// ---------------------------------------------------------------------------
// resolve / ensure

/// The distribution to run: `kafka_home` if given (wins over `version`), else the cached
/// install of `version`.
pub fn resolve(version: Option<&str>, kafka_home: Option<&Path>) -> Result<KafkaDist, InstallError> {
    resolve_in(&cache_root(), version, kafka_home)
}

/// [`resolve`] with an explicit cache root.
pub fn resolve_in(cache: &Path, version: Option<&str>, kafka_home: Option<&Path>) -> Result<KafkaDist, InstallError> {
    if let Some(home) = kafka_home.filter(|h| !h.as_os_str().is_empty()) {
        let dist = kafka_home_dist(home)?;
        if let Some(wanted) = version {
            if wanted.trim() != dist.version {
                tracing::warn!(
                    kafka_home = %dist.home.display(),
                    found = %dist.version,
                    requested = %wanted,
                    "KAFKA_HOME holds a different Kafka version than requested; using KAFKA_HOME"
                );
            }
        }
        if !dist.home.join("config").join("log4j2.yaml").is_file() {
            let generated = cache.join(KAFKA_HOME_LOG4J_FILE);
            write_log4j_config(&generated)?;
        }
        return Ok(dist);
    }
    let Some(version) = version else {
        return Err(InstallError::NoVersion { installed: installed_versions_in(cache) });
    };
    let version = validate_version(version)?;
    let home = cache.join("kafka").join(version);
    match check_install(&home, version) {
        Ok(_) => Ok(cached_dist(home, version)),
        Err(reason) => Err(InstallError::NotInstalled {
            version: version.to_string(),
            home,
            incomplete: match reason {
                Incomplete::Absent => None,
                Incomplete::Broken(r) => Some(r),
            },
        }),
    }
}

/// A KAFKA_HOME distribution; its version comes from the kafka_2.13 (or kafka-clients) jar name.
fn kafka_home_dist(home: &Path) -> Result<KafkaDist, InstallError> {
    let home = std::path::absolute(home).unwrap_or_else(|_| home.to_path_buf());
    if !home.is_dir() {
        return Err(InstallError::KafkaHomeNotFound { path: home });
    }
    let libs = home.join("libs");
    if !libs.is_dir() {
        return Err(InstallError::KafkaHomeNoLibs { path: home });
    }
    let names: Vec<String> = fs::read_dir(&libs)
        .map_err(io_err(format!("cannot list {}", libs.display())))?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    let version = version_from_jar_names(names.iter().map(String::as_str))
        .ok_or_else(|| InstallError::KafkaHomeNoKafkaJar { path: home.clone() })?;
    Ok(KafkaDist { version, lib_dir: libs, home, source: DistSource::KafkaHome })
}

/// The Kafka version named by `kafka_2.13-<v>.jar` (preferred; any Scala 2.x suffix) or
/// `kafka-clients-<v>.jar`, ignoring -test/-sources/-javadoc classifier jars.
fn version_from_jar_names<'a>(names: impl Iterator<Item = &'a str>) -> Option<String> {
    const CLASSIFIERS: [&str; 6] = ["-test", "-tests", "-sources", "-javadoc", "-scaladoc", "-test-sources"];
    let mut core = None;
    let mut clients = None;
    for name in names {
        let Some(stem) = name.strip_suffix(".jar") else {
            continue;
        };
        if CLASSIFIERS.iter().any(|c| stem.ends_with(c)) {
            continue;
        }
        if let Some(rest) = stem.strip_prefix("kafka_2.") {
            // kafka_2.13-4.4.0 → "13-4.4.0"
            if let Some((scala_minor, v)) = rest.split_once('-') {
                if scala_minor.bytes().all(|b| b.is_ascii_digit()) && validate_version(v).is_ok() {
                    core.get_or_insert_with(|| v.to_string());
                }
            }
        } else if let Some(v) = stem.strip_prefix("kafka-clients-") {
            if validate_version(v).is_ok() {
                clients.get_or_insert_with(|| v.to_string());
            }
        }
    }
    core.or(clients)
}

/// Installs `version` unless a complete install exists; returns the distribution.
pub fn ensure(version: &str, progress: &mut dyn FnMut(&str)) -> Result<KafkaDist, InstallError> {
    install(version, progress).map(InstallOutcome::into_dist)
}

// ---------------------------------------------------------------------------
// install

/// Installs Kafka `version` from Maven Central into [`cache_root`]`/kafka/<version>/`.
/// A complete install is left alone ([`InstallOutcome::AlreadyInstalled`], mvn does not run);
/// an incomplete or damaged one is replaced.
pub fn install(version: &str, progress: &mut dyn FnMut(&str)) -> Result<InstallOutcome, InstallError> {
    install_in(&cache_root(), version, progress)
}

/// [`install`] with an explicit cache root.
pub fn install_in(cache: &Path, version: &str, progress: &mut dyn FnMut(&str)) -> Result<InstallOutcome, InstallError> {
    let started = Instant::now();
    let version = validate_version(version)?;
    let kafka_dir = cache.join("kafka");
    let home = kafka_dir.join(version);
    match check_install(&home, version) {
        Ok(_) => {
            progress(&format!("Kafka {version} is already installed in {}", home.display()));
            return Ok(InstallOutcome::AlreadyInstalled { dist: cached_dist(home, version) });
        }
        Err(Incomplete::Absent) => {}
        Err(Incomplete::Broken(reason)) => {
            progress(&format!("the install in {} is incomplete ({reason}); reinstalling", home.display()))
        }
    }

    check_java()?;
    let mvn = find_mvn()?;
    fs::create_dir_all(&kafka_dir).map_err(io_err(format!("cannot create {}", kafka_dir.display())))?;
    // one install of a version at a time (threads and processes); the winner's work is reused
    let _lock = lock_version(&kafka_dir, version, progress)?;
    if check_install(&home, version).is_ok() {
        progress(&format!("Kafka {version} was installed meanwhile in {}", home.display()));
        return Ok(InstallOutcome::AlreadyInstalled { dist: cached_dist(home, version) });
    }
    remove_stale_work_dirs(&kafka_dir, version);

    let work = TempDir::new(kafka_dir.join(format!(".{version}.partial-{}-{}", std::process::id(), unique())));
    fs::create_dir_all(work.path().join("libs")).map_err(io_err(format!("cannot create {}", work.path().display())))?;
    let artifacts = artifacts(version);
    write_file(&work.path().join("pom.xml"), pom_xml(version).as_bytes())?;

    let log = kafka_dir.join(format!("{version}.install.log"));
    let repo = non_empty_env(MAVEN_REPO_ENV).map(PathBuf::from);
    progress(&format!(
        "resolving {KAFKA_GROUP}:{KAFKA_CORE_ARTIFACT}:{version} with Maven (local repository {}) …",
        repo.as_ref().map(|r| r.display().to_string()).unwrap_or_else(|| "~/.m2/repository, Maven's default".into())
    ));
    let mvn_started = Instant::now();
    let run = run_mvn(&mvn, work.path(), repo.as_deref(), &log, &kafka_goals(work.path()), false, progress)?;
    if !run.status.success() {
        return Err(classify_failure(version, &run.output, run.status, &log));
    }

    let libs = work.path().join("libs");
    let binding = prune_slf4j_bindings(&libs)?;
    let jars = list_jars(&libs)?;
    let core = core_jar_name(version);
    if !jars.iter().any(|j| j.name == core) {
        return Err(InstallError::IncompleteDownload { version: version.to_string(), jar: core, log });
    }
    let bytes: u64 = jars.iter().map(|j| j.size).sum();
    progress(&format!(
        "copied {} jars ({}) in {:.1} s",
        jars.len(),
        format_mib(bytes),
        mvn_started.elapsed().as_secs_f64()
    ));

    write_log4j_config(&work.path().join(LOG4J_CONFIG_FILE))?;
    smoke_test(version, work.path())?;

    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let marker = Marker {
        format: MARKER_FORMAT,
        version: version.to_string(),
        installed_at: format_utc(now),
        installed_at_unix: now,
        artifacts,
        slf4j_binding: binding,
        log4j_config: LOG4J_CONFIG_FILE.to_string(),
        jars,
    };
    let json = serde_json::to_vec_pretty(&marker).expect("marker serializes");
    write_file(&work.path().join(MARKER_FILE), &json)?;

    let jar_count = marker.jars.len();
    if home.exists() {
        // an incomplete earlier install (checked under the lock): move it aside, then delete it
        let trash = kafka_dir.join(format!(".{version}.old-{}-{}", std::process::id(), unique()));
        fs::rename(&home, &trash).map_err(io_err(format!("cannot move aside {}", home.display())))?;
        let _ = fs::remove_dir_all(&trash);
    }
    if let Err(e) = fs::rename(work.path(), &home) {
        // someone finished the same install first without our lock (e.g. no flock on this filesystem)
        if check_install(&home, version).is_ok() {
            progress(&format!("Kafka {version} was installed concurrently in {}", home.display()));
            return Ok(InstallOutcome::AlreadyInstalled { dist: cached_dist(home, version) });
        }
        return Err(InstallError::Io {
            context: format!("cannot rename {} to {}", work.path().display(), home.display()),
            source: e,
        });
    }
    work.disarm();
    if let Ok(dir) = fs::File::open(&kafka_dir) {
        let _ = dir.sync_all();
    }
    let elapsed = started.elapsed();
    progress(&format!("installed Kafka {version} in {} ({:.1} s)", home.display(), elapsed.as_secs_f64()));
    Ok(InstallOutcome::Installed { dist: cached_dist(home, version), jars: jar_count, elapsed })
}

fn format_mib(bytes: u64) -> String {
    let mib = bytes as f64 / (1024.0 * 1024.0);
    if mib >= 10.0 {
        format!("{mib:.0} MiB")
    } else {
        format!("{mib:.1} MiB")
    }
}

/// Unix seconds → `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian, UTC).
fn format_utc(secs: u64) -> String {
    sinkhole_base::utc::Utc::from_unix(secs).rfc3339()
}
