//! What a rule says: which frames it picks ([`Match`]), what it does with
//! them ([`Action`]), and what it did ([`RuleStats`], the confirmed effect of
//! a fault). The proxy ([`super::Proxy`]) applies rules; this file only
//! describes them.
use serde::{Deserialize, Serialize};

use super::{FrameInfo, Peer, PeerGroup};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Frames {
    Request,
    Response,
}

/// Which frames a rule acts on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Match {
    /// Sources and destinations (empty = any). A frame matches when its
    /// connection goes from a peer in `from` to a peer in `to`, or — with
    /// `both_ways` — from `to` to `from`; then requests travel from → to and
    /// responses to → from, and `direction_from_to_only` below restricts
    /// which of them.
    pub from: Vec<PeerGroup>,
    pub to: Vec<PeerGroup>,
    pub both_ways: bool,
    /// Only bytes travelling from a `from` peer towards a `to` peer (one-way
    /// partition); false = both directions of the matched connections.
    pub one_way: bool,
    /// Kafka API keys (empty = any).
    pub api_keys: Vec<i16>,
    /// Request or response frames (None = both).
    pub frames: Option<Frames>,
    /// Only frames of this transactional id (requests carrying one, and the
    /// responses to them).
    pub transactional_id: Option<String>,
    /// Only the n-th matching frame (1-based).
    pub nth: Option<u64>,
    /// Act on a matching frame with this probability (seeded).
    pub probability: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "action")]
pub enum Action {
    /// Swallow the frame (the connection stays open): a request or response
    /// lost for good, as `protocol-drop` means. The client hears nothing until
    /// its own request timeout.
    Drop,
    /// Hold the frame until the rule is removed, then deliver it (order on the
    /// connection kept): what a network partition does to a TCP stream. The
    /// kernel sends unacknowledged bytes again until the path heals, so a
    /// partition shorter than the client's request timeout delays its requests
    /// rather than losing them. A peer that gives up first closes its side,
    /// and what was held goes with the connection.
    Hold,
    /// A frame drawn lost (the match's `probability`) is delivered after TCP's
    /// retransmission timeout, `rto_ms`, doubled for each further loss drawn
    /// for the same frame (the kernel's exponential backoff: held rto, then
    /// 3 rto, 7 rto, …). TCP loses no bytes of a live connection; a lost
    /// segment is late, and the frames behind it wait too (order kept).
    Lose { rto_ms: u64 },
    /// Hold the frame delay_ms ± jitter_ms (order on the connection kept).
    Delay { delay_ms: u64, jitter_ms: u64 },
    /// Requests: answer with this error code instead of forwarding.
    /// Responses: replace the error codes in the response.
    Error { code: i16 },
    /// Reset (RST) matching connections now and new ones at once.
    Reset,
    /// Pace matching frames so that, per direction, they pass at no more
    /// than `bytes_per_sec` (all connections the rule matches share it, as
    /// one link's bandwidth): a frame is released once the link would have
    /// carried it. Order on a connection is kept; the rule's removal
    /// releases what it holds.
    Throttle { bytes_per_sec: u64 },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    pub name: String,
    pub matches: Match,
    pub action: Action,
}

impl Rule {
    /// Why the rule did nothing while it was in place, from what it saw (`stats`): the words a
    /// fault's evidence gives for an effect not confirmed.
    pub fn why_no_effect(&self, stats: &RuleStats) -> String {
        let m = &self.matches;
        if stats.matched > 0 {
            return format!(
                "the rule matched {} frame(s) and acted on none (nth {}, probability {})",
                stats.matched,
                m.nth.map_or("any".to_string(), |n| n.to_string()),
                m.probability.map_or("1".to_string(), |p| p.to_string()),
            );
        }
        let mut kind: Vec<String> = m.api_keys.iter().map(|k| sinkhole_kafka::api::describe_api(*k)).collect();
        if kind.is_empty() {
            kind.push("any API".into());
        }
        let dir = match m.frames {
            Some(Frames::Request) => " request",
            Some(Frames::Response) => " response",
            None => "",
        };
        let kind = format!("{}{dir}", kind.join("/"));
        match &m.transactional_id {
            Some(tid) if stats.other_ids > 0 => format!(
                "the rule matched no frame: {} {kind} frame(s) passed for other transactional ids ({}), none for {tid}",
                stats.other_ids,
                stats.other_id_samples.join(", "),
            ),
            Some(tid) => format!("the rule matched no frame: no {kind} frame passed the proxy while it was in place, for {tid} or any other transactional id"),
            None => format!("the rule matched no frame: no {kind} frame passed the proxy while it was in place"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RuleId(pub u64);

/// What a rule matched and did: the confirmed effect of a fault.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuleStats {
    /// Frames that fit the rule's match, counted before `nth` and
    /// `probability` pick the ones acted on (a connection-level Reset counts
    /// the connections it reset).
    pub matched: u64,
    pub dropped: u64,
    pub delayed: u64,
    pub errors_injected: u64,
    pub connections_reset: u64,
    /// Frames a Throttle paced, and their bytes. Left out when zero, so
    /// the stats of every other rule read and write as they always have.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub throttled: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub throttled_bytes: u64,
    /// Frames a Hold kept until the heal (left out when zero).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub held: u64,
    /// Frames a Lose drew lost and delivered after the retransmission
    /// timeouts (left out when zero).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resent: u64,
    /// Up to 20 descriptions of frames acted on, e.g.
    /// "EndTxn v5 response corr 17 tid sinkhole-x-0-3 worker-0 → broker-2: dropped".
    pub samples: Vec<String>,
    /// When each sample was acted on (Unix ms, the rig's wall clock), index for index with
    /// `samples`: `sample_ms[0]` is when the rule first acted, so a frame can be placed before
    /// or after another fault's firing (a premise's evidence, a run's story). Empty in stats
    /// written before it was kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sample_ms: Vec<u64>,
    /// A rule naming a transactional id: frames that fit it but for their id, and the first
    /// few ids they carried ("(none)" for a request the proxy read no id from). A rule that
    /// matched nothing says with them whether the frames it waited for passed under another
    /// id, or never passed at all. Left out when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub other_ids: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_id_samples: Vec<String>,
}

impl RuleStats {
    /// Counts a frame that fit the rule but for its transactional ids.
    pub(super) fn other_id(&mut self, ids: &[String]) {
        self.other_ids += 1;
        let id = if ids.is_empty() { "(none)".to_string() } else { ids.join(",") };
        if self.other_id_samples.len() < MAX_OTHER_IDS && !self.other_id_samples.contains(&id) {
            self.other_id_samples.push(id);
        }
    }

    /// When the rule first acted on a frame or connection (Unix ms), if it did and kept the time.
    pub fn first_acted_ms(&self) -> Option<u64> {
        self.sample_ms.first().copied().filter(|_| self.acted())
    }

    /// The samples with the time each was acted on (`None` for stats that kept no times).
    pub fn timed_samples(&self) -> impl Iterator<Item = (Option<u64>, &str)> {
        self.samples.iter().enumerate().map(|(i, s)| (self.sample_ms.get(i).copied(), s.as_str()))
    }

    /// The rule acted on at least one frame or connection.
    pub fn acted(&self) -> bool {
        self.dropped
            + self.delayed
            + self.errors_injected
            + self.connections_reset
            + self.throttled
            + self.held
            + self.resent
            > 0
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The most samples a rule keeps.
pub const MAX_SAMPLES: usize = 20;

/// The most other transactional ids a rule remembers.
pub const MAX_OTHER_IDS: usize = 4;

/// Linux's smallest retransmission timeout (`TCP_RTO_MIN`, 200 ms): on the
/// loopback a round trip is far below it, so a lost segment waits this long.
pub const TCP_RTO_MIN_MS: u64 = 200;

impl PeerGroup {
    pub fn contains(&self, peer: &Peer) -> bool {
        match (self, peer) {
            (PeerGroup::Workers, Peer::Worker(_)) => true,
            (PeerGroup::Worker(a), Peer::Worker(b)) => a == b,
            (PeerGroup::Brokers, Peer::Broker(_)) => true,
            (PeerGroup::Broker(a), Peer::Broker(b)) => a == b,
            _ => false,
        }
    }
}

fn in_groups(groups: &[PeerGroup], peer: &Peer) -> bool {
    groups.is_empty() || groups.iter().any(|g| g.contains(peer))
}

impl Match {
    /// The connection from `source` to node `node` is one the rule names, in
    /// either orientation: `(forward, reverse)`. A reverse connection (from a
    /// `to` peer to a `from` peer) counts with `both_ways`, and with
    /// `one_way`, whose bytes "from → to" include the responses on it.
    pub(super) fn orientation(&self, source: &Peer, node: i32) -> (bool, bool) {
        // The rig's own clients are never cut off by a rule naming groups.
        if matches!(source, Peer::Other(_)) && !self.from.is_empty() {
            return (false, false);
        }
        let dst = Peer::Broker(node);
        let fwd = in_groups(&self.from, source) && in_groups(&self.to, &dst);
        let rev = (self.both_ways || self.one_way) && in_groups(&self.to, source) && in_groups(&self.from, &dst);
        (fwd, rev)
    }

    /// Whether a frame fits every part of the match but the transactional id (before `nth`
    /// and `probability`, as [`Match::id_fits`]).
    pub(super) fn fits_but_id(&self, f: &FrameInfo<'_>) -> bool {
        let (fwd, rev) = self.orientation(f.source, f.node);
        let network = if self.one_way {
            (fwd && f.dir == Frames::Request) || (rev && f.dir == Frames::Response)
        } else {
            fwd || rev
        };
        network
            && self.frames.is_none_or(|d| d == f.dir)
            && (self.api_keys.is_empty() || f.api_key.is_some_and(|k| self.api_keys.contains(&k)))
    }

    /// The frame carries the rule's transactional id, or the rule names none.
    pub(super) fn id_fits(&self, f: &FrameInfo<'_>) -> bool {
        self.transactional_id.as_ref().is_none_or(|t| f.transactional_ids.iter().any(|x| x == t))
    }

    /// A rule that acts on whole connections (no frame-level filter): a Reset
    /// rule like this resets matching connections as soon as they are known.
    pub(super) fn connection_level(&self) -> bool {
        self.api_keys.is_empty()
            && self.frames.is_none()
            && self.transactional_id.is_none()
            && self.nth.is_none()
            && self.probability.is_none()
    }
}
