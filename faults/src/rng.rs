//! The rig's seeded random numbers: SplitMix64, for everything a seed must
//! replay.
//!
//! A seed in a bug report must reproduce the run it came from, on every
//! machine and with every version of this workspace's dependencies: the fault
//! schedule a scenario's `schedule:` draws, and the proxy's loss and jitter
//! draws. So the generator is a hand-written SplitMix64 (Steele, Lea and
//! Flood, "Fast splittable pseudorandom number generators", 2014), not
//! `rand::rngs::StdRng`, whose algorithm `rand` reserves the right to change
//! between releases: a stream that changed under a `cargo update` would make
//! an old seed mean a different run.

/// SplitMix64: 64 bits of state, full period, passes BigCrush; a handful of
/// lines whose output is fixed forever (see the module comment).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (n > 0), by Lemire's multiply-shift: the bias is below
    /// n / 2^64, nothing for the small ranges used here.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0)");
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in [lo, hi] (inclusive; lo ≤ hi).
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        match (hi - lo).checked_add(1) {
            Some(n) => lo + self.below(n),
            None => self.next_u64(),
        }
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// True with probability num/den.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    /// Uniform in [0, 1): the top 53 bits as a double's mantissa (every value
    /// a multiple of 2^-53, as Java's `Random.nextDouble`).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [-spread, spread] (inclusive).
    pub fn plus_minus(&mut self, spread: u64) -> i64 {
        let spread = spread.min(i64::MAX as u64);
        (self.between(0, 2 * spread) as i64).wrapping_sub(spread as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        // Vigna's splitmix64.c, seeded with 1234567.
        let mut r = SplitMix64::new(1234567);
        assert_eq!(r.next_u64(), 6457827717110365317);
        assert_eq!(r.next_u64(), 3203168211198807973);
    }

    #[test]
    fn ranges_stay_in_bounds() {
        let mut r = SplitMix64::new(7);
        for _ in 0..10_000 {
            let x = r.between(5, 9);
            assert!((5..=9).contains(&x));
            assert!(r.below(3) < 3);
        }
        assert_eq!(r.between(4, 4), 4);
        assert_eq!(r.between(9, 4), 9, "an empty range gives its start");
    }

    #[test]
    fn unit_and_plus_minus_stay_in_bounds_and_cover_them() {
        let mut r = SplitMix64::new(11);
        let (mut lo, mut hi) = (1.0f64, 0.0f64);
        let mut seen = [false; 7];
        for _ in 0..10_000 {
            let u = r.unit();
            assert!((0.0..1.0).contains(&u), "{u}");
            lo = lo.min(u);
            hi = hi.max(u);
            let j = r.plus_minus(3);
            assert!((-3..=3).contains(&j), "{j}");
            seen[(j + 3) as usize] = true;
        }
        assert!(lo < 0.01 && hi > 0.99, "{lo} {hi}");
        assert!(seen.iter().all(|s| *s), "every value of -3..=3 drawn");
        assert_eq!(r.plus_minus(0), 0);
        let extreme = r.plus_minus(u64::MAX);
        assert!(extreme >= -i64::MAX, "{extreme}");
    }

    #[test]
    fn unit_is_the_top_53_bits() {
        let mut a = SplitMix64::new(1234567);
        let mut b = SplitMix64::new(1234567);
        assert_eq!(a.unit(), (b.next_u64() >> 11) as f64 / 9007199254740992.0);
    }
}
