//! `sinkhole bench-checker` (hidden): the checker on synthetic records.
use super::args::BenchCheckerArgs;
use super::Failure;

pub fn run(a: BenchCheckerArgs) -> Result<(), Failure> {
    let r = sinkhole_checker::bench::run(a.records, a.subtasks);
    let reads = sinkhole_checker::bench::run_reads(a.records, a.subtasks);
    if a.json {
        #[derive(serde::Serialize)]
        struct Both<'a> {
            #[serde(flatten)]
            output: &'a sinkhole_checker::bench::BenchReport,
            readers: &'a sinkhole_checker::bench::ReadBench,
        }
        print!("{}", sinkhole_base::provenance::to_json(&Both { output: &r, readers: &reads })?);
    } else {
        let mem = match (r.peak_bytes, r.bytes_per_record) {
            (Some(b), Some(per)) => format!("{:.1} MiB peak ({per:.2} bytes/record)", b as f64 / 1048576.0),
            _ => "peak memory unknown (no /proc)".to_string(),
        };
        println!(
            "checker: {} records ({} subtasks, {} transactions) in {:.3} s: {:.2} M records/s, {mem}",
            r.records,
            r.subtasks,
            r.transactions,
            r.check_seconds,
            r.records_per_sec / 1e6
        );
        println!(
            "found: {} lost, {} duplicated, {} nonmonotonic (injected: one lost and one replayed transaction)",
            r.counts.lost, r.counts.duplicated, r.counts.nonmonotonic
        );
        let mem = match (reads.peak_bytes, reads.bytes_per_poll) {
            (Some(b), Some(per)) => format!("{:.1} MiB peak ({per:.2} bytes/poll)", b as f64 / 1048576.0),
            _ => "peak memory unknown (no /proc)".to_string(),
        };
        println!(
            "readers: {} polls of one live reader judged in {:.3} s: {:.2} M polls/s, {mem}",
            reads.polls,
            reads.check_seconds,
            reads.polls_per_sec / 1e6
        );
        let x = &reads.report;
        println!(
            "found: {} G1a, {} poll-skip, {} unseen (injected: one aborted transaction polled, one committed record passed over)",
            x.g1a, x.poll_skip, x.unseen
        );
    }
    Ok(())
}
