//! Expectations that depend on the Kafka version or the transaction
//! protocol: the known Kafka bugs (docs/SCENARIOS.md, "Expectations by
//! version or protocol").
//!
//! ```yaml
//! expect:                       # what a fixed broker gives
//!   legacy: clean
//! expect_by:
//!   - kafka: "<4.0.1"           # a version requirement; `,` = and
//!     bug: KAFKA-19367
//!     expect: {legacy: {lost: ">0"}}
//!   - protocol: v1              # Transactions V1 (KIP-890 not in use)
//!     expect: {legacy: {aborted_read: ">0"}}
//! ```
//!
//! Each entry names the versions (`kafka`) and/or the protocol (`protocol`)
//! it is for, and the modes whose expectation it replaces there; for each
//! mode the first matching entry wins, else `expect` holds. A run resolves
//! them once its version is known ([`resolve`], from `run::plan`, like the
//! random schedule): the resolved scenario.yaml carries plain expectations
//! and the verdict is judged as always.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sinkhole_model::SinkMode;

use super::{Expectation, Scenario};

/// The transaction protocol of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// Transactions V1: AddPartitionsToTxn from the client, EndTxn ≤ v4.
    V1,
    /// Transactions V2 (KIP-890 part 2): EndTxn v5, the epoch bumped on every commit.
    V2,
}

/// One entry of `expect_by`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectWhen {
    /// A version requirement: `4.0.0`, `<4.0.1`, `>=4.1.0`, `>=4.0.0,<4.0.1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kafka: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// The bug or the reason, for the record (`KAFKA-17754`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bug: Option<String>,
    pub expect: BTreeMap<SinkMode, Expectation>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
}

fn version(s: &str) -> Result<Vec<u64>, String> {
    let parts: Result<Vec<u64>, _> = s.split('.').map(|p| p.parse::<u64>()).collect();
    match parts {
        Ok(v) if !v.is_empty() && v.len() <= 3 => Ok(v),
        _ => Err(format!("{s:?} is not a version (use numbers like 4.0.1)")),
    }
}

fn padded(v: &[u64]) -> [u64; 3] {
    [v.first().copied().unwrap_or(0), v.get(1).copied().unwrap_or(0), v.get(2).copied().unwrap_or(0)]
}

/// A requirement's clauses, each an operator and a version.
fn parse_req(req: &str) -> Result<Vec<(Op, [u64; 3])>, String> {
    let mut out = Vec::new();
    for clause in req.split(',') {
        let c = clause.trim();
        let (op, rest) = [(">=", Op::Ge), ("<=", Op::Le), ("==", Op::Eq), ("=", Op::Eq), (">", Op::Gt), ("<", Op::Lt)]
            .iter()
            .find_map(|(p, op)| c.strip_prefix(p).map(|r| (*op, r)))
            .unwrap_or((Op::Eq, c));
        let v = version(rest.trim()).map_err(|e| {
            format!("{req:?}: {e}; write a version (4.0.0) or a comparison (<4.0.1, >=4.1.0), `,` for and")
        })?;
        out.push((op, padded(&v)));
    }
    Ok(out)
}

/// Whether Kafka `v` (e.g. `4.0.0`) meets `req`. An error names what is wrong
/// with either.
pub fn version_matches(req: &str, v: &str) -> Result<bool, String> {
    let have = padded(&version(v)?);
    Ok(parse_req(req)?.iter().all(|(op, want)| match op {
        Op::Eq => have == *want,
        Op::Lt => have < *want,
        Op::Le => have <= *want,
        Op::Gt => have > *want,
        Op::Ge => have >= *want,
    }))
}

/// Checks a requirement (for validation).
pub fn check_req(req: &str) -> Result<(), String> {
    parse_req(req).map(|_| ())
}

/// The protocol a run of `s` uses: V1 when the job forces it or the broker
/// predates 4.0.0 (the first release that finalizes `transaction.version`
/// 2 on a new cluster; the rig's producer uses V2 wherever it is finalized,
/// `producer::txn::choose_protocol`), else V2.
pub fn protocol_of(s: &Scenario) -> Protocol {
    if s.job.force_transactions_v1 || version_matches("<4.0.0", &s.cluster.kafka).unwrap_or(false) {
        Protocol::V1
    } else {
        Protocol::V2
    }
}

fn applies(w: &ExpectWhen, kafka: &str, protocol: Protocol) -> bool {
    w.kafka.as_deref().is_none_or(|r| version_matches(r, kafka).unwrap_or(false))
        && w.protocol.is_none_or(|p| p == protocol)
}

/// Replaces the expectations `expect_by` names for this run's version and
/// protocol and empties it; returns a line per replaced expectation.
pub fn resolve(s: &mut Scenario) -> Vec<String> {
    let protocol = protocol_of(s);
    let kafka = s.cluster.kafka.clone();
    let mut done: Vec<SinkMode> = Vec::new();
    let mut notes = Vec::new();
    for w in std::mem::take(&mut s.expect_by) {
        if !applies(&w, &kafka, protocol) {
            continue;
        }
        for (m, e) in w.expect {
            if done.contains(&m) || !s.modes.contains(&m) {
                continue;
            }
            done.push(m);
            let why = w.bug.as_deref().map(|b| format!(" ({b})")).unwrap_or_default();
            notes.push(format!(
                "{m}: expecting {} on Kafka {kafka}, Transactions {protocol:?}{why}",
                serde_json::to_string(&e).unwrap_or_default().replace('"', "")
            ));
            s.expect.insert(m, e);
        }
    }
    notes
}
