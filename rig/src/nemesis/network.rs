//! Network and protocol faults: rules in the rig's Kafka-aware proxy (or,
//! for `net-blackhole` on containers, the engine taking nodes off the run's
//! network), in place until they are healed.

use super::brokers::{Aim, ClusterJob};
use super::{Due, Heal, HealAction, Nemesis};
use crate::subject::Subject;
use sinkhole_cluster::Cluster;
use sinkhole_history::fault::{End, Isolated, IsolationStart, Role, RuleEnd, RuleStart, Start, Trigger};
use sinkhole_scenario::{FaultKind, TidSelector};

impl<S: Subject, B: Cluster + ?Sized> Nemesis<'_, S, B> {
    pub(super) async fn fire_network(&mut self, f: usize, due: Due) -> anyhow::Result<()> {
        let spec = self.spec(f).clone();
        let blackhole = spec.kind == FaultKind::NetBlackhole;
        let isolate = blackhole && self.isolates;
        if self.proxy.is_none() && !isolate {
            return self.fault_failed(f, due.trigger, "the cluster has no proxy; set cluster.proxy".into());
        }
        // Resolved now. A trigger that names a checkpoint (its commit,
        // persist, notification, barrier, or the transaction opened for it)
        // means that checkpoint's transaction — the one being committed, not
        // the one open beside it; other triggers mean the subtask's open
        // transaction.
        let tid = match &spec.kind.transactional_id().cloned() {
            None => None,
            Some(TidSelector::Literal(t)) => Some(t.clone()),
            Some(TidSelector::Subtask { subtask }) if *subtask < self.subject(f).workers() => {
                let subject = &self.members[self.who(f)].subject;
                Some(match due.trigger.checkpoint() {
                    Some(n) => subject.transactional_id(*subtask, n),
                    None => subject.open_transaction(*subtask).await,
                })
            }
            Some(TidSelector::Subtask { subtask }) => {
                let e = format!("transactional_id of subtask {subtask}: no such subtask");
                return self.fault_failed(f, due.trigger, e);
            }
        };
        if !blackhole {
            return self.install_rule(f, due.trigger, tid, &[], None);
        }
        // The id a role names is the one open now.
        let aim = match self.broker_aim(f, &spec.kind.target().cloned(), None).await {
            Ok(a) => a,
            Err(e) => return self.fault_failed(f, due.trigger, e),
        };
        match aim {
            Aim::Nodes(nodes) if !isolate => self.install_rule(f, due.trigger, tid, &nodes, None),
            // A role to look up, or the engine to ask: the cluster is needed.
            aim => {
                self.slots[f].queued = true;
                self.queue.push_back(ClusterJob::Blackhole {
                    fault: f,
                    trigger: due.trigger,
                    due: due.at,
                    aim,
                    isolate,
                    hold: due.hold,
                });
                self.pump()
            }
        }
    }

    /// Installs the fault's proxy rule; confirmed when healed, only if it
    /// acted on something.
    pub(super) fn install_rule(
        &mut self,
        f: usize,
        trigger: Trigger,
        tid: Option<String>,
        blackholed: &[i32],
        role: Option<Role>,
    ) -> anyhow::Result<()> {
        let Some(proxy) = self.proxy.clone() else {
            return self.fault_failed(f, trigger, "the cluster has no proxy; set cluster.proxy".into());
        };
        let spec = self.spec(f).clone();
        let name = self.slots[f].name.clone();
        let rule = match super::targets::proxy_rule(&spec, &name, tid, blackholed) {
            Ok(r) => r,
            Err(e) => return self.fault_failed(f, trigger, e),
        };
        let id = proxy.add(rule.clone());
        let start = RuleStart { trigger, rule, rule_id: id.0, role, duration_ms: spec.duration_ms };
        self.fault_started(f, false, Start::Rule(start))?;
        let at = spec.duration_ms.and_then(sinkhole_base::utc::in_ms);
        self.heals.push(Heal { at, fault: f, action: HealAction::RemoveRule(id) });
        Ok(())
    }

    /// Containers: the engine took these nodes off the run's network.
    pub(super) fn isolated(
        &mut self,
        f: usize,
        trigger: Trigger,
        role: Option<Role>,
        nodes: Vec<Isolated>,
    ) -> anyhow::Result<()> {
        let all = !nodes.is_empty()
            && nodes
                .iter()
                .all(|n| matches!(n, Isolated::Done { confirmed: Some(c), .. } if c.as_bool() == Some(true)));
        let cut: Vec<i32> = nodes
            .iter()
            .filter_map(|n| match n {
                Isolated::Done { node, .. } => Some(*node),
                Isolated::Failed { .. } => None,
            })
            .collect();
        let duration_ms = self.spec(f).duration_ms;
        let start = IsolationStart { trigger, how: "engine network disconnect".into(), nodes, role, duration_ms };
        self.fault_started(f, all, Start::Isolation(start))?;
        let at = duration_ms.and_then(sinkhole_base::utc::in_ms);
        self.heals.push(Heal { at, fault: f, action: HealAction::Rejoin(cut) });
        Ok(())
    }

    /// Takes the rule out: the network heals, held frames are released.
    pub(super) fn remove_rule(&mut self, f: usize, id: sinkhole_faults::proxy::RuleId) -> anyhow::Result<()> {
        let Some(proxy) = self.proxy.clone() else { return Ok(()) };
        let rule = proxy.rule(id);
        let stats = proxy.remove(id);
        let acted = stats.acted();
        let why_unconfirmed = (!acted).then(|| match rule {
            Some(r) => r.why_no_effect(&stats),
            None => "the rule matched no frame it could act on".to_string(),
        });
        let end = RuleEnd { rule_id: id.0, stats, acted, why_unconfirmed };
        self.fault_ended_with(f, End::Rule(end), Some(acted))
    }
}
