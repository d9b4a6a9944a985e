//! Where a run's results go: every path of `results/<run-id>/` (README, "Results of one run"),
//! and of the directories beside it that hold runs (a matrix's) or that a run holds (its
//! cluster's).
//!
//! Why one type: the names were string literals spread over the writers (the run, the runner,
//! the checker, the subjects) and the readers (`sinkhole check`, `report`, `serve`, `merge`,
//! `shrink`), and a reader that spells a name differently from its writer silently finds
//! nothing. A [`RunDir`] is made once when a run is planned and handed down; each writer and
//! reader asks it for the path it wants. The names on disk never change: results written by
//! any earlier sinkhole must stay readable ([`names`] is what is on disk).
use std::path::{Path, PathBuf};

/// The names on disk, as every sinkhole so far has written them.
pub mod names {
    /// The resolved scenario (a random schedule written out as faults).
    pub const SCENARIO: &str = "scenario.yaml";
    /// The resolved fault schedule (seed, mix, every fault).
    pub const SCHEDULE: &str = "schedule.json";
    /// The ACLs granted to the sink's principal (scenarios with an authorizer).
    pub const ACLS: &str = "acls.json";
    /// Every mode's row of the table.
    pub const SUMMARY: &str = "summary.json";
    /// One test case per scenario × mode (a run's), or per cell (a matrix's).
    pub const JUNIT: &str = "junit.xml";
    /// The run's report page.
    pub const REPORT: &str = "report.html";
    /// Latency histograms (HdrHistogram interval log): the run's, and each mode's.
    pub const LATENCY: &str = "latency.hlog";
    /// The cluster the rig started for the run.
    pub const CLUSTER: &str = "cluster";

    /// A mode's history.
    pub const HISTORY: &str = "history.jsonl";
    /// What a mode's live readers polled (a scenario's `readers:`).
    pub const READS: &str = "readers.jsonl";
    /// A mode's verdict.
    pub const VERDICT: &str = "verdict.json";
    /// What the checker read from a mode's topic.
    pub const DRAINED: &str = "drained.bin";
    /// The offsets the drain reached, per partition.
    pub const DRAINED_PARTITIONS: &str = "drained.partitions.json";
    /// The rig job's complete checkpoints (`chk-<n>.json`, named by the checkpoint store).
    pub const CHECKPOINTS: &str = "checkpoints";
    /// Each worker attempt's configuration.
    pub const WORKERS: &str = "workers";
    /// The workers' logs.
    pub const LOGS: &str = "logs";
    /// The coordinator's control socket (when the path fits a Unix socket address).
    pub const CONTROL_SOCKET: &str = "control.sock";
    /// The `flink-kafkasink` mode's Flink cluster.
    pub const FLINK: &str = "flink";
    /// In `flink/`: the evidence that the connector which ran is the one asked for.
    pub const FLINK_PROVENANCE: &str = "provenance.json";
    /// In `flink/`: the JobManager's and TaskManagers' logs.
    pub const FLINK_LOGS: &str = "log";

    /// In a cluster's directory: one directory per node.
    pub const NODE_PREFIX: &str = "node-";
    /// In a node's directory: the broker's log.
    pub const SERVER_LOG: &str = "server.log";
    /// In a node's directory: the broker's settings.
    pub const SERVER_PROPERTIES: &str = "server.properties";
    /// In a node's directory: the broker's `kafka.logs.dir`.
    pub const NODE_LOGS: &str = "logs";
    /// In a node's directory: the broker's `log.dirs` (its log segments and metadata).
    pub const NODE_DATA: &str = "data";

    /// A matrix's cells.
    pub const MATRIX_JSON: &str = "matrix.json";
    /// A matrix's page.
    pub const MATRIX_HTML: &str = "matrix.html";
    /// The runs' own progress lines while a matrix draws its bar.
    pub const MATRIX_LOG: &str = "matrix.log";
    /// The names a directory of scenarios leaves out of a matrix.
    pub const MATRIX_EXCLUDE: &str = "matrix-exclude.txt";
}

/// The output topic of a mode of run `run_id` (`slug`: the mode's name as a topic may hold
/// it), as the run creates it and a story looks for it in the brokers' logs.
pub fn topic_of(run_id: &str, slug: &str) -> String {
    format!("sinkhole-{run_id}-{slug}")
}

/// `results/<run-id>/`: one run's results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    root: PathBuf,
}

impl RunDir {
    /// The run directory at `root` (a new run's, or an old one to read).
    pub fn at(root: impl Into<PathBuf>) -> RunDir {
        RunDir { root: root.into() }
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    pub fn scenario(&self) -> PathBuf {
        self.root.join(names::SCENARIO)
    }

    pub fn schedule(&self) -> PathBuf {
        self.root.join(names::SCHEDULE)
    }

    pub fn acls(&self) -> PathBuf {
        self.root.join(names::ACLS)
    }

    pub fn summary(&self) -> PathBuf {
        self.root.join(names::SUMMARY)
    }

    pub fn junit(&self) -> PathBuf {
        self.root.join(names::JUNIT)
    }

    pub fn report(&self) -> PathBuf {
        self.root.join(names::REPORT)
    }

    /// Every mode's latency histograms in one log.
    pub fn latency(&self) -> PathBuf {
        self.root.join(names::LATENCY)
    }

    /// The cluster the rig started for this run (not an external one).
    pub fn cluster(&self) -> ClusterDir {
        ClusterDir::at(self.root.join(names::CLUSTER))
    }

    /// `<mode>/`: a mode's results, by the mode's name.
    pub fn mode(&self, name: &str) -> ModeDir {
        ModeDir::at(self.root.join(name))
    }

    /// A finished run: its summary was written.
    pub fn has_summary(&self) -> bool {
        self.summary().is_file()
    }
}

impl AsRef<Path> for RunDir {
    fn as_ref(&self) -> &Path {
        &self.root
    }
}

/// `results/<run-id>/<mode>/`: one mode's results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeDir {
    root: PathBuf,
}

impl ModeDir {
    /// The mode directory at `root` (usually [`RunDir::mode`]; a path given on the command line).
    pub fn at(root: impl Into<PathBuf>) -> ModeDir {
        ModeDir { root: root.into() }
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The run directory it is in.
    pub fn run(&self) -> Option<RunDir> {
        self.root.parent().map(RunDir::at)
    }

    pub fn history(&self) -> PathBuf {
        self.root.join(names::HISTORY)
    }

    pub fn reads(&self) -> PathBuf {
        self.root.join(names::READS)
    }

    pub fn verdict(&self) -> PathBuf {
        self.root.join(names::VERDICT)
    }

    pub fn drained(&self) -> PathBuf {
        self.root.join(names::DRAINED)
    }

    pub fn drained_partitions(&self) -> PathBuf {
        self.root.join(names::DRAINED_PARTITIONS)
    }

    /// This mode's latency histograms.
    pub fn latency(&self) -> PathBuf {
        self.root.join(names::LATENCY)
    }

    pub fn checkpoints(&self) -> PathBuf {
        self.root.join(names::CHECKPOINTS)
    }

    pub fn workers(&self) -> PathBuf {
        self.root.join(names::WORKERS)
    }

    /// `workers/worker-<s>-attempt-<n>.json`: what one worker process of one attempt was given.
    pub fn worker_config(&self, subtask: u32, attempt: u32) -> PathBuf {
        self.workers().join(format!("worker-{subtask}-attempt-{attempt}.json"))
    }

    pub fn logs(&self) -> PathBuf {
        self.root.join(names::LOGS)
    }

    /// `logs/worker-<s>.log`: one subtask's worker output, every attempt appended.
    pub fn worker_log(&self, subtask: u32) -> PathBuf {
        self.logs().join(format!("worker-{subtask}.log"))
    }

    pub fn control_socket(&self) -> PathBuf {
        self.root.join(names::CONTROL_SOCKET)
    }

    /// The Flink cluster of the `flink-kafkasink` mode (its own layout inside).
    pub fn flink(&self) -> PathBuf {
        self.root.join(names::FLINK)
    }

    /// `flink/log/`: the Flink processes' logs (`jm.log`, `tm-<k>.log`).
    pub fn flink_logs(&self) -> PathBuf {
        self.flink().join(names::FLINK_LOGS)
    }

    pub fn flink_provenance(&self) -> PathBuf {
        self.flink().join(names::FLINK_PROVENANCE)
    }

    /// `flink/checkpoints-<job id>.json`: a Flink job's checkpoint history as its REST API gave it.
    pub fn flink_checkpoints(&self, job: &str) -> PathBuf {
        self.flink().join(format!("checkpoints-{job}.json"))
    }

    /// A judged mode: its verdict was written.
    pub fn has_verdict(&self) -> bool {
        self.verdict().is_file()
    }
}

impl AsRef<Path> for ModeDir {
    fn as_ref(&self) -> &Path {
        &self.root
    }
}

/// A cluster's directory (a run's `cluster/`, or `sinkhole cluster up`'s): one `node-<id>/` per
/// node. What else is in a node's directory (data, Kafka's own logs) is the backend's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterDir {
    root: PathBuf,
}

impl ClusterDir {
    pub fn at(root: impl Into<PathBuf>) -> ClusterDir {
        ClusterDir { root: root.into() }
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    pub fn node(&self, id: i32) -> PathBuf {
        self.root.join(format!("{}{id}", names::NODE_PREFIX))
    }

    /// The ids of the nodes that have a directory here, lowest first (none: no cluster here).
    pub fn node_ids(&self) -> Vec<i32> {
        let mut ids: Vec<i32> = std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.strip_prefix(names::NODE_PREFIX)?.parse().ok())
            .collect();
        ids.sort_unstable();
        ids
    }

    /// A node's log as a run directory cites it: `cluster/node-<id>/server.log`.
    pub fn node_log_name(id: i32) -> String {
        format!("{}/{}{id}/{}", names::CLUSTER, names::NODE_PREFIX, names::SERVER_LOG)
    }

    /// The broker's log (a local node writes it there; a container's is collected there at teardown).
    pub fn node_log(&self, id: i32) -> PathBuf {
        self.node(id).join(names::SERVER_LOG)
    }

    pub fn node_properties(&self, id: i32) -> PathBuf {
        self.node(id).join(names::SERVER_PROPERTIES)
    }

    /// The broker's `kafka.logs.dir`.
    pub fn node_logs(&self, id: i32) -> PathBuf {
        self.node(id).join(names::NODE_LOGS)
    }
}

impl AsRef<Path> for ClusterDir {
    fn as_ref(&self) -> &Path {
        &self.root
    }
}

/// A matrix's directory (`sinkhole matrix --out`, a shard's, a merge's): `matrix.json`,
/// `matrix.html` and `junit.xml`; the runs themselves are run directories elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatrixDir {
    root: PathBuf,
}

impl MatrixDir {
    pub fn at(root: impl Into<PathBuf>) -> MatrixDir {
        MatrixDir { root: root.into() }
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    pub fn json(&self) -> PathBuf {
        self.root.join(names::MATRIX_JSON)
    }

    pub fn html(&self) -> PathBuf {
        self.root.join(names::MATRIX_HTML)
    }

    pub fn junit(&self) -> PathBuf {
        self.root.join(names::JUNIT)
    }

    pub fn log(&self) -> PathBuf {
        self.root.join(names::MATRIX_LOG)
    }

    /// In a directory of scenarios given to the matrix (not in the matrix's own).
    pub fn exclude_in(scenarios: &Path) -> PathBuf {
        scenarios.join(names::MATRIX_EXCLUDE)
    }

    /// A matrix: its cells were written.
    pub fn has_matrix(&self) -> bool {
        self.json().is_file()
    }
}

impl AsRef<Path> for MatrixDir {
    fn as_ref(&self) -> &Path {
        &self.root
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checked-in run that an earlier sinkhole wrote (`rig/tests/fixtures/old-results`).
    fn old_run() -> RunDir {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rig/tests/fixtures/old-results");
        let run = std::fs::read_dir(&base)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.is_dir())
            .unwrap_or_else(|| panic!("a run under {}", base.display()));
        RunDir::at(run)
    }

    #[test]
    fn a_run_dir_names_what_an_old_run_has_on_disk() {
        let run = old_run();
        for p in [run.scenario(), run.schedule(), run.summary()] {
            assert!(p.is_file(), "{}", p.display());
        }
        assert!(run.has_summary());
        for mode in ["legacy", "twopc-inject"] {
            let m = run.mode(mode);
            for p in [m.history(), m.verdict(), m.drained(), m.drained_partitions()] {
                assert!(p.is_file(), "{}", p.display());
            }
            assert!(m.checkpoints().join("chk-1.json").is_file());
            assert!(m.has_verdict());
            assert_eq!(m.run().as_ref(), Some(&run));
        }
    }

    #[test]
    fn the_names_are_the_literals_of_the_readme_layout() {
        let run = RunDir::at("/r/run-1");
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(run.path(), Path::new("/r/run-1"));
        assert_eq!(run.scenario(), p("/r/run-1/scenario.yaml"));
        assert_eq!(run.schedule(), p("/r/run-1/schedule.json"));
        assert_eq!(run.acls(), p("/r/run-1/acls.json"));
        assert_eq!(run.summary(), p("/r/run-1/summary.json"));
        assert_eq!(run.junit(), p("/r/run-1/junit.xml"));
        assert_eq!(run.report(), p("/r/run-1/report.html"));
        assert_eq!(run.latency(), p("/r/run-1/latency.hlog"));
        assert_eq!(run.cluster().node_log(1), p("/r/run-1/cluster/node-1/server.log"));
        assert_eq!(run.cluster().node_properties(2), p("/r/run-1/cluster/node-2/server.properties"));
        assert_eq!(run.cluster().node_logs(3), p("/r/run-1/cluster/node-3/logs"));
        assert_eq!(ClusterDir::node_log_name(2), "cluster/node-2/server.log");
        assert!(run.cluster().node_ids().is_empty(), "no such directory: no nodes");

        let m = run.mode("legacy~restore-off-by-one");
        let in_mode = |s: &str| p(&format!("/r/run-1/legacy~restore-off-by-one/{s}"));
        assert_eq!(m.path(), in_mode("").as_path());
        assert_eq!(m.history(), in_mode("history.jsonl"));
        assert_eq!(m.verdict(), in_mode("verdict.json"));
        assert_eq!(m.drained(), in_mode("drained.bin"));
        assert_eq!(m.drained_partitions(), in_mode("drained.partitions.json"));
        assert_eq!(m.latency(), in_mode("latency.hlog"));
        assert_eq!(m.checkpoints(), in_mode("checkpoints"));
        assert_eq!(m.worker_config(0, 1), in_mode("workers/worker-0-attempt-1.json"));
        assert_eq!(m.worker_log(2), in_mode("logs/worker-2.log"));
        assert_eq!(m.control_socket(), in_mode("control.sock"));
        assert_eq!(m.flink_provenance(), in_mode("flink/provenance.json"));
        assert_eq!(m.flink_logs(), in_mode("flink/log"));
        assert_eq!(topic_of("run-1", "legacy"), "sinkhole-run-1-legacy");
        assert_eq!(m.flink_checkpoints("abc"), in_mode("flink/checkpoints-abc.json"));

        let mx = MatrixDir::at("/r/matrix-1");
        assert_eq!(mx.json(), p("/r/matrix-1/matrix.json"));
        assert_eq!(mx.html(), p("/r/matrix-1/matrix.html"));
        assert_eq!(mx.junit(), p("/r/matrix-1/junit.xml"));
        assert_eq!(mx.log(), p("/r/matrix-1/matrix.log"));
        assert_eq!(MatrixDir::exclude_in(Path::new("/s")), p("/s/matrix-exclude.txt"));
    }
}
