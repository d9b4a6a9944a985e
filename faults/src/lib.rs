//! Faults for sinkhole: what the rig does to the system under test, and what it
//! can prove it did.
//!
//! A fault that cannot show its effect is worth little: a SIGSTOP sent to a pid
//! that was already gone, or a pause that the kernel never applied, would make a
//! "clean" verdict meaningless. So every fault here returns an *effect* record
//! that says what was observed afterwards (see [`process::SignalEffect`]), and the
//! runner keeps it in the history.
//!
//! For now this holds process-level faults (signals to brokers and workers). The
//! network and protocol faults, schedules and triggers come with the fault-library
//! issue.
pub mod process;
pub mod proxy;
