//! When faults fire: the jobs' notices (event triggers) and the time since
//! they started (time triggers), for each member's own faults and for the
//! cluster's shared ones (see [`super::members`]).
use std::time::{Duration, Instant};

use super::members::Lead;
use super::{triggers, Deferral, Due, Heal, Nemesis, Slot};
use crate::subject::{JobEvent, Notice, Subject};
use sinkhole_cluster::Cluster;
use sinkhole_history::fault::{ModeView, Trigger};
use sinkhole_scenario::{Family, FaultKind, FaultSpec, When};

impl<S: Subject, B: Cluster + ?Sized> Nemesis<'_, S, B> {
    /// Member `m`'s notice: its state, then the faults its event sets off.
    pub(super) async fn on_notice(&mut self, m: usize, n: Notice) -> anyhow::Result<()> {
        let st = &mut self.states[m];
        match &n.event {
            JobEvent::Started { attempt, .. } => {
                st.job_started.get_or_insert(n.at);
                st.attempt = *attempt;
                st.up = false;
            }
            JobEvent::Up { attempt } => {
                st.attempt = *attempt;
                st.up = st.killed.is_none_or(|k| *attempt > k);
            }
            JobEvent::Down { .. } => st.up = false,
            JobEvent::CheckpointPersisted { id } => st.latest_persisted = Some(*id),
            JobEvent::Ended => {
                st.ended = true;
                return Ok(());
            }
            _ => {}
        }
        // Its own faults, and the cluster's when this member leads them.
        let leads = match self.lead {
            Lead::First => true,
            Lead::Member(l) => l == m,
        };
        let mine: Vec<usize> = (0..self.slots.len())
            .filter(|&f| match self.slots[f].member {
                Some(x) => x == m,
                None => leads,
            })
            .collect();
        let specs: Vec<FaultSpec> = mine.iter().map(|&f| self.slots[f].spec.clone()).collect();
        let fired: Vec<bool> = mine.iter().map(|&f| self.slots[f].fired()).collect();
        for k in triggers::due_on_event(&specs, &fired, &n.event) {
            let f = mine[k];
            self.slots[f].fired_by = Some(m);
            let mut trigger = triggers::event_trigger(&n.event);
            if let Some(after) = self.slots[f].spec.after_ms {
                // Due later: the subject is not held for it (the window is the scenario's).
                trigger.after_ms = Some(after);
                let at = n.at + Duration::from_millis(after);
                self.slots[f].delayed = Some((trigger, at, n.event.checkpoint()));
                continue;
            }
            let due = Due { trigger, at: n.at, checkpoint: n.event.checkpoint(), hold: n.hold.clone() };
            self.fire(f, due).await?;
        }
        // Whatever the faults did not keep, the subject gets back now.
        drop(n.hold);
        Ok(())
    }

    /// When fault `f`'s clock started: its member's first start; for a
    /// cluster fault, the lead's, or without a lead the first of any member.
    fn clock_of(&self, f: usize) -> Option<Instant> {
        match self.slots[f].member {
            Some(m) => self.states[m].job_started,
            None => match self.lead {
                Lead::Member(l) => self.states[l].job_started,
                Lead::First => self.states.iter().filter_map(|s| s.job_started).min(),
            },
        }
    }

    /// What fault `f`, due now, has to wait for, if anything.
    ///
    /// A kill or pause of workers that falls due while its job has no worker,
    /// or not all ready yet, waits until the workers are up: signalling nobody
    /// would prove nothing. A network or protocol fault that falls due while the
    /// only broker is down (a broker kill, stop, restart or rolling restart of
    /// this run, not yet back) waits until it is back: every frame it could act on
    /// goes to that broker. Measured in the library's random-mix (seed 23002): a
    /// single broker killed for 1.3 s took 11.6 s to be ready again on a loaded
    /// machine, and the two network faults that fell due meanwhile met no frame,
    /// which made both modes inconclusive (and a stop, in an exploration run on
    /// this build: a `net-reset` due 2.3 s into a 5.1 s `broker-stop` met no
    /// connection). Either way the fault fires once it
    /// can act, with the time it was due recorded (`deferred_from_ms`).
    fn waits(&self, f: usize) -> Option<Deferral> {
        let s = &self.slots[f];
        let kind = s.spec.kind.kind();
        if matches!(kind, FaultKind::KillWorkers | FaultKind::PauseWorkers)
            && s.member.is_some_and(|m| !self.states[m].up)
        {
            return Some(Deferral::Restore);
        }
        let on_frames = matches!(kind.family(), Family::Network | Family::Protocol);
        (on_frames && self.node_ids.len() == 1 && self.broker_down()).then_some(Deferral::Broker)
    }

    /// Whether a broker fault that stops a broker is under way: fired and not yet
    /// ended (for a kill, until its restart is ready).
    fn broker_down(&self) -> bool {
        self.slots.iter().enumerate().any(|(g, s)| {
            matches!(
                s.spec.kind.kind(),
                FaultKind::BrokerKill | FaultKind::BrokerStop | FaultKind::BrokerRestart | FaultKind::RollingRestart
            ) && (self.op_fault == Some(g) || s.firings.last().is_some_and(|x| x.end.is_none()))
        })
    }

    pub(super) async fn on_tick(&mut self) -> anyhow::Result<()> {
        let now = Instant::now();
        // Time triggers due now, in time order (ties in schedule order).
        let mut at: Vec<(u64, usize)> = (0..self.slots.len())
            .filter_map(|f| match self.slots[f].spec.when {
                When::AtMs(t) if !self.slots[f].fired() => Some((t, f)),
                _ => None,
            })
            .filter(|&(t, f)| {
                self.clock_of(f).is_some_and(|s| now.saturating_duration_since(s).as_millis() as u64 >= t)
            })
            .collect();
        at.sort();
        for (t, f) in at {
            if let Some(d) = self.waits(f) {
                self.deferred[f] = Some(d);
                continue;
            }
            let started = self.clock_of(f).expect("filtered on it");
            let elapsed = now.saturating_duration_since(started).as_millis() as u64;
            let mut trigger = Trigger { at_ms: Some(elapsed), ..Trigger::default() };
            if self.deferred[f].is_some() && elapsed > t + 250 {
                // Deferred until it could act: allowed, and said.
                trigger.deferred_from_ms = Some(t);
            }
            let due_at = started + Duration::from_millis(t);
            self.fire(f, Due { trigger, at: due_at, checkpoint: None, hold: None }).await?;
        }
        // Event triggers' `after_ms`, in time order.
        let mut later: Vec<(Instant, usize)> = (0..self.slots.len())
            .filter_map(|f| self.slots[f].delayed.as_ref().filter(|d| d.1 <= now).map(|d| (d.1, f)))
            .collect();
        later.sort();
        for (_, f) in later {
            if let Some((trigger, at, checkpoint)) = self.slots[f].delayed.take() {
                self.fire(f, Due { trigger, at, checkpoint, hold: None }).await?;
            }
        }
        // Repeated faults: firing k is due at k × period, once the one before is healed.
        for f in 0..self.slots.len() {
            let When::EveryMs(period) = self.slots[f].spec.when else { continue };
            let Some(started) = self.clock_of(f).filter(|_| period > 0) else { continue };
            let elapsed = now.saturating_duration_since(started).as_millis() as u64;
            let slot: &Slot = &self.slots[f];
            let count = slot.count;
            let due_ms = triggers::every_due_ms(period, count);
            let more = slot.spec.times.is_none_or(|t| count < t);
            if !more || due_ms > elapsed || self.busy(f) {
                continue;
            }
            if let Some(d) = self.waits(f) {
                self.deferred[f] = Some(d);
                continue;
            }
            let mut trigger =
                Trigger { every_ms: Some(period), firing: Some(count + 1), at_ms: Some(elapsed), ..Trigger::default() };
            if self.deferred[f].take().is_some() && elapsed > due_ms + 250 {
                trigger.deferred_from_ms = Some(due_ms);
            }
            let due_at = started + Duration::from_millis(due_ms);
            self.fire(f, Due { trigger, at: due_at, checkpoint: None, hold: None }).await?;
        }
        let due: Vec<Heal> = {
            let (due, keep) = std::mem::take(&mut self.heals).into_iter().partition(|h| h.at.is_some_and(|t| t <= now));
            self.heals = keep;
            due
        };
        for h in due {
            self.heal(h).await?;
        }
        Ok(())
    }

    /// Fires fault `f`.
    pub(super) async fn fire(&mut self, f: usize, mut due: Due) -> anyhow::Result<()> {
        self.slots[f].count += 1;
        let kind = self.spec(f).kind.kind();
        if self.slots[f].member.is_none() && self.members.len() > 1 {
            // A cluster fault hits every mode at this moment: which one set
            // it off, and where each of them was.
            let lead = self.who(f);
            due.trigger.mode = Some(self.members[lead].cfg.mode.name().to_string());
            due.trigger.modes = Some(
                self.members
                    .iter()
                    .zip(&self.states)
                    .map(|(m, st)| ModeView {
                        mode: m.cfg.mode.name().to_string(),
                        attempt: st.attempt,
                        up: st.up,
                        latest_persisted: st.latest_persisted,
                    })
                    .collect(),
            );
        }
        // Cluster actions note their lateness when they leave the queue.
        if kind.family() != sinkhole_scenario::Family::Brokers {
            Self::note_lateness(&mut due.trigger, due.at, None);
        }
        match kind.family() {
            sinkhole_scenario::Family::Workers
                if matches!(kind, FaultKind::KillReaders | FaultKind::PauseReaders | FaultKind::RestartReaders) =>
            {
                self.fire_readers(f, due).await
            }
            sinkhole_scenario::Family::Workers => self.fire_workers(f, due).await,
            sinkhole_scenario::Family::Brokers => self.fire_broker(f, due).await,
            sinkhole_scenario::Family::Coordinator => self.fire_coordinator(f, due).await,
            sinkhole_scenario::Family::Network | sinkhole_scenario::Family::Protocol => self.fire_network(f, due).await,
        }
    }
}
