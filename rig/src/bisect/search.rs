//! Which version to run next, and where the boundary is: a pure search over versions in
//! order, fed what each version showed. No cluster: tested with made-up outcomes.
//!
//! Skipping is sound only where the search has a boundary to find: the lowest and the highest
//! version that gave a clear answer disagree (clean at one end, the anomaly at the other).
//! Then it halves the stretch between the nearest clean and anomalous versions, as `git
//! bisect` does, assuming one boundary in between (a change that came in once and stayed).
//! When both ends agree there is no boundary to find, and skipping could hide a bug that came
//! and went: every version runs. A version that answers nothing clear (its seeds disagree, or
//! none was judged, or it could not be installed) is never a boundary: the search steps over
//! it and names it.

/// What one version showed over its seeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Every judged seed clean.
    Clean,
    /// Every judged seed showed the anomaly (its words, e.g. `LOST, MISSING MARKER`).
    Bad(String),
    /// Some seeds clean, some not: never a boundary.
    Flaky,
    /// No seed was judged (each inconclusive or failed).
    Inconclusive,
    /// The cache could not install it (why).
    NotInstallable(String),
}

impl Seen {
    /// A clear answer, one a boundary may rest on.
    pub fn decisive(&self) -> bool {
        matches!(self, Seen::Clean | Seen::Bad(_))
    }

    fn same_side(&self, o: &Seen) -> bool {
        matches!((self, o), (Seen::Clean, Seen::Clean) | (Seen::Bad(_), Seen::Bad(_)))
    }
}

/// A boundary: the last version of one kind and the first of the other, and the versions
/// between them that gave no clear answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flip {
    pub last: usize,
    pub first: usize,
    pub between: Vec<usize>,
}

/// The search over `n` versions (index 0 the oldest).
#[derive(Debug, Clone)]
pub struct Search {
    seen: Vec<Option<Seen>>,
    every: bool,
}

impl Search {
    /// `every`: run every version, skip nothing.
    pub fn new(n: usize, every: bool) -> Search {
        Search { seen: vec![None; n], every }
    }

    pub fn record(&mut self, i: usize, s: Seen) {
        self.seen[i] = Some(s);
    }

    pub fn seen(&self, i: usize) -> Option<&Seen> {
        self.seen[i].as_ref()
    }

    fn unseen_in(&self, lo: usize, hi: usize) -> impl Iterator<Item = usize> + '_ {
        (lo..hi).filter(|&i| self.seen[i].is_none())
    }

    /// The decisive versions seen, in order.
    fn decisive(&self) -> Vec<usize> {
        (0..self.seen.len()).filter(|&i| self.seen[i].as_ref().is_some_and(Seen::decisive)).collect()
    }

    /// The next version to run; None when the search is done.
    pub fn next(&self) -> Option<usize> {
        let n = self.seen.len();
        if self.every {
            return self.unseen_in(0, n).next();
        }
        // The clear answer nearest each end: run inward until there is one.
        let low = (0..n).find(|&i| self.seen[i].as_ref().is_none_or(Seen::decisive))?;
        if self.seen[low].is_none() {
            return Some(low);
        }
        let high = (0..n).rev().find(|&i| self.seen[i].as_ref().is_none_or(Seen::decisive))?;
        if self.seen[high].is_none() {
            return Some(high);
        }
        let (a, b) = (self.seen[low].as_ref()?, self.seen[high].as_ref()?);
        if a.same_side(b) {
            // No boundary between the ends: skipping is not sound, run them all.
            return self.unseen_in(low, high).next();
        }
        let flip = self.flips().into_iter().next()?;
        let mid = (flip.last + flip.first) / 2;
        self.unseen_in(flip.last + 1, flip.first).min_by_key(|&i| i.abs_diff(mid))
    }

    /// Every boundary between two clear answers next to each other (one, if the anomaly came
    /// in once and stayed).
    pub fn flips(&self) -> Vec<Flip> {
        let d = self.decisive();
        d.windows(2)
            .filter_map(|w| {
                let (p, q) = (w[0], w[1]);
                let (a, b) = (self.seen[p].as_ref()?, self.seen[q].as_ref()?);
                (!a.same_side(b)).then(|| Flip { last: p, first: q, between: (p + 1..q).collect() })
            })
            .collect()
    }

    /// The versions never run, with the clear answers on each side (the search's assumption).
    pub fn skipped(&self) -> Vec<(usize, Option<usize>, Option<usize>)> {
        let d = self.decisive();
        (0..self.seen.len())
            .filter(|&i| self.seen[i].is_none())
            .map(|i| (i, d.iter().rev().find(|&&x| x < i).copied(), d.iter().find(|&&x| x > i).copied()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad() -> Seen {
        Seen::Bad("LOST".into())
    }

    /// Runs the search against `truth` (what each version would show) and returns the order of
    /// the versions it ran.
    fn drive(truth: &[Seen], every: bool) -> (Vec<usize>, Search) {
        let mut s = Search::new(truth.len(), every);
        let mut ran = Vec::new();
        while let Some(i) = s.next() {
            assert!(!ran.contains(&i), "{i} twice");
            ran.push(i);
            s.record(i, truth[i].clone());
        }
        (ran, s)
    }

    #[test]
    fn a_boundary_is_halved_to_and_the_versions_between_clear_answers_skipped() {
        // 13 versions, clean up to index 8, bad from 9 (4.2.2 → 4.3.0 in the release table).
        let truth: Vec<Seen> = (0..13).map(|i| if i < 9 { Seen::Clean } else { bad() }).collect();
        let (ran, s) = drive(&truth, false);
        assert_eq!(&ran[..2], &[0, 12], "the ends first");
        assert!(ran.len() <= 6, "halving: {ran:?}");
        assert_eq!(s.flips(), [Flip { last: 8, first: 9, between: vec![] }]);
        for (i, lo, hi) in s.skipped() {
            assert!(lo.is_some_and(|l| l < i) && hi.is_some_and(|h| h > i));
            assert!(truth[lo.unwrap()] == truth[hi.unwrap()] || lo == Some(8), "skipped {i} between agreeing answers");
        }
    }

    #[test]
    fn ends_that_agree_run_every_version() {
        let truth = vec![Seen::Clean, bad(), Seen::Clean];
        let (ran, s) = drive(&truth, false);
        assert_eq!(ran.len(), 3, "{ran:?}");
        assert_eq!(s.flips().len(), 2, "came and went");
    }

    #[test]
    fn a_flaky_or_uninstallable_version_is_stepped_over_and_never_a_boundary() {
        let truth =
            vec![Seen::NotInstallable("mvn".into()), Seen::Clean, Seen::Clean, Seen::Flaky, bad(), Seen::Inconclusive];
        let (ran, s) = drive(&truth, false);
        assert_eq!(&ran[..3], &[0, 1, 5], "an end with no clear answer moves inward: {ran:?}");
        assert_eq!(s.flips(), [Flip { last: 2, first: 4, between: vec![3] }]);
        // Nothing clear anywhere: done, no boundary.
        let (_, none) = drive(&[Seen::Flaky, Seen::Inconclusive], false);
        assert!(none.flips().is_empty());
    }

    #[test]
    fn every_runs_them_all_in_order() {
        let truth: Vec<Seen> = (0..5).map(|i| if i < 2 { Seen::Clean } else { bad() }).collect();
        let (ran, s) = drive(&truth, true);
        assert_eq!(ran, [0, 1, 2, 3, 4]);
        assert!(s.skipped().is_empty());
        assert_eq!(s.flips()[0].first, 2);
    }
}
