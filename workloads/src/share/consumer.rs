//! The share consumer: fetch, acknowledge, leave. See the module docs of
//! [`crate::share`] for what it mirrors.
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use bytes::Bytes;
use tracing::{debug, info};
use uuid::Uuid;

use super::acks::{ack_batches, acquired_records, decode_records, gap_acks, ShareRecord};
use super::membership::{Heartbeat, Membership};
use kafka_protocol::messages::ShareFetchResponse;
use sinkhole_client::wire::share_acknowledge::{PartitionAcks, ShareAcknowledgeParams};
use sinkhole_client::wire::share_fetch::{AcquireMode, FetchPartitionAcks, ShareFetchParams};
use sinkhole_client::wire::{Client, ClientConfig, KafkaCode, WireError};

/// Settings of a share consumer; defaults follow Java's `ShareConsumer`
/// configs where one exists.
#[derive(Debug, Clone)]
pub struct ShareConsumerConfig {
    pub group_id: String,
    pub topics: Vec<String>,
    /// `None`: a fresh random id (Java: `Uuid.randomUuid()`).
    pub member_id: Option<String>,
    /// Records per fetch: `MaxRecords` and `BatchSize` (Java: `max.poll.records`, 500).
    pub max_records: i32,
    /// Java: `share.acquire.mode` (`batch_optimized`).
    pub acquire_mode: AcquireMode,
    /// Java: `fetch.max.wait.ms` (500).
    pub max_wait: Duration,
    /// Java: `fetch.min.bytes` (1).
    pub min_bytes: i32,
    /// Java: `fetch.max.bytes` (50 MiB).
    pub max_bytes: i32,
    pub client: ClientConfig,
}

impl ShareConsumerConfig {
    pub fn new(group_id: &str, topics: &[&str]) -> Self {
        ShareConsumerConfig {
            group_id: group_id.to_string(),
            topics: topics.iter().map(|t| t.to_string()).collect(),
            member_id: None,
            max_records: 500,
            acquire_mode: AcquireMode::BatchOptimized,
            max_wait: Duration::from_millis(500),
            min_bytes: 1,
            max_bytes: 50 * 1024 * 1024,
            client: ClientConfig::default(),
        }
    }
}

/// The outcome of the acknowledgements of one partition (Java's
/// `AcknowledgementCommitCallback` sees the same): `error` None = applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckResult {
    pub topic: String,
    pub partition: i32,
    /// Offset → acknowledge type, as sent.
    pub acks: BTreeMap<i64, i8>,
    /// The partition's acknowledge error (e.g. INVALID_RECORD_STATE when the
    /// lock had expired), or the request's, or a transport failure's text.
    pub error: Option<String>,
    /// Sent on a ShareFetch (piggy-backed) or a ShareAcknowledge.
    pub via: &'static str,
}

/// One ShareFetch planned for a leader: the request, the partitions its
/// session adds and forgets, and the acknowledgements it carries.
struct FetchPlan {
    params: ShareFetchParams,
    added: Vec<(Uuid, i32)>,
    forgotten: Vec<(Uuid, i32)>,
    sent_acks: BTreeMap<(Uuid, i32), BTreeMap<i64, i8>>,
}

/// One broker's share session (Java's `ShareSessionHandler`).
#[derive(Debug, Default)]
struct Session {
    /// 0: the next request opens a session; > 0: continues it.
    epoch: i32,
    /// (topic id, partition) in the session.
    partitions: BTreeSet<(Uuid, i32)>,
}

impl Session {
    /// `ShareRequestMetadata.nextEpoch`: up by one, `i32::MAX` wraps to 1.
    fn next_epoch(&mut self) {
        self.epoch = if self.epoch == i32::MAX { 1 } else { self.epoch + 1 };
    }
    /// `nextCloseExistingAttemptNew`: the next request opens a new session.
    fn reset(&mut self) {
        self.epoch = 0;
        self.partitions.clear();
    }
}

/// A member of a share group. See [`crate::share`].
pub struct ShareConsumer {
    client: Client,
    config: ShareConsumerConfig,
    member_id: String,
    heartbeat: Option<Heartbeat>,
    sessions: BTreeMap<i32, Session>,
    /// Acknowledgements not sent yet: (topic id, partition) → offset → type.
    pending: BTreeMap<(Uuid, i32), BTreeMap<i64, i8>>,
    topic_names: BTreeMap<Uuid, String>,
    /// The lock duration the broker announced last (ShareFetch answers).
    lock_timeout_ms: Option<i32>,
    /// Versions used last, for the record.
    pub fetch_version: Option<i16>,
    pub acknowledge_version: Option<i16>,
}

/// A random member id in Kafka's text form (22 base64 characters).
pub fn random_member_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut bytes = [0u8; 16];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
        chunk.copy_from_slice(&h.finish().to_be_bytes());
    }
    sinkhole_kafka::primitives::uuid_to_kafka_string(&bytes)
}

impl ShareConsumer {
    /// Connects, starts the heartbeat (which joins the group), and waits up
    /// to `join_timeout` for the member epoch.
    pub async fn join(
        bootstrap: &[String],
        config: ShareConsumerConfig,
        join_timeout: Duration,
    ) -> Result<ShareConsumer, WireError> {
        let mut client = Client::connect(bootstrap, config.client.clone()).await?;
        client.metadata(Some(&config.topics)).await?;
        let member_id = config.member_id.clone().unwrap_or_else(random_member_id);
        let hb_client = Client::connect(bootstrap, config.client.clone()).await?;
        let heartbeat = Heartbeat::start(hb_client, config.group_id.clone(), member_id.clone(), config.topics.clone());
        let mut me = ShareConsumer {
            client,
            config,
            member_id,
            heartbeat: Some(heartbeat),
            sessions: BTreeMap::new(),
            pending: BTreeMap::new(),
            topic_names: BTreeMap::new(),
            lock_timeout_ms: None,
            fetch_version: None,
            acknowledge_version: None,
        };
        me.refresh_topics();
        let started = tokio::time::Instant::now();
        while !me.membership().joined() {
            if started.elapsed() > join_timeout {
                let last = me.membership().last_error.unwrap_or_else(|| "no answer".into());
                return Err(WireError::Timeout { what: format!("joining share group {}: {last}", me.config.group_id) });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        info!(group = me.config.group_id, member = me.member_id, "joined the share group");
        Ok(me)
    }

    pub fn member_id(&self) -> &str {
        &self.member_id
    }

    /// What the heartbeat knows now.
    pub fn membership(&self) -> Membership {
        self.heartbeat.as_ref().map(|h| h.snapshot()).unwrap_or_default()
    }

    /// The acquisition lock duration the broker announced (ShareFetch).
    pub fn lock_timeout_ms(&self) -> Option<i32> {
        self.lock_timeout_ms
    }

    /// Changes `MaxRecords` (and `BatchSize`) for the next polls: a source
    /// under a rate asks for what the rate allows now.
    pub fn set_max_records(&mut self, n: i32) {
        self.config.max_records = n.max(1);
    }

    /// The group this member belongs to.
    pub fn group_id(&self) -> &str {
        &self.config.group_id
    }

    /// The consumer's own client (metadata, for instance).
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    fn refresh_topics(&mut self) {
        for t in &self.client.cached_metadata().topics {
            if !t.topic_id.is_nil() {
                self.topic_names.insert(t.topic_id, t.name.clone());
            }
        }
    }

    fn topic_name(&self, id: Uuid) -> String {
        self.topic_names.get(&id).cloned().unwrap_or_else(|| id.to_string())
    }

    fn topic_id(&self, name: &str) -> Option<Uuid> {
        self.topic_names.iter().find(|(_, n)| n.as_str() == name).map(|(id, _)| *id)
    }

    /// The leader of every assigned partition, from the metadata cache.
    fn assigned_by_leader(&mut self) -> BTreeMap<i32, BTreeSet<(Uuid, i32)>> {
        let assignment = self.membership().assignment;
        let md = self.client.cached_metadata();
        let mut out: BTreeMap<i32, BTreeSet<(Uuid, i32)>> = BTreeMap::new();
        for (id, parts) in assignment {
            let Some(topic) = md.topic_by_id(id) else { continue };
            for p in parts {
                if let Some(info) = topic.partitions.iter().find(|i| i.partition == p && i.leader >= 0) {
                    out.entry(info.leader).or_default().insert((id, p));
                }
            }
        }
        out
    }

    /// Records that `record` is done with `ack_type` (ACCEPT, RELEASE,
    /// REJECT; RENEW needs v2). Sent on the next [`poll`](Self::poll) that
    /// fetches its partition, or by [`commit_sync`](Self::commit_sync).
    pub fn acknowledge(&mut self, record: &ShareRecord, ack_type: i8) {
        self.acknowledge_offset(&record.topic, record.partition, record.offset, ack_type);
    }

    /// [`acknowledge`](Self::acknowledge) by topic, partition and offset.
    pub fn acknowledge_offset(&mut self, topic: &str, partition: i32, offset: i64, ack_type: i8) {
        if let Some(id) = self.topic_id(topic) {
            self.pending.entry((id, partition)).or_default().insert(offset, ack_type);
        }
    }

    /// Acknowledgements recorded but not sent yet.
    pub fn pending_acks(&self) -> usize {
        self.pending.values().map(BTreeMap::len).sum()
    }

    /// One round of ShareFetch, one request per leader of the assigned
    /// partitions, each carrying the pending acknowledgements of its
    /// partitions. Returns the records delivered and the outcome of the
    /// acknowledgements that rode along. With no assignment yet it waits
    /// `max_wait` and returns nothing.
    pub async fn poll(&mut self) -> Result<(Vec<ShareRecord>, Vec<AckResult>), WireError> {
        let by_leader = self.assigned_by_leader();
        if by_leader.is_empty() {
            tokio::time::sleep(self.config.max_wait).await;
            return Ok((vec![], vec![]));
        }
        let mut records = vec![];
        let mut results = vec![];
        for (node, assigned) in by_leader {
            self.fetch_from(node, &assigned, &mut records, &mut results).await?;
        }
        Ok((records, results))
    }

    /// One ShareFetch to leader `node` for the partitions assigned there: the
    /// records it delivered into `records`, the outcome of the
    /// acknowledgements it carried into `results`. An error the session
    /// survives (a connection error, a refused fetch) leaves the next leader
    /// its turn.
    async fn fetch_from(
        &mut self,
        node: i32,
        assigned: &BTreeSet<(Uuid, i32)>,
        records: &mut Vec<ShareRecord>,
        results: &mut Vec<AckResult>,
    ) -> Result<(), WireError> {
        let FetchPlan { params, added, forgotten, mut sent_acks } = self.plan_fetch(node, assigned);
        let reply = self.client.share_fetch(node, &params).await;
        let session = self.sessions.entry(node).or_default();
        let (resp, version) = match reply {
            Ok(r) => r,
            Err(e) => {
                // `ShareSessionHandler.handleError`: a new session next time.
                session.reset();
                for ((id, p), acks) in sent_acks {
                    results.push(self.ack_result(id, p, acks, Some(e.to_string()), "ShareFetch"));
                }
                if e.is_connection_error() {
                    return Ok(());
                }
                return Err(e);
            }
        };
        self.fetch_version = Some(version);
        let top = KafkaCode(resp.error_code);
        if !top.is_ok() {
            return self.fetch_refused(node, top, sent_acks, results).await;
        }
        session.next_epoch();
        session.partitions.extend(added.iter().copied());
        for f in &forgotten {
            session.partitions.remove(f);
        }
        self.lock_timeout_ms = Some(resp.acquisition_lock_timeout_ms);
        let refresh = self.take_fetched(&resp, &mut sent_acks, records, results)?;
        // Acknowledgements the answer did not mention went nowhere.
        for ((id, p), acks) in sent_acks {
            results.push(self.ack_result(id, p, acks, Some("not answered".into()), "ShareFetch"));
        }
        if refresh {
            self.client.metadata(Some(&self.config.topics)).await?;
            self.refresh_topics();
        }
        Ok(())
    }

    /// The ShareFetch for leader `node`: Java's
    /// `ShareSessionHandler.newShareFetchBuilder` — a new session lists every
    /// partition; a continued one the added ones, and forgets the ones no
    /// longer assigned. The pending acknowledgements of its partitions ride
    /// along (taken from `pending`).
    fn plan_fetch(&mut self, node: i32, assigned: &BTreeSet<(Uuid, i32)>) -> FetchPlan {
        let session = self.sessions.entry(node).or_default();
        let added: Vec<(Uuid, i32)> = if session.epoch == 0 {
            assigned.iter().copied().collect()
        } else {
            assigned.difference(&session.partitions).copied().collect()
        };
        let forgotten: Vec<(Uuid, i32)> =
            if session.epoch == 0 { vec![] } else { session.partitions.difference(assigned).copied().collect() };
        let epoch = session.epoch;
        let mut sent_acks: BTreeMap<(Uuid, i32), BTreeMap<i64, i8>> = BTreeMap::new();
        for tp in assigned {
            if let Some(a) = self.pending.remove(tp) {
                sent_acks.insert(*tp, a);
            }
        }
        let mut topics: BTreeMap<Uuid, Vec<FetchPartitionAcks>> = BTreeMap::new();
        let in_request: BTreeSet<(Uuid, i32)> = added.iter().chain(sent_acks.keys()).copied().collect();
        for (id, p) in &in_request {
            let acks = sent_acks.get(&(*id, *p)).map(ack_batches).unwrap_or_default();
            topics.entry(*id).or_default().push(FetchPartitionAcks { partition: *p, acks });
        }
        let mut forgotten_by_topic: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
        for (id, p) in &forgotten {
            forgotten_by_topic.entry(*id).or_default().push(*p);
        }
        let params = ShareFetchParams {
            group_id: self.config.group_id.clone(),
            member_id: self.member_id.clone(),
            share_session_epoch: epoch,
            max_wait_ms: self.config.max_wait.as_millis().min(i32::MAX as u128) as i32,
            min_bytes: self.config.min_bytes,
            max_bytes: self.config.max_bytes,
            max_records: self.config.max_records,
            batch_size: self.config.max_records,
            acquire_mode: self.config.acquire_mode,
            is_renew_ack: sent_acks
                .values()
                .any(|a| a.values().any(|t| *t == sinkhole_client::wire::share_fetch::ACK_RENEW)),
            topics: topics.into_iter().collect(),
            forgotten: forgotten_by_topic.into_iter().collect(),
        };
        FetchPlan { params, added, forgotten, sent_acks }
    }

    /// A ShareFetch refused as a whole: the session starts over when the
    /// broker lost it, else goes on; the acknowledgements it carried failed.
    async fn fetch_refused(
        &mut self,
        node: i32,
        top: KafkaCode,
        sent_acks: BTreeMap<(Uuid, i32), BTreeMap<i64, i8>>,
        results: &mut Vec<AckResult>,
    ) -> Result<(), WireError> {
        let session = self.sessions.entry(node).or_default();
        if matches!(
            top,
            KafkaCode::SHARE_SESSION_NOT_FOUND
                | KafkaCode::INVALID_SHARE_SESSION_EPOCH
                | KafkaCode::SHARE_SESSION_LIMIT_REACHED
        ) {
            session.reset();
        } else {
            session.next_epoch();
        }
        debug!(node, code = %top, "ShareFetch refused");
        for ((id, p), acks) in sent_acks {
            results.push(self.ack_result(id, p, acks, Some(top.name()), "ShareFetch"));
        }
        if top == KafkaCode::UNKNOWN_TOPIC_ID {
            self.client.metadata(Some(&self.config.topics)).await?;
            self.refresh_topics();
        }
        Ok(())
    }

    /// Each partition of the answer: the outcome of the acknowledgements it
    /// carried (removed from `sent_acks`), its acquired records into
    /// `records`, the gaps between them acknowledged next time. Returns
    /// whether a partition's leader moved (the metadata needs a refresh).
    fn take_fetched(
        &mut self,
        resp: &ShareFetchResponse,
        sent_acks: &mut BTreeMap<(Uuid, i32), BTreeMap<i64, i8>>,
        records: &mut Vec<ShareRecord>,
        results: &mut Vec<AckResult>,
    ) -> Result<bool, WireError> {
        let mut refresh = false;
        for t in &resp.responses {
            let topic = self.topic_name(t.topic_id);
            for p in &t.partitions {
                if let Some(acks) = sent_acks.remove(&(t.topic_id, p.partition_index)) {
                    let err = KafkaCode::from_code(p.acknowledge_error_code).map(|c| c.name());
                    results.push(AckResult {
                        topic: topic.clone(),
                        partition: p.partition_index,
                        acks,
                        error: err,
                        via: "ShareFetch",
                    });
                }
                let code = KafkaCode(p.error_code);
                if !code.is_ok() {
                    debug!(topic, partition = p.partition_index, %code, "ShareFetch partition error");
                    refresh |=
                        matches!(code, KafkaCode::NOT_LEADER_OR_FOLLOWER | KafkaCode::UNKNOWN_TOPIC_OR_PARTITION);
                    continue;
                }
                let data = p.records.clone().unwrap_or_else(Bytes::new);
                let (recs, gaps) =
                    acquired_records(&topic, p.partition_index, decode_records(&data)?, &p.acquired_records);
                if !gaps.is_empty() {
                    self.pending.entry((t.topic_id, p.partition_index)).or_default().extend(gap_acks(&gaps));
                }
                records.extend(recs);
            }
        }
        Ok(refresh)
    }

    fn ack_result(
        &self,
        id: Uuid,
        p: i32,
        acks: BTreeMap<i64, i8>,
        error: Option<String>,
        via: &'static str,
    ) -> AckResult {
        AckResult { topic: self.topic_name(id), partition: p, acks, error, via }
    }

    /// Sends every pending acknowledgement now with ShareAcknowledge (Java's
    /// `commitSync`), one request per leader, and returns their outcomes.
    pub async fn commit_sync(&mut self) -> Result<Vec<AckResult>, WireError> {
        self.send_acknowledgements(false).await
    }

    async fn send_acknowledgements(&mut self, closing: bool) -> Result<Vec<AckResult>, WireError> {
        let leaders = self.leaders_of_pending_and_sessions(closing);
        let mut results = vec![];
        for (node, parts) in leaders {
            let epoch = match self.sessions.get(&node) {
                Some(s) if s.epoch > 0 => s.epoch,
                // `newShareAcknowledgeBuilder`: no session, nothing can be
                // acknowledged there (the records' locks will run out).
                _ => {
                    for tp in parts {
                        if let Some(acks) = self.pending.remove(&tp) {
                            results.push(self.ack_result(
                                tp.0,
                                tp.1,
                                acks,
                                Some("no share session".into()),
                                "ShareAcknowledge",
                            ));
                        }
                    }
                    continue;
                }
            };
            let mut sent: BTreeMap<(Uuid, i32), BTreeMap<i64, i8>> = BTreeMap::new();
            for tp in &parts {
                if let Some(a) = self.pending.remove(tp) {
                    sent.insert(*tp, a);
                }
            }
            if sent.is_empty() && !closing {
                continue;
            }
            let mut topics: BTreeMap<Uuid, Vec<PartitionAcks>> = BTreeMap::new();
            for ((id, p), a) in &sent {
                topics.entry(*id).or_default().push((*p, ack_batches(a)));
            }
            let params = ShareAcknowledgeParams {
                group_id: self.config.group_id.clone(),
                member_id: self.member_id.clone(),
                // On close, -1 acknowledges and ends the session.
                share_session_epoch: if closing { -1 } else { epoch },
                is_renew_ack: sent
                    .values()
                    .any(|a| a.values().any(|t| *t == sinkhole_client::wire::share_fetch::ACK_RENEW)),
                topics: topics.into_iter().collect(),
            };
            let reply = self.client.share_acknowledge(node, &params).await;
            let session = self.sessions.entry(node).or_default();
            match reply {
                Ok((answer, version)) => {
                    self.acknowledge_version = Some(version);
                    let top = KafkaCode(answer.response.error_code);
                    // Closing ends the session; so do the session errors
                    // (`ShareSessionHandler.handleResponse`).
                    if closing
                        || matches!(top, KafkaCode::SHARE_SESSION_NOT_FOUND | KafkaCode::INVALID_SHARE_SESSION_EPOCH)
                    {
                        session.reset();
                    } else {
                        session.next_epoch();
                    }
                    for t in &answer.response.responses {
                        for p in &t.partitions {
                            if let Some(acks) = sent.remove(&(t.topic_id, p.partition_index)) {
                                let err = KafkaCode::from_code(p.error_code)
                                    .or(KafkaCode::from_code(answer.response.error_code));
                                results.push(self.ack_result(
                                    t.topic_id,
                                    p.partition_index,
                                    acks,
                                    err.map(|c| c.name()),
                                    "ShareAcknowledge",
                                ));
                            }
                        }
                    }
                    let rest = if top.is_ok() { "not answered".to_string() } else { top.name() };
                    for ((id, p), acks) in sent {
                        results.push(self.ack_result(id, p, acks, Some(rest.clone()), "ShareAcknowledge"));
                    }
                }
                Err(e) => {
                    session.reset();
                    for ((id, p), acks) in sent {
                        results.push(self.ack_result(id, p, acks, Some(e.to_string()), "ShareAcknowledge"));
                    }
                    if !e.is_connection_error() {
                        return Err(e);
                    }
                }
            }
        }
        Ok(results)
    }

    /// Nodes to acknowledge at: the leaders of partitions with pending
    /// acknowledgements (and, when closing, every node with a session).
    fn leaders_of_pending_and_sessions(&mut self, closing: bool) -> BTreeMap<i32, Vec<(Uuid, i32)>> {
        let md = self.client.cached_metadata();
        let mut out: BTreeMap<i32, Vec<(Uuid, i32)>> = BTreeMap::new();
        for tp in self.pending.keys() {
            let leader = md
                .topic_by_id(tp.0)
                .and_then(|t| t.partitions.iter().find(|p| p.partition == tp.1))
                .map(|p| p.leader)
                .unwrap_or(-1);
            out.entry(leader).or_default().push(*tp);
        }
        if closing {
            for (node, s) in &self.sessions {
                if s.epoch > 0 {
                    out.entry(*node).or_default();
                }
            }
        }
        out
    }

    /// Leaves cleanly (Java's `close`): pending acknowledgements go out with
    /// ShareAcknowledge at epoch -1, which also closes each share session
    /// (the broker releases what this member still holds), then the
    /// heartbeat leaves the group.
    pub async fn close(mut self) -> Result<Vec<AckResult>, WireError> {
        let results = self.send_acknowledgements(true).await;
        if let Some(hb) = self.heartbeat.take() {
            hb.leave().await;
        }
        results
    }

    /// Stops without a word to the broker, as a killed process would: no
    /// acknowledgement, no session close, no leave heartbeat. What this
    /// member holds stays acquired until the lock runs out, and the member
    /// stays in the group until its session times out.
    pub fn abandon(mut self) {
        drop(self.heartbeat.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_epochs_count_up_wrap_to_one_and_reset_to_zero() {
        let mut s = Session::default();
        assert_eq!(s.epoch, 0, "the first request opens a session");
        s.next_epoch();
        s.partitions.insert((Uuid::from_u128(1), 0));
        assert_eq!(s.epoch, 1);
        s.epoch = i32::MAX;
        s.next_epoch();
        assert_eq!(s.epoch, 1, "ShareRequestMetadata.nextEpoch wraps to 1, never 0");
        s.reset();
        assert_eq!(s.epoch, 0);
        assert!(s.partitions.is_empty(), "a new session lists every partition again");
    }

    #[test]
    fn member_ids_look_like_kafka_uuids_and_differ() {
        let (a, b) = (random_member_id(), random_member_id());
        assert_eq!(a.len(), 22);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'), "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn defaults_follow_the_java_share_consumer() {
        let c = ShareConsumerConfig::new("g", &["t"]);
        assert_eq!(c.max_records, 500);
        assert_eq!(c.max_wait, Duration::from_millis(500));
        assert_eq!(c.min_bytes, 1);
        assert_eq!(c.max_bytes, 50 * 1024 * 1024);
        assert_eq!(c.acquire_mode, AcquireMode::BatchOptimized);
    }
}
