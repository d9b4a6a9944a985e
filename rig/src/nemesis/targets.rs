//! What a fault aims at, resolved against the job and the cluster, and the
//! proxy rule a network or protocol fault installs.
use sinkhole_faults::proxy::{Action, Frames, Match, PeerGroup, Rule, TCP_RTO_MIN_MS};

use sinkhole_scenario::{FaultKind, FaultSpec, FrameDirection, Group, NamedTarget, NetDirection, Target};

/// Which subtasks a worker fault acts on.
pub fn worker_targets(target: &Option<Target>, parallelism: u32) -> Result<Vec<u32>, String> {
    match target {
        None | Some(Target::Named(NamedTarget::All)) => Ok((0..parallelism).collect()),
        Some(Target::Ids(ids)) => ids
            .iter()
            .map(|&i| {
                if i >= 0 && (i as u64) < parallelism as u64 {
                    Ok(i as u32)
                } else {
                    Err(format!("subtask {i} does not exist (parallelism {parallelism})"))
                }
            })
            .collect(),
        Some(Target::Named(NamedTarget::TxnCoordinator)) | Some(Target::Coordinator { .. }) => {
            Err("txn-coordinator names a broker, not a worker".into())
        }
        Some(Target::TxnLogFollower { .. }) => Err("txn-log-follower names a broker, not a worker".into()),
        Some(Target::Named(NamedTarget::GroupCoordinator)) => {
            Err("group-coordinator names a broker, not a worker".into())
        }
        Some(Target::Named(NamedTarget::Controller | NamedTarget::Leader)) | Some(Target::Leader { .. }) => {
            Err("controller and leader name brokers, not workers".into())
        }
    }
}

/// A broker fault's target before it is resolved against the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokerTarget {
    Nodes(Vec<i32>),
    /// The coordinator of this subtask's current transactional id.
    CoordinatorOf(u32),
    /// The KRaft quorum leader.
    Controller,
    /// The leader of this partition of the scenario's topic.
    LeaderOf(u32),
    /// The coordinator of the mode's share group.
    GroupCoordinator,
    /// A follower of the `__transaction_state` partition of this subtask's
    /// current transactional id.
    TxnLogFollowerOf(u32),
}

pub fn broker_target(target: &Option<Target>, nodes: &[i32], parallelism: u32) -> Result<BrokerTarget, String> {
    match target {
        None | Some(Target::Named(NamedTarget::All)) => Ok(BrokerTarget::Nodes(nodes.to_vec())),
        Some(Target::Ids(ids)) => ids
            .iter()
            .map(|&i| {
                if nodes.iter().any(|&n| n as i64 == i) {
                    Ok(i as i32)
                } else {
                    Err(format!("there is no node {i}; nodes are {nodes:?}"))
                }
            })
            .collect::<Result<Vec<_>, _>>()
            .map(BrokerTarget::Nodes),
        Some(Target::Named(NamedTarget::TxnCoordinator)) => Ok(BrokerTarget::CoordinatorOf(0)),
        Some(Target::Coordinator { txn_coordinator: s }) if *s < parallelism => Ok(BrokerTarget::CoordinatorOf(*s)),
        Some(Target::Coordinator { txn_coordinator: s }) => {
            Err(format!("txn-coordinator of subtask {s}: there is no such subtask (parallelism {parallelism})"))
        }
        // Resolved through the cluster (controller / leader_of) when the fault fires.
        Some(Target::Named(NamedTarget::Controller)) => Ok(BrokerTarget::Controller),
        Some(Target::Named(NamedTarget::Leader)) => Ok(BrokerTarget::LeaderOf(0)),
        Some(Target::Named(NamedTarget::GroupCoordinator)) => Ok(BrokerTarget::GroupCoordinator),
        Some(Target::Leader { leader: p }) => Ok(BrokerTarget::LeaderOf(*p)),
        Some(Target::TxnLogFollower { txn_log_follower: s }) if *s < parallelism => {
            Ok(BrokerTarget::TxnLogFollowerOf(*s))
        }
        Some(Target::TxnLogFollower { txn_log_follower: s }) => {
            Err(format!("txn-log-follower of subtask {s}: there is no such subtask (parallelism {parallelism})"))
        }
    }
}

pub fn peer_group(g: Group) -> PeerGroup {
    match g {
        Group::Workers => PeerGroup::Workers,
        Group::Worker(n) => PeerGroup::Worker(n),
        Group::Brokers => PeerGroup::Brokers,
        Group::Broker(n) => PeerGroup::Broker(n),
    }
}

/// The proxy rule a network or protocol fault installs. `transactional_id`
/// is the resolved id (a `{subtask: S}` selector resolved by the caller at
/// the moment of firing); `blackholed` the resolved target nodes of a
/// `net-blackhole`.
///
/// Network faults act on whole Kafka frames between two groups, as Jepsen's
/// partition nemeses cut links between node sets. They do to a frame what
/// the network does to TCP's bytes, which the kernel sends again until they
/// are acknowledged: a partition or blackhole holds frames until it heals
/// (connections hang, as an iptables DROP makes them, and resume at the
/// heal unless a peer gave up first); loss makes a frame late by TCP's
/// retransmission timeout; a reset sends RST; delay holds frames. Losing a
/// request or response for good is a protocol fault (`protocol-drop`).
pub fn proxy_rule(
    spec: &FaultSpec,
    name: &str,
    transactional_id: Option<String>,
    blackholed: &[i32],
) -> Result<Rule, String> {
    let groups = |g: Option<&[Group]>| g.into_iter().flatten().copied().map(peer_group).collect::<Vec<_>>();
    let one_way = spec.kind.direction() == Some(NetDirection::OneWay);
    let mut m = Match {
        from: groups(spec.kind.from()),
        to: groups(spec.kind.to()),
        both_ways: !one_way,
        one_way,
        probability: spec.kind.probability(),
        ..Match::default()
    };
    let delay = || -> Result<Action, String> {
        let delay_ms = spec.kind.delay_ms().ok_or_else(|| format!("{} needs delay_ms", spec.kind.name()))?;
        Ok(Action::Delay { delay_ms, jitter_ms: spec.kind.jitter_ms().unwrap_or(0) })
    };
    let action = match spec.kind.kind() {
        FaultKind::NetPartition => {
            if m.from.is_empty() || m.to.is_empty() {
                return Err("net-partition needs both from and to groups".into());
            }
            Action::Hold
        }
        FaultKind::NetBlackhole => {
            if blackholed.is_empty() {
                return Err("net-blackhole: no target node".into());
            }
            // Everyone to those nodes, and their answers and own connections back.
            m.from = vec![];
            m.to = blackholed.iter().map(|&n| PeerGroup::Broker(n)).collect();
            m.both_ways = true;
            m.one_way = false;
            Action::Hold
        }
        FaultKind::NetReset => Action::Reset,
        FaultKind::NetDelay => delay()?,
        FaultKind::NetBandwidth => match &spec.kind {
            sinkhole_scenario::Fault::NetBandwidth(b) if b.bytes_per_sec > 0 => {
                Action::Throttle { bytes_per_sec: b.bytes_per_sec }
            }
            _ => return Err("net-bandwidth needs bytes_per_sec ≥ 1".into()),
        },
        FaultKind::NetLoss => {
            match spec.kind.probability() {
                Some(p) if p > 0.0 && p <= 1.0 => {}
                other => return Err(format!("net-loss needs a probability in (0, 1], got {other:?}")),
            }
            Action::Lose { rto_ms: TCP_RTO_MIN_MS }
        }
        FaultKind::ProtocolDrop | FaultKind::ProtocolDelay | FaultKind::ProtocolError => {
            m.api_keys = spec
                .kind
                .apis()
                .into_iter()
                .flatten()
                .map(|a| sinkhole_kafka::api::api_key(a).ok_or_else(|| format!("{a:?} is not a Kafka API name")))
                .collect::<Result<_, _>>()?;
            m.frames = Some(match spec.kind.frames().unwrap_or(FrameDirection::Request) {
                FrameDirection::Request => Frames::Request,
                FrameDirection::Response => Frames::Response,
            });
            m.transactional_id = transactional_id;
            m.nth = spec.kind.nth();
            match spec.kind.kind() {
                FaultKind::ProtocolDrop => Action::Drop,
                FaultKind::ProtocolDelay => delay()?,
                _ => {
                    let e = spec.kind.error().ok_or("protocol-error needs error (a Kafka error name or code)")?;
                    Action::Error { code: sinkhole_kafka::errors::error_code(e)? }
                }
            }
        }
        other => return Err(format!("{} is not a network or protocol fault", other.name())),
    };
    Ok(Rule { name: name.to_string(), matches: m, action })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sinkhole_scenario::When;

    use crate::nemesis::triggers::tests::spec;
    use sinkhole_scenario::Fault;

    #[test]
    fn network_faults_map_to_proxy_rules() {
        use sinkhole_scenario::{
            Blackhole, Delay, ErrorName, FrameDirection as Fd, FramesError, Link, Loss, Partition as Cut,
        };
        let at = When::AtMs(0);
        let cut = |to: Vec<Group>, direction| {
            let p = Cut { from: vec![Group::Workers], to, direction };
            FaultSpec::new(Fault::NetPartition(p), at)
        };
        let p = cut(vec![Group::Broker(1), Group::Broker(2)], None);
        let r = proxy_rule(&p, "cut", None, &[]).unwrap();
        assert_eq!(r.name, "cut");
        assert_eq!(r.action, Action::Hold);
        assert_eq!(r.matches.from, vec![PeerGroup::Workers]);
        assert_eq!(r.matches.to, vec![PeerGroup::Broker(1), PeerGroup::Broker(2)]);
        assert!(r.matches.both_ways && !r.matches.one_way);
        let p = cut(vec![Group::Broker(1), Group::Broker(2)], Some(NetDirection::OneWay));
        let r = proxy_rule(&p, "cut", None, &[]).unwrap();
        assert!(!r.matches.both_ways && r.matches.one_way);
        // A partition without a side cannot be written down any more; an empty one is refused here.
        let p = cut(vec![], None);
        assert!(proxy_rule(&p, "cut", None, &[]).unwrap_err().contains("from and to"));
        let no_side: Result<FaultSpec, _> =
            serde_json::from_value(json!({"kind": "net-partition", "when": at, "from": ["workers"]}));
        assert!(no_side.unwrap_err().to_string().contains("needs from and to"));

        let b = FaultSpec::new(Fault::NetBlackhole(Blackhole::default()), at);
        let r = proxy_rule(&b, "bh", None, &[2]).unwrap();
        assert_eq!(r.action, Action::Hold);
        assert!(r.matches.from.is_empty() && r.matches.both_ways);
        assert_eq!(r.matches.to, vec![PeerGroup::Broker(2)]);
        assert!(proxy_rule(&b, "bh", None, &[]).is_err());

        let link = Link { from: vec![Group::Workers], to: vec![Group::Brokers] };
        let r = proxy_rule(&FaultSpec::new(Fault::NetReset(link), at), "rst", None, &[]).unwrap();
        assert_eq!(r.action, Action::Reset);
        // net-delay without delay_ms: refused where it is read, naming delay_ms.
        let no_delay: Result<FaultSpec, _> =
            serde_json::from_value(json!({"kind": "net-delay", "when": at, "from": ["workers"], "to": ["brokers"]}));
        assert!(no_delay.unwrap_err().to_string().contains("delay_ms"));
        let d = Delay { from: vec![Group::Workers], to: vec![Group::Brokers], delay_ms: 200, jitter_ms: Some(50) };
        let d = FaultSpec::new(Fault::NetDelay(d), at);
        assert_eq!(proxy_rule(&d, "d", None, &[]).unwrap().action, Action::Delay { delay_ms: 200, jitter_ms: 50 });
        let loss = |probability| {
            let l = Loss { from: vec![Group::Workers], to: vec![Group::Brokers], probability };
            FaultSpec::new(Fault::NetLoss(l), at)
        };
        assert!(proxy_rule(&loss(0.0), "l", None, &[]).is_err());
        let no_probability: Result<FaultSpec, _> =
            serde_json::from_value(json!({"kind": "net-loss", "when": at, "from": ["workers"], "to": ["brokers"]}));
        assert!(no_probability.unwrap_err().to_string().contains("probability"));
        let slow =
            sinkhole_scenario::Bandwidth { from: vec![Group::Workers], to: vec![Group::Brokers], bytes_per_sec: 4096 };
        let r = proxy_rule(&FaultSpec::new(Fault::NetBandwidth(slow), at), "slow", None, &[]).unwrap();
        assert_eq!(r.action, Action::Throttle { bytes_per_sec: 4096 });
        assert_eq!((r.matches.from, r.matches.to), (vec![PeerGroup::Workers], vec![PeerGroup::Brokers]));
        let r = proxy_rule(&loss(0.25), "l", None, &[]).unwrap();
        assert_eq!((r.action, r.matches.probability), (Action::Lose { rto_ms: 200 }, Some(0.25)));

        // Protocol: API keys by name, frames, error codes, the resolved id, nth.
        let mut e = FramesError {
            from: None,
            to: None,
            probability: None,
            apis: vec!["EndTxn".into(), "INIT_PRODUCER_ID".into()],
            frames: Some(Fd::Response),
            error: ErrorName::Name("COORDINATOR_NOT_AVAILABLE".into()),
            transactional_id: None,
            nth: Some(2),
        };
        let r =
            proxy_rule(&FaultSpec::new(Fault::ProtocolError(e.clone()), at), "err", Some("p-0-3".into()), &[]).unwrap();
        assert_eq!(r.matches.api_keys, vec![26, 22]);
        assert_eq!(r.matches.frames, Some(Frames::Response));
        assert_eq!(r.matches.transactional_id.as_deref(), Some("p-0-3"));
        assert_eq!(r.matches.nth, Some(2));
        assert_eq!(r.action, Action::Error { code: 15 });
        e.apis = vec!["NoSuchApi".into()];
        let bad_api = FaultSpec::new(Fault::ProtocolError(e), at);
        assert!(proxy_rule(&bad_api, "err", None, &[]).unwrap_err().contains("NoSuchApi"));
        let dr = sinkhole_scenario::Frames {
            from: None,
            to: None,
            probability: None,
            apis: vec!["Produce".into()],
            frames: None,
            transactional_id: None,
            nth: None,
        };
        let r = proxy_rule(&FaultSpec::new(Fault::ProtocolDrop(dr), at), "drop", None, &[]).unwrap();
        assert_eq!((r.action, r.matches.api_keys, r.matches.frames), (Action::Drop, vec![0], Some(Frames::Request)));
        assert!(proxy_rule(&spec(FaultKind::BrokerKill, at), "x", None, &[]).is_err());
    }

    #[test]
    fn targets_resolve_or_say_why_not() {
        assert_eq!(worker_targets(&None, 3), Ok(vec![0, 1, 2]));
        assert_eq!(worker_targets(&Some(Target::Ids(vec![2, 0])), 3), Ok(vec![2, 0]));
        assert!(worker_targets(&Some(Target::Ids(vec![3])), 3).unwrap_err().contains("subtask 3"));
        assert!(worker_targets(&Some(Target::Named(NamedTarget::TxnCoordinator)), 3).is_err());

        let nodes = [1, 2, 3];
        assert_eq!(
            broker_target(&Some(Target::Named(NamedTarget::All)), &nodes, 2),
            Ok(BrokerTarget::Nodes(vec![1, 2, 3]))
        );
        assert_eq!(broker_target(&Some(Target::Ids(vec![2])), &nodes, 2), Ok(BrokerTarget::Nodes(vec![2])));
        assert!(broker_target(&Some(Target::Ids(vec![7])), &nodes, 2).unwrap_err().contains("no node 7"));
        assert_eq!(
            broker_target(&Some(Target::Named(NamedTarget::TxnCoordinator)), &nodes, 2),
            Ok(BrokerTarget::CoordinatorOf(0))
        );
        assert_eq!(
            broker_target(&Some(Target::Coordinator { txn_coordinator: 1 }), &nodes, 2),
            Ok(BrokerTarget::CoordinatorOf(1))
        );
        assert!(broker_target(&Some(Target::Coordinator { txn_coordinator: 2 }), &nodes, 2).is_err());
        assert_eq!(
            broker_target(&Some(Target::Named(NamedTarget::GroupCoordinator)), &nodes, 2),
            Ok(BrokerTarget::GroupCoordinator)
        );
        assert!(worker_targets(&Some(Target::Named(NamedTarget::GroupCoordinator)), 3).is_err());
        let follower = |s| Some(Target::TxnLogFollower { txn_log_follower: s });
        assert_eq!(broker_target(&follower(1), &nodes, 2), Ok(BrokerTarget::TxnLogFollowerOf(1)));
        assert!(broker_target(&follower(2), &nodes, 2).unwrap_err().contains("no such subtask"));
        assert!(worker_targets(&follower(0), 3).unwrap_err().contains("names a broker"));
    }
}
