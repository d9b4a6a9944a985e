//! The rig's foundation, used by every layer above: [`utc`] (UTC timestamps), [`procs`]
//! (spawning processes that never outlive the rig: process groups, the parent-death signal,
//! teardown on a signal), [`term`] (whether output may be coloured), [`provenance`] (the
//! schema version, rig version and git commit every JSON output carries), [`rundir`] (every
//! path of a run's results directory) and [`memory`] (the process's resident set, and freed
//! memory handed back between the runs of a long campaign).
pub mod memory;
pub mod procs;
pub mod provenance;
pub mod rundir;
pub mod term;
pub mod utc;
