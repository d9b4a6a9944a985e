//! The anomalies the checker counts, in one table.
//!
//! Each row of `anomalies!` below says everything the rig knows about one anomaly, once:
//! - its key ([`Anomaly`]) and the name a scenario's expectation gives it (`torn-transaction:
//!   0`), which is also how the verdict's reason and the report name it;
//! - its field in [`Counts`] (`verdict.json` and `summary.json` store the counts under these
//!   names: a stored name never changes) and whether a file may leave it out;
//! - its words in capitals (`TORN TRANSACTION 1`) and its short name in a matrix cell (`torn=1`);
//! - what it is about ([`Group`]) and how much it weighs in a verdict ([`Severity`]: what
//!   `clean` forbids, what only informs);
//! - where a person sees it ([`Renderer`], [`Show`]): always, only when not zero (or by name
//!   alone), or not at all;
//! - whether examples are kept ([`Examples`]: each one names the record, partition, offset,
//!   transaction and checkpoint, and says in a sentence what the history knows of it);
//! - the check that finds it: its file and function in the checker crate (a test there holds
//!   the reference to the code).
//!
//! Everything else is derived: the expectation vocabulary (the scenario crate's `CountName`
//! is [`Anomaly`]), the counts and the examples structs, which counts `clean` forbids, the
//! verdict's reason, its words, and every renderer's rows and columns. Adding an anomaly is
//! one row here and its check in the checker (docs/ARCHITECTURE.md, "An anomaly").
//!
//! Why in this crate: two crates need the table. The scenario crate parses the names
//! expectations use; the checker, above it, fills the counts, and the rig above both renders
//! them. The names cannot live in the checker (the scenario crate sits below it), and the
//! counts are the checker's findings, not the scenario language. This crate sits below both,
//! holds the plain data they share and does no I/O: the table's types are plain serde data,
//! as the history's events are. The table is a macro, the shape of `mutants!` here and of the
//! scenario crate's `fault_kinds!`; a new row needs nothing else to compile, because no other
//! code lists anomalies.
use serde::{Deserialize, Serialize};

/// What an anomaly is about. Summary lines (a verdict's words, a matrix cell) say the
/// anomalies group by group in this order, worst first; lists of every count (the reason,
/// the report, the JSON files) keep the table's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    /// What the output topic holds once every transaction has ended: records lost,
    /// duplicated, foreign, aborted or torn, transactions left open.
    Output,
    /// The order of a partition's records: a replay's step back. Said after the output's
    /// anomalies because it accompanies the duplicates they name (every replay steps back).
    Order,
    /// What the scenario's live readers polled while the job ran (`readers:`).
    Readers,
    /// What became of the input, by a share group's own account: counted with a
    /// share-group source only, evidence for reading the output's counts.
    Input,
}

/// How much an anomaly weighs in a verdict, lightest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Not an anomaly: evidence for reading the others (`unseen`, a share group's
    /// redeliveries). No expectation forbids it; a condition that names it judges it.
    Evidence,
    /// An anomaly of the data, marked wherever it shows, which no expectation forbids
    /// unless it names it: the verdict's rules judge it instead.
    Noted,
    /// Forbidden by `clean`; a condition on the counts judges it only when it names it.
    Clean,
    /// Forbidden by every expectation on the counts unless the expectation names it:
    /// `{lost: ">0"}` judges it as if it also said `0` for it, and so does `clean`.
    Always,
}

impl Severity {
    /// Whether `clean` forbids it.
    pub fn forbidden_by_clean(self) -> bool {
        self >= Severity::Clean
    }

    /// Whether every expectation on the counts forbids it unless it names it.
    pub fn forbidden_unless_named(self) -> bool {
        self == Severity::Always
    }

    /// Whether it is an anomaly (marked where it shows), not evidence.
    pub fn is_anomaly(self) -> bool {
        self >= Severity::Noted
    }
}

/// Where a person reads the counts. Each renderer takes its rows or columns from the
/// table, never from a list of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Renderer {
    /// The verdict's reason (`… 0 lost, 0 duplicated, 0 unexpected, 2 torn-transaction`):
    /// `Always` ones in its head, the others after it, by key.
    Reason,
    /// The verdict's words, in capitals (`LOST 4002, TORN TRANSACTION 1 (expected)`).
    Words,
    /// A column of the run's table (the terminal's, and the report's verdict table), by key.
    Table,
    /// A row of the counts in the report's Anomalies section (`report.html`), by key; the
    /// readers' rows when the scenario has readers, the input's with a share group.
    Report,
    /// A matrix cell's anomalies (`lost=4 dup=2`), which also name what shrink, calibrate
    /// and explore saw fail, by short name.
    Cells,
    /// The counts of two runs side by side (`sinkhole serve`'s comparison, by field) and a
    /// matrix cell's title (by key).
    Compare,
}

impl Renderer {
    pub const ALL: [Renderer; 6] =
        [Renderer::Reason, Renderer::Words, Renderer::Table, Renderer::Report, Renderer::Cells, Renderer::Compare];
}

/// Whether a renderer shows an anomaly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Show {
    /// Zero or not.
    Always,
    /// Only when not zero.
    NonZero,
    /// Only when not zero, by name alone, without its count (the words of a count of
    /// partitions, not of records).
    Named,
    /// Never.
    Never,
}

impl Show {
    /// Whether a count of `n` shows.
    pub fn shows(self, n: u64) -> bool {
        match self {
            Show::Always => true,
            Show::NonZero | Show::Named => n > 0,
            Show::Never => false,
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Info {
    pub anomaly: Anomaly,
    /// The expectation's name (`torn-transaction`), the reason's and the report's.
    pub key: &'static str,
    /// The field of [`Counts`] as stored in JSON (`torn_transaction`, `G1a`).
    pub field: &'static str,
    /// In the words, in capitals (`TORN TRANSACTION`).
    pub said: &'static str,
    /// In a matrix cell (`torn`).
    pub short: &'static str,
    pub group: Group,
    pub severity: Severity,
    /// Whether [`Examples`] keeps examples of it.
    pub examples: bool,
    /// The check that finds it, in the checker crate: `file.rs: function`.
    pub check: &'static str,
    shown: [Show; 6],
}

/// One example of an anomaly: the record, where it was read, the transaction that wrote
/// it, and a sentence saying what the history knows of it (its attribution).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Example {
    pub subtask: Option<u32>,
    /// The first (or only) sequence number.
    pub seq: Option<u64>,
    /// The last sequence number of a range (lost records come in ranges).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq_end: Option<u64>,
    pub partition: Option<i32>,
    pub offset: Option<i64>,
    pub transactional_id: Option<String>,
    /// The checkpoint of that transaction, where the history knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<u64>,
    /// A sentence for the report.
    pub detail: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The table's rows become, each:
/// - a variant of [`Anomaly`], serialised as its key;
/// - a field of [`Counts`], stored `required` (always written, always read), `default`
///   (always written, 0 when a file lacks it) or `nonzero` (written when not zero);
/// - with `examples` other than `none`, a field of [`Examples`], stored the same way (a
///   list, `nonzero` meaning not empty);
/// - its [`Info`].
///
/// The struct fields are gathered by the `@counts` and `@examples` rules one row at a time
/// (a row's serde attributes depend on how it is stored), then written out once.
macro_rules! anomalies {
    ($(
        $(#[doc = $doc:literal])*
        $v:ident($field:ident $(as $rename:literal)?) $key:literal $(or $alias:literal)?,
            said: $said:literal, short: $short:literal, $group:ident, $severity:ident,
            stored: $stored:ident, examples: $ex:ident,
            shown: [reason: $reason:ident, words: $words:ident, table: $table:ident, report: $report:ident,
                    cells: $cells:ident, compare: $compare:ident],
            check: $check:literal;
    )+) => {
        /// An anomaly, by the name an expectation gives it (`torn-transaction: 0`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum Anomaly {
            $( $(#[doc = $doc])* #[serde(rename = $key $(, alias = $alias)?)] $v, )+
        }

        const INFO: &[Info] = &[$(
            Info {
                anomaly: Anomaly::$v,
                key: $key,
                field: anomalies!(@stored_name $field $($rename)?),
                said: $said,
                short: $short,
                group: Group::$group,
                severity: Severity::$severity,
                examples: anomalies!(@kept $ex),
                check: $check,
                shown: [Show::$reason, Show::$words, Show::$table, Show::$report, Show::$cells, Show::$compare],
            },
        )+];

        impl Anomaly {
            /// Every anomaly, in the table's order.
            pub const ALL: &'static [Anomaly] = &[$(Anomaly::$v),+];

            /// The name an expectation, the reason and the report give it (`torn-transaction`).
            pub const fn key(self) -> &'static str {
                match self { $(Anomaly::$v => $key,)+ }
            }
        }

        impl Counts {
            /// The count of one anomaly.
            pub fn get(&self, a: Anomaly) -> u64 {
                match a { $(Anomaly::$v => self.$field,)+ }
            }

            /// The count of one anomaly, to set.
            pub fn get_mut(&mut self, a: Anomaly) -> &mut u64 {
                match a { $(Anomaly::$v => &mut self.$field,)+ }
            }
        }

        impl Examples {
            /// The examples kept of one anomaly (none for one whose examples are not kept).
            pub fn get(&self, a: Anomaly) -> &[Example] {
                let e = self;
                match a { $(Anomaly::$v => anomalies!(@examples_of e $field $ex),)+ }
            }
        }

        anomalies!(@counts [] $( $(#[doc = $doc])* $field $($rename)? => $stored, )+);
        anomalies!(@examples [] $( $field => $ex, )+);
    };

    (@stored_name $field:ident) => { stringify!($field) };
    (@stored_name $field:ident $rename:literal) => { $rename };
    (@kept none) => { false };
    (@kept $stored:ident) => { true };
    (@examples_of $e:ident $field:ident none) => { &[] };
    (@examples_of $e:ident $field:ident $stored:ident) => { &$e.$field[..] };

    (@counts [$($acc:tt)*]) => {
        /// The counts a verdict is judged on: what the job should have written, what was
        /// committed, and every anomaly of the table. A field added after the first files
        /// were written is read as 0 from those (`default`, `nonzero`), so older verdict and
        /// summary files stay readable.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
        pub struct Counts {
            /// parallelism × records_per_subtask.
            pub expected: u64,
            /// Distinct expected records seen at least once.
            pub committed: u64,
            $($acc)*
        }
    };
    (@counts [$($acc:tt)*] $(#[doc = $doc:literal])* $field:ident $($rename:literal)? => required, $($rest:tt)*) => {
        anomalies!(@counts [$($acc)* $(#[doc = $doc])* $(#[serde(rename = $rename)])? pub $field: u64,] $($rest)*);
    };
    (@counts [$($acc:tt)*] $(#[doc = $doc:literal])* $field:ident $($rename:literal)? => default, $($rest:tt)*) => {
        anomalies!(@counts [$($acc)* $(#[doc = $doc])* #[serde(default $(, rename = $rename)?)] pub $field: u64,] $($rest)*);
    };
    (@counts [$($acc:tt)*] $(#[doc = $doc:literal])* $field:ident $($rename:literal)? => nonzero, $($rest:tt)*) => {
        anomalies!(@counts [$($acc)*
            $(#[doc = $doc])* #[serde(default, skip_serializing_if = "is_zero" $(, rename = $rename)?)] pub $field: u64,
        ] $($rest)*);
    };

    (@examples [$($acc:tt)*]) => {
        /// Up to a few examples of each anomaly whose examples are kept (the table's
        /// `examples`), by the field its count is stored under.
        #[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
        pub struct Examples {
            $($acc)*
        }
    };
    (@examples [$($acc:tt)*] $field:ident => none, $($rest:tt)*) => {
        anomalies!(@examples [$($acc)*] $($rest)*);
    };
    (@examples [$($acc:tt)*] $field:ident => required, $($rest:tt)*) => {
        anomalies!(@examples [$($acc)* pub $field: Vec<Example>,] $($rest)*);
    };
    (@examples [$($acc:tt)*] $field:ident => default, $($rest:tt)*) => {
        anomalies!(@examples [$($acc)* #[serde(default)] pub $field: Vec<Example>,] $($rest)*);
    };
    (@examples [$($acc:tt)*] $field:ident => nonzero, $($rest:tt)*) => {
        anomalies!(@examples [$($acc)* #[serde(default, skip_serializing_if = "Vec::is_empty")] pub $field: Vec<Example>,] $($rest)*);
    };
}

// The table. Its order is the order the counts are stored and listed in; summary lines
// say them by group ([`Group`]). Names follow Jepsen's Kafka checker and workload.
anomalies! {
    /// Expected records never seen.
    Lost(lost) "lost", said: "LOST", short: "lost", Output, Clean,
        stored: required, examples: required,
        shown: [reason: Always, words: NonZero, table: Always, report: Always, cells: NonZero, compare: Always],
        check: "count.rs: Counter::lost";
    /// Extra copies: a record seen three times counts 2.
    Duplicated(duplicated) "duplicated", said: "DUPLICATED", short: "dup", Output, Clean,
        stored: required, examples: required,
        shown: [reason: Always, words: NonZero, table: Always, report: Always, cells: NonZero, compare: Always],
        check: "count.rs: Counter::duplicate";
    /// Records of another run, malformed, or out of the source's range.
    Unexpected(unexpected) "unexpected", said: "UNEXPECTED", short: "unexpected", Output, Clean,
        stored: required, examples: required,
        shown: [reason: Always, words: NonZero, table: Never, report: Always, cells: NonZero, compare: Always],
        check: "count.rs: Counter::unexpected";
    /// Steps back: within a partition, a subtask's seq not above the one before it (read in
    /// offset order; a repeat counts too).
    Nonmonotonic(nonmonotonic) "nonmonotonic", said: "NONMONOTONIC", short: "nonmono", Order, Clean,
        stored: default, examples: default,
        shown: [reason: NonZero, words: NonZero, table: Never, report: Always, cells: NonZero, compare: Always],
        check: "count.rs: Counter::monotonic";
    /// Visible records that only a transaction the history says was aborted can have written.
    AbortedRead(aborted_read) "aborted-read", said: "ABORTED READ", short: "aborted-read", Output, Clean,
        stored: default, examples: default,
        shown: [reason: NonZero, words: NonZero, table: Never, report: Always, cells: NonZero, compare: Always],
        check: "count.rs: Counter::transaction";
    /// Transactions with some records visible and others not.
    TornTransaction(torn_transaction) "torn-transaction", said: "TORN TRANSACTION", short: "torn", Output, Clean,
        stored: default, examples: default,
        shown: [reason: NonZero, words: NonZero, table: Never, report: Always, cells: NonZero, compare: Always],
        check: "count.rs: Counter::torn";
    /// Partitions whose read_committed position stayed below the high-water mark: a transaction
    /// left open holds back their last stable offset (said by that transaction when the brokers
    /// name it; the verdict's rule 4 judges one they cannot).
    UncommittedTail(uncommitted_tail) "uncommitted-tail", said: "UNCOMMITTED TAIL", short: "stuck-tail", Output, Noted,
        stored: default, examples: none,
        shown: [reason: Never, words: Named, table: Never, report: Always, cells: NonZero, compare: Always],
        check: "count.rs: Counter::finish";
    /// Share-group source: deliveries the workers saw with a delivery count above 1 (a lock
    /// ran out, a member went away).
    Redelivered(redelivered) "redelivered", said: "REDELIVERED", short: "redelivered", Input, Evidence,
        stored: nonzero, examples: none,
        shown: [reason: NonZero, words: NonZero, table: Never, report: Always, cells: Never, compare: Never],
        check: "share.rs: tally_history";
    /// Share-group source: input records the group archived (the delivery limit), by its own
    /// persisted state at the end or sampled while the job ran.
    Archived(archived) "archived", said: "ARCHIVED", short: "archived", Input, Evidence,
        stored: nonzero, examples: none,
        shown: [reason: NonZero, words: NonZero, table: Never, report: Always, cells: Never, compare: Never],
        check: "share.rs: merge_archived";
    /// Transactions of an earlier attempt still open once a restored attempt was up.
    Lingering(lingering) "lingering", said: "LINGERING", short: "lingering", Output, Clean,
        stored: nonzero, examples: nonzero,
        shown: [reason: NonZero, words: NonZero, table: Never, report: Always, cells: NonZero, compare: Always],
        check: "lingering.rs: found";
    /// Transactions of the mode still Ongoing at their coordinator after the job finished: the
    /// sink never ended them. Every expectation forbids them unless it names them.
    HangingTransaction(hanging_transaction) "hanging-transaction", said: "HANGING TRANSACTION",
        short: "hanging", Output, Always,
        stored: nonzero, examples: nonzero,
        shown: [reason: NonZero, words: NonZero, table: Never, report: Always, cells: NonZero, compare: NonZero],
        check: "hanging.rs: attribute";
    /// Transactions a partition holds open while their coordinator finished them (or answered
    /// their commit): a marker the broker never wrote. Every expectation forbids them unless it
    /// names them (a known Kafka bug is named in `expect_by`).
    MissingMarker(missing_marker) "missing-marker", said: "MISSING MARKER", short: "missing-marker", Output, Always,
        stored: nonzero, examples: nonzero,
        shown: [reason: NonZero, words: NonZero, table: Never, report: Always, cells: NonZero, compare: NonZero],
        check: "hanging.rs: attribute";
    /// A live reader polled a record where nothing was committed (an aborted read, seen live).
    G1a(g1a as "G1a") "G1a" or "g1a", said: "G1a", short: "G1a", Readers, Clean,
        stored: nonzero, examples: none,
        shown: [reason: NonZero, words: NonZero, table: Never, report: Always, cells: NonZero, compare: Never],
        check: "reads.rs: ReadChecker::judge_record";
    /// A live reader polled a record at an offset that holds another one.
    InconsistentOffsets(inconsistent_offsets) "inconsistent-offsets", said: "INCONSISTENT OFFSETS",
        short: "inconsistent", Readers, Clean,
        stored: nonzero, examples: none,
        shown: [reason: NonZero, words: NonZero, table: Never, report: Always, cells: NonZero, compare: Never],
        check: "reads.rs: ReadChecker::judge_record";
    /// A live reader polled a record before its transaction could commit.
    PrecommittedRead(precommitted_read) "precommitted-read", said: "PRECOMMITTED READ", short: "precommitted",
        Readers, Clean,
        stored: nonzero, examples: none,
        shown: [reason: NonZero, words: NonZero, table: Never, report: Always, cells: NonZero, compare: Never],
        check: "reads.rs: ReadChecker::judge_record";
    /// Committed records a live reader passed over between two polls, or its scope across a
    /// rebalance or a restart.
    PollSkip(poll_skip) "poll-skip", said: "POLL SKIP", short: "poll-skip", Readers, Clean,
        stored: nonzero, examples: none,
        shown: [reason: NonZero, words: NonZero, table: Never, report: Always, cells: NonZero, compare: Never],
        check: "reads.rs: ReadChecker::judge_order";
    /// A live reader polled an offset at or below the one it polled before.
    NonmonotonicPoll(nonmonotonic_poll) "nonmonotonic-poll", said: "NONMONOTONIC POLL", short: "nonmono-poll",
        Readers, Clean,
        stored: nonzero, examples: none,
        shown: [reason: NonZero, words: NonZero, table: Never, report: Always, cells: NonZero, compare: Never],
        check: "reads.rs: ReadChecker::judge_order";
    /// Committed records no live reader polled before the end (a reader stopped near the end
    /// misses the last records: evidence, not an anomaly).
    Unseen(unseen) "unseen", said: "UNSEEN", short: "unseen", Readers, Evidence,
        stored: nonzero, examples: none,
        shown: [reason: NonZero, words: Never, table: Never, report: Never, cells: Never, compare: Never],
        check: "reads.rs: ReadChecker::finish";
}

impl Anomaly {
    /// Its row of the table.
    pub fn info(self) -> &'static Info {
        // The macro writes ALL and INFO from the same rows, in the order it declares the variants.
        &INFO[self as usize]
    }

    /// The anomaly an expectation names by `key` (`torn-transaction`; `G1a` also as `g1a`).
    pub fn parse(key: &str) -> Option<Anomaly> {
        serde_json::from_value(serde_json::Value::String(key.to_string())).ok()
    }

    /// The field of [`Counts`] as stored in JSON (`torn_transaction`, `G1a`).
    pub fn field(self) -> &'static str {
        self.info().field
    }

    /// In the words, in capitals (`TORN TRANSACTION`).
    pub fn said(self) -> &'static str {
        self.info().said
    }

    /// In a matrix cell (`torn`).
    pub fn short(self) -> &'static str {
        self.info().short
    }

    pub fn group(self) -> Group {
        self.info().group
    }

    pub fn severity(self) -> Severity {
        self.info().severity
    }

    /// Whether `r` shows it.
    pub fn shown(self, r: Renderer) -> Show {
        self.info().shown[r as usize]
    }

    /// Every anomaly group by group ([`Group`]'s order), in the table's order within a group:
    /// the order summary lines say them in.
    pub fn by_group() -> Vec<Anomaly> {
        let mut all = Anomaly::ALL.to_vec();
        all.sort_by_key(|a| a.group());
        all
    }

    /// The anomalies `clean` forbids, in the table's order.
    pub fn forbidden_by_clean() -> impl Iterator<Item = Anomaly> {
        Anomaly::ALL.iter().copied().filter(|a| a.severity().forbidden_by_clean())
    }
}

impl std::fmt::Display for Anomaly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

impl Counts {
    /// The anomalies `r` shows for these counts, each with its count, in the table's order.
    pub fn shown(&self, r: Renderer) -> impl Iterator<Item = (Anomaly, u64)> + '_ {
        Anomaly::ALL.iter().map(move |a| (*a, self.get(*a))).filter(move |(a, n)| a.shown(r).shows(*n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_consistent() {
        for (i, a) in Anomaly::ALL.iter().enumerate() {
            assert_eq!(*a as usize, i);
            assert_eq!(a.info().anomaly, *a);
            // The key is how serde names it, and reads back.
            assert_eq!(serde_json::to_value(a).unwrap(), serde_json::json!(a.key()), "{a:?}");
            assert_eq!(Anomaly::parse(a.key()), Some(*a));
            assert_eq!(serde_json::from_value::<Anomaly>(a.key().into()).unwrap(), *a);
            // Keys, fields, words and short names are each unique.
            for b in Anomaly::ALL.iter().filter(|b| *b != a) {
                assert_ne!(a.key(), b.key());
                assert_ne!(a.field(), b.field());
                assert_ne!(a.said(), b.said());
                assert_ne!(a.short(), b.short());
            }
            // Words are capitals, except the names Jepsen gives (G1a).
            assert!(a.said() == a.key() || a.said() == a.said().to_uppercase(), "{a:?}");
            // Evidence is never forbidden, and never said in a matrix cell.
            if a.severity() == Severity::Evidence {
                assert_eq!(a.shown(Renderer::Cells), Show::Never, "{a:?}");
            }
            // `Named` is a way of saying words only.
            for r in Renderer::ALL.into_iter().filter(|r| *r != Renderer::Words) {
                assert_ne!(a.shown(r), Show::Named, "{a:?} {r:?}");
            }
        }
        assert_eq!(Anomaly::parse("g1a"), Some(Anomaly::G1a), "G1a as Jepsen writes it, and in lower case");
        assert_eq!(Anomaly::parse("torn_transaction"), None, "an expectation names the key, not the field");
    }

    #[test]
    fn counts_are_stored_under_each_field_and_read_back() {
        let mut c = Counts { expected: 10, committed: 9, ..Counts::default() };
        for (i, a) in Anomaly::ALL.iter().enumerate() {
            *c.get_mut(*a) = i as u64 + 1;
        }
        let j = serde_json::to_value(c).unwrap();
        for (i, a) in Anomaly::ALL.iter().enumerate() {
            assert_eq!(j[a.field()], i as u64 + 1, "{a:?}");
            assert_eq!(c.get(*a), i as u64 + 1);
        }
        assert_eq!(serde_json::from_value::<Counts>(j).unwrap(), c);
        // Zeros: `nonzero` fields are left out, the others written.
        let j = serde_json::to_value(Counts::default()).unwrap();
        assert!(j.get("lost").is_some() && j.get("torn_transaction").is_some());
        assert!(j.get("lingering").is_none() && j.get("G1a").is_none() && j.get("redelivered").is_none());
        // The fields the first files had are required; the later ones are not.
        let first = serde_json::json!({"expected": 1, "committed": 1, "lost": 0, "duplicated": 0, "unexpected": 0});
        assert_eq!(
            serde_json::from_value::<Counts>(first).unwrap(),
            Counts { expected: 1, committed: 1, ..Counts::default() }
        );
        let without_lost = serde_json::json!({"expected": 1, "committed": 1, "duplicated": 0, "unexpected": 0});
        assert!(serde_json::from_value::<Counts>(without_lost).is_err());
    }

    #[test]
    fn examples_are_kept_for_the_rows_that_say_so() {
        let mut e = Examples::default();
        e.torn_transaction.push(Example { detail: "t".into(), ..Example::default() });
        for a in Anomaly::ALL {
            let kept = !e.get(*a).is_empty();
            assert_eq!(kept, *a == Anomaly::TornTransaction, "{a:?}");
        }
        // Stored under the count's field; the first files' lists always, the later ones when kept.
        let j = serde_json::to_value(&e).unwrap();
        assert_eq!(j["lost"], serde_json::json!([]));
        assert!(j.get("lingering").is_none(), "{j}");
        assert_eq!(j["torn_transaction"][0]["detail"], "t");
        assert_eq!(serde_json::from_value::<Examples>(j).unwrap(), e);
    }
}
