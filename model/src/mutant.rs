//! The mutants: deliberately broken sinks, one small deviation each from a faithful mode,
//! standing for a real class of sink bug (`sinkhole calibrate` measures what the scenario
//! library catches of them). A table of its own so that adding one is one row here and one
//! deviation in the workloads' `sink::mutants`.
use crate::SinkMode;

/// The table of mutants: each is one faithful mode with ONE small deviation,
/// standing for a real class of sink bug, named `<mode>~<deviation>`. What
/// each deviation does is in `sink::mutants` (the one place the sinks
/// consult); here are the names, the base modes and the bug classes.
macro_rules! mutants {
    ($($(#[$doc:meta])* $v:ident => $base:ident, $dev:literal, $name:literal, $class:literal;)*) => {
        /// A deliberately broken sink (see the table's comments; docs/GUIDE.md, "Mutants and calibration").
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Mutant { $($(#[$doc])* $v,)* }

        impl Mutant {
            pub const ALL: &'static [Mutant] = &[$(Mutant::$v),*];

            /// `<base>~<deviation>`.
            pub fn name(self) -> &'static str {
                match self { $(Mutant::$v => $name,)* }
            }

            /// The deviation alone (`assume-committed`).
            pub fn deviation(self) -> &'static str {
                match self { $(Mutant::$v => $dev,)* }
            }

            /// The faithful mode it deviates from; it is judged against that
            /// mode's expectation.
            pub fn base(self) -> SinkMode {
                match self { $(Mutant::$v => SinkMode::$base,)* }
            }

            /// The real bug class the deviation stands for.
            pub fn bug_class(self) -> &'static str {
                match self { $(Mutant::$v => $class,)* }
            }
        }
    };
}

mutants! {
    /// An EndTxn whose answer never came (a request timeout, a dropped
    /// connection) is taken as committed, and the committable is dropped.
    AssumeCommitted => Legacy, "assume-committed", "legacy~assume-committed",
        "an unknown commit outcome (TimeoutException, NetworkException) taken as success";
    /// A commit that failed with a retriable error is logged and dropped
    /// instead of retried.
    DiscardRetriable => Legacy, "discard-retriable", "legacy~discard-retriable",
        "a committer that treats retriable commit errors as known failures (signalFailedWithKnownReason instead of retryLater)";
    /// After a restore the source starts one record after the stored offset.
    RestoreOffByOne => Legacy, "restore-off-by-one", "legacy~restore-off-by-one",
        "recovery off by one: the stored position read as the last record emitted instead of the next to emit";
    /// The transaction is committed at the barrier, when the subtask acks,
    /// before the checkpoint is durable (and no committable is stored).
    CommitBeforePersist => Legacy, "commit-before-persist", "legacy~commit-before-persist",
        "committing on snapshot instead of on notifyCheckpointComplete (a one-phase sink posing as two-phase)";
    /// The restore does not probe and abort the transactions a previous
    /// attempt left open.
    SkipLingeringAbort => Legacy, "skip-lingering-abort", "legacy~skip-lingering-abort",
        "no lingering-transaction abort on recovery (open transactions block read_committed readers until they time out)";
    /// After a restore the first transaction is written under the restored
    /// committable's transactional id, with the recovery producer's injected
    /// producer id and epoch: no InitProducerId, nothing fenced.
    ReuseTidNoFence => Legacy, "reuse-tid-no-fence", "legacy~reuse-tid-no-fence",
        "a recycled producer reused for new writes without initTransactions (no fencing of the previous incarnation)";
    /// On restore, only the oldest restored committable of each subtask is
    /// committed; the others are neither committed nor aborted.
    ForgetRestored => TwopcInject, "forget-restored", "twopc-inject~forget-restored",
        "a restore that takes one committable per subtask from the state (the later ones of several pending checkpoints forgotten: their prepared transactions stay open for good)";
    /// InitProducerId without Enable2Pc: the broker's transaction timeout
    /// applies to the transactions it then commits by injection.
    Drop2pcFlag => TwopcInject, "drop-2pc-flag", "twopc-inject~drop-2pc-flag",
        "KIP-939's Enable2Pc lost on the way to the broker (a producer built without transaction.two.phase.commit.enable), so the FLIP-319 timeout abort returns";
}

impl Mutant {
    pub fn parse(s: &str) -> Option<Mutant> {
        Mutant::ALL.iter().copied().find(|m| m.name() == s)
    }
}
