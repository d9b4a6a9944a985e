//! The job's phases as a state machine, every legal transition in one place.
//!
//! The shape of Kafka's `TransactionManager.State.isTransitionValid` (and of
//! this rig's own producer state in `client/src/producer/state.rs`): the
//! coordinator changes its phase only through [`Phase::to`], and an illegal
//! change is a bug that stops the run loudly instead of leaving the job in a
//! state nobody planned for.
//!
//! The phases follow Flink's job lifecycle under a restart-all failover:
//! a job is *down* (before its first start, between a failure and the
//! restore, during an outage), *running* (workers deployed), *stopping* (the
//! final checkpoint committed everywhere, workers told to finish) and
//! finally *done*.
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No workers; the next attempt is deployed at `until`.
    Down { until: Instant },
    /// An attempt's workers are deployed (some may not be ready yet).
    Running,
    /// Every worker was told to stop after the final checkpoint, at `since`.
    Stopping { since: Instant },
    /// The job ended; nothing happens any more.
    Done,
}

/// A [`Phase`] without its times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PhaseKind {
    Down,
    Running,
    Stopping,
    Done,
}

impl PhaseKind {
    pub const ALL: [PhaseKind; 4] = [PhaseKind::Down, PhaseKind::Running, PhaseKind::Stopping, PhaseKind::Done];
}

/// A phase change the state machine does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the job cannot go from {from:?} to {to:?} (a bug in the coordinator)")]
pub struct IllegalTransition {
    pub from: PhaseKind,
    pub to: PhaseKind,
}

impl Phase {
    pub fn kind(&self) -> PhaseKind {
        match self {
            Phase::Down { .. } => PhaseKind::Down,
            Phase::Running => PhaseKind::Running,
            Phase::Stopping { .. } => PhaseKind::Stopping,
            Phase::Done => PhaseKind::Done,
        }
    }

    /// The phase after this one, if the change is legal.
    pub fn to(self, next: Phase) -> Result<Phase, IllegalTransition> {
        if is_transition_valid(self.kind(), next.kind()) {
            Ok(next)
        } else {
            Err(IllegalTransition { from: self.kind(), to: next.kind() })
        }
    }
}

/// Whether `from → to` is legal.
pub fn is_transition_valid(from: PhaseKind, to: PhaseKind) -> bool {
    use PhaseKind::*;
    match to {
        // A failover takes a running job down; an outage that begins while
        // the job is already down keeps it down longer.
        Down => matches!(from, Running | Down),
        // Deploying the next attempt.
        Running => from == Down,
        // Only a running job reaches its end of input.
        Stopping => from == Running,
        // A job ends when it stopped cleanly, or while running (the broker
        // cannot run the mode, a final commit never came, the restart limit
        // was exceeded at a failure).
        Done => matches!(from, Running | Stopping),
    }
}

#[cfg(test)]
mod tests {
    use super::PhaseKind::*;
    use super::*;

    /// Every legal transition, written out (the complement is illegal).
    const LEGAL: &[(PhaseKind, PhaseKind)] =
        &[(Running, Down), (Down, Down), (Down, Running), (Running, Stopping), (Running, Done), (Stopping, Done)];

    #[test]
    fn the_transition_table_is_exactly_the_legal_list() {
        for &f in &PhaseKind::ALL {
            for &t in &PhaseKind::ALL {
                assert_eq!(is_transition_valid(f, t), LEGAL.contains(&(f, t)), "{f:?} -> {t:?}");
            }
        }
    }

    #[test]
    fn nothing_leaves_done_and_an_illegal_change_says_what_it_was() {
        for &t in &PhaseKind::ALL {
            assert!(!is_transition_valid(Done, t), "Done -> {t:?}");
        }
        let e = Phase::Stopping { since: Instant::now() }.to(Phase::Running).unwrap_err();
        assert_eq!(e, IllegalTransition { from: Stopping, to: Running });
        assert!(e.to_string().contains("Stopping to Running"), "{e}");
        assert_eq!(Phase::Running.to(Phase::Done), Ok(Phase::Done));
    }
}
