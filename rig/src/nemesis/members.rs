//! The jobs one nemesis serves, and which of them a fault is for.
//!
//! Every mode of a scenario can run at the same time on one cluster, each its
//! own job (its own topic, transactional-id prefix, workers, coordinator and
//! history) — a member here. Faults come in two scopes:
//! - **job faults** (the workers, the coordinator's hooks, a protocol fault
//!   on one transactional id) are the job's own: each member gets its own
//!   copy, fired on that member's own time or event;
//! - **cluster faults** (brokers, the network, a protocol fault on every
//!   transactional id) hit what every member shares: they fire once, at the
//!   same moment for all. A time trigger counts from the first member's
//!   start; an event trigger is taken from the lead member ([`Lead`]), and
//!   the fault's trigger records which mode set it off and where every mode
//!   was at that moment.
use std::time::Instant;

use super::Config;
/// One job the nemesis serves.
pub struct Member<S> {
    pub subject: S,
    pub history: sinkhole_history::Writer,
    pub cfg: Config,
    /// The mode's live readers (`readers:`), for the reader faults.
    pub readers: Option<super::readers::ReaderControl>,
}

/// What the nemesis knows of a member's job from its notices.
#[derive(Debug, Clone, Default)]
pub(crate) struct MemberState {
    pub job_started: Option<Instant>,
    pub attempt: u32,
    /// Every worker of the current attempt is up.
    pub up: bool,
    /// The attempt whose workers the nemesis itself killed: it is down from the kill on, and a
    /// late `Up` of it (queued before the kill) does not bring it back.
    pub killed: Option<u32>,
    pub ended: bool,
    pub latest_persisted: Option<u64>,
}

/// Whose event sets off an event-triggered cluster fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lead {
    /// The first member to reach the event.
    #[default]
    First,
    /// Only this member's events (index into the members).
    Member(usize),
}

pub use sinkhole_history::fault::ModeView;

#[cfg(test)]
mod tests {
    use sinkhole_scenario::{Brokers, Fault, FaultSpec, Frames, NamedTarget, Target, TidSelector, When, Workers};

    #[test]
    fn the_jobs_faults_are_per_member_the_clusters_shared() {
        let at = When::AtMs(1);
        let kill = FaultSpec::new(Fault::KillWorkers(Workers::default()), at);
        let broker = FaultSpec::new(Fault::BrokerKill(Brokers { target: Target::Named(NamedTarget::All) }), at);
        let frames = |tid| Frames {
            from: None,
            to: None,
            probability: None,
            apis: vec!["EndTxn".into()],
            frames: None,
            transactional_id: tid,
            nth: None,
        };
        let one_id = FaultSpec::new(Fault::ProtocolDrop(frames(Some(TidSelector::Subtask { subtask: 0 }))), at);
        let every_id = FaultSpec::new(Fault::ProtocolDrop(frames(None)), at);
        assert!(kill.job_scoped() && one_id.job_scoped());
        assert!(!broker.job_scoped() && !every_id.job_scoped());
    }
}
