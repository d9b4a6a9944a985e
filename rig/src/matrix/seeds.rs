//! Which seeds a campaign runs (`--seeds`, or `--seed-count N [--seed S]`)
//! and the bounds on them, checked alike by the command line's parser and by
//! [`super::prepare`] for every other caller.

/// Which seeds every scenario × version runs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seeds {
    /// `--seeds 1,2,3`.
    List(Vec<u64>),
    /// `--seed-count N [--seed S]`: S, S+1, …, S+N-1 (S random when absent).
    Count { n: u32, base: Option<u64> },
}

impl Default for Seeds {
    fn default() -> Self {
        Seeds::Count { n: 1, base: None }
    }
}

/// The most seeds one campaign runs: each seed is one more run of every
/// scenario on every Kafka version (tens of seconds to minutes each), so a
/// thousand seeds of the library already keep one host busy for days. A
/// larger count is taken for a mistake (a seed typed where the count goes)
/// rather than started; a bigger campaign is several campaigns.
pub const MAX_SEEDS: u64 = 1000;

/// Why `n` seeds are not a campaign, if they are not: none, or more than
/// [`MAX_SEEDS`]. The command line and [`super::prepare`] both ask here.
pub fn seed_count_problem(n: u64) -> Option<String> {
    if n == 0 {
        Some("at least one seed".to_string())
    } else if n > MAX_SEEDS {
        Some(format!(
            "at most {MAX_SEEDS} seeds: each seed is one more run of every scenario on every Kafka version, and {MAX_SEEDS} seeds of the library already take days; more is taken for a mistake (a seed given as the count?); split a bigger campaign"
        ))
    } else {
        None
    }
}

impl Seeds {
    /// Every problem with the seeds as given, each naming its flag: no seed,
    /// too many ([`MAX_SEEDS`]), a seed listed twice.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        match self {
            Seeds::Count { n, .. } => {
                out.extend(seed_count_problem(u64::from(*n)).map(|p| format!("--seed-count {n}: {p}")))
            }
            Seeds::List(v) => {
                let list = v.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(",");
                out.extend(
                    seed_count_problem(v.len() as u64).map(|p| format!("--seeds: {} seeds given: {p}", v.len())),
                );
                let mut twice: Vec<u64> = Vec::new();
                for (i, s) in v.iter().enumerate() {
                    if v[..i].contains(s) && !twice.contains(s) {
                        twice.push(*s);
                    }
                }
                for s in twice {
                    let k = v.iter().filter(|x| **x == s).count();
                    out.push(format!(
                        "--seeds {list}: seed {s} is given {k} times (a seed is one cell per scenario and version; name it once)"
                    ));
                }
            }
        }
        out
    }

    /// The seeds, `random` standing in for an absent base.
    pub fn resolve(&self, random: u64) -> Vec<u64> {
        match self {
            Seeds::List(v) => {
                let mut out = Vec::new();
                for s in v {
                    if !out.contains(s) {
                        out.push(*s);
                    }
                }
                out
            }
            Seeds::Count { n, base } => {
                let b = base.unwrap_or(random);
                (0..u64::from(*n)).map(|i| b.wrapping_add(i)).collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_resolve_in_order_without_repeats() {
        assert_eq!(Seeds::List(vec![3, 1, 3]).resolve(9), vec![3, 1]);
        assert_eq!(Seeds::Count { n: 3, base: Some(10) }.resolve(9), vec![10, 11, 12]);
        assert_eq!(Seeds::Count { n: 2, base: None }.resolve(u64::MAX), vec![u64::MAX, 0]);
        assert_eq!(Seeds::default().resolve(42), vec![42]);
    }

    #[test]
    fn seeds_out_of_bounds_or_repeated_are_refused_naming_the_flag() {
        assert!(Seeds::Count { n: 1, base: None }.problems().is_empty());
        assert!(Seeds::Count { n: 1000, base: Some(5) }.problems().is_empty());
        assert_eq!(Seeds::Count { n: 0, base: None }.problems(), vec!["--seed-count 0: at least one seed".to_string()]);
        let big = Seeds::Count { n: 1001, base: None }.problems().join("\n");
        assert!(big.starts_with("--seed-count 1001: at most 1000 seeds: each seed is one more run"), "{big}");
        assert!(Seeds::List(vec![3, 1]).problems().is_empty());
        assert_eq!(
            Seeds::List(vec![1, 2, 1, 1, 2]).problems(),
            vec![
                "--seeds 1,2,1,1,2: seed 1 is given 3 times (a seed is one cell per scenario and version; name it once)",
                "--seeds 1,2,1,1,2: seed 2 is given 2 times (a seed is one cell per scenario and version; name it once)",
            ]
        );
        assert_eq!(Seeds::List(vec![]).problems(), vec!["--seeds: 0 seeds given: at least one seed".to_string()]);
        assert!(Seeds::List((0..1001).collect()).problems()[0].starts_with("--seeds: 1001 seeds given: at most 1000"));
    }
}
