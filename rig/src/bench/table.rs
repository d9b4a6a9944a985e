//! The bench's figures: each producer's records per second over the rounds (median, min,
//! max), the ratio of each to the wire producer, and the table printed at the end. The
//! figures are computed from the samples only: a producer with no sample has no row.
use std::path::PathBuf;

use serde::Serialize;

use super::java::PerfResult;
use super::record_size::RecordSize;

/// The median and the range of some measurements.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// In the order measured.
    pub values: Vec<f64>,
}

impl Spread {
    /// None for no value. The median of an even count is the mean of the middle two.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = match n {
            0 => return None,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        };
        Some(Spread { median, min: v[0], max: v[n - 1], values: values.to_vec() })
    }
}

/// One producer's run in one round.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// From 1; the warm-up run is round 0.
    pub round: u32,
    /// Its place in the round (0: first).
    pub position: usize,
    /// The rig's warm-up run: not in any figure.
    pub warmup: bool,
    pub producer: String,
    pub records: u64,
    pub records_per_sec: f64,
    /// The time the figure divides by: the rig's job wall time; for the Java side the
    /// longest perf test's own timed span (records / its records/sec).
    pub wall_ms: u64,
    /// Java: records over the longest process's whole life (JVM start included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_records_per_sec: Option<f64>,
    /// The rig's verdict on the run (`pass` when its output was exactly once as expected).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_dir: Option<PathBuf>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub java: Vec<PerfResult>,
    /// The 1-minute load average when it started.
    pub load_before: Option<f64>,
}

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub producer: String,
    pub records: u64,
    pub records_per_sec: Spread,
    /// This producer's median over the reference's (the wire producer's) median.
    pub ratio_to_reference: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_records_per_sec: Option<Spread>,
}

/// The rows of `producers` (in that order) from `samples`, against `reference`.
pub fn rows(producers: &[String], reference: &str, samples: &[Sample]) -> Vec<Row> {
    fn of<'a>(samples: &'a [Sample], p: &'a str) -> impl Iterator<Item = &'a Sample> {
        samples.iter().filter(move |s| s.producer == p && !s.warmup)
    }
    let reference_median =
        Spread::of(&of(samples, reference).map(|s| s.records_per_sec).collect::<Vec<_>>()).map(|s| s.median);
    producers
        .iter()
        .filter_map(|p| {
            let spread = Spread::of(&of(samples, p).map(|s| s.records_per_sec).collect::<Vec<_>>())?;
            let process: Vec<f64> = of(samples, p).filter_map(|s| s.process_records_per_sec).collect();
            Some(Row {
                producer: p.clone(),
                records: of(samples, p).map(|s| s.records).max().unwrap_or(0),
                ratio_to_reference: reference_median.map_or(f64::NAN, |r| spread.median / r),
                records_per_sec: spread,
                process_records_per_sec: Spread::of(&process),
            })
        })
        .collect()
}

/// `a`'s figure over `b`'s in each round both ran in.
pub fn ratios_by_round(a: &str, b: &str, samples: &[Sample]) -> Option<Spread> {
    let counted = || samples.iter().filter(|s| !s.warmup);
    let rate = |p: &str, round: u32| counted().find(|s| s.producer == p && s.round == round).map(|s| s.records_per_sec);
    let rounds: Vec<u32> = counted().map(|s| s.round).collect();
    let mut v = Vec::new();
    for r in rounds.iter().copied().collect::<std::collections::BTreeSet<u32>>() {
        if let (Some(x), Some(y)) = (rate(a, r), rate(b, r)) {
            if y > 0.0 {
                v.push(x / y);
            }
        }
    }
    Spread::of(&v)
}

/// The table: producer, records, records/s (median, min–max), ratio to the wire producer.
pub fn render(rows: &[Row], reference: &str) -> String {
    let ratio_head = format!("× {reference}");
    let head = ["producer", "records", "records/s (median)", "min – max", ratio_head.as_str()];
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            let s = &r.records_per_sec;
            [
                r.producer.clone(),
                r.records.to_string(),
                format!("{:.0}", s.median),
                format!("{:.0} – {:.0}", s.min, s.max),
                format!("{:.2}", r.ratio_to_reference),
            ]
        })
        .collect();
    let mut w = head.map(|h| h.chars().count());
    for c in &cells {
        for (i, x) in c.iter().enumerate() {
            w[i] = w[i].max(x.chars().count());
        }
    }
    let line = |c: &[String]| {
        c.iter()
            .enumerate()
            .map(|(i, x)| {
                let pad = " ".repeat(w[i] - x.chars().count());
                if i == 0 {
                    format!("{x}{pad}")
                } else {
                    format!("{pad}{x}")
                }
            })
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let mut out = line(&head.map(String::from));
    out.push('\n');
    out.push_str(&w.iter().map(|n| "-".repeat(*n)).collect::<Vec<_>>().join("-|-"));
    out.push('\n');
    for c in &cells {
        out.push_str(&line(c));
        out.push('\n');
    }
    out
}

/// The verdict line on the goal: the wire producer at least as fast as Java's.
pub fn goal_line(reference: &str, java: &str, by_round: &Spread) -> String {
    let verdict = if by_round.median >= 1.0 {
        format!("the {reference} is at least as fast (goal ≥ 1.0×: met)")
    } else {
        format!("the {reference} is SLOWER than {java} (goal ≥ 1.0×: NOT met)")
    };
    format!(
        "{reference} ÷ {java}, round by round: median {:.2}× (min {:.2}, max {:.2}): {verdict}",
        by_round.median, by_round.min, by_round.max
    )
}

/// How the records compare, in words.
pub fn record_line(r: &RecordSize) -> String {
    format!(
        "records: the rig's carry on average {:.1} bytes of key, value and headers ({:.1} with their length fields); \
         the Java perf test sends value-only records (no key, no header) of --record-size {} bytes, the same bytes per record in a batch",
        r.payload_bytes, r.encoded_bytes, r.java_record_size
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(round: u32, producer: &str, rate: f64) -> Sample {
        Sample {
            round,
            position: 0,
            warmup: false,
            producer: producer.into(),
            records: 1000,
            records_per_sec: rate,
            wall_ms: 1,
            process_records_per_sec: None,
            outcome: None,
            run_dir: None,
            java: vec![],
            load_before: None,
        }
    }

    #[test]
    fn medians_ranges_and_ratios() {
        assert_eq!(Spread::of(&[]), None);
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(s.values, vec![3.0, 1.0, 2.0]);
        assert_eq!(Spread::of(&[4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);

        let samples = vec![
            Sample { warmup: true, ..sample(0, "wire", 10.0) },
            sample(0, "wire", 100.0),
            sample(0, "java", 50.0),
            sample(1, "java", 80.0),
            sample(1, "wire", 120.0),
            sample(2, "wire", 90.0),
        ];
        let rows = rows(&["wire".into(), "java".into(), "none".into()], "wire", &samples);
        assert_eq!(rows.len(), 2, "a producer without a sample has no row");
        assert_eq!(rows[0].records_per_sec.values, vec![100.0, 120.0, 90.0], "the warm-up is not counted");
        assert_eq!(rows[0].records_per_sec.median, 100.0);
        assert_eq!(rows[0].ratio_to_reference, 1.0);
        assert_eq!(rows[1].records_per_sec.median, 65.0);
        assert_eq!(rows[1].ratio_to_reference, 0.65);
        // Rounds 0 and 1 only: 2.0 and 1.5.
        let by_round = ratios_by_round("wire", "java", &samples).unwrap();
        assert_eq!(by_round.values, vec![2.0, 1.5]);
        assert_eq!(by_round.median, 1.75);
        assert!(goal_line("wire", "java", &by_round).ends_with("(goal ≥ 1.0×: met)"));
        let slower = Spread::of(&[0.9]).unwrap();
        assert!(goal_line("wire", "java", &slower).contains("SLOWER"));

        let t = render(&rows, "wire");
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "producer | records | records/s (median) | min – max | × wire");
        assert_eq!(lines[2], "wire     |    1000 |                100 |  90 – 120 |   1.00");
        assert_eq!(lines[3], "java     |    1000 |                 65 |   50 – 80 |   0.65");
    }
}
