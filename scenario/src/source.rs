//! The `source:` section: where the job's records come from — the generated
//! source (the default), or a share group (KIP-932) the rig fills first —
//! and its checks, each at its field.
//!
//! A share-group source answers the question of issue 12: can a pipeline
//! that reads from a share group and writes with a transactional sink make
//! "acknowledge the input" and "commit the output" one step? It cannot
//! (`sinkhole_workloads::share::source`): the policies put the
//! acknowledgement before the commit, after it, or at the fetch, and the
//! faults between them show what each loses or repeats.
use serde::{Deserialize, Serialize};
use sinkhole_model::{AckPolicy, SinkMode};

use super::located::{key, Seg};
use super::{ConfigValue, Scenario};

/// `source: {type: share-group, ack, batch, lock_ms, delivery_limit, partitions}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSpec {
    #[serde(rename = "type")]
    pub kind: SourceKind,
    /// When records are acknowledged (share-group only; default after-commit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack: Option<AckPolicy>,
    /// Records per ShareFetch at most (share-group only; default 500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u32>,
    /// The acquisition lock, ms (`share.record.lock.duration.ms`; default 30000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_ms: Option<u64>,
    /// `group.share.delivery.count.limit` (default: the broker's, 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_limit: Option<u32>,
    /// Partitions of the input topic (default: the job's parallelism).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// Subtask s emits (s, seq) itself: today's source.
    Generated,
    /// The rig writes every record to an input topic first; the workers read
    /// it as members of one share group.
    ShareGroup,
}

/// A share-group source with its defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareSpec {
    pub ack: AckPolicy,
    pub batch: u32,
    pub lock_ms: u64,
    pub delivery_limit: Option<u32>,
    pub partitions: u32,
}

/// Java's `max.poll.records`.
pub const DEFAULT_BATCH: u32 = 500;
/// Kafka's `group.share.record.lock.duration.ms`.
pub const DEFAULT_LOCK_MS: u64 = 30_000;
/// The broker's bounds of a lock (`ShareGroupConfig`: the min setting goes
/// down to 1000 ms, the max up to an hour; `docs/PROTOCOL.md` §6).
pub const LOCK_RANGE: (u64, u64) = (1_000, 3_600_000);
/// The share-group member session the rig sets (`group.share.session.timeout.ms`,
/// Kafka's default 45 s): above any pause a scenario gives a worker.
pub const SESSION_TIMEOUT_MS: u64 = 6_000;
/// `group.share.delivery.count.limit`'s range (`ShareGroupConfig`).
pub const DELIVERY_LIMIT_RANGE: (u32, u32) = (2, 10);
/// Kafka's default `group.share.delivery.count.limit` (`ShareGroupConfig`).
pub const DEFAULT_DELIVERY_LIMIT: u32 = 5;
/// Sink modes a share-group source can feed: the rig's two-phase modes and
/// the at-least-once control. `rdkafka-txn`'s point is the replay of a
/// rewound source after a one-phase commit, and a share group rewinds
/// nothing; `flink-kafkasink` runs Flink's own source-less job.
pub const SHARE_MODES: [SinkMode; 4] =
    [SinkMode::Legacy, SinkMode::Kip939, SinkMode::TwopcInject, SinkMode::AtLeastOnce];

impl SourceSpec {
    pub fn share(&self, parallelism: u32) -> Option<ShareSpec> {
        (self.kind == SourceKind::ShareGroup).then(|| ShareSpec {
            ack: self.ack.unwrap_or_default(),
            batch: self.batch.unwrap_or(DEFAULT_BATCH),
            lock_ms: self.lock_ms.unwrap_or(DEFAULT_LOCK_MS),
            delivery_limit: self.delivery_limit,
            partitions: self.partitions.unwrap_or(parallelism.max(1)),
        })
    }
}

/// The name of mode `m`'s input topic and share group, from its output
/// topic: each mode reads its own records through its own group, so modes
/// side by side never take each other's records.
pub fn input_topic(output_topic: &str) -> String {
    format!("{output_topic}-input")
}

pub fn share_group(output_topic: &str) -> String {
    format!("{output_topic}-share")
}

/// `(major, minor)` of a Kafka version string.
fn major_minor(v: &str) -> Option<(u32, u32)> {
    let mut it = v.split('.');
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// Why Kafka `version` cannot run a share-group source, if it cannot.
pub fn no_share_groups(version: &str) -> Option<String> {
    match major_minor(version) {
        Some(mm) if mm < (4, 1) => Some(format!(
            "Kafka {version} has no usable share groups (its ApiVersions finalize no share.version; KIP-932 is \
             usable from 4.1, measured here on 4.2.0 and 4.4.0): a share-group source needs a newer broker"
        )),
        _ => None,
    }
}

/// Broker settings a share-group source needs, each unless the scenario
/// set it: the lock allowed down (or up) to `lock_ms` and used, the
/// delivery limit (a broker setting on every release: 4.2.0 refuses it as a
/// group config), heartbeats every second so a restored worker gets its
/// partitions within a second instead of five (`docs/PROTOCOL.md` §6), and a
/// member session of [`SESSION_TIMEOUT_MS`]: a killed worker's member stays
/// in the group until its session runs out, and while it stays the simple
/// assignor may give it a partition no live member reads (measured: a 37 s
/// stall under the default 45 s).
pub fn broker_settings(s: &Scenario) -> Vec<(String, String)> {
    let Some(sh) = s.share_source() else { return vec![] };
    let mut v = vec![
        ("group.share.min.record.lock.duration.ms", sh.lock_ms.min(15_000).to_string()),
        ("group.share.max.record.lock.duration.ms", sh.lock_ms.max(60_000).to_string()),
        ("group.share.record.lock.duration.ms", sh.lock_ms.to_string()),
        ("group.share.min.heartbeat.interval.ms", "1000".to_string()),
        ("group.share.heartbeat.interval.ms", "1000".to_string()),
        ("group.share.min.session.timeout.ms", SESSION_TIMEOUT_MS.to_string()),
        ("group.share.session.timeout.ms", SESSION_TIMEOUT_MS.to_string()),
    ];
    if let Some(l) = sh.delivery_limit {
        v.push(("group.share.delivery.count.limit", l.to_string()));
    }
    v.into_iter().filter(|(k, _)| !s.cluster.broker_config.contains_key(*k)).map(|(k, v)| (k.to_string(), v)).collect()
}

/// The delivery limit a run's share group has: the source's, else the broker setting the
/// scenario gives, else Kafka's default.
pub fn delivery_limit(s: &Scenario) -> u32 {
    let broker =
        s.cluster.broker_config.get("group.share.delivery.count.limit").and_then(|v| v.to_string().parse().ok());
    s.share_source().and_then(|sh| sh.delivery_limit).or(broker).unwrap_or(DEFAULT_DELIVERY_LIMIT)
}

/// Problems of the section: (path, message).
pub(super) fn validate(s: &Scenario) -> Vec<(Vec<Seg>, String)> {
    let mut out = Vec::new();
    let Some(src) = &s.source else { return out };
    let at = |field: &str| vec![key("source"), key(field)];
    if src.kind == SourceKind::Generated {
        let given = [
            ("ack", src.ack.is_some()),
            ("batch", src.batch.is_some()),
            ("lock_ms", src.lock_ms.is_some()),
            ("delivery_limit", src.delivery_limit.is_some()),
            ("partitions", src.partitions.is_some()),
        ];
        for (f, _) in given.iter().filter(|(_, g)| *g) {
            out.push((at(f), format!("{f} is a share-group setting: the generated source takes none")));
        }
        return out;
    }
    let Some(sh) = src.share(s.job.parallelism) else { return out };
    if sh.batch < 1 {
        out.push((at("batch"), "must be ≥ 1 record".into()));
    }
    let (lo, hi) = LOCK_RANGE;
    if !(lo..=hi).contains(&sh.lock_ms) {
        out.push((
            at("lock_ms"),
            format!("{} ms: the broker takes an acquisition lock of {lo} to {hi} ms", sh.lock_ms),
        ));
    } else if sh.ack != AckPolicy::AtPoll && sh.lock_ms <= s.job.checkpoint_interval_ms {
        out.push((
            at("lock_ms"),
            format!(
                "{} ms is not above job.checkpoint_interval_ms ({} ms): under {} a record is held until its \
                 checkpoint, so every lock would run out before it and the group would hand the records out again \
                 without any fault",
                sh.lock_ms, s.job.checkpoint_interval_ms, sh.ack
            ),
        ));
    }
    if let Some(l) = sh.delivery_limit {
        let (lo, hi) = DELIVERY_LIMIT_RANGE;
        if !(lo..=hi).contains(&l) {
            out.push((at("delivery_limit"), format!("{l}: group.share.delivery.count.limit takes {lo} to {hi}")));
        }
    }
    if sh.partitions < 1 || sh.partitions > s.job.parallelism {
        out.push((
            at("partitions"),
            format!(
                "{}: use 1 to job.parallelism ({}): subtask s's records go to input partition s mod partitions, and \
                 an empty partition would never show lag 0",
                sh.partitions, s.job.parallelism
            ),
        ));
    }
    for (i, m) in s.modes.iter().enumerate() {
        if !SHARE_MODES.contains(m) {
            let why = match m {
                SinkMode::RdkafkaTxn | SinkMode::PlainTxn => {
                    "its point is the replay of a rewound source after a one-phase commit, and a share group rewinds \
                     nothing (at-least-once is the negative control here)"
                }
                _ => "Flink's KafkaSink job brings its own source",
            };
            out.push((
                vec![key("modes"), Seg::Index(i)],
                format!(
                    "{m} cannot read a share-group source: {why}; use {}",
                    SHARE_MODES.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    if let Some(why) = no_share_groups(&s.cluster.kafka) {
        out.push((vec![key("cluster"), key("kafka")], why));
    }
    if s.cluster.authorizer.is_some() {
        out.push((
            vec![key("cluster"), key("authorizer")],
            "a share-group source with an authorizer: the sink's principal has no group ACLs; leave one of them out"
                .into(),
        ));
    }
    for (k, v) in &s.cluster.broker_config {
        if k == "group.share.delivery.count.limit" && sh.delivery_limit.is_some() {
            let same = matches!(v, ConfigValue::Int(i) if Some(*i) == sh.delivery_limit.map(i64::from));
            if !same {
                out.push((
                    vec![key("cluster"), key("broker_config"), key(k)],
                    format!("{v}, but source.delivery_limit says {}: give one of them", sh.delivery_limit.unwrap_or(0)),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_below_4_1_have_no_share_groups() {
        assert!(no_share_groups("4.0.2").unwrap().contains("no usable share groups"));
        assert!(no_share_groups("3.9.0").is_some());
        assert_eq!(no_share_groups("4.2.0"), None);
        assert_eq!(no_share_groups("4.4.0"), None);
        assert_eq!(no_share_groups("5.0.0"), None);
    }

    #[test]
    fn names_come_from_the_output_topic() {
        assert_eq!(input_topic("sinkhole-r-legacy"), "sinkhole-r-legacy-input");
        assert_eq!(share_group("sinkhole-r-legacy"), "sinkhole-r-legacy-share");
    }

    #[test]
    fn defaults_fill_a_bare_share_group_section() {
        let s = SourceSpec {
            kind: SourceKind::ShareGroup,
            ack: None,
            batch: None,
            lock_ms: None,
            delivery_limit: None,
            partitions: None,
        };
        let sh = s.share(3).unwrap();
        assert_eq!(
            sh,
            ShareSpec { ack: AckPolicy::AfterCommit, batch: 500, lock_ms: 30_000, delivery_limit: None, partitions: 3 }
        );
        assert_eq!(SourceSpec { kind: SourceKind::Generated, ..s }.share(3), None);
    }
}
