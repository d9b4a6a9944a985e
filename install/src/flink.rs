//! Flink for the Flink subject (`flink-kafkasink`): a session cluster's classpath and the
//! job jar, cached per Flink and connector version in `<cache>/flink/<flink>-<connector>/`.
//!
//! Maven Central serves Flink's module jars but not `flink-dist`, so the classpath a
//! distribution's `lib/` would hold is assembled from the module jars: the job's pom
//! (`subjects/flink/pom.xml`, compiled into this binary with the job's sources) lists the
//! cluster's classpath as `provided`, `mvn dependency:copy-dependencies -DincludeScope=provided`
//! copies it into `lib/`, and `mvn package` builds the thin job jar beside it
//! (`sinkhole-flink-job.jar`). The install has the Kafka install's shape: a hidden work
//! directory renamed into place when complete, a per-version lock, the marker
//! (`sinkhole-flink.json`, listing every jar with its size and the digest of the job's
//! sources) written last, and `mvn` run as an owned process (Ctrl-C leaves no Maven).
//! A binary with changed job sources rebuilds the install.
//!
//! A contributor's connector jar (`flink.connector_jar`) is not installed: a run puts it on
//! its own cluster's classpath in place of the released one ([`check_connector_jar`] says
//! whether a file is a connector at all).
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::maven::{classify_missing, run_mvn, tail_of, MvnFailure};
use super::workdir::{list_jars, lock_version, remove_stale_work_dirs, unique, write_file, TempDir};
use super::{
    cache_root, check_java, find_mvn, format_mib, format_utc, io_err, non_empty_env, InstallError, JarEntry,
    MAVEN_REPO_ENV,
};

/// The Flink release the subject runs when a scenario names none.
pub const DEFAULT_FLINK: &str = "2.2.1";
/// The flink-connector-kafka release built for [`DEFAULT_FLINK`].
pub const DEFAULT_CONNECTOR: &str = "5.0.0-2.2";
/// Written last into a complete install.
pub const MARKER_FILE: &str = "sinkhole-flink.json";
/// The job jar in an install.
pub const JOB_JAR: &str = "sinkhole-flink-job.jar";
/// The job's entry class (the jar's `Main-Class`).
pub const JOB_MAIN_CLASS: &str = "sinkhole.flink.SinkholeJob";
/// The entry every flink-connector-kafka jar holds.
pub const KAFKA_SINK_ENTRY: &str = "org/apache/flink/connector/kafka/sink/KafkaSink.class";
const MARKER_FORMAT: u32 = 1;
const FLINK_GROUP: &str = "org.apache.flink";
const CONNECTOR_ARTIFACT: &str = "flink-connector-kafka";

/// The job's build: its pom and main sources (its tests run with `mvn test` in the repository).
const JOB_SOURCES: &[(&str, &str)] = &[
    ("pom.xml", include_str!("../../subjects/flink/pom.xml")),
    (
        "src/main/java/sinkhole/flink/CheckpointLog.java",
        include_str!("../../subjects/flink/src/main/java/sinkhole/flink/CheckpointLog.java"),
    ),
    (
        "src/main/java/sinkhole/flink/JobArgs.java",
        include_str!("../../subjects/flink/src/main/java/sinkhole/flink/JobArgs.java"),
    ),
    (
        "src/main/java/sinkhole/flink/Provenance.java",
        include_str!("../../subjects/flink/src/main/java/sinkhole/flink/Provenance.java"),
    ),
    (
        "src/main/java/sinkhole/flink/RecordGenerator.java",
        include_str!("../../subjects/flink/src/main/java/sinkhole/flink/RecordGenerator.java"),
    ),
    (
        "src/main/java/sinkhole/flink/Records.java",
        include_str!("../../subjects/flink/src/main/java/sinkhole/flink/Records.java"),
    ),
    (
        "src/main/java/sinkhole/flink/SinkholeJob.java",
        include_str!("../../subjects/flink/src/main/java/sinkhole/flink/SinkholeJob.java"),
    ),
    (
        "src/main/java/sinkhole/flink/SinkholeRecord.java",
        include_str!("../../subjects/flink/src/main/java/sinkhole/flink/SinkholeRecord.java"),
    ),
    (
        "src/main/java/sinkhole/flink/SinkholeSerializer.java",
        include_str!("../../subjects/flink/src/main/java/sinkhole/flink/SinkholeSerializer.java"),
    ),
];

/// An installed Flink classpath and job jar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlinkDist {
    pub flink: String,
    pub connector: String,
    pub home: PathBuf,
    /// The cluster's classpath (`lib/*.jar`).
    pub lib_dir: PathBuf,
    pub job_jar: PathBuf,
    /// The released connector jar in `lib_dir`.
    pub connector_jar: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum FlinkError {
    /// java, mvn, the disk: what the Kafka install reports too.
    #[error(transparent)]
    Install(#[from] InstallError),

    #[error("invalid {what} \"{item}\": {reason}")]
    InvalidVersion { what: &'static str, item: String, reason: String },

    #[error("{what} is not published on Maven Central (mvn: {line}; full log: {})", log.display())]
    UnknownVersion { what: String, line: String, log: PathBuf },

    #[error("cannot download Flink {flink} / flink-connector-kafka {connector}: mvn cannot reach Maven Central: {line}\n  check the network, or the proxy and mirror settings in ~/.m2/settings.xml; full mvn log: {}", log.display())]
    Unreachable { flink: String, connector: String, line: String, log: PathBuf },

    #[error("mvn failed while {doing} ({what}): {detail}\nfull mvn log: {}", log.display())]
    MavenFailed { doing: &'static str, what: String, detail: String, log: PathBuf },

    #[error("Flink {flink} with flink-connector-kafka {connector} is not installed (looked in {}{}); run `sinkhole setup --flink {flink} --connector {connector}`", home.display(), incomplete.as_ref().map(|r| format!(": an earlier install there is incomplete, {r}")).unwrap_or_default())]
    NotInstalled { flink: String, connector: String, home: PathBuf, incomplete: Option<String> },

    #[error("{}: not a flink-connector-kafka jar: {why}", path.display())]
    NotAConnector { path: PathBuf, why: String },
}

impl FlinkError {
    /// Whether the error is about the user's input rather than the machine.
    pub fn is_bad_input(&self) -> bool {
        match self {
            FlinkError::Install(e) => e.is_bad_input(),
            FlinkError::InvalidVersion { .. }
            | FlinkError::UnknownVersion { .. }
            | FlinkError::NotInstalled { .. }
            | FlinkError::NotAConnector { .. } => true,
            FlinkError::Unreachable { .. } | FlinkError::MavenFailed { .. } => false,
        }
    }
}

// ---------------------------------------------------------------------------
// versions

/// A Flink release: `major.minor.patch` (the job builds against Flink 1.20 and 2.x).
pub fn check_flink_version(v: &str) -> Result<(u32, u32, u32), FlinkError> {
    let bad = |reason: String| FlinkError::InvalidVersion { what: "Flink version", item: v.to_string(), reason };
    let parts: Vec<u32> = v.split('.').map(|p| p.parse::<u32>()).collect::<Result<_, _>>().map_err(|_| {
        bad("expected three dot-separated numbers such as 2.2.1 (Flink releases, as Maven Central names them)".into())
    })?;
    let [major, minor, patch] = parts[..] else {
        return Err(bad("expected three dot-separated numbers such as 2.2.1".into()));
    };
    if (major, minor) < (1, 20) {
        return Err(bad(format!("Flink {major}.{minor} is older than the job supports (Flink 1.20 and 2.x)")));
    }
    Ok((major, minor, patch))
}

/// A flink-connector-kafka release: `A.B.C-X.Y`, built for Flink X.Y (3.x for 1.20, 4.x for
/// 2.0, 5.x for 2.2); returns (A, X, Y).
pub fn check_connector_version(v: &str) -> Result<(u32, u32, u32), FlinkError> {
    let bad = |reason: &str| FlinkError::InvalidVersion {
        what: "flink-connector-kafka version",
        item: v.to_string(),
        reason: reason.to_string(),
    };
    let shape = "expected the connector's own version and the Flink version it is built for, such as 5.0.0-2.2";
    let (own, flink) = v.split_once('-').ok_or_else(|| bad(shape))?;
    let nums = |s: &str| s.split('.').map(|p| p.parse::<u32>()).collect::<Result<Vec<_>, _>>().ok();
    match (nums(own).as_deref(), nums(flink).as_deref()) {
        (Some([a, _, _]), Some([x, y])) if *a >= 3 => Ok((*a, *x, *y)),
        (Some([_, _, _]), Some([_, _])) => Err(bad("connectors before 3.0 have no KafkaSink on Flink 1.20+")),
        _ => Err(bad(shape)),
    }
}

/// Both versions, and that the connector is built for this Flink.
pub fn check_versions(flink: &str, connector: &str) -> Result<(), FlinkError> {
    let (fx, fy, _) = check_flink_version(flink)?;
    let (_, cx, cy) = check_connector_version(connector)?;
    if (fx, fy) != (cx, cy) {
        return Err(FlinkError::InvalidVersion {
            what: "flink-connector-kafka version",
            item: connector.to_string(),
            reason: format!(
                "it is built for Flink {cx}.{cy}, not for Flink {flink}: use a {fx}.{fy} connector (e.g. 5.0.0-2.2 for 2.2.x, 4.0.1-2.0 for 2.0.x, 3.4.0-1.20 for 1.20.x)"
            ),
        });
    }
    Ok(())
}

/// The flink-connector-kafka releases for Flink 1.20 and 2.x on Maven Central, oldest first:
/// what `sinkhole bisect --connector A..B` walks (those built for the scenario's Flink line).
pub const CONNECTOR_RELEASES: &[&str] =
    &["3.3.0-1.20", "3.4.0-1.20", "4.0.0-2.0", "4.0.1-2.0", "5.0.0-2.1", "5.0.0-2.2"];

/// The connector releases from `lo` to `hi` (both included, by the connector's own version,
/// then its Flink line): those built for Flink `flink`'s line, and those that are not (a run
/// would need another Flink), each oldest first.
pub fn connectors_between(lo: &str, hi: &str, flink: &str) -> Result<(Vec<String>, Vec<String>), FlinkError> {
    let key = |v: &str| -> Result<(Vec<u32>, u32, u32), FlinkError> {
        let (_, x, y) = check_connector_version(v)?;
        let own = v.split('-').next().unwrap_or("").split('.').filter_map(|p| p.parse().ok()).collect();
        Ok((own, x, y))
    };
    let (klo, khi) = (key(lo)?, key(hi)?);
    if klo > khi {
        return Err(FlinkError::InvalidVersion {
            what: "flink-connector-kafka range",
            item: format!("{lo}..{hi}"),
            reason: "the range runs backwards: write the older version first".into(),
        });
    }
    let (fx, fy, _) = check_flink_version(flink)?;
    let mut fits = Vec::new();
    let mut other = Vec::new();
    for v in CONNECTOR_RELEASES.iter().copied().chain([lo, hi]) {
        let k = key(v)?;
        if k < klo || k > khi || fits.iter().chain(other.iter()).any(|x: &String| x == v) {
            continue;
        }
        if (k.1, k.2) == (fx, fy) {
            fits.push(v.to_string());
        } else {
            other.push(v.to_string());
        }
    }
    let order = |v: &String| key(v).unwrap_or_default();
    fits.sort_by_key(order);
    other.sort_by_key(order);
    Ok((fits, other))
}

/// The flink-connector-kafka release known to work with a Flink minor (checked here:
/// 5.0.0-2.2 on 2.2.1, 4.0.1-2.0 on 2.0.1, 3.4.0-1.20 on 1.20.3).
pub fn default_connector(flink: &str) -> Option<&'static str> {
    match check_flink_version(flink).ok()? {
        (2, 2, _) => Some("5.0.0-2.2"),
        (2, 0, _) => Some("4.0.1-2.0"),
        (1, 20, _) => Some("3.4.0-1.20"),
        _ => None,
    }
}

/// Whether the connector has the naming strategy (`TransactionNamingStrategy`, connector 4.0+:
/// INCREMENTING and POOLING; before, only INCREMENTING's `{prefix}-{subtask}-{checkpoint}`).
pub fn check_naming(connector: &str, naming: &str) -> Result<(), String> {
    let major = check_connector_version(connector).map(|(a, _, _)| a).unwrap_or(0);
    match naming {
        "INCREMENTING" => Ok(()),
        "POOLING" if major >= 4 => Ok(()),
        "POOLING" => Err(format!(
            "flink-connector-kafka {connector} has no POOLING naming (TransactionNamingStrategy exists from connector 4.0): use INCREMENTING or a 4.x/5.x connector"
        )),
        other => Err(format!("{other:?}: the connector's naming strategies are INCREMENTING and POOLING")),
    }
}

// ---------------------------------------------------------------------------
// a contributor's connector jar

/// A connector jar checked by [`check_connector_jar`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectorJar {
    pub path: PathBuf,
    pub sha256: String,
    pub size: u64,
}

/// Checks that `path` is a jar holding flink-connector-kafka's `KafkaSink` (entry names of a
/// zip are stored uncompressed in its local and central headers, so a scan finds them), and
/// returns its SHA-256.
pub fn check_connector_jar(path: &Path) -> Result<ConnectorJar, FlinkError> {
    let not = |why: String| FlinkError::NotAConnector { path: path.to_path_buf(), why };
    let bytes = fs::read(path).map_err(|e| not(format!("cannot read it: {e}")))?;
    if !bytes.starts_with(b"PK\x03\x04") {
        return Err(not("it is not a jar (no zip header)".into()));
    }
    let entry = KAFKA_SINK_ENTRY.as_bytes();
    if !bytes.windows(entry.len()).any(|w| w == entry) {
        return Err(not(format!("it has no {KAFKA_SINK_ENTRY}")));
    }
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    Ok(ConnectorJar { path, sha256: hex(&Sha256::digest(&bytes)), size: bytes.len() as u64 })
}

/// SHA-256 of a file, hex.
pub fn sha256_file(path: &Path) -> io::Result<String> {
    let mut f = fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(hex(&h.finalize()));
        }
        h.update(&buf[..n]);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The digest of the job sources compiled into this binary (the marker records it).
pub fn sources_digest() -> String {
    let mut h = Sha256::new();
    for (name, text) in JOB_SOURCES {
        h.update(name.as_bytes());
        h.update([0]);
        h.update(text.as_bytes());
        h.update([0]);
    }
    hex(&h.finalize())
}

// ---------------------------------------------------------------------------
// the marker, resolve

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Marker {
    format: u32,
    flink: String,
    connector: String,
    installed_at: String,
    sources_sha256: String,
    job_jar_sha256: String,
    jars: Vec<JarEntry>,
}

fn key(flink: &str, connector: &str) -> String {
    format!("{flink}-{connector}")
}

/// Where an install of this pair lives.
pub fn home_in(cache: &Path, flink: &str, connector: &str) -> PathBuf {
    cache.join("flink").join(key(flink, connector))
}

fn dist(home: PathBuf, flink: &str, connector: &str) -> FlinkDist {
    let lib_dir = home.join("lib");
    FlinkDist {
        flink: flink.to_string(),
        connector: connector.to_string(),
        job_jar: home.join(JOB_JAR),
        connector_jar: lib_dir.join(format!("{CONNECTOR_ARTIFACT}-{connector}.jar")),
        lib_dir,
        home,
    }
}

/// Why `home` is not a complete install of the pair (None: it is).
fn check_install(home: &Path, flink: &str, connector: &str) -> Option<Option<String>> {
    if !home.exists() {
        return Some(None);
    }
    let broken = |why: String| Some(Some(why));
    let marker: Marker = match fs::read_to_string(home.join(MARKER_FILE)) {
        Ok(t) => match serde_json::from_str(&t) {
            Ok(m) => m,
            Err(e) => return broken(format!("{MARKER_FILE} is not valid: {e}")),
        },
        Err(_) => return broken(format!("{MARKER_FILE} is missing")),
    };
    if marker.format != MARKER_FORMAT || marker.flink != flink || marker.connector != connector {
        return broken(format!("{MARKER_FILE} is for another install"));
    }
    if marker.sources_sha256 != sources_digest() {
        return broken("the job's sources changed since it was built".into());
    }
    for jar in &marker.jars {
        match fs::metadata(home.join("lib").join(&jar.name)) {
            Ok(m) if m.len() == jar.size => {}
            _ => return broken(format!("lib/{} is missing or has another size", jar.name)),
        }
    }
    let d = dist(home.to_path_buf(), flink, connector);
    if !d.job_jar.is_file() || !d.connector_jar.is_file() {
        return broken(format!("{JOB_JAR} or the connector jar is missing"));
    }
    None
}

/// The installed pair.
pub fn resolve(flink: &str, connector: &str) -> Result<FlinkDist, FlinkError> {
    resolve_in(&cache_root(), flink, connector)
}

/// [`resolve`] with an explicit cache root.
pub fn resolve_in(cache: &Path, flink: &str, connector: &str) -> Result<FlinkDist, FlinkError> {
    check_versions(flink, connector)?;
    let home = home_in(cache, flink, connector);
    match check_install(&home, flink, connector) {
        None => Ok(dist(home, flink, connector)),
        Some(incomplete) => Err(FlinkError::NotInstalled {
            flink: flink.to_string(),
            connector: connector.to_string(),
            home,
            incomplete,
        }),
    }
}

// ---------------------------------------------------------------------------
// install

/// Result of [`install`].
#[derive(Debug, Clone)]
pub enum FlinkOutcome {
    Installed { dist: FlinkDist, jars: usize, elapsed: Duration },
    AlreadyInstalled { dist: FlinkDist },
}

impl FlinkOutcome {
    pub fn into_dist(self) -> FlinkDist {
        match self {
            FlinkOutcome::Installed { dist, .. } | FlinkOutcome::AlreadyInstalled { dist } => dist,
        }
    }
}

/// Installs the pair unless a complete install exists.
pub fn ensure(flink: &str, connector: &str, progress: &mut dyn FnMut(&str)) -> Result<FlinkDist, FlinkError> {
    install(flink, connector, progress).map(FlinkOutcome::into_dist)
}

/// Installs Flink `flink`'s classpath and the job built against it and connector `connector`.
pub fn install(flink: &str, connector: &str, progress: &mut dyn FnMut(&str)) -> Result<FlinkOutcome, FlinkError> {
    install_in(&cache_root(), flink, connector, progress)
}

/// [`install`] with an explicit cache root.
pub fn install_in(
    cache: &Path,
    flink: &str,
    connector: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<FlinkOutcome, FlinkError> {
    let started = Instant::now();
    check_versions(flink, connector)?;
    let key = key(flink, connector);
    let dir = cache.join("flink");
    let home = home_in(cache, flink, connector);
    match check_install(&home, flink, connector) {
        None => {
            progress(&format!("Flink {flink} / connector {connector} is already installed in {}", home.display()));
            return Ok(FlinkOutcome::AlreadyInstalled { dist: dist(home, flink, connector) });
        }
        Some(Some(why)) => progress(&format!("the install in {} is incomplete ({why}); reinstalling", home.display())),
        Some(None) => {}
    }
    check_java()?;
    let mvn = find_mvn()?;
    fs::create_dir_all(&dir).map_err(io_err(format!("cannot create {}", dir.display())))?;
    let _lock = lock_version(&dir, &key, progress)?;
    if check_install(&home, flink, connector).is_none() {
        return Ok(FlinkOutcome::AlreadyInstalled { dist: dist(home, flink, connector) });
    }
    remove_stale_work_dirs(&dir, &key);
    let work = TempDir::new(dir.join(format!(".{key}.partial-{}-{}", std::process::id(), unique())));
    let job = work.path().join("job");
    for (name, text) in JOB_SOURCES {
        let path = job.join(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io_err(format!("cannot create {}", parent.display())))?;
        }
        write_file(&path, text.as_bytes())?;
    }
    let lib = work.path().join("lib");
    fs::create_dir_all(&lib).map_err(io_err(format!("cannot create {}", lib.display())))?;
    let log = dir.join(format!("{key}.install.log"));
    let repo = non_empty_env(MAVEN_REPO_ENV).map(PathBuf::from);
    let props = [format!("-Dflink.version={flink}"), format!("-Dconnector.version={connector}")];
    progress(&format!("resolving Flink {flink} and flink-connector-kafka {connector} with Maven …"));
    let mut copy: Vec<String> = props.to_vec();
    copy.extend([
        "dependency:copy-dependencies".to_string(),
        "-DincludeScope=provided".to_string(),
        format!("-DoutputDirectory={}", lib.display()),
    ]);
    let run = run_mvn(&mvn, &job, repo.as_deref(), &log, &copy, false, progress)?;
    if !run.status.success() {
        return Err(classify(flink, connector, "resolving the cluster classpath", &run.output, run.status, &log));
    }
    progress("building the job jar with Maven …");
    let mut package: Vec<String> = props.to_vec();
    package.extend(["-DskipTests".to_string(), "package".to_string()]);
    let run = run_mvn(&mvn, &job, repo.as_deref(), &log, &package, true, progress)?;
    if !run.status.success() {
        return Err(classify(flink, connector, "building the job jar", &run.output, run.status, &log));
    }
    let built = job.join("target").join(format!("sinkhole-flink-job-{flink}.jar"));
    let job_jar = work.path().join(JOB_JAR);
    fs::rename(&built, &job_jar).map_err(io_err(format!("cannot move {}", built.display())))?;
    let _ = fs::remove_dir_all(&job);
    let jars = list_jars(&lib)?;
    let connector_jar = format!("{CONNECTOR_ARTIFACT}-{connector}.jar");
    if !jars.iter().any(|j| j.name == connector_jar) {
        return Err(FlinkError::MavenFailed {
            doing: "resolving the cluster classpath",
            what: format!("Flink {flink}, flink-connector-kafka {connector}"),
            detail: format!(
                "it reported success, but lib/ has no connector jar; last lines of its output:
{}",
                tail_of(&run.output)
            ),
            log,
        });
    }
    let bytes: u64 = jars.iter().map(|j| j.size).sum();
    progress(&format!("cluster classpath: {} jars ({}); job jar built", jars.len(), format_mib(bytes)));
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let marker = Marker {
        format: MARKER_FORMAT,
        flink: flink.into(),
        connector: connector.into(),
        installed_at: format_utc(now),
        sources_sha256: sources_digest(),
        job_jar_sha256: sha256_file(&job_jar).map_err(io_err(format!("cannot read {}", job_jar.display())))?,
        jars,
    };
    write_file(&work.path().join(MARKER_FILE), &serde_json::to_vec_pretty(&marker).expect("marker serializes"))?;
    let count = marker.jars.len();
    if home.exists() {
        let trash = dir.join(format!(".{key}.old-{}-{}", std::process::id(), unique()));
        fs::rename(&home, &trash).map_err(io_err(format!("cannot move aside {}", home.display())))?;
        let _ = fs::remove_dir_all(&trash);
    }
    fs::rename(work.path(), &home).map_err(io_err(format!("cannot rename into {}", home.display())))?;
    work.disarm();
    let elapsed = started.elapsed();
    progress(&format!(
        "installed Flink {flink} / connector {connector} in {} ({:.1} s)",
        home.display(),
        elapsed.as_secs_f64()
    ));
    Ok(FlinkOutcome::Installed { dist: dist(home, flink, connector), jars: count, elapsed })
}

/// What a failed mvn run means: an unknown Flink or connector version, Maven Central out of
/// reach, or anything else (with the output's tail).
fn classify(
    flink: &str,
    connector: &str,
    doing: &'static str,
    output: &str,
    status: std::process::ExitStatus,
    log: &Path,
) -> FlinkError {
    let coords = |artifact: &str, v: &str| {
        vec![format!("{FLINK_GROUP}:{artifact}:jar:{v}"), format!("{FLINK_GROUP}:{artifact}:pom:{v}")]
    };
    let unknown = |what: String, line: String| FlinkError::UnknownVersion { what, line, log: log.to_path_buf() };
    match classify_missing(&coords(CONNECTOR_ARTIFACT, connector), output) {
        MvnFailure::UnknownVersion(line) => {
            return unknown(format!("flink-connector-kafka {connector} ({FLINK_GROUP}:{CONNECTOR_ARTIFACT})"), line)
        }
        MvnFailure::Unreachable(line) => {
            return FlinkError::Unreachable {
                flink: flink.into(),
                connector: connector.into(),
                line,
                log: log.to_path_buf(),
            }
        }
        MvnFailure::Other => {}
    }
    for artifact in ["flink-streaming-java", "flink-runtime", "flink-clients", "flink-runtime-web"] {
        if let MvnFailure::UnknownVersion(line) = classify_missing(&coords(artifact, flink), output) {
            return unknown(format!("Flink {flink} ({FLINK_GROUP}:{artifact})"), line);
        }
    }
    FlinkError::MavenFailed {
        doing,
        what: format!("Flink {flink}, flink-connector-kafka {connector}"),
        detail: format!(
            "{}; last lines of its output:
{}",
            super::maven::describe_status(status),
            tail_of(output)
        ),
        log: log.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connector_range_splits_into_this_flinks_releases_and_the_others() {
        let (fits, other) = connectors_between("4.0.0-2.0", "5.0.0-2.2", "2.2.1").unwrap();
        assert_eq!(fits, ["5.0.0-2.2"]);
        assert_eq!(other, ["4.0.0-2.0", "4.0.1-2.0", "5.0.0-2.1"]);
        let (fits, _) = connectors_between("3.3.0-1.20", "3.4.0-1.20", "1.20.3").unwrap();
        assert_eq!(fits, ["3.3.0-1.20", "3.4.0-1.20"]);
        assert!(connectors_between("5.0.0-2.2", "4.0.0-2.0", "2.2.1").unwrap_err().to_string().contains("backwards"));
        assert!(connectors_between("nope", "5.0.0-2.2", "2.2.1").is_err());
    }

    #[test]
    fn versions_pair_a_connector_with_its_flink() {
        assert!(check_versions("2.2.1", "5.0.0-2.2").is_ok());
        assert!(check_versions("2.0.1", "4.0.1-2.0").is_ok());
        assert!(check_versions("1.20.3", "3.4.0-1.20").is_ok());
        let e = check_versions("2.0.1", "5.0.0-2.2").unwrap_err().to_string();
        assert!(e.contains("built for Flink 2.2, not for Flink 2.0.1"), "{e}");
        assert!(check_flink_version("2.2").unwrap_err().to_string().contains("three dot-separated"));
        assert!(check_flink_version("1.19.1").unwrap_err().to_string().contains("older than the job supports"));
        assert!(check_connector_version("5.0.0").unwrap_err().to_string().contains("such as 5.0.0-2.2"));
        assert!(check_connector_version("1.0.0-1.20").unwrap_err().to_string().contains("before 3.0"));
        assert!(FlinkError::InvalidVersion { what: "x", item: "y".into(), reason: "z".into() }.is_bad_input());
        assert_eq!(default_connector("2.2.1"), Some(DEFAULT_CONNECTOR));
        assert_eq!(default_connector("1.20.3"), Some("3.4.0-1.20"));
        assert_eq!(default_connector("2.1.0"), None);
    }

    #[test]
    fn pooling_needs_a_connector_with_naming_strategies() {
        assert!(check_naming("3.4.0-1.20", "INCREMENTING").is_ok());
        assert!(check_naming("3.4.0-1.20", "POOLING").unwrap_err().contains("from connector 4.0"));
        assert!(check_naming("4.0.1-2.0", "POOLING").is_ok());
        assert!(check_naming("5.0.0-2.2", "RANDOM").unwrap_err().contains("INCREMENTING and POOLING"));
    }

    #[test]
    fn a_connector_jar_is_a_zip_with_kafka_sink() {
        let dir = std::env::temp_dir().join(format!("sinkhole-connector-jar-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.jar");
        let mut bytes = b"PK\x03\x04....".to_vec();
        bytes.extend_from_slice(KAFKA_SINK_ENTRY.as_bytes());
        fs::write(&good, &bytes).unwrap();
        let j = check_connector_jar(&good).unwrap();
        assert_eq!(j.size, bytes.len() as u64);
        assert_eq!(j.sha256, sha256_file(&good).unwrap());
        assert_eq!(j.sha256.len(), 64);
        let other = dir.join("other.jar");
        fs::write(&other, b"PK\x03\x04 org/apache/kafka/clients/producer/KafkaProducer.class").unwrap();
        let e = check_connector_jar(&other).unwrap_err();
        assert!(e.to_string().contains("has no org/apache/flink/connector/kafka/sink/KafkaSink.class"), "{e}");
        assert!(e.is_bad_input());
        let text = dir.join("notes.txt");
        fs::write(&text, b"hello").unwrap();
        assert!(check_connector_jar(&text).unwrap_err().to_string().contains("no zip header"));
        assert!(check_connector_jar(&dir.join("missing.jar")).unwrap_err().to_string().contains("cannot read"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_install_is_complete_only_with_its_marker_jars_and_sources() {
        let cache = std::env::temp_dir().join(format!("sinkhole-flink-cache-{}", std::process::id()));
        let _ = fs::remove_dir_all(&cache);
        let e = resolve_in(&cache, "2.2.1", "5.0.0-2.2").unwrap_err();
        assert!(e.to_string().contains("run `sinkhole setup --flink 2.2.1 --connector 5.0.0-2.2`"), "{e}");
        let home = home_in(&cache, "2.2.1", "5.0.0-2.2");
        fs::create_dir_all(home.join("lib")).unwrap();
        fs::write(home.join("lib").join("flink-connector-kafka-5.0.0-2.2.jar"), b"jar").unwrap();
        fs::write(home.join(JOB_JAR), b"job").unwrap();
        let mut marker = Marker {
            format: MARKER_FORMAT,
            flink: "2.2.1".into(),
            connector: "5.0.0-2.2".into(),
            installed_at: String::new(),
            sources_sha256: sources_digest(),
            job_jar_sha256: String::new(),
            jars: vec![JarEntry { name: "flink-connector-kafka-5.0.0-2.2.jar".into(), size: 3 }],
        };
        fs::write(home.join(MARKER_FILE), serde_json::to_vec(&marker).unwrap()).unwrap();
        let d = resolve_in(&cache, "2.2.1", "5.0.0-2.2").unwrap();
        assert_eq!(d.connector_jar, home.join("lib/flink-connector-kafka-5.0.0-2.2.jar"));
        assert_eq!(d.job_jar, home.join(JOB_JAR));
        marker.sources_sha256 = "old".into();
        fs::write(home.join(MARKER_FILE), serde_json::to_vec(&marker).unwrap()).unwrap();
        let e = resolve_in(&cache, "2.2.1", "5.0.0-2.2").unwrap_err().to_string();
        assert!(e.contains("the job's sources changed"), "{e}");
        fs::remove_dir_all(&cache).unwrap();
    }

    #[test]
    fn unknown_versions_are_told_apart_from_other_failures() {
        let log = Path::new("/tmp/x.log");
        let ok = std::process::ExitStatus::default();
        let out = "[ERROR] Failed to execute goal on project sinkhole-flink-job: Could not resolve dependencies: Could not find artifact org.apache.flink:flink-connector-kafka:jar:9.0.0-2.2 in central (https://repo.maven.apache.org/maven2)";
        let e = classify("2.2.1", "9.0.0-2.2", "resolving", out, ok, log).to_string();
        assert!(
            e.starts_with("flink-connector-kafka 9.0.0-2.2 (org.apache.flink:flink-connector-kafka) is not published"),
            "{e}"
        );
        let out = "[ERROR] Could not find artifact org.apache.flink:flink-runtime:jar:2.2.9 in central";
        let e = classify("2.2.9", "5.0.0-2.2", "resolving", out, ok, log).to_string();
        assert!(e.starts_with("Flink 2.2.9 (org.apache.flink:flink-runtime) is not published"), "{e}");
        let e = classify("2.2.1", "5.0.0-2.2", "building the job jar", "[ERROR] COMPILATION ERROR", ok, log);
        assert!(e.to_string().contains("while building the job jar"), "{e}");
    }
}
