//! The job loop's looks at the coordinators for transactions earlier attempts left open
//! ([`lingering`]): at a resubmission (a `superseded` premise's evidence), once
//! a restored attempt has completed its first checkpoints (on a task of its own), and the watch
//! of what lingers until it ends.
use std::time::{Duration, Instant};

use anyhow::Context;
use sinkhole_model::Source;

use super::{unix_ms, Loop, PendingLook};
use crate::subject::flink::lingering;

impl Loop {
    /// At a resubmission from checkpoint `n`: the transactions superseding `n`'s committables
    /// (a `superseded` premise's evidence).
    pub(super) async fn look_superseded(&mut self, n: u64) -> anyhow::Result<()> {
        use sinkhole_history::fault::Transactions;
        use sinkhole_history::observation::Look;
        let at_ms = self.start.elapsed().as_millis() as u64;
        let pre = self.evidence.precommitted.get(&n).cloned().unwrap_or_default();
        let committables: Vec<String> =
            pre.iter().map(|(t, (p, e))| format!("{t} at producer {p} epoch {e}")).collect();
        let (transactions, note) = match lingering::look(&self.cfg.bootstrap, &self.cfg.tid_prefix, unix_ms()).await {
            Err(e) => (Transactions::Error { error: e.clone() }, format!("the look failed: {e}")),
            Ok(look) => {
                let sup: Vec<_> = look
                    .lingering
                    .iter()
                    .filter_map(|f| lingering::superseded(f, &pre).map(|_| f.view.clone()))
                    .collect();
                let each: Vec<String> = sup
                    .iter()
                    .map(|v| {
                        format!(
                            "{} Ongoing at producer {} epoch {}",
                            v.transactional_id, v.producer_id, v.producer_epoch
                        )
                    })
                    .collect();
                let note = format!(
                        "resubmitting from checkpoint {n}: {} Ongoing under {}-*; checkpoint {n}'s committables: {}; superseding them: {}",
                        look.ongoing,
                        self.cfg.tid_prefix,
                        if committables.is_empty() { "none seen".to_string() } else { committables.join(", ") },
                        if each.is_empty() { "none".to_string() } else { each.join(", ") }
                    );
                (Transactions::Seen(sup), note)
            }
        };
        self.observed(Look::Superseded { restored_from: n }, at_ms, transactions, note)
    }

    /// A look's finding, into the history as the checker's (the rig's own view, not the sink's).
    fn observed(
        &mut self,
        look: sinkhole_history::observation::Look,
        at_ms: u64,
        transactions: sinkhole_history::fault::Transactions,
        note: String,
    ) -> anyhow::Result<()> {
        self.progress(&note);
        let o =
            sinkhole_history::observation::Observation { look, at_ms, looked_at: None, transactions, note: Some(note) };
        self.history.record(Source::Checker, o.to_event()).context("writing the history")?;
        Ok(())
    }

    /// A finished lingering look, written down ([`lingering`]).
    pub(super) async fn lingering_found(&mut self) -> anyhow::Result<()> {
        let Some((l, at_ms, task)) = self.looking.take_if(|(_, _, t)| t.is_finished()) else { return Ok(()) };
        let found = task.await.unwrap_or_else(|e| Err(format!("the look's task failed: {e}")));
        self.record_lingering(l, at_ms, found)
    }

    /// A restored attempt's look at what earlier attempts left open ([`lingering`]).
    pub(super) fn record_lingering(
        &mut self,
        l: PendingLook,
        at_ms: u64,
        found: Result<lingering::Look, String>,
    ) -> anyhow::Result<()> {
        use sinkhole_history::fault::Transactions;
        use sinkhole_history::observation::Look;
        let empty = lingering::Precommitted::new();
        let pre = l.restored_from.and_then(|n| self.evidence.precommitted.get(&n)).unwrap_or(&empty);
        let from = l.restored_from.map_or("no checkpoint".to_string(), |n| format!("checkpoint {n}"));
        let (transactions, note) = match found {
            Err(e) => (Transactions::Error { error: e.clone() }, format!("the look failed: {e}")),
            Ok(look) => {
                let each: Vec<String> = look
                    .lingering
                    .iter()
                    .map(|f| {
                        let age = unix_ms().saturating_sub(f.start_time_ms);
                        let why = match lingering::superseded(f, pre) {
                            Some((p, e)) => format!(
                                "superseded: {from} holds it precommitted at producer {p} epoch {e}, so the restore's LISTING abort skipped it"
                            ),
                            None => format!("not among {from}'s committables"),
                        };
                        format!(
                            "{} (producer {} epoch {}) open for {age} ms, {why}",
                            f.view.transactional_id, f.view.producer_id, f.view.producer_epoch
                        )
                    })
                    .collect();
                let note = format!(
                    "lingering look after attempt {} (restored from {from}) completed {} checkpoints: {} Ongoing under {}-*, {} begun before the attempt was submitted{}",
                    l.attempt,
                    lingering::AFTER_CHECKPOINTS,
                    look.ongoing,
                    self.cfg.tid_prefix,
                    look.lingering.len(),
                    if each.is_empty() { String::new() } else { format!(": {}", each.join("; ")) }
                );
                let views = look.lingering.iter().map(|f| f.view.clone()).collect();
                self.watching.extend(look.lingering.into_iter().map(|f| (f, at_ms)));
                (Transactions::Seen(views), note)
            }
        };
        let pooled = self.cfg.flink.naming == sinkhole_scenario::Naming::Pooling;
        self.observed(
            Look::Lingering { attempt: l.attempt, restored_from: l.restored_from, pooled },
            at_ms,
            transactions,
            note,
        )
    }

    /// Each lingering transaction, until it ends: how long it stayed open, and how it ended.
    pub(super) async fn watch_lingering(&mut self) -> anyhow::Result<()> {
        if self.watching.is_empty() {
            return Ok(());
        }
        let Some(task) = self.asking.take_if(|t| t.is_finished()) else {
            if self.asking.is_none() && self.last_watch.elapsed() >= Duration::from_secs(1) {
                self.last_watch = Instant::now();
                let ids: Vec<String> = self.watching.iter().map(|(f, _)| f.view.transactional_id.clone()).collect();
                let bootstrap = self.cfg.bootstrap.clone();
                self.asking = Some(tokio::spawn(async move { lingering::describe(&bootstrap, &ids).await }));
            }
            return Ok(());
        };
        let Ok(Ok(now)) = task.await else { return Ok(()) };
        let timeout = self.cfg.job.transaction_timeout_ms;
        let mut still = vec![];
        for (f, found_at) in std::mem::take(&mut self.watching) {
            match now.iter().find(|d| d.transactional_id == f.view.transactional_id) {
                Some(d) if lingering::ended(&f, d) => {
                    let open = unix_ms().saturating_sub(f.start_time_ms);
                    let by = if d.state.contains("Abort") { "aborted" } else { "ended" };
                    let text = format!(
                        "lingering {} (producer {} epoch {}) {by} after about {open} ms open (it was found at {found_at} ms; transaction.timeout.ms {timeout}): now {} at producer {} epoch {}",
                        f.view.transactional_id, f.view.producer_id, f.view.producer_epoch, d.state, d.producer_id, d.producer_epoch
                    );
                    self.progress(&text);
                    self.note(text)?;
                }
                _ => still.push((f, found_at)),
            }
        }
        self.watching = still;
        Ok(())
    }

    /// At the end: a look still under way is waited for (its own timeout bounds it), the
    /// watch's question dropped.
    pub(super) async fn last_looks(&mut self) -> anyhow::Result<()> {
        if let Some((l, at_ms, task)) = self.looking.take() {
            let found = task.await.unwrap_or_else(|e| Err(format!("the look's task failed: {e}")));
            self.record_lingering(l, at_ms, found)?;
        }
        if let Some(t) = self.asking.take() {
            t.abort();
        }
        Ok(())
    }

    /// What the watch had not seen end by the end of the job.
    pub(super) fn still_lingering(&mut self) -> anyhow::Result<()> {
        for (f, found_at) in std::mem::take(&mut self.watching) {
            let open = unix_ms().saturating_sub(f.start_time_ms);
            self.note(format!(
                "lingering {} (producer {} epoch {}, found at {found_at} ms) still Ongoing when the job ended, {open} ms after it began",
                f.view.transactional_id, f.view.producer_id, f.view.producer_epoch
            ))?;
        }
        Ok(())
    }
}
