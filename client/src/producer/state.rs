//! The producer's transaction state machine.
//!
//! Mirrors Kafka's Java `TransactionManager.State.isTransitionValid`
//! (`clients/.../producer/internals/TransactionManager.java`), with KIP-939's
//! `PREPARED_TRANSACTION` added the way trunk's `TransactionManager` does:
//! a prepared transaction is entered from IN_TRANSACTION (`prepareTransaction`)
//! or from INITIALIZING (`initTransactions(keepPreparedTxn=true)` found one),
//! and left only by committing or aborting it.

use super::TxnState;

/// The kind of a [`TxnState`], without the error text the error states carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StateKind {
    Uninitialized,
    Initializing,
    Ready,
    InTransaction,
    Prepared,
    CommittingTransaction,
    AbortingTransaction,
    AbortableError,
    FatalError,
}

impl StateKind {
    pub const ALL: [StateKind; 9] = [
        StateKind::Uninitialized,
        StateKind::Initializing,
        StateKind::Ready,
        StateKind::InTransaction,
        StateKind::Prepared,
        StateKind::CommittingTransaction,
        StateKind::AbortingTransaction,
        StateKind::AbortableError,
        StateKind::FatalError,
    ];
}

impl TxnState {
    pub fn kind(&self) -> StateKind {
        match self {
            TxnState::Uninitialized => StateKind::Uninitialized,
            TxnState::Initializing => StateKind::Initializing,
            TxnState::Ready => StateKind::Ready,
            TxnState::InTransaction => StateKind::InTransaction,
            TxnState::Prepared => StateKind::Prepared,
            TxnState::CommittingTransaction => StateKind::CommittingTransaction,
            TxnState::AbortingTransaction => StateKind::AbortingTransaction,
            TxnState::AbortableError { .. } => StateKind::AbortableError,
            TxnState::FatalError { .. } => StateKind::FatalError,
        }
    }
}

/// Whether `source → target` is a legal transition (Java's
/// `State.isTransitionValid`, plus PREPARED_TRANSACTION).
pub fn is_transition_valid(source: StateKind, target: StateKind) -> bool {
    use StateKind::*;
    match target {
        // Java resets to UNINITIALIZED from READY (e.g. an idempotent
        // producer's id reset) or after an abortable error.
        Uninitialized => matches!(source, Ready | AbortableError),
        // ABORTING → INITIALIZING is the KIP-360 epoch bump after an abort.
        Initializing => matches!(source, Uninitialized | AbortingTransaction),
        Ready => matches!(source, Initializing | CommittingTransaction | AbortingTransaction),
        InTransaction => source == Ready,
        Prepared => matches!(source, InTransaction | Initializing),
        CommittingTransaction => matches!(source, InTransaction | Prepared),
        AbortingTransaction => matches!(source, InTransaction | AbortableError | Prepared),
        AbortableError => matches!(source, InTransaction | CommittingTransaction | AbortableError | Initializing),
        // Any state may become fatal; nothing leaves it.
        FatalError => true,
    }
}

#[cfg(test)]
mod tests {
    use super::StateKind::*;
    use super::*;

    /// Every legal transition, written out (the complement is illegal).
    const LEGAL: &[(StateKind, StateKind)] = &[
        (Ready, Uninitialized),
        (AbortableError, Uninitialized),
        (Uninitialized, Initializing),
        (AbortingTransaction, Initializing),
        (Initializing, Ready),
        (CommittingTransaction, Ready),
        (AbortingTransaction, Ready),
        (Ready, InTransaction),
        (InTransaction, Prepared),
        (Initializing, Prepared),
        (InTransaction, CommittingTransaction),
        (Prepared, CommittingTransaction),
        (InTransaction, AbortingTransaction),
        (AbortableError, AbortingTransaction),
        (Prepared, AbortingTransaction),
        (InTransaction, AbortableError),
        (CommittingTransaction, AbortableError),
        (AbortableError, AbortableError),
        (Initializing, AbortableError),
    ];

    #[test]
    fn transition_table_is_exactly_the_java_table_plus_prepared() {
        for &s in &StateKind::ALL {
            for &t in &StateKind::ALL {
                let expected = t == FatalError || LEGAL.contains(&(s, t));
                assert_eq!(is_transition_valid(s, t), expected, "{s:?} -> {t:?}");
            }
        }
    }

    #[test]
    fn selected_illegal_transitions() {
        for (s, t) in [
            (Uninitialized, InTransaction),          // begin before init
            (Ready, CommittingTransaction),          // commit without begin
            (Ready, Prepared),                       // prepare without begin
            (Prepared, InTransaction),               // send after prepare
            (Prepared, Ready),                       // only commit/abort leave Prepared
            (AbortableError, CommittingTransaction), // only abort after an abortable error
            (FatalError, AbortingTransaction),
            (FatalError, Ready),
            (CommittingTransaction, AbortingTransaction),
            (InTransaction, InTransaction),
        ] {
            assert!(!is_transition_valid(s, t), "{s:?} -> {t:?} must be illegal");
        }
    }
}
