//! One group of modes run at the same time on the cluster (every mode of
//! the scenario side by side, or one mode alone when they run one after
//! another): their topics, their jobs under one nemesis, then each mode's
//! drain, check and verdict.
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{anyhow, Context};
use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_model::SinkMode;

use super::{ms, progress, progress_redirected, Plan};
use crate::results::summary::{self, summarize, ModeSummary, Timings};
use crate::runner::{self, ModeRun};
use sinkhole_base::rundir::ModeDir;
use sinkhole_checker::latency;
use sinkhole_checker::premise::PremiseRecord;
use sinkhole_checker::verdict::{self, VerdictInput};
use sinkhole_checker::{CheckSpec, Expected};
use sinkhole_cluster::Cluster;
use sinkhole_history::{JobOutcome, ModeOutcome};
use sinkhole_scenario::Scenario;

/// One mode of a group, ready to run: its directory, its topic, its live tail.
struct Prepared {
    mode: SinkMode,
    dir: ModeDir,
    topic: String,
    tail: Option<latency::tail::Tail>,
    /// The scenario's live readers (`readers:`).
    readers: Option<super::readers::Readers>,
    /// A share-group source's state sampler (records archived while running).
    share_watch: Option<super::share::Watch>,
}

/// Creates the mode's topic and starts its live read_committed tail (for
/// `visibility`) before any of its workers.
async fn prepare(plan: &Plan, cluster: &dyn Cluster, mode: SinkMode) -> anyhow::Result<Prepared> {
    let s = &plan.scenario;
    let dir = plan.mode_dir(mode);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.path().display()))?;
    let topic = plan.topic(mode);
    let mut client = Client::connect(&cluster.bootstrap_list(), ClientConfig::default()).await?;
    let configs: Vec<(String, String)> = s
        .topic
        .min_insync_replicas
        .map(|m| vec![("min.insync.replicas".to_string(), m.to_string())])
        .unwrap_or_default();
    client
        .create_topic(&topic, s.topic.partitions as i32, s.topic.replication_factor as i16, &configs)
        .await
        .with_context(|| format!("creating topic {topic}"))?;
    drop(client);
    if let Some(line) = super::share::prepare(&cluster.bootstrap_list(), s, &plan.run_id, &topic).await? {
        progress(&format!("{mode}: {line}"));
    }
    progress(&format!("{mode}: topic {topic} ready; running the job"));
    // Without the tail the run goes on, unmeasured.
    let tail = match latency::tail::Tail::start(&cluster.bootstrap(), &topic, s.topic.partitions) {
        Ok(t) => Some(t),
        Err(e) => {
            progress(&format!("{mode}: the visibility tail did not start ({e}); visibility is not measured"));
            None
        }
    };
    let readers = match &s.readers {
        Some(spec) => {
            let group = format!("sinkhole-readers-{}-{}", plan.short_id, mode.slug());
            let path = dir.reads();
            let target = super::readers::Target {
                bootstrap: &cluster.bootstrap(),
                topic: &topic,
                partitions: s.topic.partitions,
                group: &group,
                path: &path,
            };
            let r = super::readers::Readers::start(spec, &target)
                .with_context(|| format!("{mode}: starting the readers"))?;
            progress(&format!(
                "{mode}: {} live read_committed reader(s) ({}) polling {topic}",
                spec.count,
                spec.mode.name()
            ));
            Some(r)
        }
        None => None,
    };
    let share_watch = super::share::Watch::start(cluster.bootstrap_list(), s, &topic);
    Ok(Prepared { mode, dir, topic, tail, readers, share_watch })
}

/// The row of a mode the rig itself failed to run: no verdict on the sink
/// (outcome `error`, exit 3); the other modes go on.
fn rig_failed(s: &Scenario, mode: SinkMode, e: &anyhow::Error) -> ModeSummary {
    let row = summary::rig_failed(mode, verdict::expectation_text(s.expect.get(&mode)), &format!("{e:#}"));
    progress(&format!("{mode}: {}", row.reason));
    row
}

/// Runs these modes at the same time on `cluster` (one mode: alone), then
/// judges each; one row per mode, in `group`'s order.
///
/// `held`: the premises of the modes judged before, as held (a mutant's are
/// read beside its base's: [`sinkhole_checker::premise::with_base`]); this group's are added.
pub(super) async fn run_group(
    plan: &Plan,
    cluster: &mut dyn Cluster,
    group: &[SinkMode],
    times: &mut Timings,
    held: &mut BTreeMap<SinkMode, Vec<PremiseRecord>>,
) -> Vec<ModeSummary> {
    let s = &plan.scenario;
    let mut rows: Vec<Option<ModeSummary>> = group.iter().map(|_| None).collect();
    let t = Instant::now();
    let mut ready = vec![];
    for (i, &mode) in group.iter().enumerate() {
        match prepare(plan, &*cluster, mode).await {
            Ok(p) => ready.push((i, p)),
            Err(e) => rows[i] = Some(rig_failed(s, mode, &e)),
        }
    }
    times.topics_ms += ms(t.elapsed());

    // /proc/self/exe names this very binary even if a rebuild replaced the
    // file on disk during a long run; current_exe() would then point at
    // "... (deleted)".
    let bin = if std::path::Path::new("/proc/self/exe").exists() {
        PathBuf::from("/proc/self/exe")
    } else {
        std::env::current_exe().unwrap_or_else(|_| PathBuf::from("sinkhole"))
    };
    let runs: Vec<ModeRun<'_>> = ready
        .iter()
        .map(|(_, p)| ModeRun {
            run_id: plan.run_id.clone(),
            mode: p.mode,
            scenario: s,
            dir: p.dir.clone(),
            topic: p.topic.clone(),
            tid_prefix: plan.tid_prefix(p.mode),
            sinkhole_bin: bin.clone(),
            seed: plan.seed,
            // Progress goes to stderr; --json keeps stdout for the summary.
            progress: !progress_redirected(),
            timing: plan.timing,
            readers: p.readers.as_ref().map(super::readers::Readers::control),
        })
        .collect();
    let lead = s
        .lead
        .and_then(|l| ready.iter().position(|(_, p)| p.mode == l))
        .map(runner::Lead::Member)
        .unwrap_or(runner::Lead::First);
    let t = Instant::now();
    let outcomes = runner::run_modes(runs, s.faults.clone(), lead, cluster).await;
    times.jobs_ms += ms(t.elapsed());

    // The premises, from what the run observed (the observer's looks are in
    // each history): the faithful modes' first, then the mutants' beside their base's.
    let mut premises: Vec<Vec<PremiseRecord>> = ready
        .iter()
        .zip(&outcomes)
        .map(|((_, p), o)| match (o, s.premise.get(&p.mode)) {
            (Ok(o), Some(pr)) => {
                let events = sinkhole_history::read(&o.history).map(|h| h.events).unwrap_or_default();
                sinkhole_checker::premise::evaluate(pr, &o.faults, &events)
            }
            _ => vec![],
        })
        .collect();
    for ((_, p), pr) in ready.iter().zip(&premises) {
        if p.mode.mutant().is_none() {
            held.insert(p.mode, pr.clone());
        }
    }
    for ((_, p), pr) in ready.iter().zip(premises.iter_mut()) {
        if let (Some(_), Some(base)) = (p.mode.mutant(), held.get(&p.mode.base())) {
            *pr = sinkhole_checker::premise::with_base(std::mem::take(pr), p.mode.base().name(), base);
        }
        if p.mode.mutant().is_some() {
            held.insert(p.mode, pr.clone());
        }
    }

    // Every mode's drain and check at once: a drain that waits for the
    // broker to abort a transaction holds up no other mode.
    let t = Instant::now();
    let mut judging = tokio::task::JoinSet::new();
    for (((i, p), outcome), pr) in ready.into_iter().zip(outcomes).zip(premises) {
        let mode = p.mode;
        match outcome.with_context(|| format!("running mode {mode}")) {
            Ok(o) => {
                let (plan, bootstrap) = (plan.clone(), cluster.bootstrap());
                judging.spawn(async move { (i, mode, judge(&plan, bootstrap, p, o, pr).await) });
            }
            Err(e) => {
                if let Some(t) = p.tail {
                    let _ = t.stop().await;
                }
                if let Some(r) = p.readers {
                    let _ = r.stop().await;
                }
                rows[i] = Some(rig_failed(s, mode, &e));
            }
        }
    }
    while let Some(r) = judging.join_next().await {
        match r {
            Ok((i, mode, Ok((row, first)))) => {
                rows[i] = Some(row);
                times.first_transaction_ms.push((mode, first));
            }
            Ok((i, mode, Err(e))) => rows[i] = Some(rig_failed(s, mode, &e)),
            Err(e) => progress(&format!("a mode's check panicked: {e}")),
        }
    }
    times.check_ms += ms(t.elapsed());
    times.first_transaction_ms.sort_by_key(|(m, _)| group.iter().position(|g| g == m));
    rows.into_iter()
        .zip(group)
        .map(|(r, &mode)| r.unwrap_or_else(|| rig_failed(s, mode, &anyhow!("the mode's check did not finish"))))
        .collect()
}

/// Drains and checks one mode's topic, builds its verdict and latency, and
/// writes verdict.json; with the job's start-to-first-transaction time.
async fn judge(
    plan: &Plan,
    bootstrap: String,
    p: Prepared,
    outcome: ModeOutcome,
    premises: Vec<PremiseRecord>,
) -> anyhow::Result<(ModeSummary, Option<u64>)> {
    let s = &plan.scenario;
    let Prepared { mode, dir, topic, tail, readers, share_watch } = p;
    let archive_seen = match share_watch {
        Some(w) => Some(w.stop().await),
        None => None,
    };
    let seen = match tail {
        Some(t) => t.stop().await.map_err(|e| progress(&format!("{mode}: visibility tail: {e:#}"))).ok(),
        None => None,
    };
    if let Some(r) = readers {
        r.stop().await.with_context(|| format!("{mode}: stopping the readers"))?;
    }
    // A mode the broker cannot run wrote nothing worth checking. The history read for the
    // output's check is kept for the readers' check.
    let mut history_events = Vec::new();
    let mut report = if matches!(outcome.job, JobOutcome::Unsupported { .. }) {
        None
    } else {
        progress(&format!("{mode}: job {:?}; draining {topic}", outcome.job));
        let spec = CheckSpec {
            bootstrap: bootstrap.clone(),
            topic: topic.clone(),
            expected: Expected {
                run_id: plan.run_id.clone(),
                parallelism: s.job.parallelism,
                records_per_subtask: s.job.records_per_subtask,
            },
            history: Some(outcome.history.clone()),
            dir: dir.clone(),
            timeout: plan.timing.drain_timeout(),
            tid_prefix: mode.transactional().then(|| plan.tid_prefix(mode)),
        };
        let (report, events) = sinkhole_checker::check_mode_keeping_history(&spec)
            .await
            .with_context(|| format!("checking mode {mode}"))?;
        history_events = events;
        Some(report)
    };
    let share_view = match report.as_mut() {
        Some(r) => super::share::view(&bootstrap_list(&bootstrap), s, &topic, &outcome.history, r, archive_seen).await,
        None => None,
    };
    // A share group's premises, from its view (the others were judged from what the run observed).
    let mut premises = premises;
    if let Some(p) = s.premise.get(&mode) {
        premises.extend(sinkhole_checker::premise::share::evaluate(p, share_view.as_ref(), super::share::group_of(s)));
    }
    // What the live readers saw, judged against the drain; its counts judged with the output's.
    let reads = match report.as_mut() {
        Some(r) => {
            let reads = sinkhole_checker::check::check_reads_with(&dir, &history_events)
                .with_context(|| format!("{mode}: checking what the readers saw"))?;
            if let Some(x) = &reads {
                x.add_to(&mut r.counts);
            }
            reads
        }
        None => None,
    };
    let mut v = verdict::build(VerdictInput {
        scenario: &s.name,
        run_id: &plan.run_id,
        mode,
        expectation: s.expect.get(&mode),
        premises,
        outcome: &outcome,
        report: report.as_ref(),
        kafka: &s.cluster.kafka,
        seed: plan.seed,
        drained: dir.drained(),
    });
    v.share = share_view;
    v.reads = reads;
    // Unchecked (unsupported): still say how many records the job was for.
    v.counts.expected = u64::from(s.job.parallelism) * s.job.records_per_subtask;
    match latency::finish_mode(mode, &dir, &outcome.history, seen.as_ref()) {
        Ok(l) => v.latency = l,
        Err(e) => progress(&format!("{mode}: latency not recorded: {e}")),
    }
    let path = verdict::write(&dir, &v).context("writing verdict.json")?;
    progress(&format!("{mode}: {} — {}", v.words(), v.reason));
    let first =
        sinkhole_history::read(&outcome.history).ok().and_then(|h| first_transaction_ms(&h.events, s.job.parallelism));
    Ok((summarize(&v, Some(path)), first))
}

fn bootstrap_list(b: &str) -> Vec<String> {
    b.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
}

/// From the job's first start to the moment every subtask had opened its
/// first transaction (the workers' start-up: process, connection,
/// InitProducerId); None if some subtask never opened one.
pub fn first_transaction_ms(events: &[sinkhole_model::Event], parallelism: u32) -> Option<u64> {
    use sinkhole_model::{EventKind, Source};
    let start = events.iter().find(|e| matches!(e.kind, EventKind::JobStarted { .. }))?.mono_us;
    let mut first = vec![None; parallelism as usize];
    for e in events {
        if let (EventKind::TxnOpened { .. }, Source::Worker { subtask }) = (&e.kind, &e.source) {
            if let Some(slot) = first.get_mut(*subtask as usize) {
                slot.get_or_insert(e.mono_us);
            }
        }
    }
    let last = first.into_iter().collect::<Option<Vec<u64>>>()?.into_iter().max()?;
    Some(last.saturating_sub(start) / 1000)
}
