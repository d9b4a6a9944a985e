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
//! `mvn` and the `java` runs are owned processes ([`crate::procs`]), like brokers:
//! each in a process group of its own, killed when the rig ends (Ctrl-C, a signal,
//! or the rig's own death), so an interrupted `sinkhole setup` leaves no Maven
//! (and no JVM it started) downloading on.
//!
//! Alternatively `KAFKA_HOME` (or `--kafka-home`) names any unpacked Kafka
//! distribution (a directory with `libs/*.jar`), e.g. a trunk build.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::procs::{self, Lifetime};

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

/// Sort key: numeric parts, then releases after their pre-release suffixes.
fn version_key(v: &str) -> (Vec<u64>, bool, String) {
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
    let run = run_mvn(&mvn, work.path(), repo.as_deref(), &log, progress)?;
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

/// The Maven coordinates the generated pom depends on.
fn artifacts(version: &str) -> Vec<String> {
    vec![
        format!("{KAFKA_GROUP}:{KAFKA_CORE_ARTIFACT}:{version}"),
        format!("{KAFKA_GROUP}:kafka-tools:{version}"),
        format!("org.apache.logging.log4j:log4j-core:{LOG4J_VERSION}"),
        format!("org.apache.logging.log4j:log4j-slf4j-impl:{LOG4J_VERSION}"),
        format!("org.apache.logging.log4j:log4j-slf4j2-impl:{LOG4J_VERSION}"),
    ]
}

/// Kafka first, so that Maven's nearest-first mediation keeps Kafka's own slf4j-api
/// (a direct dependency of kafka_2.13) over the ones the bindings ask for. Both SLF4J
/// bindings are fetched; [`prune_slf4j_bindings`] keeps the one matching that slf4j-api.
fn pom_xml(version: &str) -> String {
    let mut deps = String::new();
    for coords in artifacts(version) {
        let mut parts = coords.split(':');
        let (g, a, v) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
        let _ = writeln!(
            deps,
            "    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        );
    }
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!-- generated by sinkhole: the runtime classpath of Kafka {version} -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.sinkhole</groupId>
  <artifactId>kafka-dist</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <properties><project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>
  <dependencies>
{deps}  </dependencies>
</project>
"#
    )
}

struct MvnRun {
    status: ExitStatus,
    output: String,
}

/// Runs mvn in `work`, writing its merged output to `log` and reporting download progress.
fn run_mvn(
    mvn: &Path,
    work: &Path,
    repo: Option<&Path>,
    log: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<MvnRun, InstallError> {
    let mut log_file = fs::File::create(log).map_err(io_err(format!("cannot create {}", log.display())))?;
    let mut cmd = Command::new(mvn);
    cmd.current_dir(work)
        // -U: re-check artifacts whose earlier download failed (Maven caches failures for a day)
        .args(["-B", "-U", "-Dstyle.color=never", "-f", "pom.xml"]);
    if let Some(repo) = repo {
        cmd.arg(format!("-Dmaven.repo.local={}", repo.display()));
    }
    cmd.args([
        "dependency:copy-dependencies",
        &format!("-DoutputDirectory={}", work.join("libs").display()),
        "-DincludeScope=runtime",
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let _ = writeln!(log_file, "$ {}", describe_command(&cmd));
    let (mut child, id) = procs::spawn(cmd, Lifetime::Owned).map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            InstallError::MavenMissing
        } else {
            InstallError::Io { context: format!("cannot run {}", mvn.display()), source: e }
        }
    })?;

    let (tx, rx) = mpsc::channel::<String>();
    let readers: Vec<_> = [
        child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>),
        child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|stream| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).split(b'\n') {
                let Ok(line) = line else { break };
                if tx.send(String::from_utf8_lossy(&line).into_owned()).is_err() {
                    break;
                }
            }
        })
    })
    .collect();
    drop(tx);

    let mut output = String::new();
    let mut downloads = 0usize;
    let mut last_report = Instant::now();
    for raw in rx {
        let line = strip_ansi(raw.trim_end_matches('\r'));
        let _ = writeln!(log_file, "{line}");
        if let Some(file) = downloaded_file(&line) {
            downloads += 1;
            if last_report.elapsed() >= PROGRESS_EVERY {
                last_report = Instant::now();
                progress(&format!("downloading from Maven Central: {downloads} files so far ({file})"));
            }
        }
        output.push_str(&line);
        output.push('\n');
    }
    for r in readers {
        let _ = r.join();
    }
    let status = child.wait();
    // Reaped (or lost): the rig's signal teardown must not look for it any more.
    procs::forget(id.pid);
    let status = status.map_err(io_err("cannot wait for mvn"))?;
    let _ = writeln!(log_file, "# mvn {}", describe_status(status));
    if downloads > 0 {
        progress(&format!("downloaded {downloads} files from Maven Central"));
    }
    Ok(MvnRun { status, output })
}

/// `Downloaded from central: https://…/kafka_2.13-4.0.2.jar (6.6 MB at 3 MB/s)` → `kafka_2.13-4.0.2.jar`.
fn downloaded_file(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("[INFO] ").unwrap_or(line).strip_prefix("Downloaded from ")?;
    let url = rest.split_once(": ")?.1.split(' ').next()?;
    url.rsplit('/').next().filter(|f| !f.is_empty())
}

fn describe_command(cmd: &Command) -> String {
    std::iter::once(cmd.get_program()).chain(cmd.get_args()).map(OsStr::to_string_lossy).collect::<Vec<_>>().join(" ")
}

fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => status.to_string(),
    }
}

/// Removes ANSI escape sequences (Maven 3.8.7 here prints a few even with -B -Dstyle.color=never).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// What a failed mvn run means.
#[derive(Debug, Clone, PartialEq, Eq)]
enum MvnFailure {
    /// kafka_2.13:<version> does not exist in the repository: the relevant line.
    UnknownVersion(String),
    /// The repository could not be reached: the relevant line.
    Unreachable(String),
    Other,
}

const NETWORK_MARKERS: [&str; 16] = [
    "Could not transfer",
    "transfer failed for",
    "Unknown host",
    "UnknownHostException",
    "Connection refused",
    "Network is unreachable",
    "No route to host",
    "Connection timed out",
    "connect timed out",
    "Read timed out",
    "Temporary failure in name resolution",
    "Name or service not known",
    "in offline mode",
    "PKIX path building failed",
    "Remote host terminated the handshake",
    "Proxy Authentication Required",
];

/// Classifies the output of a failed mvn run. A missing kafka_2.13 artifact of this version
/// (the repository answered "not found") wins over network trouble.
fn classify_mvn_output(version: &str, output: &str) -> MvnFailure {
    let wanted = [
        format!("{KAFKA_GROUP}:{KAFKA_CORE_ARTIFACT}:jar:{version}"),
        format!("{KAFKA_GROUP}:{KAFKA_CORE_ARTIFACT}:pom:{version}"),
    ];
    for line in output.lines().rev() {
        for marker in ["Could not find artifact ", "Failure to find "] {
            for art in &wanted {
                let needle = format!("{marker}{art}");
                if let Some(at) = line.find(&needle) {
                    return MvnFailure::UnknownVersion(relevant_part(&line[at..]));
                }
            }
        }
        for art in &wanted {
            let needle = format!("{art} was not found in ");
            if let Some(at) = line.find(&needle) {
                return MvnFailure::UnknownVersion(relevant_part(&line[at..]));
            }
        }
    }
    // the last [ERROR] line with a network marker, else the last line with one
    let network_line = |errors_only: bool| {
        output.lines().rev().find_map(|line| {
            if errors_only && !line.starts_with("[ERROR]") {
                return None;
            }
            let at = NETWORK_MARKERS.iter().filter_map(|m| line.find(m)).min()?;
            // start at the "Could not transfer …" or "Cannot access …" clause if there is one
            let start = ["Could not transfer", "Cannot access "]
                .iter()
                .filter_map(|m| line.find(m))
                .min()
                .unwrap_or(at)
                .min(at);
            Some(relevant_part(&line[start..]))
        })
    };
    if let Some(line) = network_line(true).or_else(|| network_line(false)) {
        return MvnFailure::Unreachable(line);
    }
    MvnFailure::Other
}

/// A mvn message without Maven's `-> [Help 1]` trailer, shortened to a readable length.
fn relevant_part(s: &str) -> String {
    let s = s.trim();
    // Maven ends its error lines with "-> [Help 1]"
    let s = match s.rfind(" -> [Help ") {
        Some(at) if s.ends_with(']') => s[..at].trim_end(),
        _ => s,
    };
    const MAX: usize = 400;
    if s.chars().count() > MAX {
        let cut: String = s.chars().take(MAX).collect();
        format!("{cut} …")
    } else {
        s.to_string()
    }
}

/// The last [`TAIL_LINES`] lines of mvn output, without Maven's generic help trailer.
fn tail_of(output: &str) -> String {
    const BOILERPLATE: [&str; 5] = [
        "To see the full stack trace of the errors",
        "Re-run Maven using the -X switch",
        "For more information about the errors and possible solutions",
        "http://cwiki.apache.org/confluence/display/MAVEN/",
        "After correcting the problems, you can resume the build",
    ];
    let lines: Vec<&str> = output
        .lines()
        .filter(|l| {
            let t = l.trim();
            !(t.is_empty() || t == "[ERROR]" || BOILERPLATE.iter().any(|b| t.contains(b)))
        })
        .collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    lines[start..].iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}

fn classify_failure(version: &str, output: &str, status: ExitStatus, log: &Path) -> InstallError {
    match classify_mvn_output(version, output) {
        MvnFailure::UnknownVersion(line) => {
            InstallError::UnknownVersion { version: version.to_string(), line, log: log.to_path_buf() }
        }
        MvnFailure::Unreachable(line) => {
            InstallError::MavenUnreachable { version: version.to_string(), line, log: log.to_path_buf() }
        }
        MvnFailure::Other => InstallError::MavenFailed {
            version: version.to_string(),
            status: describe_status(status),
            tail: tail_of(output),
            log: log.to_path_buf(),
        },
    }
}

/// Keeps the SLF4J binding that matches the slf4j-api Maven resolved (Kafka 4.x: 1.7.x →
/// log4j-slf4j-impl; a 2.x API would need log4j-slf4j2-impl) and deletes the other.
/// Returns the kept binding's file name.
fn prune_slf4j_bindings(libs: &Path) -> Result<Option<String>, InstallError> {
    let names: Vec<String> = fs::read_dir(libs)
        .map_err(io_err(format!("cannot list {}", libs.display())))?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    let api_major =
        names.iter().filter_map(|n| n.strip_prefix("slf4j-api-")?.split('.').next()?.parse::<u32>().ok()).max();
    let slf4j1 = names.iter().find(|n| n.starts_with("log4j-slf4j-impl-"));
    let slf4j2 = names.iter().find(|n| n.starts_with("log4j-slf4j2-impl-"));
    let (keep, drop) = match api_major {
        Some(major) if major >= 2 => (slf4j2, slf4j1),
        Some(_) => (slf4j1, slf4j2),
        None => return Ok(None),
    };
    if let Some(drop) = drop {
        let path = libs.join(drop);
        fs::remove_file(&path).map_err(io_err(format!("cannot remove {}", path.display())))?;
    }
    Ok(keep.cloned())
}

fn list_jars(libs: &Path) -> Result<Vec<JarEntry>, InstallError> {
    let mut jars = Vec::new();
    for entry in fs::read_dir(libs).map_err(io_err(format!("cannot list {}", libs.display())))? {
        let entry = entry.map_err(io_err(format!("cannot list {}", libs.display())))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if !name.ends_with(".jar") {
            continue;
        }
        let size = entry.metadata().map_err(io_err(format!("cannot stat {}", entry.path().display())))?.len();
        jars.push(JarEntry { name, size });
    }
    jars.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(jars)
}

/// Runs `kafka.tools.StorageTool random-uuid` on the new classpath: proves that java can
/// load Kafka from it. Prints a 22-character base64url id.
fn smoke_test(version: &str, home: &Path) -> Result<(), InstallError> {
    let java = java_path();
    let classpath = format!("{}/*", home.join("libs").display());
    let config = home.join(LOG4J_CONFIG_FILE);
    let mut cmd = Command::new(&java);
    cmd.arg(format!("-Dlog4j2.configurationFile={}", config.display())).args([
        "-cp",
        &classpath,
        STORAGE_TOOL_CLASS,
        "random-uuid",
    ]);
    let command = describe_command(&cmd);
    let out = procs::output(cmd)
        .map_err(|e| InstallError::JavaMissing { detail: format!("cannot run {}: {e}", java.display()) })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    // the id is the last line; log4j may print a line before it
    let id = stdout.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("");
    if out.status.success() && is_kafka_uuid(id) {
        return Ok(());
    }
    Err(InstallError::SmokeTestFailed {
        version: version.to_string(),
        command,
        status: describe_status(out.status),
        output: format!("{}{}", stdout, String::from_utf8_lossy(&out.stderr))
            .lines()
            .take(20)
            .collect::<Vec<_>>()
            .join("\n"),
    })
}

/// A Kafka Uuid as printed by `random-uuid`: 22 base64url characters.
pub fn is_kafka_uuid(s: &str) -> bool {
    s.len() == 22 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// log4j2 configuration: everything to stdout (the cluster backend redirects a node's stdout
/// to its log file), INFO, with the chatty per-request and state-change loggers at WARN.
/// XML, because log4j-core reads it without extra jars (YAML needs jackson-dataformat-yaml).
const LOG4J2_XML: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<!-- generated by sinkhole: Kafka broker and tool logging to stdout -->
<Configuration status="WARN">
  <Appenders>
    <Console name="STDOUT" target="SYSTEM_OUT">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Logger name="kafka.request.logger" level="WARN"/>
    <Logger name="state.change.logger" level="WARN"/>
    <Logger name="org.apache.kafka.clients" level="WARN"/>
    <Logger name="kafka.authorizer.logger" level="WARN"/>
    <Root level="INFO">
      <AppenderRef ref="STDOUT"/>
    </Root>
  </Loggers>
</Configuration>
"#;

/// Writes the generated log4j2 config to `path` (atomically; leaves an identical file alone).
fn write_log4j_config(path: &Path) -> Result<(), InstallError> {
    if fs::read(path).is_ok_and(|existing| existing == LOG4J2_XML.as_bytes()) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(io_err(format!("cannot create {}", dir.display())))?;
    }
    let tmp = path.with_extension(format!("tmp-{}-{}", std::process::id(), unique()));
    write_file(&tmp, LOG4J2_XML.as_bytes())?;
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        InstallError::Io { context: format!("cannot write {}", path.display()), source: e }
    })
}

fn write_file(path: &Path, data: &[u8]) -> Result<(), InstallError> {
    let write = || -> io::Result<()> {
        let mut f = fs::File::create(path)?;
        f.write_all(data)?;
        f.sync_all()
    };
    write().map_err(io_err(format!("cannot write {}", path.display())))
}

/// Takes the exclusive `flock` on `<kafka_dir>/.<version>.lock`, waiting (and saying so) if another
/// install of the same version holds it. Released when the returned value is dropped.
fn lock_version(
    kafka_dir: &Path,
    version: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<nix::fcntl::Flock<fs::File>, InstallError> {
    use nix::fcntl::{Flock, FlockArg};
    let path = kafka_dir.join(format!(".{version}.lock"));
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io_err(format!("cannot open {}", path.display())))?;
    let lock_err = |e: nix::errno::Errno| InstallError::Io {
        context: format!("cannot lock {}", path.display()),
        source: io::Error::from(e),
    };
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(lock),
        Err((file, nix::errno::Errno::EWOULDBLOCK)) => {
            progress(&format!("waiting for another install of Kafka {version} to finish …"));
            Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| lock_err(e))
        }
        Err((_, e)) => Err(lock_err(e)),
    }
}

/// Removes `.<version>.partial-<pid>-*` / `.<version>.old-<pid>-*` directories of processes
/// that are gone (an install interrupted by Ctrl-C or a kill).
fn remove_stale_work_dirs(kafka_dir: &Path, version: &str) {
    let Ok(entries) = fs::read_dir(kafka_dir) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let Some(rest) = name
            .strip_prefix(&format!(".{version}.partial-"))
            .or_else(|| name.strip_prefix(&format!(".{version}.old-")))
        else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if !process_alive(pid) {
            tracing::info!(dir = %entry.path().display(), "removing the leftovers of an interrupted install");
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

fn process_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(nix::errno::Errno::ESRCH) => false,
        Err(_) => true, // EPERM: exists, owned by someone else
    }
}

/// A directory removed on drop unless disarmed.
struct TempDir {
    path: PathBuf,
    armed: std::cell::Cell<bool>,
}

impl TempDir {
    fn new(path: PathBuf) -> Self {
        TempDir { path, armed: std::cell::Cell::new(true) }
    }
    fn path(&self) -> &Path {
        &self.path
    }
    fn disarm(&self) {
        self.armed.set(false);
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if self.armed.get() {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// Nanoseconds since the epoch, for unique temporary names.
fn unique() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos()
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
    crate::utc::Utc::from_unix(secs).rfc3339()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("sinkhole-install-test-{}-{}-{name}", std::process::id(), unique()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn touch(path: &Path, bytes: usize) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, vec![b'x'; bytes]).unwrap();
    }

    // ---- parse_versions

    #[test]
    fn parse_versions_keeps_order_and_dedups() {
        assert_eq!(parse_versions("4.4.0,4.0.2").unwrap(), ["4.4.0", "4.0.2"]);
        assert_eq!(parse_versions(" 4.4.0 , 4.0.2,4.4.0 ").unwrap(), ["4.4.0", "4.0.2"]);
        assert_eq!(parse_versions("4.0.2 4.4.0").unwrap(), ["4.0.2", "4.4.0"]);
        assert_eq!(parse_versions("4.4.0,").unwrap(), ["4.4.0"]);
        assert_eq!(
            parse_versions("4.1.0-SNAPSHOT,3.9.1-rc1,0.8.2.2").unwrap(),
            ["4.1.0-SNAPSHOT", "3.9.1-rc1", "0.8.2.2"]
        );
    }

    #[test]
    fn parse_versions_names_the_bad_item() {
        let msg = |s: &str| parse_versions(s).unwrap_err().to_string();
        let m = msg("4.4.0,4.x.2");
        assert!(m.starts_with("invalid Kafka version \"4.x.2\":"), "{m}");
        let m = msg("4.4.0,v4.0.2");
        assert!(m.contains("\"v4.0.2\"") && m.contains("without the leading \"v\": 4.0.2"), "{m}");
        assert!(msg("4").contains("\"4\": needs 2 to 4"));
        assert!(msg("4.0.0.0.1").contains("needs 2 to 4"));
        assert!(msg("4..0").contains("\"4..0\""));
        assert!(msg("4.0.0-").contains("-suffix"));
        assert!(msg("4.0.0-rc/1").contains("\"4.0.0-rc/1\""));
        assert!(msg("../4.0.0").contains("\"../4.0.0\""));
        assert_eq!(
            msg("4.4.0,,4.0.2"),
            "invalid Kafka version \"4.4.0,,4.0.2\": item 2 of the list is empty (expected digits and dots with an optional -suffix, e.g. 4.4.0 or 4.1.0-SNAPSHOT)"
        );
        let m = msg("");
        assert_eq!(m, "no Kafka version in \"\" (expected a comma-separated list such as 4.4.0,4.0.2)");
        assert!(matches!(parse_versions("  "), Err(InstallError::EmptyVersionList { .. })));
        assert!(matches!(parse_versions(" , "), Err(InstallError::InvalidVersion { .. })));
    }

    #[test]
    fn versions_sort_numerically() {
        let mut v = vec!["4.10.0", "4.4.0", "4.0.2", "4.4.0-SNAPSHOT", "3.9.1"];
        v.sort_by_key(|v| version_key(v));
        assert_eq!(v, ["3.9.1", "4.0.2", "4.4.0-SNAPSHOT", "4.4.0", "4.10.0"]);
    }

    // ---- mvn output classification; fixtures are trimmed real output of Maven 3.8.7

    /// `mvn -B -U dependency:copy-dependencies` with kafka_2.13 and kafka-tools 9.9.9.
    const MVN_UNKNOWN_VERSION: &str = "\
[INFO] Scanning for projects...
[INFO] --------------------------------[ pom ]---------------------------------
[WARNING] The POM for org.apache.kafka:kafka_2.13:jar:9.9.9 is missing, no dependency information available
[WARNING] The POM for org.apache.kafka:kafka-tools:jar:9.9.9 is missing, no dependency information available
[INFO] BUILD FAILURE
[INFO] ------------------------------------------------------------------------
[ERROR] Failed to execute goal on project kafka-dist: Could not resolve dependencies for project local.sinkhole:kafka-dist:pom:1: The following artifacts could not be resolved: org.apache.kafka:kafka_2.13:jar:9.9.9, org.apache.kafka:kafka-tools:jar:9.9.9: Could not find artifact org.apache.kafka:kafka_2.13:jar:9.9.9 in central (https://repo.maven.apache.org/maven2) -> [Help 1]
[ERROR] 
[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.
[ERROR] Re-run Maven using the -X switch to enable full debug logging.
[ERROR] 
[ERROR] For more information about the errors and possible solutions, please read the following articles:
[ERROR] [Help 1] http://cwiki.apache.org/confluence/display/MAVEN/DependencyResolutionException
";

    /// The same, run again without -U: Maven reports its cached "not found".
    const MVN_UNKNOWN_VERSION_CACHED: &str = "\
[WARNING] The POM for org.apache.kafka:kafka_2.13:jar:9.9.9 is missing, no dependency information available
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal on project kafka-dist: Could not resolve dependencies for project local.sinkhole:kafka-dist:pom:1: The following artifacts could not be resolved: org.apache.kafka:kafka_2.13:jar:9.9.9, org.apache.kafka:kafka-tools:jar:9.9.9: org.apache.kafka:kafka_2.13:jar:9.9.9 was not found in https://repo.maven.apache.org/maven2 during a previous attempt. This failure was cached in the local repository and resolution is not reattempted until the update interval of central has elapsed or updates are forced -> [Help 1]
[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.
";

    /// 4.0.2 not in the local repository, settings.xml mirror `central` → http://127.0.0.1:9/.
    const MVN_CONNECTION_REFUSED: &str = "\
[INFO] Building kafka-dist 1
[INFO] --------------------------------[ pom ]---------------------------------
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal on project kafka-dist: Could not resolve dependencies for project local.sinkhole:kafka-dist:pom:1: Failed to collect dependencies at org.apache.kafka:kafka_2.13:jar:4.0.2: Failed to read artifact descriptor for org.apache.kafka:kafka_2.13:jar:4.0.2: Could not transfer artifact org.apache.kafka:kafka_2.13:pom:4.0.2 from/to central (http://127.0.0.1:9/): transfer failed for http://127.0.0.1:9/org/apache/kafka/kafka_2.13/4.0.2/kafka_2.13-4.0.2.pom: Connect to 127.0.0.1:9 [/127.0.0.1] failed: Connection refused -> [Help 1]
[ERROR] 
[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.
";

    /// The same with the mirror at https://repo.invalid/maven2.
    const MVN_UNKNOWN_HOST: &str = "\
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal on project kafka-dist: Could not resolve dependencies for project local.sinkhole:kafka-dist:pom:1: Failed to collect dependencies at org.apache.kafka:kafka_2.13:jar:4.0.2: Failed to read artifact descriptor for org.apache.kafka:kafka_2.13:jar:4.0.2: Could not transfer artifact org.apache.kafka:kafka_2.13:pom:4.0.2 from/to central (https://repo.invalid/maven2): transfer failed for https://repo.invalid/maven2/org/apache/kafka/kafka_2.13/4.0.2/kafka_2.13-4.0.2.pom: Unknown host repo.invalid: Name or service not known -> [Help 1]
";

    /// `mvn -o` (or <offline>true</offline>) with 4.0.2 never downloaded.
    const MVN_OFFLINE: &str = "\
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal on project kafka-dist: Could not resolve dependencies for project local.sinkhole:kafka-dist:pom:1: The following artifacts could not be resolved: org.apache.kafka:kafka_2.13:jar:4.0.2, org.apache.kafka:kafka-tools:jar:4.0.2: Cannot access central (https://repo.maven.apache.org/maven2) in offline mode and the artifact org.apache.kafka:kafka_2.13:jar:4.0.2 has not been downloaded from it before. -> [Help 1]
[ERROR] 
";

    /// An empty local repository and a dead mirror: not even the dependency plugin resolves.
    const MVN_NO_PLUGIN: &str = "\
[WARNING] Could not transfer metadata org.apache.maven.plugins/maven-metadata.xml from/to dead (http://127.0.0.1:9/): transfer failed for http://127.0.0.1:9/org/apache/maven/plugins/maven-metadata.xml
[WARNING] Could not transfer metadata org.codehaus.mojo/maven-metadata.xml from/to dead (http://127.0.0.1:9/): transfer failed for http://127.0.0.1:9/org/codehaus/mojo/maven-metadata.xml
[WARNING] Failed to retrieve plugin descriptor for org.apache.maven.plugins:maven-clean-plugin:2.5: Plugin org.apache.maven.plugins:maven-clean-plugin:2.5 or one of its dependencies could not be resolved: Failed to read artifact descriptor for org.apache.maven.plugins:maven-clean-plugin:jar:2.5
[INFO] BUILD FAILURE
[ERROR] No plugin found for prefix 'dependency' in the current project and in the plugin groups [org.apache.maven.plugins, org.codehaus.mojo] available from the repositories [local (/tmp/emptyrepo), dead (http://127.0.0.1:9/)] -> [Help 1]
[ERROR] 
";

    /// Something else: a broken pom.
    const MVN_OTHER: &str = "\
[INFO] Scanning for projects...
[ERROR] [ERROR] Some problems were encountered while processing the POMs:
[FATAL] Non-parseable POM /tmp/mvbroken/pom.xml: Unrecognised tag: 'dependenc' (position: START_TAG seen ...<dependencies>\\n    <dependenc>... @9:16)  @ line 9, column 16
 @ 
[ERROR] The build could not read 1 project -> [Help 1]
[ERROR]   
[ERROR]   The project  (/tmp/mvbroken/pom.xml) has 1 error
[ERROR]     Non-parseable POM /tmp/mvbroken/pom.xml: Unrecognised tag: 'dependenc' (position: START_TAG seen ...<dependencies>\\n    <dependenc>... @9:16)  @ line 9, column 16 -> [Help 2]
[ERROR] 
[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.
[ERROR] Re-run Maven using the -X switch to enable full debug logging.
[ERROR] 
[ERROR] For more information about the errors and possible solutions, please read the following articles:
[ERROR] [Help 1] http://cwiki.apache.org/confluence/display/MAVEN/ProjectBuildingException
[ERROR] [Help 2] http://cwiki.apache.org/confluence/display/MAVEN/ModelParseException
";

    #[test]
    fn classifies_unknown_version() {
        assert_eq!(
            classify_mvn_output("9.9.9", MVN_UNKNOWN_VERSION),
            MvnFailure::UnknownVersion(
                "Could not find artifact org.apache.kafka:kafka_2.13:jar:9.9.9 in central (https://repo.maven.apache.org/maven2)".into()
            )
        );
        match classify_mvn_output("9.9.9", MVN_UNKNOWN_VERSION_CACHED) {
            MvnFailure::UnknownVersion(line) => {
                assert!(line.starts_with("org.apache.kafka:kafka_2.13:jar:9.9.9 was not found in"), "{line}")
            }
            other => panic!("{other:?}"),
        }
        // the version must match: this output does not say 9.9.8 is missing
        assert_eq!(classify_mvn_output("9.9.8", MVN_UNKNOWN_VERSION), MvnFailure::Other);
    }

    #[test]
    fn classifies_unreachable_repository() {
        let line = |out: &str| match classify_mvn_output("4.0.2", out) {
            MvnFailure::Unreachable(line) => line,
            other => panic!("{other:?} for {out}"),
        };
        assert_eq!(
            line(MVN_CONNECTION_REFUSED),
            "Could not transfer artifact org.apache.kafka:kafka_2.13:pom:4.0.2 from/to central (http://127.0.0.1:9/): transfer failed for http://127.0.0.1:9/org/apache/kafka/kafka_2.13/4.0.2/kafka_2.13-4.0.2.pom: Connect to 127.0.0.1:9 [/127.0.0.1] failed: Connection refused"
        );
        assert!(line(MVN_UNKNOWN_HOST).ends_with("Unknown host repo.invalid: Name or service not known"));
        assert!(line(MVN_OFFLINE)
            .starts_with("Cannot access central (https://repo.maven.apache.org/maven2) in offline mode"));
        assert!(line(MVN_NO_PLUGIN)
            .starts_with("Could not transfer metadata org.codehaus.mojo/maven-metadata.xml from/to dead"));
    }

    #[test]
    fn other_failures_keep_exit_code_and_tail() {
        assert_eq!(classify_mvn_output("4.4.0", MVN_OTHER), MvnFailure::Other);
        use std::os::unix::process::ExitStatusExt;
        let err =
            classify_failure("4.4.0", MVN_OTHER, ExitStatus::from_raw(1 << 8), Path::new("/c/kafka/4.4.0.install.log"));
        let msg = err.to_string();
        assert!(
            msg.starts_with("mvn failed (exit code 1) while resolving Kafka 4.4.0; last lines of its output:\n"),
            "{msg}"
        );
        assert!(msg.contains("Non-parseable POM"), "{msg}");
        assert!(!msg.contains("re-run Maven") && !msg.contains("cwiki"), "{msg}");
        assert!(msg.contains("  [ERROR] The build could not read 1 project -> [Help 1]\n"), "{msg}");
        assert!(msg.ends_with("full mvn log: /c/kafka/4.4.0.install.log"), "{msg}");
        let long: String = (0..40).map(|i| format!("[INFO] line {i}\n")).collect();
        let tail = tail_of(&long);
        assert_eq!(tail.lines().count(), TAIL_LINES);
        assert!(tail.ends_with("[INFO] line 39"));
    }

    #[test]
    fn error_messages() {
        let log = PathBuf::from("/c/kafka/9.9.9.install.log");
        let e =
            classify_failure("9.9.9", MVN_UNKNOWN_VERSION, std::os::unix::process::ExitStatusExt::from_raw(256), &log);
        assert_eq!(
            e.to_string(),
            "Kafka 9.9.9 is not published on Maven Central as org.apache.kafka:kafka_2.13; released 4.x versions look like 4.0.2 or 4.4.0 (mvn: Could not find artifact org.apache.kafka:kafka_2.13:jar:9.9.9 in central (https://repo.maven.apache.org/maven2); full log: /c/kafka/9.9.9.install.log)"
        );
        assert!(InstallError::MavenMissing.to_string().contains("apt-get install maven"));
        let e = InstallError::JavaMissing { detail: "JAVA_HOME is not set and there is no `java` on PATH".into() };
        assert!(e.to_string().contains("install a JDK 17+, e.g. apt-get install openjdk-17-jre-headless"));
    }

    #[test]
    fn ansi_and_download_lines() {
        assert_eq!(strip_ansi("\u{1b}[0m\u{1b}[0m[INFO] x\u{1b}[1m"), "[INFO] x");
        assert_eq!(
            downloaded_file("Downloaded from central: https://repo.maven.apache.org/maven2/org/apache/kafka/kafka_2.13/4.0.2/kafka_2.13-4.0.2.jar (6.6 MB at 12 MB/s)"),
            Some("kafka_2.13-4.0.2.jar")
        );
        assert_eq!(downloaded_file("[INFO] Downloading from central: https://x/y.pom"), None);
    }

    #[test]
    fn java_version_parsing() {
        assert_eq!(
            parse_java_version("openjdk version \"17.0.15\" 2025-04-15\nOpenJDK Runtime Environment"),
            Some(("17.0.15".into(), 17))
        );
        assert_eq!(parse_java_version("java version \"1.8.0_292\""), Some(("1.8.0_292".into(), 8)));
        assert_eq!(parse_java_version("openjdk version \"21\" 2023-09-19"), Some(("21".into(), 21)));
        assert_eq!(parse_java_version("garbage"), None);
    }

    // ---- KAFKA_HOME

    #[test]
    fn kafka_home_version_from_jar_names() {
        let v = |names: &[&str]| version_from_jar_names(names.iter().copied());
        assert_eq!(v(&["kafka_2.13-4.4.0.jar", "kafka-clients-4.4.0.jar"]).as_deref(), Some("4.4.0"));
        assert_eq!(
            v(&[
                "kafka-clients-4.5.0-SNAPSHOT.jar",
                "kafka_2.13-4.5.0-SNAPSHOT-test.jar",
                "kafka_2.13-4.5.0-SNAPSHOT.jar"
            ])
            .as_deref(),
            Some("4.5.0-SNAPSHOT")
        );
        assert_eq!(v(&["kafka-clients-4.1.1.jar", "kafka-clients-4.1.1-test.jar"]).as_deref(), Some("4.1.1"));
        assert_eq!(v(&["kafka-streams-4.4.0.jar", "kafka_2.13-4.4.0-sources.jar", "scala-library-2.13.18.jar"]), None);
    }

    #[test]
    fn resolve_kafka_home() {
        let cache = scratch("cache");
        let home = scratch("home");
        for jar in ["kafka_2.13-4.5.0-SNAPSHOT.jar", "kafka-clients-4.5.0-SNAPSHOT.jar", "slf4j-api-1.7.36.jar"] {
            touch(&home.join("libs").join(jar), 0);
        }
        let dist = resolve_in(&cache, Some("4.4.0"), Some(&home)).unwrap();
        assert_eq!(dist.version, "4.5.0-SNAPSHOT");
        assert_eq!(dist.source, DistSource::KafkaHome);
        assert_eq!(dist.lib_dir, home.join("libs"));
        assert_eq!(dist.classpath(), format!("{}/libs/*", home.display()));
        // no config/log4j2.yaml: resolve generated one under the cache
        assert_eq!(fs::read_to_string(cache.join(KAFKA_HOME_LOG4J_FILE)).unwrap(), LOG4J2_XML);
        touch(&home.join("config").join("log4j2.yaml"), 10);
        assert_eq!(dist.log4j_config(), home.join("config").join("log4j2.yaml"));

        let err = resolve_in(&cache, None, Some(&cache)).unwrap_err();
        assert!(matches!(err, InstallError::KafkaHomeNoLibs { .. }), "{err}");
        assert!(err.to_string().contains("has no libs/ directory"), "{err}");
        fs::create_dir_all(cache.join("libs")).unwrap();
        touch(&cache.join("libs").join("kafka-streams-4.4.0.jar"), 0);
        let err = resolve_in(&cache, None, Some(&cache)).unwrap_err();
        assert!(matches!(err, InstallError::KafkaHomeNoKafkaJar { .. }), "{err}");
        let err = resolve_in(&cache, None, Some(&cache.join("nope"))).unwrap_err();
        assert!(matches!(err, InstallError::KafkaHomeNotFound { .. }), "{err}");
        let _ = fs::remove_dir_all(cache);
        let _ = fs::remove_dir_all(home);
    }

    // ---- cached installs and the marker

    fn fake_install(cache: &Path, version: &str) -> PathBuf {
        let home = cache.join("kafka").join(version);
        let jars = vec![
            JarEntry { name: core_jar_name(version), size: 7 },
            JarEntry { name: "kafka-clients-x.jar".into(), size: 3 },
        ];
        for j in &jars {
            touch(&home.join("libs").join(&j.name), j.size as usize);
        }
        fs::write(home.join(LOG4J_CONFIG_FILE), LOG4J2_XML).unwrap();
        let marker = Marker {
            format: MARKER_FORMAT,
            version: version.into(),
            installed_at: format_utc(0),
            installed_at_unix: 0,
            artifacts: artifacts(version),
            slf4j_binding: None,
            log4j_config: LOG4J_CONFIG_FILE.into(),
            jars,
        };
        fs::write(home.join(MARKER_FILE), serde_json::to_vec(&marker).unwrap()).unwrap();
        home
    }

    #[test]
    fn marker_validation() {
        let cache = scratch("marker");
        let home = fake_install(&cache, "4.4.0");
        assert!(check_install(&home, "4.4.0").is_ok());
        assert_eq!(check_install(&cache.join("kafka/4.0.2"), "4.0.2"), Err(Incomplete::Absent));
        // wrong version in the marker
        assert!(matches!(check_install(&home, "4.0.2"), Err(Incomplete::Broken(r)) if r.contains("for version 4.4.0")));
        // a truncated jar
        fs::write(home.join("libs/kafka-clients-x.jar"), b"x").unwrap();
        assert_eq!(
            check_install(&home, "4.4.0"),
            Err(Incomplete::Broken("libs/kafka-clients-x.jar has 1 bytes, expected 3".into()))
        );
        // a missing jar
        fs::remove_file(home.join("libs/kafka-clients-x.jar")).unwrap();
        assert_eq!(
            check_install(&home, "4.4.0"),
            Err(Incomplete::Broken("libs/kafka-clients-x.jar is missing".into()))
        );
        // no marker
        let home = fake_install(&cache, "4.4.0");
        fs::remove_file(home.join(MARKER_FILE)).unwrap();
        assert_eq!(check_install(&home, "4.4.0"), Err(Incomplete::Broken(format!("{MARKER_FILE} is missing"))));
        // garbage marker
        fs::write(home.join(MARKER_FILE), b"{").unwrap();
        assert!(matches!(check_install(&home, "4.4.0"), Err(Incomplete::Broken(r)) if r.contains("not valid")));
        let _ = fs::remove_dir_all(cache);
    }

    #[test]
    fn resolve_and_list_cached() {
        let cache = scratch("resolve");
        fake_install(&cache, "4.4.0");
        fake_install(&cache, "4.0.2");
        fake_install(&cache, "4.10.0");
        fs::create_dir_all(cache.join("kafka/.4.1.0.partial-1-2")).unwrap();
        fs::create_dir_all(cache.join("kafka/4.1.0/libs")).unwrap(); // incomplete
        assert_eq!(installed_versions_in(&cache), ["4.0.2", "4.4.0", "4.10.0"]);

        let dist = resolve_in(&cache, Some("4.4.0"), None).unwrap();
        assert_eq!(dist.source, DistSource::Cache);
        assert_eq!(dist.home, cache.join("kafka/4.4.0"));
        assert_eq!(dist.lib_dir, cache.join("kafka/4.4.0/libs"));
        assert_eq!(dist.log4j_config(), cache.join("kafka/4.4.0").join(LOG4J_CONFIG_FILE));

        let err = resolve_in(&cache, Some("4.3.1"), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "Kafka 4.3.1 is not installed (looked in {}); run `sinkhole setup --kafka 4.3.1`, or point --kafka-home / KAFKA_HOME at a Kafka distribution",
                cache.join("kafka/4.3.1").display()
            )
        );
        let err = resolve_in(&cache, Some("4.1.0"), None).unwrap_err();
        assert!(
            err.to_string().contains(&format!("an earlier install there is incomplete, {MARKER_FILE} is missing")),
            "{err}"
        );
        let err = resolve_in(&cache, None, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no Kafka version chosen: pass --kafka <version> (installed: 4.0.2, 4.4.0, 4.10.0) or --kafka-home <dir> / KAFKA_HOME"
        );
        let _ = fs::remove_dir_all(cache);
    }

    #[test]
    fn stale_work_dirs_are_removed() {
        let cache = scratch("stale");
        let kafka = cache.join("kafka");
        // pid 0x7fff_fff0 does not exist; our own pid does
        let dead = kafka.join(format!(".4.4.0.partial-{}-1", 0x7fff_fff0));
        let alive = kafka.join(format!(".4.4.0.partial-{}-1", std::process::id()));
        let other = kafka.join(format!(".4.0.2.partial-{}-1", 0x7fff_fff0));
        for d in [&dead, &alive, &other] {
            fs::create_dir_all(d).unwrap();
        }
        remove_stale_work_dirs(&kafka, "4.4.0");
        assert!(!dead.exists() && alive.exists() && other.exists());
        let _ = fs::remove_dir_all(cache);
    }

    #[test]
    fn slf4j_binding_follows_the_api() {
        let libs = scratch("slf4j");
        for jar in ["slf4j-api-1.7.36.jar", "log4j-slf4j-impl-2.24.3.jar", "log4j-slf4j2-impl-2.24.3.jar"] {
            touch(&libs.join(jar), 1);
        }
        assert_eq!(prune_slf4j_bindings(&libs).unwrap().as_deref(), Some("log4j-slf4j-impl-2.24.3.jar"));
        assert!(!libs.join("log4j-slf4j2-impl-2.24.3.jar").exists());
        fs::remove_file(libs.join("slf4j-api-1.7.36.jar")).unwrap();
        touch(&libs.join("slf4j-api-2.0.16.jar"), 1);
        touch(&libs.join("log4j-slf4j2-impl-2.24.3.jar"), 1);
        assert_eq!(prune_slf4j_bindings(&libs).unwrap().as_deref(), Some("log4j-slf4j2-impl-2.24.3.jar"));
        assert!(!libs.join("log4j-slf4j-impl-2.24.3.jar").exists());
        let _ = fs::remove_dir_all(libs);
    }

    #[test]
    fn misc_formatting() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(1_795_978_527), "2026-11-29T18:55:27Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_mib(56_623_104), "54 MiB");
        assert_eq!(format_mib(1_572_864), "1.5 MiB");
        assert!(is_kafka_uuid("DLNpEUHCQbiOFtDM8Iga8A"));
        assert!(!is_kafka_uuid("DLNpEUHCQbiOFtDM8Iga8"));
        assert!(pom_xml("4.4.0").contains(
            "<groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>4.4.0</version>"
        ));
    }
}
