//! `sinkhole bundle RUN`: one small archive that is a bug report's attachment — the scenario
//! resolved to explicit faults, the seed, the exact Kafka (and Flink, connector) versions and
//! the brokers' configs, the story of every anomaly ([`crate::story`]), the log excerpts it
//! cites, the verdicts, and the command that replays it on a fresh clone. Never a secret: every
//! config goes through [`redact`].
//!
//! Why its own module: what a Kafka or Flink developer needs from a red run is a few hundred
//! kilobytes out of a results directory of megabytes (segments, drained records, checkpoints),
//! and which few is knowledge the rig has and the reader does not.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sinkhole_base::provenance::Provenance;
use sinkhole_base::rundir::{names, RunDir};
use sinkhole_model::SinkMode;

use crate::story::{self, chain::Link, Story, StoryError};

pub mod redact;
pub mod tar;

use tar::File;

/// The largest archive a bundle may be (a JIRA attachment, read in a minute).
pub const MAX_BYTES: usize = 5 * 1024 * 1024;
/// Lines of context around each cited log line.
pub const CONTEXT_LINES: usize = 3;
/// Where the bundle keeps the log excerpts.
pub const EXCERPTS: &str = "log-excerpts";

/// A bundle written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    pub path: PathBuf,
    pub bytes: usize,
    /// Each file and its size before compression.
    pub files: Vec<(String, usize)>,
    /// Secrets replaced in configs.
    pub redacted: usize,
    /// The command that replays the run, from the unpacked bundle's directory.
    pub replay: String,
    /// What was left out to stay under [`MAX_BYTES`].
    pub left_out: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error(transparent)]
    Story(#[from] StoryError),
    #[error("{path}: {why}")]
    Io { path: String, why: String },
    #[error("the bundle is {bytes} bytes even without the histories, over the {MAX_BYTES} a bundle may be")]
    TooBig { bytes: usize },
}

impl BundleError {
    pub fn is_bad_input(&self) -> bool {
        matches!(self, BundleError::Story(e) if e.is_bad_input())
    }
}

fn io(path: &Path, e: impl std::fmt::Display) -> BundleError {
    BundleError::Io { path: path.display().to_string(), why: e.to_string() }
}

/// What the bundle needs of the run, read once.
struct Facts {
    run_id: String,
    kafka: String,
    seed: u64,
    backend_external: bool,
    modes: Vec<String>,
}

fn facts(run: &RunDir, stories: &[Story]) -> Facts {
    let first = stories.first();
    let scenario = std::fs::read_to_string(run.scenario()).unwrap_or_default();
    Facts {
        run_id: first.map(|s| s.run_id.clone()).unwrap_or_default(),
        kafka: first.map(|s| s.kafka.clone()).unwrap_or_default(),
        seed: first.map(|s| s.seed).unwrap_or_default(),
        backend_external: scenario.contains("backend: external"),
        modes: stories.iter().map(|s| s.mode.clone()).collect(),
    }
}

/// The command that replays the run from the unpacked bundle (its scenario is resolved: the
/// faults explicit, the expectations of its version, the premises).
fn replay_command(f: &Facts) -> String {
    let modes: String =
        f.modes.iter().filter(|m| SinkMode::parse(m).is_some()).map(|m| format!(" --mode {m}")).collect();
    let external = if f.backend_external { " --bootstrap HOST:PORT" } else { "" };
    format!(
        "sinkhole setup --kafka {k} && sinkhole run scenario.yaml --kafka {k} --seed {s}{modes}{external}",
        k = f.kafka,
        s = f.seed
    )
}

/// Writes the bundle of `run` to `out` (default: `<run>/bundle-<run-id>.tar.gz`).
pub fn write(run: &RunDir, out: Option<&Path>) -> Result<Bundle, BundleError> {
    if !run.has_summary() && story::judged_modes(run).is_empty() {
        return Err(StoryError::NotARun(run.path().display().to_string()).into());
    }
    let stories = story::explain(run, None)?;
    let f = facts(run, &stories);
    let root = f.run_id.clone();
    let mut files = Vec::new();
    let mut redacted = 0;
    let mut add = |name: String, data: Vec<u8>| files.push(File { name: format!("{root}/{name}"), data });
    for (name, path) in
        [(names::SCENARIO, run.scenario()), (names::SCHEDULE, run.schedule()), (names::SUMMARY, run.summary())]
    {
        if let Ok(text) = std::fs::read_to_string(&path) {
            let (clean, n) = redact::redact(&text);
            redacted += n;
            add(name.to_string(), clean.into_bytes());
        }
    }
    for id in run.cluster().node_ids() {
        if let Ok(text) = std::fs::read_to_string(run.cluster().node_properties(id)) {
            let (clean, n) = redact::redact(&text);
            redacted += n;
            add(format!("cluster/node-{id}/{}", names::SERVER_PROPERTIES), clean.into_bytes());
        }
    }
    for s in &stories {
        let m = run.mode(&s.mode);
        add(format!("{}/story.md", s.mode), story::render::markdown(s).into_bytes());
        for (name, path) in [(names::VERDICT, m.verdict()), (names::FLINK_PROVENANCE, m.flink_provenance())] {
            if let Ok(b) = std::fs::read(&path) {
                add(format!("{}/{name}", s.mode), b);
            }
        }
    }
    for (name, text) in excerpts(run, &stories) {
        add(format!("{EXCERPTS}/{name}"), text.into_bytes());
    }
    add("versions.json".into(), versions(run, &f).into_bytes());
    let histories: Vec<File> = stories
        .iter()
        .filter_map(|s| {
            let b = std::fs::read(run.mode(&s.mode).history()).ok()?;
            Some(File { name: format!("{root}/{}/{}", s.mode, names::HISTORY), data: b })
        })
        .collect();
    let replay = replay_command(&f);
    let dest = out.map(Path::to_path_buf).unwrap_or_else(|| run.path().join(format!("bundle-{}.tar.gz", f.run_id)));
    let mtime = sinkhole_base::utc::now_ms() / 1000;
    let mut left_out = Vec::new();
    let mut all = files.clone();
    all.extend(histories.iter().cloned());
    all.push(readme(&root, &stories, &replay, redacted, &all, &left_out));
    let mut gz = tar::tar_gz(&all, mtime).map_err(|e| io(&dest, e))?;
    if gz.len() > MAX_BYTES {
        left_out = histories.iter().map(|h| format!("{} ({} bytes)", h.name, h.data.len())).collect();
        let mut without = files.clone();
        without.push(readme(&root, &stories, &replay, redacted, &files, &left_out));
        gz = tar::tar_gz(&without, mtime).map_err(|e| io(&dest, e))?;
        if gz.len() > MAX_BYTES {
            return Err(BundleError::TooBig { bytes: gz.len() });
        }
        all = without;
    }
    std::fs::write(&dest, &gz).map_err(|e| io(&dest, e))?;
    Ok(Bundle {
        path: dest,
        bytes: gz.len(),
        files: all.iter().map(|f| (f.name.clone(), f.data.len())).collect(),
        redacted,
        replay,
        left_out,
    })
}

/// The log lines the stories cite, with [`CONTEXT_LINES`] around each, one file per log:
/// `cluster/node-1/server.log` → `cluster-node-1-server.log.txt`, each line numbered as in
/// the original.
fn excerpts(run: &RunDir, stories: &[Story]) -> Vec<(String, String)> {
    let mut cited: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for e in stories.iter().flat_map(|s| s.chains.iter()).flat_map(|c| c.timeline.iter()) {
        if !matches!(e.link, Link::BrokerLog | Link::FlinkLog) {
            continue;
        }
        if let Some((file, line)) = e.cite.rsplit_once(':') {
            if let Ok(n) = line.parse::<usize>() {
                cited.entry(file.to_string()).or_default().push(n);
            }
        }
    }
    cited
        .into_iter()
        .filter_map(|(file, lines)| {
            let text = std::fs::read(run.path().join(&file)).ok()?;
            let text = String::from_utf8_lossy(&text);
            let all: Vec<&str> = text.lines().collect();
            let mut keep = std::collections::BTreeSet::new();
            for n in lines {
                for k in n.saturating_sub(CONTEXT_LINES).max(1)..=(n + CONTEXT_LINES).min(all.len()) {
                    keep.insert(k);
                }
            }
            let mut out = format!(
                "# {file}: the lines the story cites, with {CONTEXT_LINES} around each (line numbers as in the file)\n"
            );
            let mut last = 0;
            for k in keep {
                if last != 0 && k > last + 1 {
                    out.push_str("…\n");
                }
                out.push_str(&format!("{k}: {}\n", all[k - 1]));
                last = k;
            }
            let (clean, _) = redact::redact(&out);
            Some((format!("{}.txt", file.replace('/', "-")), clean))
        })
        .collect()
}

/// The exact versions: the rig's, Kafka's (and the artifacts its install resolved), Flink's
/// and the connector's where the run had them.
fn versions(run: &RunDir, f: &Facts) -> String {
    let kafka_dist = sinkhole_install::cache_root().join("kafka").join(&f.kafka).join(sinkhole_install::MARKER_FILE);
    let artifacts = std::fs::read_to_string(&kafka_dist)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("artifacts").cloned());
    let flink: BTreeMap<String, serde_json::Value> = f
        .modes
        .iter()
        .filter_map(|m| {
            let t = std::fs::read_to_string(run.mode(m).flink_provenance()).ok()?;
            Some((m.clone(), serde_json::from_str(&t).ok()?))
        })
        .collect();
    let ran_by = std::fs::read_to_string(run.summary()).ok().and_then(|t| Provenance::of_json(&t));
    let flink_spec = sinkhole_scenario::load(&run.scenario()).ok().and_then(|s| s.flink).map(|f| {
        let connector =
            f.connector.clone().or_else(|| sinkhole_install::flink::default_connector(&f.version).map(str::to_string));
        serde_json::json!({"flink": f.version, "connector": connector, "connector_jar": f.connector_jar})
    });
    let v = serde_json::json!({
        "rig_that_ran": ran_by,
        "bundled_by": Provenance::current(),
        "kafka": f.kafka,
        "kafka_artifacts": artifacts,
        "flink": flink_spec,
        "flink_provenance": flink,
        "seed": f.seed,
        "run_id": f.run_id,
    });
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

fn readme(root: &str, stories: &[Story], replay: &str, redacted: usize, files: &[File], left_out: &[String]) -> File {
    let mut t = String::new();
    let first = stories.first();
    t.push_str(&format!(
        "# sinkhole bundle: {}\n\nRun `{root}` on Kafka {}, seed {}.\n\n",
        first.map_or("", |s| s.scenario.as_str()),
        first.map_or("", |s| s.kafka.as_str()),
        first.map_or(0, |s| s.seed)
    ));
    for s in stories {
        t.push_str(&format!("- {}: **{}** — its story: `{}/story.md`\n", s.mode, s.words, s.mode));
    }
    t.push_str(&format!(
        "\n## Replay\n\nWith the `sinkhole` binary of a clone of sinkhole (`make build` puts it in `target/release/`), in this directory:\n\n    {replay}\n\n\
         `scenario.yaml` is the run's resolved scenario: every fault explicit (a random schedule written out), \
         the expectations of this Kafka version, the premises. The seed draws the same schedule and the same proxy decisions.\n\n"
    ));
    t.push_str("## Contents\n\n");
    for f in files {
        t.push_str(&format!(
            "- `{}` ({} bytes)\n",
            f.name.strip_prefix(&format!("{root}/")).unwrap_or(&f.name),
            f.data.len()
        ));
    }
    t.push_str(&format!(
        "\n`{EXCERPTS}/` holds the brokers' (and Flink's) log lines the stories cite, with {CONTEXT_LINES} lines around each, numbered as in the original files.\n"
    ));
    if redacted > 0 {
        t.push_str(&format!("\n{redacted} secret value(s) in the configs were replaced by `{}`.\n", redact::REDACTED));
    }
    if !left_out.is_empty() {
        t.push_str(&format!("\nLeft out to stay under {MAX_BYTES} bytes: {}.\n", left_out.join(", ")));
    }
    File { name: format!("{root}/README.md"), data: t.into_bytes() }
}

#[cfg(test)]
mod tests;
