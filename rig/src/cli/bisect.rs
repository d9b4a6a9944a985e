//! `sinkhole bisect SCENARIO --kafka A..B` (or `--connector A..B`): the first version that
//! shows the scenario's anomaly ([`sinkhole_rig::bisect`]): every released version in the
//! range the cache can install, N seeds each, the table and the boundary; bisect.json beside
//! the runs.
use std::path::PathBuf;

use anyhow::anyhow;
use clap::Args;
use sinkhole_rig::bisect::{self, Axis, BisectArgs};

use super::{bad, run_failure, Failure};

#[derive(Args)]
pub struct BisectCmd {
    /// The scenario (YAML).
    pub file: PathBuf,
    /// Kafka versions to walk: `A..B` (released versions from A to B, both included).
    #[arg(long, conflicts_with = "connector")]
    pub kafka: Option<String>,
    /// flink-connector-kafka releases to walk, `A..B`, on the scenario's Flink.
    #[arg(long)]
    pub connector: Option<String>,
    /// Seeds per version (seeds --seed, --seed+1, …).
    #[arg(long, default_value_t = 3)]
    pub seed_count: u32,
    /// The first seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Only these modes (repeatable); default: the scenario's.
    #[arg(long)]
    pub mode: Vec<String>,
    /// Run every version in the range: skip none, even where the search could.
    #[arg(long)]
    pub every: bool,
    /// Exit 1 unless this is the first version found with the anomaly (after a clean one):
    /// for a nightly job that holds a known bug's `expect_by` to what the releases do.
    #[arg(long)]
    pub expect_first: Option<String>,
    /// Where the runs and bisect.json go.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
}

/// `A..B` → (A, B).
fn range(flag: &str, r: &str) -> Result<(String, String), Failure> {
    let (a, b) = r
        .split_once("..")
        .ok_or_else(|| bad(anyhow!("--{flag} {r}: write a range, the oldest version first: 4.0.0..4.4.0")))?;
    Ok((a.trim().to_string(), b.trim().to_string()))
}

pub async fn run(a: BisectCmd) -> Result<(), Failure> {
    let scenario = sinkhole_scenario::load(&a.file).map_err(|e| bad(anyhow!(e.render())))?;
    if a.seed_count == 0 {
        return Err(bad(anyhow!("--seed-count 0: at least one seed per version")));
    }
    let flink = scenario.flink.as_ref().map(|f| f.version.clone());
    if a.connector.is_some() && !scenario.modes.contains(&sinkhole_model::SinkMode::FlinkKafkasink) {
        return Err(bad(anyhow!("--connector: {} runs no flink-kafkasink mode", a.file.display())));
    }
    let (axis, versions) = match (&a.kafka, &a.connector) {
        (Some(r), None) => {
            let (lo, hi) = range("kafka", r)?;
            (Axis::Kafka, sinkhole_install::releases_between(&lo, &hi).map_err(bad)?)
        }
        (None, Some(r)) => {
            let (lo, hi) = range("connector", r)?;
            let on = flink.clone().unwrap_or_else(|| sinkhole_install::flink::DEFAULT_FLINK.to_string());
            let (fits, other) = sinkhole_install::flink::connectors_between(&lo, &hi, &on).map_err(bad)?;
            if !other.is_empty() {
                eprintln!("sinkhole: not run (built for another Flink than the scenario's {on}): {}", other.join(", "));
            }
            (Axis::Connector, fits)
        }
        _ => return Err(bad(anyhow!("name the versions to walk: --kafka A..B or --connector A..B"))),
    };
    if versions.is_empty() {
        return Err(bad(anyhow!(
            "{}: no released version in that range that the cache can install (Kafka: {}; connectors: {})",
            a.kafka.as_deref().or(a.connector.as_deref()).unwrap_or(""),
            sinkhole_install::KAFKA_RELEASES.join(", "),
            sinkhole_install::flink::CONNECTOR_RELEASES.join(", ")
        )));
    }
    let stamp = sinkhole_rig::run::timestamp(sinkhole_base::utc::now_ms() / 1000);
    let dir = a.results.join(format!("bisect-{}-{stamp}", scenario.name));
    std::fs::create_dir_all(&dir).map_err(|e| Failure::Failed(anyhow!("creating {}: {e}", dir.display())))?;
    eprintln!(
        "sinkhole: bisect {} over {} {} ({} version(s)), seeds {}..{}, results in {}",
        a.file.display(),
        axis.name(),
        versions.join(", "),
        versions.len(),
        a.seed,
        a.seed + u64::from(a.seed_count) - 1,
        dir.display()
    );
    let expect_first = a.expect_first.clone();
    let args = BisectArgs {
        file: a.file,
        axis,
        versions,
        seed: a.seed,
        seed_count: a.seed_count,
        modes: a.mode,
        results: dir.clone(),
        every: a.every,
    };
    let report = bisect::bisect(&args, flink.as_deref()).await.map_err(run_failure)?;
    let json = serde_json::to_string_pretty(&report).map_err(|e| Failure::Failed(e.into()))?;
    let path = dir.join("bisect.json");
    std::fs::write(&path, json).map_err(|e| Failure::Failed(anyhow!("writing {}: {e}", path.display())))?;
    print!("{}", bisect::render(&report));
    println!("bisect.json: {}", path.display());
    match (&expect_first, &report.first_bad) {
        (Some(want), got) if got.as_deref() != Some(want.as_str()) => Err(Failure::Judged {
            code: sinkhole_rig::results::exit::FAILED,
            message: format!(
                "expected the anomaly first in {want}, found {}",
                got.as_deref().map_or("no boundary".to_string(), |g| format!("it first in {g}"))
            ),
        }),
        _ => Ok(()),
    }
}
