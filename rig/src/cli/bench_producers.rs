//! `sinkhole bench-producers`: the wire producer beside Kafka's Java producer
//! ([`sinkhole_rig::bench`]), then the table (or bench.json) on stdout. Exit 1 when a rig
//! run was not judged clean: its figure is then no exactly-once figure.
use sinkhole_rig::bench::{self, BenchArgs};

use super::args::BenchProducersArgs;
use super::{run_failure, Failure};

pub async fn run(a: BenchProducersArgs) -> Result<(), Failure> {
    let args =
        BenchArgs { file: a.file, modes: a.modes, rounds: a.rounds, kafka: a.kafka, results: a.results, seed: a.seed };
    let report = bench::run(&args).await.map_err(run_failure)?;
    if a.json {
        print!("{}", sinkhole_base::provenance::to_json(&report)?);
    } else {
        print!("{}", bench::render_text(&report));
    }
    if report.all_clean() {
        Ok(())
    } else {
        Err(Failure::Judged { code: 1, message: "a rig run was not judged pass: see bench.json".into() })
    }
}
