//! A share-group member's heartbeat, on a task of its own, as Java's
//! `ShareHeartbeatRequestManager` runs it on the consumer's background thread
//! while the application polls: the member stays in the group (and keeps its
//! assignment) however long the application takes between polls.
//!
//! The rules, from `ShareMembershipManager` / `AbstractMembershipManager` and
//! `ShareHeartbeatRequestManager`:
//! * join with member epoch 0 and the full subscription; afterwards send the
//!   epoch the last answer gave, and the subscription only when it has to be
//!   resent (after a failed heartbeat: Java's `HeartbeatState.reset`);
//! * an answer's assignment replaces the current one; none means unchanged;
//! * UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH: the member is fenced, drops its
//!   assignment and rejoins at once with epoch 0 and the same member id;
//! * other failures (the coordinator gone, a connection lost) back off and
//!   try again; the last one is kept for the caller to see;
//! * the interval is the answer's `HeartbeatIntervalMs`
//!   (`group.share.heartbeat.interval.ms`, 5 s by default);
//! * leaving sends member epoch -1 (`LEAVE_GROUP_MEMBER_EPOCH`).
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tracing::{debug, info, warn};
use uuid::Uuid;

use sinkhole_client::wire::share_group_heartbeat::{ShareHeartbeat, JOIN_GROUP_MEMBER_EPOCH, LEAVE_GROUP_MEMBER_EPOCH};
use sinkhole_client::wire::{Client, KafkaCode, WireError};

/// What the heartbeat knows, shared with the consumer.
#[derive(Debug, Clone, Default)]
pub struct Membership {
    pub member_epoch: i32,
    /// Topic id → assigned partitions.
    pub assignment: BTreeMap<Uuid, Vec<i32>>,
    /// Heartbeats answered without error.
    pub heartbeats: u64,
    /// Times the member was fenced and rejoined.
    pub rejoins: u64,
    /// The last failure, cleared by the next answered heartbeat.
    pub last_error: Option<String>,
    /// The coordinator's heartbeat interval.
    pub interval_ms: i32,
    /// The group coordinator that answered last.
    pub coordinator: i32,
}

impl Membership {
    /// Joined: the coordinator gave the member an epoch.
    pub fn joined(&self) -> bool {
        self.member_epoch > 0
    }
}

/// The heartbeat task's handle.
pub struct Heartbeat {
    pub(super) state: Arc<Mutex<Membership>>,
    stop: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// The state lock never stays poisoned: the data is plain values.
pub(super) fn lock(state: &Mutex<Membership>) -> std::sync::MutexGuard<'_, Membership> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

impl Heartbeat {
    /// Starts heartbeating with `client` (the task owns it).
    pub fn start(client: Client, group_id: String, member_id: String, topics: Vec<String>) -> Heartbeat {
        let state = Arc::new(Mutex::new(Membership::default()));
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(run(client, group_id, member_id, topics, state.clone(), stopped));
        Heartbeat { state, stop, task: Some(task) }
    }

    pub fn snapshot(&self) -> Membership {
        lock(&self.state).clone()
    }

    /// Stops heartbeating and leaves the group (epoch -1); waits for it.
    pub async fn leave(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Heartbeat {
    /// Dropped without [`leave`](Heartbeat::leave): the task ends without a
    /// leave heartbeat, as if the process had died (the coordinator drops the
    /// member after `group.share.session.timeout.ms`).
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

fn fenced(e: &WireError) -> bool {
    matches!(e.kafka_code(), Some(KafkaCode::UNKNOWN_MEMBER_ID) | Some(KafkaCode::FENCED_MEMBER_EPOCH))
}

async fn run(
    mut client: Client,
    group_id: String,
    member_id: String,
    topics: Vec<String>,
    state: Arc<Mutex<Membership>>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut epoch = JOIN_GROUP_MEMBER_EPOCH;
    let mut send_subscription = true;
    let backoff = Duration::from_millis(100);
    loop {
        if *stopped.borrow() {
            break;
        }
        let hb = ShareHeartbeat {
            group_id: group_id.clone(),
            member_id: member_id.clone(),
            member_epoch: epoch,
            rack_id: None,
            subscribed_topic_names: send_subscription.then(|| topics.clone()),
        };
        let wait = tokio::select! {
            r = client.share_group_heartbeat(&hb) => match r {
                Ok(a) => {
                    send_subscription = false;
                    epoch = a.member_epoch;
                    let interval = Duration::from_millis(a.heartbeat_interval_ms.max(1) as u64);
                    let mut s = lock(&state);
                    if s.member_epoch != epoch {
                        debug!(group = group_id, member = member_id, epoch, "member epoch");
                    }
                    s.member_epoch = epoch;
                    if let Some(asg) = a.assignment {
                        info!(group = group_id, member = member_id, epoch, assignment = ?asg, "share assignment");
                        s.assignment = asg.into_iter().collect();
                    }
                    s.heartbeats += 1;
                    s.last_error = None;
                    s.interval_ms = a.heartbeat_interval_ms;
                    s.coordinator = a.coordinator;
                    interval
                }
                Err(e) if fenced(&e) => {
                    warn!(group = group_id, member = member_id, error = %e, "fenced: rejoining");
                    epoch = JOIN_GROUP_MEMBER_EPOCH;
                    send_subscription = true;
                    let mut s = lock(&state);
                    s.member_epoch = epoch;
                    s.assignment.clear();
                    s.rejoins += 1;
                    s.last_error = Some(e.to_string());
                    Duration::ZERO
                }
                Err(e) => {
                    debug!(group = group_id, member = member_id, error = %e, "heartbeat failed");
                    send_subscription = true;
                    lock(&state).last_error = Some(e.to_string());
                    backoff
                }
            },
            _ = stopped.changed() => break,
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stopped.changed() => break,
        }
    }
    if epoch > 0 {
        let leave = ShareHeartbeat {
            group_id: group_id.clone(),
            member_id: member_id.clone(),
            member_epoch: LEAVE_GROUP_MEMBER_EPOCH,
            rack_id: None,
            subscribed_topic_names: None,
        };
        match client.share_group_heartbeat(&leave).await {
            Ok(_) => debug!(group = group_id, member = member_id, "left the share group"),
            Err(e) => warn!(group = group_id, member = member_id, error = %e, "leave heartbeat failed"),
        }
    }
    let mut s = lock(&state);
    s.member_epoch = LEAVE_GROUP_MEMBER_EPOCH;
    s.assignment.clear();
}
