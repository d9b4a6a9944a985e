//! `sinkhole bench-checker` (hidden): the checker on synthetic records.
use super::args::BenchCheckerArgs;
use super::Failure;

pub fn run(a: BenchCheckerArgs) -> Result<(), Failure> {
    let r = sinkhole_checker::bench::run(a.records, a.subtasks);
    if a.json {
        print!("{}", sinkhole_base::provenance::to_json(&r)?);
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
    }
    Ok(())
}
