//! A share-group source's input, before any worker: the broker must have
//! share groups on, each mode gets its own input topic filled with every
//! record the checker expects, and its own share group set to start at the
//! earliest offset with the scenario's lock (docs/GUIDE.md, "Share-group source").
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use kafka_protocol::messages::ApiKey;
use sinkhole_client::producer::{InitOptions, ProducerConfig, TxnProducer};
use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_model::ShareInput;
use sinkhole_workloads::source::record_of;

use sinkhole_checker::share::{
    merge_archived, read_group, record_story, sample_archived, tally_history, ArchiveSeen, ShareView,
};
use sinkhole_scenario::{Scenario, ShareSpec};

/// Refuses a broker without usable share groups: `share.version` finalized
/// ≥ 1 in ApiVersions and ShareGroupHeartbeat / ShareFetch / ShareAcknowledge
/// advertised (`docs/PROTOCOL.md` §6). Kafka 4.0.x answers with no
/// `share.version` at all.
pub async fn check_support(client: &mut Client, kafka: &str) -> anyhow::Result<()> {
    let info = client.api_versions(None).await.context("ApiVersions")?;
    let level = info.feature_level("share.version").unwrap_or(0);
    let missing: Vec<&str> = [
        (ApiKey::ShareGroupHeartbeat, "ShareGroupHeartbeat"),
        (ApiKey::ShareFetch, "ShareFetch"),
        (ApiKey::ShareAcknowledge, "ShareAcknowledge"),
    ]
    .into_iter()
    .filter(|(k, _)| info.range(*k).is_none())
    .map(|(_, n)| n)
    .collect();
    if level < 1 || !missing.is_empty() {
        bail!(
            "source: share-group needs share groups, and this Kafka {kafka} broker has none usable (share.version \
             finalized {level}{}); share groups need Kafka 4.1 or later",
            if missing.is_empty() { String::new() } else { format!(", not advertised: {}", missing.join(", ")) }
        );
    }
    Ok(())
}

/// Group configs of the mode's share group: from the earliest offset (the
/// default `latest` would skip the input written before the first member
/// joined), the lock, and on brokers that take it as a group config the
/// delivery limit (4.2.0 refuses it: a broker setting there, which the
/// run's broker config carries anyway).
pub fn group_configs(sh: &ShareSpec, kafka: &str) -> Vec<(String, String)> {
    let mut v = vec![
        ("share.auto.offset.reset".to_string(), "earliest".to_string()),
        ("share.record.lock.duration.ms".to_string(), sh.lock_ms.to_string()),
    ];
    let group_level_limit = !kafka.starts_with("4.1.") && !kafka.starts_with("4.2.");
    if let (Some(l), true) = (sh.delivery_limit, group_level_limit) {
        v.push(("share.delivery.count.limit".to_string(), l.to_string()));
    }
    v
}

/// Sets `configs` on `group` (one IncrementalAlterConfigs) and waits until
/// DescribeConfigs shows every one of them: once a SET answered NONE and the
/// next read still showed the old value (SHARE-FACTS in `docs/PROTOCOL.md` §6).
pub async fn configure_group(client: &mut Client, group: &str, configs: &[(String, String)]) -> anyhow::Result<()> {
    let pairs: Vec<(&str, &str)> = configs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let keys: Vec<String> = configs.iter().map(|(k, _)| k.clone()).collect();
    for round in 0..3 {
        client
            .alter_group_configs(group, &pairs)
            .await
            .with_context(|| format!("IncrementalAlterConfigs on group {group}"))?;
        for _ in 0..50 {
            let m = client.describe_group_configs(group, &keys).await.context("DescribeConfigs (GROUP)")?;
            if configs.iter().all(|(k, v)| m.get(k).cloned().flatten().as_deref() == Some(v.as_str())) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tracing::debug!(group, round, "group configs not visible yet: set again");
    }
    Err(anyhow!("the configs of share group {group} did not show within 15 s: {configs:?}"))
}

/// Every record of the job, `(subtask, seq)` for each subtask and seq, with
/// the bytes the generated source would emit, to `input.input_topic`
/// (subtask s's records to partition s mod `partitions`), idempotently and
/// acks=all. Returns how many were written.
pub async fn write_input(
    bootstrap: &[String],
    s: &Scenario,
    run_id: &str,
    input: &ShareInput,
    partitions: u32,
) -> anyhow::Result<u64> {
    let mut cfg = ProducerConfig::new(bootstrap.to_vec(), None);
    cfg.client_id = "sinkhole-input".into();
    cfg.batch_size = 256 * 1024;
    let mut p = TxnProducer::connect(cfg).await.context("the input's producer")?;
    p.init(InitOptions::default()).await.context("InitProducerId for the input")?;
    let j = &s.job;
    let mut n = 0u64;
    for seq in 0..j.records_per_subtask {
        for sub in 0..j.parallelism {
            let r = record_of(run_id, sub, seq, s.topic.partitions, j.partitioning, 0);
            let part = (sub % partitions.max(1)) as i32;
            let headers = r.headers(None);
            p.send(&input.input_topic, part, r.key, r.value, headers).await.context("writing the input")?;
            n += 1;
        }
    }
    p.flush().await.context("flushing the input")?;
    Ok(n)
}

/// Creates mode `topic`'s input topic and share group and fills the topic:
/// what a share-group mode needs before its workers start.
pub async fn prepare(bootstrap: &[String], s: &Scenario, run_id: &str, topic: &str) -> anyhow::Result<Option<String>> {
    let (Some(sh), Some(input)) = (s.share_source(), crate::runner::share_input(s, topic)) else { return Ok(None) };
    let mut client = Client::connect(bootstrap, ClientConfig::default()).await?;
    check_support(&mut client, &s.cluster.kafka).await?;
    client
        .create_topic(&input.input_topic, sh.partitions as i32, s.topic.replication_factor as i16, &[])
        .await
        .with_context(|| format!("creating input topic {}", input.input_topic))?;
    configure_group(&mut client, &input.group_id, &group_configs(&sh, &s.cluster.kafka)).await?;
    drop(client);
    let n = write_input(bootstrap, s, run_id, &input, sh.partitions).await?;
    Ok(Some(format!(
        "input {} ({} partitions, {n} records) for share group {} (ack {}, lock {} ms)",
        input.input_topic, sh.partitions, input.group_id, sh.ack, sh.lock_ms
    )))
}

/// How often [`Watch`] samples the persisted state: often enough to see a
/// range archived before the start offset passes it, which takes at least
/// an acknowledgement round of the records before it (a checkpoint).
const SAMPLE_EVERY: Duration = Duration::from_millis(500);
/// A sample that takes longer (a broker restarting) is given up and counted.
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(3);

/// Samples mode `topic`'s share-group state while its job runs, for the
/// records archived during the run ([`sinkhole_checker::share`]'s docs): a
/// task beside the job, like the visibility tail, reading only (the stored
/// leader epoch, never a higher one).
pub struct Watch {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<ArchiveSeen>,
}

impl Watch {
    /// Starts sampling when `s` has a share-group source; `None` otherwise.
    pub fn start(bootstrap: Vec<String>, s: &Scenario, topic: &str) -> Option<Watch> {
        let (sh, input) = (s.share_source()?, crate::runner::share_input(s, topic)?);
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let mut seen = ArchiveSeen::default();
            let mut conn: Option<(Client, uuid::Uuid)> = None;
            loop {
                tokio::select! {
                    _ = stopped.changed() => break,
                    _ = tokio::time::sleep(SAMPLE_EVERY) => {}
                }
                let one = async {
                    if conn.is_none() {
                        let mut c = Client::connect(&bootstrap, ClientConfig::default()).await?;
                        let md = c.metadata(Some(std::slice::from_ref(&input.input_topic))).await?;
                        let id = md
                            .topic(&input.input_topic)
                            .map(|t| t.topic_id)
                            .ok_or_else(|| anyhow!("no input topic"))?;
                        conn = Some((c, id));
                    }
                    let (c, id) = conn.as_mut().expect("connected above");
                    sample_archived(c, &input.group_id, &input.input_topic, *id, sh.partitions, &mut seen).await
                };
                match tokio::time::timeout(SAMPLE_TIMEOUT, one).await {
                    Ok(Ok(())) => seen.samples += 1,
                    Ok(Err(e)) => {
                        tracing::debug!("share state sample: {e:#}");
                        seen.errors += 1;
                        conn = None;
                    }
                    Err(_) => {
                        seen.errors += 1;
                        conn = None;
                    }
                }
            }
            seen
        });
        Some(Watch { stop, task })
    }

    /// Stops sampling and returns what the samples saw.
    pub async fn stop(self) -> ArchiveSeen {
        let _ = self.stop.send(true);
        self.task.await.unwrap_or_default()
    }
}

/// What a share group's premises are judged against besides its view: the run's delivery limit
/// and the records written to the input.
pub fn group_of(s: &Scenario) -> sinkhole_checker::premise::share::Group {
    sinkhole_checker::premise::share::Group {
        delivery_limit: sinkhole_scenario::source::delivery_limit(s),
        input_records: u64::from(s.job.parallelism) * s.job.records_per_subtask,
    }
}

/// The share group's view at the end ([`sinkhole_checker::share`]), its
/// counts moved into the report's: redelivered and archived join the counts
/// an expectation can name, and the nonmonotonic count (a share group hands
/// records out in no order) moves out of them into the view.
pub async fn view(
    bootstrap: &[String],
    s: &Scenario,
    topic: &str,
    history: &std::path::Path,
    report: &mut sinkhole_checker::CheckReport,
    seen: Option<ArchiveSeen>,
) -> Option<ShareView> {
    let (sh, input) = (s.share_source()?, crate::runner::share_input(s, topic)?);
    let mut v = ShareView {
        group: input.group_id,
        input_topic: input.input_topic,
        ack: sh.ack.to_string(),
        ..ShareView::default()
    };
    match sinkhole_history::read(history) {
        Ok(h) => {
            tally_history(&h.events, &mut v);
            for x in &report.examples.lost {
                if let (Some(sub), Some(seq)) = (x.subtask, x.seq) {
                    v.lost_evidence.push(record_story(&h.events, sub, seq));
                }
            }
        }
        Err(e) => v.error = Some(format!("reading the history: {e}")),
    }
    read_group(bootstrap, sh.partitions, &mut v).await;
    merge_archived(&mut v, &seen.unwrap_or_default());
    v.fold_into(report);
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkhole_model::AckPolicy;

    #[test]
    fn the_delivery_limit_is_a_group_config_except_on_4_1_and_4_2() {
        let sh =
            ShareSpec { ack: AckPolicy::AfterCommit, batch: 10, lock_ms: 2000, delivery_limit: Some(3), partitions: 2 };
        let on = |k: &str| group_configs(&sh, k).into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(
            on("4.4.0"),
            ["share.auto.offset.reset", "share.record.lock.duration.ms", "share.delivery.count.limit"]
        );
        assert_eq!(on("4.2.0"), ["share.auto.offset.reset", "share.record.lock.duration.ms"]);
        assert_eq!(group_configs(&sh, "4.4.0")[1].1, "2000");
    }
}
