//! `sinkhole run FILE`: one scenario, every mode in turn on one cluster
//! ([`sinkhole_rig::run`]), then the summary on stdout.
use sinkhole_rig::run::{self, RunArgs};
use sinkhole_scenario::Backend;

use super::args::RunCmd;
use super::{judged, print_summary, run_failure, Failure};

pub async fn run(a: RunCmd) -> Result<(), Failure> {
    let RunCmd {
        file,
        modes,
        kafka,
        seed,
        results,
        json,
        backend,
        image,
        fail_on_inconclusive,
        connector_jar,
        sequential,
        bootstrap,
    } = a;
    let args = RunArgs {
        file,
        modes,
        mutants: vec![],
        kafka,
        seed,
        results,
        json,
        fail_on_inconclusive,
        connector_jar,
        connector: None,
        sequential,
        bootstrap,
        // A single run keeps its brokers' log segments for inspection.
        drop_data: false,
    };
    let backend = backend.map(|b| match b.as_str() {
        "containers" => Backend::Containers,
        "external" => Backend::External,
        _ => Backend::Local,
    });
    let summary = run::run_on(&args, backend, image).await.map_err(run_failure)?;
    print_summary(&summary, args.json)?;
    judged(summary.exit_code, summary.policy(), "mode")
}
