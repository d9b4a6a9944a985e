//! Faults for sinkhole: what the rig does to the system under test, and what it
//! can prove it did.
//!
//! A fault that cannot show its effect is worth little: a SIGSTOP sent to a pid
//! that was already gone, or a pause that the kernel never applied, would make a
//! "clean" verdict meaningless. So every fault here returns an *effect* record
//! that says what was observed afterwards (see [`process::SignalEffect`]), and the
//! runner keeps it in the history.
//!
//! It holds the process-level faults ([`process`]: signals to brokers and
//! workers), the Kafka-aware TCP proxy that carries the network and protocol
//! faults ([`proxy`]), and the seeded generator ([`rng`]) the proxy and the
//! rig's fault schedules draw from, so that a seed replays a run.
pub mod process;
pub mod proxy;
pub mod rng;
