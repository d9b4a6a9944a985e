//! FLINK-40689's precondition: a transactional id whose producer epoch is near the end of its
//! range before the job starts, driven there with InitProducerId calls.
//!
//! Why: under Transactions V2 every commit bumps the epoch (KIP-890), and the coordinator
//! hands the id a new producer id once the epoch is exhausted (`TransactionMetadata`:
//! exhausted at `Short.MAX_VALUE - 1`, the rotation since KAFKA-18660). A checkpoint's
//! committable stores the (producer id, epoch) it was opened with and not the protocol, so a
//! recovery commit of a transaction that was committed at the rotating epoch goes out as a V1
//! EndTxn with the old producer id (`FlinkKafkaInternalProducer.resumeTransaction`), which the
//! coordinator answers with INVALID_PRODUCER_ID_MAPPING, and KafkaCommitter fails the job over
//! again at every restore. Reaching the edge with the job's own checkpoints would take about
//! 16 000 of them; an InitProducerId on an id with no transaction open bumps its epoch by one
//! (`TransactionCoordinator.handleInitProducerId`), so the rig spends those calls before the
//! job instead and stops on the epoch the scenario names.
//!
//! Which id: the one each subtask's first transaction opens. Under POOLING that is
//! `{prefix}-{subtask}-0`, brought by the writer's own InitProducerId to one epoch above the
//! driven one; under INCREMENTING `{prefix}-{subtask}-1`, which the writer's lingering-
//! transaction probe and its own InitProducerId bump twice (`TransactionAbortStrategyImpl`).
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_client::wire::init_producer_id::InitProducerIdParams;

use sinkhole_scenario::Naming;

/// How often the driver reports its progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// One driven id: where it stood before the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Driven {
    pub tid: String,
    pub producer_id: i64,
    pub epoch: i16,
    pub calls: u32,
    pub elapsed: Duration,
}

/// The id each subtask's first transaction uses under `naming`.
pub fn first_tid(prefix: &str, subtask: u32, naming: Naming) -> String {
    match naming {
        Naming::Pooling => format!("{prefix}-{subtask}-0"),
        Naming::Incrementing => format!("{prefix}-{subtask}-1"),
    }
}

/// Brings every id to `epoch` (each on its own connection, at once), reporting progress
/// through `progress`. Fails if an id's producer id changes on the way (someone else rotated
/// it) or an answer is an error.
pub async fn drive(
    bootstrap: &[String],
    tids: &[String],
    epoch: i16,
    timeout_ms: i32,
    progress: Arc<dyn Fn(String) + Send + Sync>,
) -> anyhow::Result<Vec<Driven>> {
    let mut set = tokio::task::JoinSet::new();
    for tid in tids {
        let (bootstrap, tid, progress) = (bootstrap.to_vec(), tid.clone(), progress.clone());
        set.spawn(async move { drive_one(&bootstrap, &tid, epoch, timeout_ms, &*progress).await });
    }
    let mut out = vec![];
    while let Some(r) = set.join_next().await {
        out.push(r.context("the epoch driver panicked")??);
    }
    out.sort_by(|a, b| a.tid.cmp(&b.tid));
    Ok(out)
}

async fn drive_one(
    bootstrap: &[String],
    tid: &str,
    target: i16,
    timeout_ms: i32,
    progress: &(dyn Fn(String) + Send + Sync),
) -> anyhow::Result<Driven> {
    let mut client = Client::connect(bootstrap, ClientConfig::default())
        .await
        .with_context(|| format!("connecting to drive the epoch of {tid}"))?;
    let params = InitProducerIdParams::transactional(tid, timeout_ms);
    let start = Instant::now();
    let mut last_report = Instant::now();
    let mut calls = 0u32;
    let mut pid = None;
    loop {
        let o = client.init_producer_id(&params, None).await.with_context(|| format!("InitProducerId {tid}"))?;
        calls += 1;
        match pid {
            None => pid = Some(o.producer_id),
            Some(p) if p != o.producer_id => anyhow::bail!(
                "{tid}: the producer id changed from {p} to {} at epoch {} while the rig drove it (another producer?)",
                o.producer_id,
                o.producer_epoch
            ),
            Some(_) => {}
        }
        if o.producer_epoch >= target {
            return Ok(Driven {
                tid: tid.to_string(),
                producer_id: o.producer_id,
                epoch: o.producer_epoch,
                calls,
                elapsed: start.elapsed(),
            });
        }
        if last_report.elapsed() >= PROGRESS_EVERY {
            last_report = Instant::now();
            progress(format!("{tid}: producer epoch {} of {target} ({calls} InitProducerId calls)", o.producer_epoch));
        }
    }
}

/// What became of a driven id by the end of the run, from DescribeTransactions: the line the
/// history keeps ("rotated" when the coordinator gave the id a new producer id).
pub async fn after(bootstrap: &[String], driven: &[Driven]) -> Vec<String> {
    let ids: Vec<String> = driven.iter().map(|d| d.tid.clone()).collect();
    let described = match Client::connect(bootstrap, ClientConfig::default()).await {
        Ok(mut c) => c.describe_transactions(&ids).await.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    driven
        .iter()
        .map(|d| match &described {
            Err(e) => format!("FLINK-40689 precondition: {} could not be described after the job: {e}", d.tid),
            Ok(all) => match all.iter().find(|t| t.transactional_id == d.tid) {
                Some(t) if t.error.is_none() => {
                    let what = if t.producer_id != d.producer_id {
                        format!("rotated: producer id {} → {}", d.producer_id, t.producer_id)
                    } else {
                        format!("not rotated: producer id {} still", d.producer_id)
                    };
                    format!(
                        "FLINK-40689 precondition: {} after the job: {what}, epoch {}, state {}",
                        d.tid, t.producer_epoch, t.state
                    )
                }
                Some(t) => format!(
                    "FLINK-40689 precondition: {} after the job: {}",
                    d.tid,
                    t.error.map(|c| c.name().to_string()).unwrap_or_default()
                ),
                None => format!("FLINK-40689 precondition: {} was not described after the job", d.tid),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_transaction_id_follows_the_naming() {
        assert_eq!(first_tid("p", 1, Naming::Pooling), "p-1-0");
        assert_eq!(first_tid("p", 0, Naming::Incrementing), "p-0-1");
        assert_eq!(sinkhole_scenario::flink::MAX_DRIVEN_EPOCH, 32765);
    }
}
