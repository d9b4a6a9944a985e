//! What a run leaves for people and CI, from its verdicts: `summary.json` and
//! the terminal table ([`summary`]), `junit.xml` ([`junit`]), `report.html`
//! ([`report`]), and the offline re-check that rewrites all of them from a
//! stored run directory ([`recheck`], `sinkhole check`); the exit codes CI
//! reads ([`exit`]).
//!
//! This layer sits above the verdict and the checker and below the run: it
//! reads verdicts, counts, latencies, scenarios and histories, and never the
//! run or the matrix that produce them, so a stored run directory is all it
//! needs.
pub mod exit;
pub mod junit;
pub mod recheck;
pub mod report;
pub mod summary;
