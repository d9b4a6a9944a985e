//! Kafka's own Java transactional producer, as a user would measure it:
//! `bin/kafka-producer-perf-test.sh`, which runs `org.apache.kafka.tools.ProducerPerformance`
//! from the `kafka-tools` jar. The rig's Kafka install has that jar but no `bin/` scripts, so
//! the class runs here as the script runs it (`kafka-run-class.sh`: its heap, garbage
//! collector and JVM flags), on the install's classpath.
//!
//! With `--transactional-id` the perf test calls `initTransactions`, then begins a transaction,
//! sends, and commits once a transaction is `--transaction-duration-ms` old (checked after
//! each send), and commits the last one before `close`. Its closing line, the figure a user
//! reads, counts acknowledged records per second from after `initTransactions` to after
//! `close` (`ProducerPerformance.Stats.printTotal`): JVM start and initialisation are not in
//! it. [`PerfResult::process_ms`] is the whole process, for the other bound.
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{anyhow, Context};
use serde::Serialize;
use sinkhole_base::procs::{self, Lifetime};
use sinkhole_install::KafkaDist;
use tokio::time::Instant;

/// The perf test's main class (`bin/kafka-producer-perf-test.sh`).
pub const PERF_CLASS: &str = "org.apache.kafka.tools.ProducerPerformance";

/// The JVM options `bin/kafka-producer-perf-test.sh` runs with: its `KAFKA_HEAP_OPTS`
/// (512 MiB) and `kafka-run-class.sh`'s default `KAFKA_JVM_PERFORMANCE_OPTS`.
pub const JVM_OPTS: [&str; 8] = [
    "-Xmx512M",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
];

/// One perf test process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfRun {
    pub bootstrap: String,
    pub topic: String,
    pub records: u64,
    pub record_size: usize,
    pub transactional_id: String,
    pub transaction_ms: u64,
    /// Records per second; None: unthrottled (`--throughput -1`).
    pub throughput: Option<u64>,
}

impl PerfRun {
    /// The perf test's arguments. `--producer-props` (deprecated from Kafka 4.2 on in favour
    /// of `--command-property`) is what every 4.x release reads.
    pub fn args(&self) -> Vec<String> {
        let throughput = self.throughput.map_or("-1".to_string(), |t| t.to_string());
        [
            "--topic",
            &self.topic,
            "--num-records",
            &self.records.to_string(),
            "--record-size",
            &self.record_size.to_string(),
            "--throughput",
            &throughput,
            "--transactional-id",
            &self.transactional_id,
            "--transaction-duration-ms",
            &self.transaction_ms.to_string(),
            "--producer-props",
            &format!("bootstrap.servers={}", self.bootstrap),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    /// `java <perf-test JVM options> -cp <install> ProducerPerformance <args>`.
    pub fn command(&self, dist: &KafkaDist, logs_dir: &Path) -> Command {
        let mut cmd = Command::new(dist.java());
        cmd.args(JVM_OPTS).args(dist.log4j_jvm_args(logs_dir)).arg("-cp").arg(dist.classpath()).arg(PERF_CLASS);
        cmd.args(self.args());
        cmd
    }
}

/// The closing line of a perf test: `N records sent, X records/sec (Y MB/sec), A ms avg
/// latency, M ms max latency, …`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PerfTotal {
    pub records: u64,
    pub records_per_sec: f64,
    pub mb_per_sec: f64,
    pub avg_latency_ms: f64,
    pub max_latency_ms: f64,
}

/// The last total line of a perf test's output (the 5-second window lines have the same
/// start but no percentiles), or None.
pub fn parse_total(out: &str) -> Option<PerfTotal> {
    let line = out.lines().rev().find(|l| l.contains(" records sent, ") && l.contains("99.9th"))?;
    let number = |s: &str| s.trim().parse::<f64>().ok();
    let (records, rest) = line.trim().split_once(" records sent, ")?;
    let (rate, rest) = rest.split_once(" records/sec (")?;
    let (mb, rest) = rest.split_once(" MB/sec), ")?;
    let (avg, rest) = rest.split_once(" ms avg latency, ")?;
    let (max, _) = rest.split_once(" ms max latency")?;
    Some(PerfTotal {
        records: records.trim().parse().ok()?,
        records_per_sec: number(rate)?,
        mb_per_sec: number(mb)?,
        avg_latency_ms: number(avg)?,
        max_latency_ms: number(max)?,
    })
}

/// What one perf test process did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerfResult {
    pub transactional_id: String,
    pub total: PerfTotal,
    /// Process start to exit: JVM start, `initTransactions` and `close` included.
    pub process_ms: u64,
    pub log: PathBuf,
}

/// Runs `runs` at once (owned processes: killed with the rig) and waits for all of them,
/// at most `timeout`. Each one's output goes to `<dir>/<transactional id>.log`.
pub async fn run_all(
    dist: &KafkaDist,
    runs: &[PerfRun],
    dir: &Path,
    timeout: Duration,
) -> anyhow::Result<Vec<PerfResult>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut started = Vec::new();
    for r in runs {
        let log = dir.join(format!("{}.log", r.transactional_id));
        let out = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut cmd = r.command(dist, dir);
        cmd.stdin(Stdio::null()).stdout(out.try_clone()?).stderr(out);
        let (child, id) = procs::spawn(cmd, Lifetime::Owned).context("starting the Java perf test")?;
        started.push((r, child, id, log, Instant::now()));
    }
    let deadline = Instant::now() + timeout;
    let mut results = Vec::new();
    let mut failure = None;
    for (r, mut child, id, log, t0) in started {
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break Ok(s),
                Ok(None) if Instant::now() >= deadline => break Err(anyhow!("still running after {timeout:?}")),
                Ok(None) => tokio::time::sleep(Duration::from_millis(10)).await,
                Err(e) => break Err(e.into()),
            }
        };
        let process_ms = t0.elapsed().as_millis() as u64;
        if status.is_err() {
            let _ = id.signal_group(nix::sys::signal::Signal::SIGKILL, Duration::from_secs(2));
            let _ = child.wait();
        }
        procs::forget(id.pid);
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let outcome = match (status, parse_total(&text)) {
            (Ok(s), Some(total)) if s.success() => {
                Ok(PerfResult { transactional_id: r.transactional_id.clone(), total, process_ms, log: log.clone() })
            }
            (Ok(s), _) => Err(anyhow!("{s}, without its closing line")),
            (Err(e), _) => Err(e),
        };
        match outcome {
            Ok(res) => results.push(res),
            Err(e) if failure.is_none() => {
                failure =
                    Some(anyhow!("the Java perf test {} failed: {e} (output: {})", r.transactional_id, log.display()))
            }
            Err(_) => {}
        }
    }
    failure.map_or(Ok(results), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closing_line_is_read_and_the_window_lines_are_not() {
        let out = "\
[2026-01-01 00:00:00,000] INFO ProducerConfig values: (org.apache.kafka.clients.producer.ProducerConfig)
412345 records sent, 82469.0 records/sec (15.10 MB/sec), 12.3 ms avg latency, 250.0 ms max latency.
500000 records sent, 90909.090909 records/sec (16.64 MB/sec), 10.52 ms avg latency, 251.00 ms max latency, 4 ms 50th, 40 ms 95th, 120 ms 99th, 240 ms 99.9th.
";
        let t = parse_total(out).unwrap();
        assert_eq!(t.records, 500_000);
        assert!((t.records_per_sec - 90_909.090909).abs() < 1e-6);
        assert_eq!(t.mb_per_sec, 16.64);
        assert_eq!(t.avg_latency_ms, 10.52);
        assert_eq!(t.max_latency_ms, 251.0);
        assert_eq!(parse_total("412345 records sent, 82469.0 records/sec (15.10 MB/sec), 1.0 ms avg latency."), None);
        assert_eq!(parse_total("Exception in thread \"main\" org.apache.kafka.common.KafkaException"), None);
    }

    #[test]
    fn the_arguments_are_the_perf_test_s() {
        let r = PerfRun {
            bootstrap: "127.0.0.1:9092".into(),
            topic: "t".into(),
            records: 500_000,
            record_size: 196,
            transactional_id: "sinkhole-bench-java-0".into(),
            transaction_ms: 1000,
            throughput: None,
        };
        assert_eq!(
            r.args().join(" "),
            "--topic t --num-records 500000 --record-size 196 --throughput -1 \
             --transactional-id sinkhole-bench-java-0 --transaction-duration-ms 1000 \
             --producer-props bootstrap.servers=127.0.0.1:9092"
        );
        let throttled = PerfRun { throughput: Some(5000), ..r };
        assert!(throttled.args().join(" ").contains("--throughput 5000 "));
    }
}
