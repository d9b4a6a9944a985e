//! Either subject, as one type: the modes of a scenario run side by side
//! under one nemesis, and one of them may be Flink's own KafkaSink while the
//! others are the rig's job. [`Subject`] returns `impl Future`, so it cannot
//! be a trait object; this enum forwards each call to the subject it holds.
use nix::sys::signal::Signal;

use super::{flink, rig_job, Armed, Hook, Outage, Subject, WorkerHit};

#[derive(Debug, Clone)]
pub enum AnySubject {
    Rig(rig_job::Handle),
    Flink(flink::Handle),
}

impl Subject for AnySubject {
    fn workers(&self) -> u32 {
        match self {
            AnySubject::Rig(h) => h.workers(),
            AnySubject::Flink(h) => h.workers(),
        }
    }

    fn transactional_id(&self, subtask: u32, checkpoint: u64) -> String {
        match self {
            AnySubject::Rig(h) => h.transactional_id(subtask, checkpoint),
            AnySubject::Flink(h) => h.transactional_id(subtask, checkpoint),
        }
    }

    async fn open_transaction(&self, subtask: u32) -> String {
        match self {
            AnySubject::Rig(h) => h.open_transaction(subtask).await,
            AnySubject::Flink(h) => h.open_transaction(subtask).await,
        }
    }

    async fn signal(&self, workers: Vec<u32>, signal: Signal, by: String) -> Vec<WorkerHit> {
        match self {
            AnySubject::Rig(h) => h.signal(workers, signal, by).await,
            AnySubject::Flink(h) => h.signal(workers, signal, by).await,
        }
    }

    async fn resume(&self, frozen: Vec<(u32, u32)>, by: String) -> Vec<WorkerHit> {
        match self {
            AnySubject::Rig(h) => h.resume(frozen, by).await,
            AnySubject::Flink(h) => h.resume(frozen, by).await,
        }
    }

    async fn outage(&self, down_ms: u64, by: String) -> Result<Outage, String> {
        match self {
            AnySubject::Rig(h) => h.outage(down_ms, by).await,
            AnySubject::Flink(h) => h.outage(down_ms, by).await,
        }
    }

    async fn arm(&self, hook: Hook, by: String) -> Result<Armed, String> {
        match self {
            AnySubject::Rig(h) => h.arm(hook, by).await,
            AnySubject::Flink(h) => h.arm(hook, by).await,
        }
    }
}
