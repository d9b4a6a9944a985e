//! `sinkhole probe`: what a broker can do for two-phase commit (KIP-939).
//!
//! The probe asks the broker, it does not assume: every answer in the report
//! is a response the broker sent to a request the probe made, and the
//! `evidence` list keeps each request with its version and the exact reply.
//!
//! Steps (docs/PROTOCOL.md §1.3, §3.4, §5):
//! 1. ApiVersions: highest InitProducerId version, finalized `transaction.version`.
//! 2. InitProducerId v6 with Enable2Pc=true on a fresh transactional id.
//! 3. Open a transaction on that id (AddPartitionsToTxn), then InitProducerId v6
//!    with KeepPreparedTxn=true — the KIP-939 recovery call — and check with
//!    DescribeTransactions what became of the open transaction.
//!    When v6 is not advertised at all, the probe still sends it once on a side
//!    connection and records what the broker did (evidence, never acceptance).
//! 4. Timeout survival: a 2PC transaction and a plain *control* transaction,
//!    both opened with a short client timeout. The broker must abort the control
//!    one by timeout (that proves the abort scan ran in the window); only then
//!    does "the 2PC one is still Ongoing" mean it survives. Without the control
//!    abort the answer is `null`, never a guess.
//! 5. Every transaction the probe opened is aborted at the end, so no hanging
//!    transaction is left behind to pin the last stable offset.
//!
//! Share groups (KIP-932; docs/PROTOCOL.md §6) are read from ApiVersions too:
//! the `share.version` feature (its supported range needs ApiVersions v4: below
//! it a broker leaves out features whose lowest level is 0, KAFKA-17011), the
//! ShareGroupHeartbeat / ShareFetch / ShareAcknowledge versions, and whether
//! API key 93 is advertised — the key the KIP-1289 draft gives its
//! `TxnShareAcknowledge`. The wire carries keys, not names: Kafka 4.4.0 already
//! uses 93 for `StreamsGroupTopologyDescriptionUpdate`, so an advertised 93 is
//! reported as such and never taken for transactional acknowledgements.
use std::time::{Duration, Instant};

use kafka_protocol::messages::ApiKey;
use serde::Serialize;
use sinkhole_client::wire::api_versions::{fetch_api_versions_from, ApiVersionsInfo, API_VERSIONS_FEATURES_VERSION};
use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_client::wire::connection::Connection;
use sinkhole_client::wire::error::{KafkaCode, WireError};
use sinkhole_client::wire::init_producer_id::{self, InitProducerIdParams};
use sinkhole_client::wire::TxnDescription;

/// Answer to "is X accepted": the JSON contract is `{"accepted": bool, "error": string|null}`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Acceptance {
    pub accepted: bool,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BrokerVersion {
    /// The Kafka release, when the rig started the cluster from a known installation.
    pub release: Option<String>,
    /// Finalized `metadata.version` feature level (a release fingerprint on the wire).
    pub metadata_version_level: Option<i16>,
    /// Highest `metadata.version` level the broker supports.
    pub metadata_version_max_supported: Option<i16>,
    pub note: String,
}

/// One request the probe sent and what came back.
#[derive(Debug, Clone, Serialize)]
pub struct Evidence {
    pub step: String,
    pub request: String,
    pub answer: String,
    pub at_ms: u64,
}

/// What the broker offers for share groups (all from ApiVersions).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ShareSupport {
    /// `share.version` levels the broker supports (ApiVersions v4), `[min, max]`.
    pub share_version_supported: Option<(i16, i16)>,
    /// The finalized `share.version`: ≥ 1 means share groups are on.
    pub share_version_finalized: Option<i16>,
    /// Advertised `[min, max]` versions, `null` when not advertised.
    pub share_group_heartbeat: Option<(i16, i16)>,
    pub share_fetch: Option<(i16, i16)>,
    pub share_acknowledge: Option<(i16, i16)>,
    /// Share groups usable: `share.version` finalized ≥ 1 and the three APIs advertised.
    pub enabled: bool,
    /// Versions of API key 93 if advertised.
    pub api_93: Option<(i16, i16)>,
    /// `TxnShareAcknowledge` (KIP-1289 draft, key 93): `false` when key 93 is
    /// not advertised; `null` when it is, since the key alone does not name
    /// the API (see `api_93_note`).
    pub txn_share_acknowledge: Option<bool>,
    pub api_93_note: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProbeReport {
    pub bootstrap: String,
    pub broker_version: BrokerVersion,
    pub transaction_version: i16,
    pub init_producer_id_max_version: i16,
    pub enable2pc: Acceptance,
    pub keep_prepared_txn: Acceptance,
    pub survives_timeout: Option<bool>,
    pub survives_timeout_detail: String,
    /// The broker aborted a plain transaction by timeout during the probe.
    pub timeout_abort_observed: bool,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms` of the coordinator, if readable.
    pub abort_scan_interval_ms: Option<u64>,
    pub topic: String,
    pub share_groups: ShareSupport,
    pub evidence: Vec<Evidence>,
    pub elapsed_ms: u64,
}

/// The API key the KIP-1289 draft gives `TxnShareAcknowledge`.
pub const TXN_SHARE_ACKNOWLEDGE_DRAFT_KEY: i16 = 93;

/// Share-group support from the ApiVersions answers: `info` (the client's,
/// v3) and `v4` (asked again at v4 for the supported feature ranges).
pub fn share_support(info: &ApiVersionsInfo, v4: Option<&ApiVersionsInfo>) -> ShareSupport {
    let range = |k: ApiKey| info.range(k);
    let finalized = info.feature_level("share.version");
    let supported = v4.and_then(|v| v.supported_features.get("share.version").copied());
    let (hb, fetch, ack) =
        (range(ApiKey::ShareGroupHeartbeat), range(ApiKey::ShareFetch), range(ApiKey::ShareAcknowledge));
    let api_93 = info.ranges.get(&TXN_SHARE_ACKNOWLEDGE_DRAFT_KEY).copied();
    let streams = info.supported_features.contains_key("streams.version")
        || v4.is_some_and(|v| v.supported_features.contains_key("streams.version"));
    let (txn_share_acknowledge, api_93_note) = match api_93 {
        None => (Some(false), "API key 93 is not advertised: no TxnShareAcknowledge".to_string()),
        Some((lo, hi)) => (
            None,
            format!(
                "API key 93 is advertised (v{lo}..v{hi}); Kafka 4.4.0 assigns key 93 to \
                 StreamsGroupTopologyDescriptionUpdate{}, so the key alone does not mean \
                 TxnShareAcknowledge (the KIP-1289 draft's number is taken)",
                if streams { " (this broker supports streams.version)" } else { "" }
            ),
        ),
    };
    ShareSupport {
        share_version_supported: supported,
        share_version_finalized: finalized,
        share_group_heartbeat: hb,
        share_fetch: fetch,
        share_acknowledge: ack,
        enabled: finalized.unwrap_or(0) >= 1 && hb.is_some() && fetch.is_some() && ack.is_some(),
        api_93,
        txn_share_acknowledge,
        api_93_note,
    }
}

/// ApiVersions v4 on a connection of its own to a broker of the cluster.
async fn api_versions_v4(client: &Client) -> Result<ApiVersionsInfo, WireError> {
    let addr = client
        .cached_metadata()
        .brokers
        .first()
        .map(|b| b.addr())
        .ok_or_else(|| WireError::NoBrokerReachable { tried: vec![], last: "no broker in the metadata".into() })?;
    let mut conn = Connection::connect(&addr, "sinkhole-probe", Duration::from_secs(5)).await?;
    fetch_api_versions_from(&mut conn, Duration::from_secs(5), API_VERSIONS_FEATURES_VERSION).await
}

fn range_text(r: Option<(i16, i16)>) -> String {
    r.map(|(lo, hi)| format!("v{lo}..v{hi}")).unwrap_or_else(|| "not advertised".into())
}

pub struct ProbeOptions {
    pub bootstrap: Vec<String>,
    pub release: Option<String>,
    /// Client transaction timeout for the timeout-survival check.
    pub short_timeout_ms: i32,
    /// Longest wait for the control transaction to be aborted by the broker.
    pub max_wait: Duration,
    pub progress: bool,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            bootstrap: vec![],
            release: None,
            short_timeout_ms: 1000,
            max_wait: Duration::from_secs(45),
            progress: true,
        }
    }
}

struct Log {
    started: Instant,
    evidence: Vec<Evidence>,
    progress: bool,
}

impl Log {
    fn add(&mut self, step: &str, request: impl Into<String>, answer: impl Into<String>) {
        let e = Evidence {
            step: step.to_string(),
            request: request.into(),
            answer: answer.into(),
            at_ms: self.started.elapsed().as_millis() as u64,
        };
        if self.progress {
            eprintln!("  [{:>6} ms] {}: {} → {}", e.at_ms, e.step, e.request, e.answer);
        }
        self.evidence.push(e);
    }
}

/// The exact way a refused request is reported: Kafka's error name and code,
/// with the broker's message when it sent one.
fn describe_error(e: &WireError) -> String {
    match e {
        WireError::Kafka { code, message, .. } => match message {
            Some(m) if !m.is_empty() => format!("{} ({}): {m}", code.name(), code.0),
            _ => format!("{} ({})", code.name(), code.0),
        },
        other => other.to_string(),
    }
}

fn txn_state(d: &[TxnDescription], tid: &str) -> String {
    d.iter()
        .find(|x| x.transactional_id == tid)
        .map(|x| match &x.error {
            Some(code) => format!("error {}", code.name()),
            None => x.state.clone(),
        })
        .unwrap_or_else(|| "missing from the reply".into())
}

/// Sends InitProducerId v6 (Enable2Pc=true) to the coordinator of `tid` on a
/// connection of its own, although the broker did not advertise v6, and says
/// what happened. The answer is evidence only; it never counts as acceptance.
async fn send_unadvertised_v6(client: &mut Client, tid: &str) -> String {
    let coordinator = match client.find_coordinator(tid).await {
        Ok(b) => b,
        Err(e) => return format!("not sent: no coordinator ({e})"),
    };
    let addr = format!("{}:{}", coordinator.host, coordinator.port);
    let params = InitProducerIdParams { enable_2pc: true, ..InitProducerIdParams::transactional(tid, 60_000) };
    let body = match init_producer_id::encode_request(&params, 6) {
        Ok(b) => b,
        Err(e) => return format!("not sent: {e}"),
    };
    let mut conn = match Connection::connect(&addr, "sinkhole-probe", Duration::from_secs(5)).await {
        Ok(c) => c,
        Err(e) => return format!("not sent: {e}"),
    };
    match conn.send_raw(ApiKey::InitProducerId, 6, &body, Duration::from_secs(5)).await {
        Ok(reply) => match init_producer_id::decode_response(reply, 6) {
            Ok(r) if r.error_code == 0 => {
                format!("answered without error: producerId {} epoch {}", *r.producer_id, r.producer_epoch)
            }
            Ok(r) => format!("answered {}", KafkaCode(r.error_code)),
            Err(e) => format!("answered something undecodable: {e}"),
        },
        Err(WireError::Disconnected { .. }) => "the broker closed the connection without an answer".into(),
        Err(e) => format!("no answer: {e}"),
    }
}

fn suffix() -> String {
    format!("{:08x}", rand::random::<u32>())
}

/// An open transaction the probe must abort before it ends.
struct OpenTxn {
    tid: String,
    pid: i64,
    epoch: i16,
}

pub async fn run(opts: ProbeOptions) -> Result<ProbeReport, WireError> {
    let started = Instant::now();
    let log = Log { started, evidence: vec![], progress: opts.progress };
    let cfg = ClientConfig { client_id: "sinkhole-probe".into(), ..ClientConfig::default() };
    let mut p = Probe { client: Client::connect(&opts.bootstrap, cfg).await?, log };

    // 1. What the broker advertises.
    let info = p.advertised().await?;
    let ipid_max = info.max_version(ApiKey::InitProducerId).unwrap_or(-1);
    let share_groups = p.share_groups(&info).await;

    let topic = format!("sinkhole-probe-{}", suffix());
    p.client.create_topic(&topic, 1, 1, &[]).await?;
    p.log.add("setup", format!("CreateTopics {topic} (1 partition)"), "created");
    let partition = vec![(topic.clone(), 0)];
    let mut to_abort: Vec<OpenTxn> = vec![];

    let run_id = suffix();
    let tid_keep = format!("sinkhole-probe-{run_id}-keep");
    let scan_interval = p.abort_scan_interval(&tid_keep).await;

    // 2. Enable2Pc.
    let (enable2pc, mut keep_txn) = p.enable2pc(ipid_max, &tid_keep).await;

    // 3. KeepPreparedTxn on an id with an open 2PC transaction.
    let keep_prepared_txn = p.keep_prepared_txn(ipid_max, &tid_keep, &mut keep_txn, &partition).await?;
    if let Some(t) = keep_txn.take() {
        to_abort.push(t);
    }

    // 4. Timeout survival, against a control transaction. The control (a plain
    // transaction) is opened on every broker: that the broker aborts it by
    // timeout is itself worth knowing (it is what loses data in the legacy sink).
    let tid_2pc = format!("sinkhole-probe-{run_id}-2pc");
    let tid_ctl = format!("sinkhole-probe-{run_id}-control");
    let mut candidates = vec![(tid_ctl.clone(), false)];
    if enable2pc.accepted {
        candidates.push((tid_2pc.clone(), true));
    }
    for (tid, two_pc) in &candidates {
        to_abort.push(p.open_short(tid, *two_pc, opts.short_timeout_ms, &partition).await?);
    }
    let ids: Vec<String> = candidates.iter().map(|c| c.0.clone()).collect();
    let t0 = Instant::now();
    let control_aborted_after = p.await_control_abort(&ids, &tid_ctl, t0, opts.max_wait).await?;
    let (survives_timeout, survives_timeout_detail) = match (enable2pc.accepted, control_aborted_after) {
        (false, _) => p.survival_not_tested(&opts, control_aborted_after),
        (true, None) => p.survival_undetermined(&opts, scan_interval),
        (true, Some(t)) => p.survival_after_control_abort(&opts, &tid_2pc, scan_interval, t0, t).await?,
    };
    let timeout_abort_observed = control_aborted_after.is_some();

    // 5. Leave nothing open.
    p.abort_all(to_abort).await;

    Ok(ProbeReport {
        bootstrap: opts.bootstrap.join(","),
        broker_version: broker_version(&opts, &info),
        transaction_version: info.transaction_version(),
        init_producer_id_max_version: ipid_max,
        enable2pc,
        keep_prepared_txn,
        survives_timeout,
        survives_timeout_detail,
        timeout_abort_observed,
        abort_scan_interval_ms: scan_interval,
        topic,
        share_groups,
        evidence: p.log.evidence,
        elapsed_ms: started.elapsed().as_millis() as u64,
    })
}

/// The release as far as the rig knows it, and the broker's `metadata.version` levels.
fn broker_version(opts: &ProbeOptions, info: &ApiVersionsInfo) -> BrokerVersion {
    BrokerVersion {
        release: opts.release.clone(),
        metadata_version_level: info.metadata_version_level(),
        metadata_version_max_supported: info.supported_features.get("metadata.version").map(|r| r.1),
        note: match &opts.release {
            Some(r) => format!("Kafka {r}: the installation the rig started; the wire itself carries no release string"),
            None => "the Kafka protocol carries no release string; the finalized metadata.version level is the closest fingerprint".into(),
        },
    }
}

/// The probe's connection to the cluster and its evidence so far: each step
/// of [`run`] is a method that asks the broker and logs what it answered.
struct Probe {
    client: Client,
    log: Log,
}

impl Probe {
    /// Step 1: ApiVersions, as the client asked it.
    async fn advertised(&mut self) -> Result<ApiVersionsInfo, WireError> {
        let info = self.client.api_versions(None).await?;
        let ipid_max = info.max_version(ApiKey::InitProducerId).unwrap_or(-1);
        let tv = info.transaction_version();
        let mv = info.metadata_version_level();
        self.log.add(
            "api-versions",
            "ApiVersions",
            format!(
                "InitProducerId v{}..v{ipid_max}, EndTxn max v{}, transaction.version={tv}, metadata.version={mv:?}",
                info.ranges.get(&(ApiKey::InitProducerId as i16)).map(|r| r.0).unwrap_or(-1),
                info.max_version(ApiKey::EndTxn).unwrap_or(-1)
            ),
        );
        Ok(info)
    }

    /// Share groups, with ApiVersions asked again at v4 for the supported feature ranges.
    async fn share_groups(&mut self, info: &ApiVersionsInfo) -> ShareSupport {
        let v4 = api_versions_v4(&self.client).await;
        let share_groups = share_support(info, v4.as_ref().ok());
        self.log.add(
            "share-groups",
            format!("ApiVersions v{API_VERSIONS_FEATURES_VERSION} (supported feature ranges)"),
            match &v4 {
                Ok(_) => format!(
                    "share.version supported {}, finalized {}; ShareGroupHeartbeat {}, ShareFetch {}, ShareAcknowledge {}; {}",
                    share_groups.share_version_supported.map(|(lo, hi)| format!("{lo}..{hi}")).unwrap_or_else(|| "-".into()),
                    share_groups.share_version_finalized.map(|v| v.to_string()).unwrap_or_else(|| "-".into()),
                    range_text(share_groups.share_group_heartbeat),
                    range_text(share_groups.share_fetch),
                    range_text(share_groups.share_acknowledge),
                    share_groups.api_93_note
                ),
                Err(e) => format!("not answered ({e}); supported ranges unknown"),
            },
        );
        share_groups
    }

    /// The abort scan interval of `tid`'s coordinator, when its config is readable.
    async fn abort_scan_interval(&mut self, tid: &str) -> Option<u64> {
        let scan_key = "transaction.abort.timed.out.transaction.cleanup.interval.ms".to_string();
        let scan_interval = match self.client.find_coordinator(tid).await {
            Ok(b) => self
                .client
                .describe_broker_configs(b.node_id, std::slice::from_ref(&scan_key))
                .await
                .ok()
                .and_then(|m| m.get(&scan_key).cloned().flatten())
                .and_then(|v| v.parse::<u64>().ok()),
            Err(_) => None,
        };
        self.log.add(
            "setup",
            format!("DescribeConfigs {scan_key}"),
            scan_interval.map(|v| format!("{v} ms")).unwrap_or_else(|| "unreadable".into()),
        );
        scan_interval
    }

    /// Step 2: InitProducerId v6 with Enable2Pc=true on `tid_keep`; the
    /// producer it gave when accepted. Below v6, the request is sent anyway
    /// on a side connection, for evidence.
    async fn enable2pc(&mut self, ipid_max: i16, tid_keep: &str) -> (Acceptance, Option<OpenTxn>) {
        if ipid_max < 6 {
            let why = format!("InitProducerId v6 is not advertised (broker max v{ipid_max}); Enable2Pc exists only in v6, so it cannot be sent");
            self.log.add("enable2pc", "InitProducerId v6 Enable2Pc=true", format!("not advertised: {why}"));
            // Evidence only: what the broker does with a version it did not advertise.
            let answer = send_unadvertised_v6(&mut self.client, tid_keep).await;
            self.log.add("enable2pc", format!("InitProducerId v6 {tid_keep} Enable2Pc=true, sent anyway"), answer);
            return (Acceptance { accepted: false, error: Some(why) }, None);
        }
        let p = InitProducerIdParams { enable_2pc: true, ..InitProducerIdParams::transactional(tid_keep, 60_000) };
        match self.client.init_producer_id(&p, Some(6)).await {
            Ok(o) => {
                self.log.add(
                    "enable2pc",
                    format!("InitProducerId v6 {tid_keep} Enable2Pc=true"),
                    format!("accepted: producerId {} epoch {}", o.producer_id, o.producer_epoch),
                );
                let open = OpenTxn { tid: tid_keep.to_string(), pid: o.producer_id, epoch: o.producer_epoch };
                (Acceptance { accepted: true, error: None }, Some(open))
            }
            Err(e) => {
                let d = describe_error(&e);
                self.log.add(
                    "enable2pc",
                    format!("InitProducerId v6 {tid_keep} Enable2Pc=true"),
                    format!("refused: {d}"),
                );
                (Acceptance { accepted: false, error: Some(d) }, None)
            }
        }
    }

    /// Step 3: a transaction opened under `tid_keep`, then InitProducerId v6
    /// with KeepPreparedTxn=true, then DescribeTransactions of what became of
    /// it. `keep_txn` takes the producer the broker handed the transaction to.
    async fn keep_prepared_txn(
        &mut self,
        ipid_max: i16,
        tid_keep: &str,
        keep_txn: &mut Option<OpenTxn>,
        partition: &[(String, i32)],
    ) -> Result<Acceptance, WireError> {
        if ipid_max < 6 {
            let why = format!("InitProducerId v6 is not advertised (broker max v{ipid_max}); KeepPreparedTxn exists only in v6, so it cannot be sent");
            self.log.add("keep-prepared-txn", "InitProducerId v6 KeepPreparedTxn=true", format!("not sent: {why}"));
            return Ok(Acceptance { accepted: false, error: Some(why) });
        }
        if let Some(t) = keep_txn.as_ref() {
            self.client.add_partitions_to_txn(&t.tid, t.pid, t.epoch, partition).await?;
            let (topic, n) = &partition[0];
            self.log.add("keep-prepared-txn", format!("AddPartitionsToTxn {} {topic}-{n}", t.tid), "transaction open");
        }
        let p = InitProducerIdParams {
            enable_2pc: true,
            keep_prepared_txn: true,
            ..InitProducerIdParams::transactional(tid_keep, 60_000)
        };
        let req = format!("InitProducerId v6 {tid_keep} Enable2Pc=true KeepPreparedTxn=true");
        let acc = match self.client.init_producer_id(&p, Some(6)).await {
            Ok(o) => {
                self.log.add(
                    "keep-prepared-txn",
                    req,
                    format!(
                        "accepted: producerId {} epoch {}, ongoing txn producerId {} epoch {}",
                        o.producer_id, o.producer_epoch, o.ongoing_txn_producer_id, o.ongoing_txn_producer_epoch
                    ),
                );
                if let Some(t) = keep_txn.as_mut() {
                    // The open transaction now belongs to the pair the broker handed back.
                    if o.ongoing_txn_producer_id >= 0 {
                        t.pid = o.ongoing_txn_producer_id;
                        t.epoch = o.ongoing_txn_producer_epoch;
                    } else {
                        t.pid = o.producer_id;
                        t.epoch = o.producer_epoch;
                    }
                }
                Acceptance { accepted: true, error: None }
            }
            Err(e) => {
                let d = describe_error(&e);
                self.log.add("keep-prepared-txn", req, format!("refused: {d}"));
                Acceptance { accepted: false, error: Some(d) }
            }
        };
        if keep_txn.is_some() {
            for d in self.client.describe_transactions(&[tid_keep.to_string()]).await? {
                self.log.add(
                    "keep-prepared-txn",
                    format!("DescribeTransactions {tid_keep}"),
                    format!("state {} producerId {} epoch {}", d.state, d.producer_id, d.producer_epoch),
                );
            }
        }
        Ok(acc)
    }

    /// Step 4: a transaction under `tid` (2PC or plain) with a short client timeout, left open.
    async fn open_short(
        &mut self,
        tid: &str,
        two_pc: bool,
        short_timeout_ms: i32,
        partition: &[(String, i32)],
    ) -> Result<OpenTxn, WireError> {
        let p =
            InitProducerIdParams { enable_2pc: two_pc, ..InitProducerIdParams::transactional(tid, short_timeout_ms) };
        let o = self.client.init_producer_id(&p, if two_pc { Some(6) } else { None }).await?;
        self.client.add_partitions_to_txn(tid, o.producer_id, o.producer_epoch, partition).await?;
        self.log.add(
            "survives-timeout",
            format!(
                "InitProducerId v{} {tid} Enable2Pc={two_pc} timeout {} ms + AddPartitionsToTxn",
                o.version, short_timeout_ms
            ),
            format!("open: producerId {} epoch {}", o.producer_id, o.producer_epoch),
        );
        Ok(OpenTxn { tid: tid.to_string(), pid: o.producer_id, epoch: o.producer_epoch })
    }

    /// How long after `t0` the broker aborted the control transaction by
    /// timeout, looking every 250 ms for at most `max_wait`.
    async fn await_control_abort(
        &mut self,
        ids: &[String],
        tid_ctl: &str,
        t0: Instant,
        max_wait: Duration,
    ) -> Result<Option<Duration>, WireError> {
        while t0.elapsed() < max_wait {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let d = self.client.describe_transactions(ids).await?;
            let sc = txn_state(&d, tid_ctl);
            if sc != "Ongoing" {
                self.log.add(
                    "survives-timeout",
                    format!("DescribeTransactions {tid_ctl}"),
                    format!(
                        "{sc} after {} ms: the broker aborted the control transaction by timeout",
                        t0.elapsed().as_millis()
                    ),
                );
                return Ok(Some(t0.elapsed()));
            }
        }
        Ok(None)
    }

    /// No 2PC transaction could be opened: survival is not tested.
    fn survival_not_tested(
        &mut self,
        opts: &ProbeOptions,
        control_aborted_after: Option<Duration>,
    ) -> (Option<bool>, String) {
        let why = format!(
            "not tested: Enable2Pc was not accepted, so no 2PC transaction could be opened (a plain transaction with a {} ms timeout {})",
            opts.short_timeout_ms,
            match control_aborted_after {
                Some(t) => format!("was aborted by the broker after {:.1} s", t.as_secs_f64()),
                None => format!("was not aborted within {:.0} s", opts.max_wait.as_secs_f64()),
            });
        self.log.add("survives-timeout", "-", why.clone());
        (None, why)
    }

    /// The control transaction was not aborted in time: no answer.
    fn survival_undetermined(&mut self, opts: &ProbeOptions, scan_interval: Option<u64>) -> (Option<bool>, String) {
        let why = format!(
            "undetermined: the broker did not abort the control transaction within {:.0} s (abort scan interval {}), so survival of the 2PC one proves nothing",
            opts.max_wait.as_secs_f64(), scan_interval.map(|v| format!("{v} ms")).unwrap_or_else(|| "unknown".into()));
        self.log.add("survives-timeout", "DescribeTransactions", why.clone());
        (None, why)
    }

    /// The control transaction was aborted `t` after `t0`: the 2PC one survives if it is still Ongoing.
    async fn survival_after_control_abort(
        &mut self,
        opts: &ProbeOptions,
        tid_2pc: &str,
        scan_interval: Option<u64>,
        t0: Instant,
        t: Duration,
    ) -> Result<(Option<bool>, String), WireError> {
        // The scan that aborted the control one saw the 2PC one too (opened
        // first, same timeout). Look again after one more scan to be sure.
        tokio::time::sleep(Duration::from_millis(scan_interval.unwrap_or(1000) + 250)).await;
        let d = self.client.describe_transactions(&[tid_2pc.to_string()]).await?;
        let s2 = txn_state(&d, tid_2pc);
        self.log.add(
            "survives-timeout",
            format!("DescribeTransactions {tid_2pc}"),
            format!("{s2} after {} ms", t0.elapsed().as_millis()),
        );
        Ok((Some(s2 == "Ongoing"), format!(
            "the broker aborted the control transaction by timeout within {:.1} s; the 2PC transaction with the same {} ms timeout was {s2} after {:.1} s",
            t.as_secs_f64(), opts.short_timeout_ms, t0.elapsed().as_secs_f64())))
    }

    /// Step 5: every transaction the probe opened, aborted.
    async fn abort_all(&mut self, to_abort: Vec<OpenTxn>) {
        for t in to_abort {
            match self.client.end_txn(&t.tid, t.pid, t.epoch, false, None).await {
                Ok(_) => self.log.add("cleanup", format!("EndTxn abort {}", t.tid), "aborted"),
                Err(e) => self.log.add(
                    "cleanup",
                    format!("EndTxn abort {}", t.tid),
                    format!("not aborted: {}", describe_error(&e)),
                ),
            }
        }
    }
}

fn acceptance_text(a: &Acceptance) -> String {
    match (&a.accepted, &a.error) {
        (true, _) => "accepted".into(),
        (false, Some(e)) => format!("refused: {e}"),
        (false, None) => "refused".into(),
    }
}

/// The human-readable table.
pub fn render_table(r: &ProbeReport) -> String {
    let mut rows: Vec<(&str, String)> = vec![
        ("bootstrap", r.bootstrap.clone()),
        (
            "broker version",
            format!(
                "{}; metadata.version level {} (max supported {})",
                r.broker_version
                    .release
                    .as_deref()
                    .map(|v| format!("Kafka {v}"))
                    .unwrap_or_else(|| "release not on the wire".into()),
                r.broker_version.metadata_version_level.map(|v| v.to_string()).unwrap_or_else(|| "?".into()),
                r.broker_version.metadata_version_max_supported.map(|v| v.to_string()).unwrap_or_else(|| "?".into()),
            ),
        ),
        ("transaction.version (finalized)", r.transaction_version.to_string()),
        ("InitProducerId max version", format!("v{}", r.init_producer_id_max_version)),
        ("InitProducerId Enable2Pc=true", acceptance_text(&r.enable2pc)),
        ("InitProducerId KeepPreparedTxn=true", acceptance_text(&r.keep_prepared_txn)),
        (
            "2PC txn survives its timeout",
            format!(
                "{} — {}",
                match r.survives_timeout {
                    Some(true) => "yes",
                    Some(false) => "NO",
                    None => "unknown",
                },
                r.survives_timeout_detail
            ),
        ),
    ];
    rows.push((
        "plain txn aborted on timeout",
        if r.timeout_abort_observed { "yes (the broker's abort scan ran during the probe)" } else { "not observed" }
            .into(),
    ));
    let s = &r.share_groups;
    rows.push((
        "share groups (KIP-932)",
        format!(
            "{}; share.version finalized {}, supported {}",
            if s.enabled { "enabled" } else { "NOT enabled" },
            s.share_version_finalized.map(|v| v.to_string()).unwrap_or_else(|| "-".into()),
            s.share_version_supported.map(|(lo, hi)| format!("{lo}..{hi}")).unwrap_or_else(|| "unknown".into()),
        ),
    ));
    rows.push((
        "ShareGroupHeartbeat / ShareFetch / ShareAcknowledge",
        format!(
            "{} / {} / {}",
            range_text(s.share_group_heartbeat),
            range_text(s.share_fetch),
            range_text(s.share_acknowledge)
        ),
    ));
    rows.push((
        "TxnShareAcknowledge (API 93)",
        match s.txn_share_acknowledge {
            Some(false) => "no: API key 93 is not advertised".to_string(),
            Some(true) => "yes".to_string(),
            None => format!("undetermined: {}", s.api_93_note),
        },
    ));
    rows.push(("probe took", format!("{:.1} s", r.elapsed_ms as f64 / 1000.0)));
    let w = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (k, v) in rows {
        out.push_str(&format!("{k:<w$}  {v}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn info(
        ranges: &[(i16, (i16, i16))],
        finalized: &[(&str, i16)],
        supported: &[(&str, (i16, i16))],
    ) -> ApiVersionsInfo {
        ApiVersionsInfo {
            ranges: ranges.iter().copied().collect(),
            supported_features: supported.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            finalized_features: finalized.iter().map(|(k, v)| (k.to_string(), *v)).collect::<BTreeMap<_, _>>(),
            finalized_features_epoch: 1,
        }
    }

    /// The 4.4.0 answers measured (docs/PROTOCOL.md §6): share.version 0..2 finalized 2,
    /// key 93 advertised v0 (StreamsGroupTopologyDescriptionUpdate).
    #[test]
    fn share_support_of_a_4_4_broker() {
        let v3 = info(&[(76, (1, 1)), (78, (1, 2)), (79, (1, 2)), (93, (0, 0))], &[("share.version", 2)], &[]);
        let v4 = info(&[], &[], &[("share.version", (0, 2)), ("streams.version", (0, 1))]);
        let s = share_support(&v3, Some(&v4));
        assert!(s.enabled);
        assert_eq!(s.share_version_supported, Some((0, 2)));
        assert_eq!(s.share_fetch, Some((1, 2)));
        assert_eq!(s.api_93, Some((0, 0)));
        assert_eq!(s.txn_share_acknowledge, None, "an advertised 93 is not taken for TxnShareAcknowledge");
        assert!(s.api_93_note.contains("StreamsGroupTopologyDescriptionUpdate"), "{}", s.api_93_note);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["share_fetch"], serde_json::json!([1, 2]));
        assert!(json["txn_share_acknowledge"].is_null());
    }

    #[test]
    fn share_support_without_share_groups_or_key_93() {
        // 4.2.0: share.version 0..1 finalized 1, no key 93.
        let v3 = info(&[(76, (1, 1)), (78, (1, 2)), (79, (1, 2))], &[("share.version", 1)], &[]);
        let s = share_support(&v3, None);
        assert!(s.enabled);
        assert_eq!(s.share_version_supported, None, "unknown without ApiVersions v4");
        assert_eq!(s.txn_share_acknowledge, Some(false));
        // Not finalized (e.g. share.version 0): not enabled even with the APIs.
        let off = info(&[(76, (1, 1)), (78, (1, 2)), (79, (1, 2))], &[("share.version", 0)], &[]);
        assert!(!share_support(&off, None).enabled);
        assert!(!share_support(&info(&[], &[("share.version", 1)], &[]), None).enabled);
    }
}
