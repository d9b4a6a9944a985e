//! The exit codes of `sinkhole run`, `check`, `matrix` and `merge`, for CI
//! (README.md, "Exit codes"), decided from the outcomes in one place:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | every expectation met; inconclusive and observed modes are counted, not failed |
//! | 1 | an expectation failed (or, with `--fail-on-inconclusive`, a mode was inconclusive) |
//! | 2 | bad input: arguments, scenario files, stored results, shards that do not fit |
//! | 3 | the rig itself failed: a cluster that would not start, a mode whose runner or checker errored |
//!
//! A finding beats a rig failure: a run where one mode failed its
//! expectation and the rig failed on another exits 1, since the failure is
//! real whatever happened elsewhere (the table and junit.xml show both). A
//! signal ends the process with 128 + its number instead.
use serde::{Deserialize, Serialize};

use sinkhole_checker::verdict::Outcome;

pub const OK: u8 = 0;
pub const FAILED: u8 = 1;
pub const BAD_INPUT: u8 = 2;
pub const RIG_FAILED: u8 = 3;

/// What counts as failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// `--fail-on-inconclusive`: an inconclusive mode fails the job (exit 1).
    #[serde(default)]
    pub fail_on_inconclusive: bool,
}

impl Policy {
    /// Whether this outcome fails its expectation under the policy.
    pub fn fails(&self, o: Outcome) -> bool {
        o == Outcome::Fail || (self.fail_on_inconclusive && o == Outcome::Inconclusive)
    }
}

/// The exit code of a set of mode outcomes, `rig_failed` being true when the
/// rig failed somewhere no outcome shows (a matrix cell whose cluster did not
/// start).
pub fn code(outcomes: impl IntoIterator<Item = Outcome>, rig_failed: bool, policy: Policy) -> u8 {
    let mut rig = rig_failed;
    for o in outcomes {
        if policy.fails(o) {
            return FAILED;
        }
        rig |= o == Outcome::Error;
    }
    if rig {
        RIG_FAILED
    } else {
        OK
    }
}

/// What a command prints beside a non-zero code from [`code`].
pub fn explain(code: u8, policy: Policy, what: &str) -> String {
    match code {
        FAILED if policy.fail_on_inconclusive => {
            format!("at least one {what} did not meet its expectation or was inconclusive (--fail-on-inconclusive)")
        }
        FAILED => format!("at least one {what} did not meet its expectation"),
        RIG_FAILED => format!("the rig itself failed for at least one {what} (outcome `error`; see the table)"),
        c => format!("exit code {c}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Outcome::*;

    #[test]
    fn the_table() {
        let plain = Policy::default();
        let strict = Policy { fail_on_inconclusive: true };
        assert_eq!(code([Pass, Observed, Inconclusive], false, plain), OK);
        assert_eq!(code([], false, plain), OK);
        assert_eq!(code([Pass, Fail], false, plain), FAILED);
        assert_eq!(code([Pass, Inconclusive], false, strict), FAILED);
        assert_eq!(code([Pass, Observed], false, strict), OK);
        assert_eq!(code([Pass, Error], false, plain), RIG_FAILED);
        assert_eq!(code([Pass], true, plain), RIG_FAILED);
        // A finding beats a rig failure, in either order.
        assert_eq!(code([Error, Fail], false, plain), FAILED);
        assert_eq!(code([Fail, Error], true, plain), FAILED);
        assert_eq!(code([Error, Inconclusive], false, strict), FAILED);
        assert_eq!(code([Error, Inconclusive], false, plain), RIG_FAILED);
        assert!(explain(FAILED, strict, "mode").contains("--fail-on-inconclusive"));
        assert!(explain(RIG_FAILED, plain, "cell").contains("the rig itself failed for at least one cell"));
    }
}
