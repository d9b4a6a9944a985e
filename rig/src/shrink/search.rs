//! The shrinking search itself, free of clusters: a fault list (and, for an
//! exploration's finding, the job's shape), the smaller ones to try next, and
//! what a run of one of them said.
//!
//! Greedy first-improvement, as QuickCheck's and Hypothesis's shrinkers go:
//! from the current list, try the candidates in order (coarse steps first:
//! keep one half of the faults, then the whole job as the scenario's own, then
//! drop one fault, then move one field of the job to the scenario's value, then
//! halve a duration, then move a trigger earlier); the first candidate that
//! fails the same way becomes the current list and its own candidates are tried
//! next. The search ends at a local minimum (no candidate fails the same way)
//! or when the run budget is spent. Every step makes the case strictly simpler
//! (fewer faults, a shorter duration or an earlier trigger, each by a bounded
//! amount; a job field at its target for good), so the search ends even
//! without a budget.
//!
//! The job's steps cost a run each at most once over the whole search: a field
//! whose move lost the failure is one the failure needs (a bug that shows only
//! with three pending checkpoints), and is not tried again; the whole-job step
//! is tried once; and a fault list that did not fail with one job is not run
//! again once the job is simpler. A job is only ever moved to a shape its bounds admit (the
//! timeout raised to its floor when a longer interval needs it), so a faithful
//! sink's shrink never tries a job it is not meant to survive.
use std::collections::VecDeque;

use serde::Serialize;

use sinkhole_scenario::shape::FIELDS;
use sinkhole_scenario::{Bounds, FaultSpec, Shape, When};

/// A duration is not halved below this (ms): a shorter fault is mostly no
/// fault, and the halving must stop somewhere.
pub const MIN_DURATION_MS: u64 = 200;

/// A trigger is moved earlier only when it gains at least this (ms).
pub const MIN_EARLIER_MS: u64 = 500;

/// A smaller fault list (or a simpler job), and the step that made it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// `drop random-2-net-delay`, `halve random-1-pause-workers to 750 ms`, `job parallelism 3 → 1`, …
    pub step: String,
    pub faults: Vec<FaultSpec>,
    /// The job's shape, when the search simplifies it too.
    pub shape: Option<Shape>,
    /// What the step moved.
    pub moves: Moves,
}

/// What a candidate's step moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moves {
    Faults,
    /// Every field of the job to its target at once.
    WholeJob,
    /// One field of the job ([`FIELDS`]) to its target.
    JobField(&'static str),
}

/// Where the job moves: toward `shape` (the scenario's own, pulled into `bounds`), within
/// `bounds` at every step.
#[derive(Debug, Clone, PartialEq)]
pub struct Toward {
    pub bounds: Bounds,
    pub shape: Shape,
}

fn label(f: &FaultSpec, i: usize) -> String {
    f.name.clone().unwrap_or_else(|| format!("fault {} ({})", i + 1, f.kind.name()))
}

/// Where fault `i` may move earlier to: halfway from the end of the fault
/// before it in time (or 0) — the generated faults never overlap, and a
/// shrunk schedule keeps them apart so their effects stay told apart.
fn earlier_target(faults: &[FaultSpec], i: usize) -> Option<u64> {
    let When::AtMs(t) = faults[i].when else { return None };
    let floor = faults
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .filter_map(|(_, f)| match f.when {
            When::AtMs(s) if s < t => Some(s.saturating_add(f.duration_ms.unwrap_or(0)).min(t)),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let to = floor + (t - floor) / 2;
    (t - to >= MIN_EARLIER_MS).then_some(to)
}

/// The candidates of `faults`, in the order they are tried (the job left as it is).
pub fn candidates(faults: &[FaultSpec]) -> Vec<Candidate> {
    Case { faults, job: None }.candidates()
}

/// The current case: the faults, and the job with where it moves and what is known of it.
struct Case<'a> {
    faults: &'a [FaultSpec],
    job: Option<Job<'a>>,
}

struct Job<'a> {
    shape: Shape,
    toward: &'a Toward,
    /// Fields the failure needs (their move lost it).
    needed: &'a [&'static str],
    /// The whole-job step was tried.
    whole_tried: bool,
}

impl Case<'_> {
    fn candidates(&self) -> Vec<Candidate> {
        let faults = self.faults;
        let n = faults.len();
        let shape = self.job.as_ref().map(|j| j.shape);
        let with = |step: String, faults: Vec<FaultSpec>| Candidate { step, faults, shape, moves: Moves::Faults };
        let mut out = Vec::new();
        if n >= 4 {
            let h = n / 2;
            out.push(with(format!("keep faults 1–{h} of {n}"), faults[..h].to_vec()));
            out.push(with(format!("keep faults {}–{n} of {n}", h + 1), faults[h..].to_vec()));
        }
        out.extend(self.whole_job());
        // Later faults first: they are the likelier bystanders of an earlier one.
        for i in (0..n).rev() {
            let mut f = faults.to_vec();
            f.remove(i);
            out.push(with(format!("drop {}", label(&faults[i], i)), f));
        }
        out.extend(self.job_fields());
        for i in 0..n {
            if let Some(d) = faults[i].duration_ms.filter(|d| *d >= 2 * MIN_DURATION_MS) {
                let mut f = faults.to_vec();
                f[i].duration_ms = Some(d / 2);
                out.push(with(format!("halve {} to {} ms", label(&faults[i], i), d / 2), f));
            }
        }
        for i in 0..n {
            if let Some(to) = earlier_target(faults, i) {
                let mut f = faults.to_vec();
                f[i].when = When::AtMs(to);
                out.push(with(format!("move {} to at_ms {to}", label(&faults[i], i)), f));
            }
        }
        out
    }

    /// The job as the target at once, when two fields or more differ and it was not tried.
    fn whole_job(&self) -> Option<Candidate> {
        let j = self.job.as_ref().filter(|j| !j.whole_tried)?;
        let target = j.toward.shape;
        let differ = FIELDS.iter().filter(|f| j.shape.value(f) != target.value(f)).count();
        (differ >= 2 && j.toward.bounds.admits(&target).is_ok()).then(|| Candidate {
            step: format!("job as the scenario's: {}", target.text()),
            faults: self.faults.to_vec(),
            shape: Some(target),
            moves: Moves::WholeJob,
        })
    }

    /// Each field not at its target and not needed, moved to it (the timeout raised to the
    /// floor of a longer interval or a higher concurrency where that keeps it in bounds).
    fn job_fields(&self) -> Vec<Candidate> {
        let Some(j) = &self.job else { return vec![] };
        let (b, target) = (&j.toward.bounds, &j.toward.shape);
        let mut out = Vec::new();
        for field in FIELDS {
            let (from, to) = (j.shape.value(field), target.value(field));
            if from == to || j.needed.contains(&field) {
                continue;
            }
            let mut moved = j.shape.take(field, target);
            let mut step = format!("job {field} {from} → {to}");
            if b.admits(&moved).is_err() && field != "transaction_timeout_ms" {
                let [floor, _] = b.timeout_for(moved.checkpoint_interval_ms, moved.max_concurrent_checkpoints);
                if floor > moved.transaction_timeout_ms {
                    step.push_str(&format!(" (transaction_timeout_ms {} → {floor})", moved.transaction_timeout_ms));
                    moved.transaction_timeout_ms = floor;
                }
            }
            if b.admits(&moved).is_ok() {
                out.push(Candidate {
                    step,
                    faults: self.faults.to_vec(),
                    shape: Some(moved),
                    moves: Moves::JobField(field),
                });
            }
        }
        out
    }
}

/// Why the search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    /// No candidate of the current list fails the same way.
    Minimal,
    /// The run budget was spent first.
    Runs,
    /// The time budget was spent first.
    Time,
}

/// The search's state between runs.
#[derive(Debug, Clone)]
pub struct Search {
    current: Vec<FaultSpec>,
    /// The current job, and where it moves (None: the faults alone are shrunk).
    shape: Option<Shape>,
    toward: Option<Toward>,
    needed: Vec<&'static str>,
    whole_tried: bool,
    pending: VecDeque<Candidate>,
    /// Candidate runs made.
    pub runs: u32,
    pub max_runs: u32,
    /// The steps taken, in order.
    pub accepted: Vec<String>,
    /// The cases already run (or refused): a candidate equal to one is not run again
    /// (dropping the last fault gives the empty list whatever its trigger was).
    tried: Vec<(Vec<FaultSpec>, Option<Shape>)>,
}

impl Search {
    pub fn new(faults: Vec<FaultSpec>, max_runs: u32) -> Search {
        let mut s = Search {
            current: faults,
            shape: None,
            toward: None,
            needed: Vec::new(),
            whole_tried: false,
            pending: VecDeque::new(),
            runs: 0,
            max_runs,
            accepted: Vec::new(),
            tried: Vec::new(),
        };
        s.refill();
        s
    }

    /// A search that also moves the job from `shape` toward `toward`.
    pub fn with_job(faults: Vec<FaultSpec>, shape: Shape, toward: Toward, max_runs: u32) -> Search {
        let mut s = Search::new(faults, max_runs);
        (s.shape, s.toward) = (Some(shape), Some(toward));
        s.refill();
        s
    }

    fn refill(&mut self) {
        let job = match (&self.shape, &self.toward) {
            (Some(shape), Some(toward)) => {
                Some(Job { shape: *shape, toward, needed: &self.needed, whole_tried: self.whole_tried })
            }
            _ => None,
        };
        self.pending = Case { faults: &self.current, job }.candidates().into();
    }

    /// The next candidate to run; `None` when the search is over
    /// ([`Search::stop`] says why).
    pub fn next_candidate(&mut self) -> Option<Candidate> {
        self.next_candidate_where(|_| true)
    }

    /// The next candidate `ok` accepts (a case the scenario can run: a job of one subtask
    /// cannot keep a fault on subtask 2); the others are passed over without a run.
    pub fn next_candidate_where(&mut self, ok: impl Fn(&Candidate) -> bool) -> Option<Candidate> {
        if self.runs >= self.max_runs {
            return None;
        }
        while let Some(c) = self.pending.pop_front() {
            let key = (c.faults.clone(), c.shape);
            // A fault list that did not fail with one job is not run again with a simpler one
            // (the job's steps only simplify): after a job step, the drops tried before it are
            // passed over.
            let seen = match c.moves {
                Moves::Faults => self.tried.iter().any(|(f, _)| *f == c.faults),
                _ => self.tried.contains(&key),
            };
            if seen {
                continue;
            }
            if ok(&c) {
                return Some(c);
            }
            self.tried.push(key);
        }
        None
    }

    /// What the run of `c` said: `same` when it failed the same way.
    pub fn report(&mut self, c: Candidate, same: bool) {
        self.runs += 1;
        self.tried.push((c.faults.clone(), c.shape));
        match (c.moves, same) {
            (Moves::WholeJob, _) => self.whole_tried = true,
            (Moves::JobField(f), false) => self.needed.push(f),
            _ => {}
        }
        if same {
            self.current = c.faults;
            self.shape = c.shape;
            self.accepted.push(c.step);
            self.refill();
        }
    }

    /// The smallest list found so far that fails the same way.
    pub fn current(&self) -> &[FaultSpec] {
        &self.current
    }

    /// The simplest job found so far that fails the same way (None: the job is not shrunk).
    pub fn shape(&self) -> Option<&Shape> {
        self.shape.as_ref()
    }

    /// Why it stopped (meaningful once [`Search::next_candidate`] gave `None`).
    pub fn stop(&self) -> Stop {
        if self.pending.is_empty() {
            Stop::Minimal
        } else {
            Stop::Runs
        }
    }
}

/// The whole search against a predicate that answers at once (the tests;
/// the live search runs the same steps with a cluster run per candidate).
pub fn shrink_with(faults: Vec<FaultSpec>, max_runs: u32, mut fails: impl FnMut(&[FaultSpec]) -> bool) -> Search {
    run_search(Search::new(faults, max_runs), |_| true, |c| fails(&c.faults))
}

/// [`Search`] to its end: `ok` says which candidates can run, `fails` whether one fails the same way.
pub fn run_search(mut s: Search, ok: impl Fn(&Candidate) -> bool, mut fails: impl FnMut(&Candidate) -> bool) -> Search {
    while let Some(c) = s.next_candidate_where(&ok) {
        let same = fails(&c);
        s.report(c, same);
    }
    s
}
