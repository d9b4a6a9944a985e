//! The rig's foundation, used by every layer above: [`utc`] (UTC timestamps), [`procs`]
//! (spawning processes that never outlive the rig: process groups, the parent-death signal,
//! teardown on a signal), [`term`] (whether output may be coloured), [`provenance`] (the
//! schema version, rig version and git commit every JSON output carries) and [`rundir`] (every
//! path of a run's results directory).
pub mod procs;
pub mod provenance;
pub mod rundir;
pub mod term;
pub mod utc;
