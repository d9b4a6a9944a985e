//! The proxy against an in-process fake broker that speaks Kafka framing:
//! requests and responses are real Kafka messages encoded by kafka-protocol.
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, EndTxnRequest, EndTxnResponse, FindCoordinatorRequest, FindCoordinatorResponse, LeaveGroupRequest,
    MetadataRequest, MetadataResponse, RequestHeader, TransactionalId,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use sinkhole_faults::proxy::frame::FrameReader;
use sinkhole_faults::proxy::{
    classify, Action, Frames, ListenerKind, Match, Peer, PeerGroup, Proxy, Route, Rule, RuleStats,
};
use sinkhole_kafka::header::request_header;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A fake broker: answers EndTxn, FindCoordinator and Metadata (Metadata
/// after 200 ms), closes the connection on LeaveGroup, and keeps every
/// request frame it received.
struct Fake {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Bytes>>>,
}

fn encode_frame(head: impl FnOnce(&mut BytesMut), body: &impl Encodable, version: i16) -> Bytes {
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    head(&mut buf);
    body.encode(&mut buf, version).unwrap();
    let len = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    buf.freeze()
}

fn response(key: ApiKey, version: i16, corr: i32, body: &impl Encodable) -> Bytes {
    encode_frame(
        |b| {
            b.put_i32(corr);
            if key.response_header_version(version) >= 1 {
                b.put_u8(0);
            }
        },
        body,
        version,
    )
}

fn request(key: ApiKey, version: i16, corr: i32, client_id: &str, body: &impl Encodable) -> Bytes {
    let h = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(corr)
        .with_client_id(Some(StrBytes::from_string(client_id.to_string())));
    encode_frame(|b| h.encode(b, key.request_header_version(version)).unwrap(), body, version)
}

fn end_txn(tid: &str) -> EndTxnRequest {
    EndTxnRequest::default()
        .with_transactional_id(TransactionalId(StrBytes::from_string(tid.to_string())))
        .with_committed(true)
}

impl Fake {
    async fn start() -> Fake {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        tokio::spawn(async move {
            while let Ok((s, _)) = l.accept().await {
                let seen = seen2.clone();
                tokio::spawn(async move {
                    let (rd, mut wr) = s.into_split();
                    let mut frames = FrameReader::new(rd);
                    while let Ok(Some(f)) = frames.next().await {
                        seen.lock().unwrap().push(f.clone());
                        let h = request_header(&f).unwrap();
                        let key = ApiKey::try_from(h.api_key).unwrap();
                        let (v, c) = (h.api_version, h.correlation_id);
                        let out = match key {
                            ApiKey::EndTxn => response(key, v, c, &EndTxnResponse::default()),
                            ApiKey::FindCoordinator => response(key, v, c, &FindCoordinatorResponse::default()),
                            ApiKey::Metadata => {
                                tokio::time::sleep(Duration::from_millis(200)).await;
                                response(key, v, c, &MetadataResponse::default())
                            }
                            // The broker closes the connection (as a stopped broker does).
                            ApiKey::LeaveGroup => return,
                            _ => continue,
                        };
                        if wr.write_all(&out).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Fake { addr, seen }
    }

    fn seen(&self) -> Vec<Bytes> {
        self.seen.lock().unwrap().clone()
    }

    fn seen_corrs(&self) -> Vec<i32> {
        self.seen().iter().map(|f| request_header(f).unwrap().correlation_id).collect()
    }
}

async fn setup(seed: u64) -> (Fake, Proxy, SocketAddr) {
    let fake = Fake::start().await;
    let listen = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let route = Route { node: 1, kind: ListenerKind::Broker, listen, upstream: fake.addr };
    let proxy = Proxy::start(vec![route], seed).await.unwrap();
    (fake, proxy, listen)
}

struct Client {
    rd: FrameReader<tokio::net::tcp::OwnedReadHalf>,
    wr: tokio::net::tcp::OwnedWriteHalf,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Client {
        let (rd, wr) = TcpStream::connect(addr).await.unwrap().into_split();
        Client { rd: FrameReader::new(rd), wr }
    }
    async fn send(&mut self, f: &Bytes) {
        self.wr.write_all(f).await.unwrap();
    }
    /// The next response frame within `within`, or None.
    async fn recv(&mut self, within: Duration) -> Option<Bytes> {
        tokio::time::timeout(within, self.rd.next()).await.ok().and_then(|r| r.ok().flatten())
    }
}

fn corr_of(resp: &Bytes) -> i32 {
    i32::from_be_bytes([resp[4], resp[5], resp[6], resp[7]])
}

fn rule(name: &str, matches: Match, action: Action) -> Rule {
    Rule { name: name.into(), matches, action }
}

const W0: &str = "sinkhole-twopc-inject-0-1";
const SEC: Duration = Duration::from_secs(2);
const SHORT: Duration = Duration::from_millis(300);

#[test]
fn classify_reads_worker_ids_from_the_right() {
    assert_eq!(classify("sinkhole-twopc-inject-3-12"), Peer::Worker(3));
    assert_eq!(classify("sinkhole-legacy-0-1"), Peer::Worker(0));
    assert_eq!(classify("sinkhole-rdkafka-txn-7-2"), Peer::Worker(7));
    assert_eq!(classify("sinkhole-probe"), Peer::Other("sinkhole-probe".into()));
    assert_eq!(classify("sinkhole-faults"), Peer::Other("sinkhole-faults".into()));
    assert_eq!(classify("sinkhole--1-2"), Peer::Other("sinkhole--1-2".into()));
    assert_eq!(classify(""), Peer::Other(String::new()));
    // The Flink subject's producers: `producer-` + KafkaSink's first transactional id.
    assert_eq!(classify("producer-sinkhole-4ce5a1b2-flink-kafkasink-1-4"), Peer::Worker(1));
    assert_eq!(classify("producer-7"), Peer::Other("producer-7".into()));
    // Inter-node client ids of Kafka 4.4.0 (see `broker_id` in the proxy).
    assert_eq!(classify("2"), Peer::Broker(2));
    assert_eq!(classify("raft-client-3"), Peer::Broker(3));
    assert_eq!(classify("broker-1-fetcher-0"), Peer::Broker(1));
    assert_eq!(classify("broker-2-txn-marker-sender"), Peer::Broker(2));
    assert_eq!(classify("AddPartitionsManager-client-3"), Peer::Broker(3));
    assert_eq!(classify("broker-x-fetcher-0"), Peer::Other("broker-x-fetcher-0".into()));
}

#[tokio::test]
async fn frames_split_across_writes_pass_byte_for_byte_both_ways() {
    let (fake, proxy, listen) = setup(1).await;
    let mut c = Client::connect(listen).await;
    let req = request(ApiKey::EndTxn, 3, 5, W0, &end_txn("t"));
    // One byte at a time: the proxy must reassemble the frame.
    for b in req.iter() {
        c.wr.write_all(&[*b]).await.unwrap();
        c.wr.flush().await.unwrap();
    }
    let resp = c.recv(SEC).await.expect("a response");
    assert_eq!(fake.seen(), vec![req]);
    assert_eq!(resp, response(ApiKey::EndTxn, 3, 5, &EndTxnResponse::default()));
    assert_eq!(proxy.connections(), vec![(Peer::Worker(0), 1, W0.to_string())]);
    proxy.shutdown().await;
}

#[tokio::test]
async fn a_bad_length_closes_the_connection() {
    let (_fake, proxy, listen) = setup(1).await;
    let mut s = TcpStream::connect(listen).await.unwrap();
    s.write_all(&(-1i32).to_be_bytes()).await.unwrap();
    let mut buf = [0u8; 8];
    let r = tokio::time::timeout(SEC, s.read(&mut buf)).await.expect("closed in time");
    assert!(matches!(r, Ok(0) | Err(_)), "{r:?}");
    proxy.shutdown().await;
}

#[tokio::test]
async fn drop_of_one_transactional_ids_end_txn_responses_with_samples() {
    let (fake, proxy, listen) = setup(1).await;
    let id = proxy.add(rule(
        "drop-endtxn",
        Match {
            api_keys: vec![ApiKey::EndTxn as i16],
            frames: Some(Frames::Response),
            transactional_id: Some("tid-a".into()),
            ..Match::default()
        },
        Action::Drop,
    ));
    let mut c = Client::connect(listen).await;
    c.send(&request(ApiKey::EndTxn, 5, 17, W0, &end_txn("tid-a"))).await;
    c.send(&request(ApiKey::EndTxn, 5, 18, W0, &end_txn("tid-b"))).await;
    let resp = c.recv(SEC).await.expect("tid-b's answer");
    assert_eq!(corr_of(&resp), 18);
    assert!(c.recv(SHORT).await.is_none(), "tid-a's answer was dropped");
    assert_eq!(fake.seen_corrs(), vec![17, 18], "both requests reached the broker");
    let stats = proxy.remove(id);
    assert_eq!((stats.matched, stats.dropped), (1, 1));
    assert!(stats.acted());
    assert_eq!(stats.samples, vec!["EndTxn v5 response corr 17 tid tid-a worker-0 → broker-1: dropped".to_string()]);
    // Removed: the next answer passes, and the final stats stay readable.
    c.send(&request(ApiKey::EndTxn, 5, 19, W0, &end_txn("tid-a"))).await;
    assert_eq!(corr_of(&c.recv(SEC).await.unwrap()), 19);
    assert_eq!(proxy.stats(id), stats);
    proxy.shutdown().await;
}

/// A rule that waited for one transactional id's frames says what passed instead: the frames
/// of its kind under other ids, and which ids; or that none of its kind passed at all.
#[tokio::test]
async fn a_rule_that_matched_nothing_says_which_ids_passed_instead() {
    let (_fake, proxy, listen) = setup(1).await;
    let delay = Action::Delay { delay_ms: 1_000, jitter_ms: 0 };
    let m = |api: ApiKey| Match {
        api_keys: vec![api as i16],
        frames: Some(Frames::Request),
        transactional_id: Some("tid-a".into()),
        nth: Some(1),
        ..Match::default()
    };
    let end = rule("late-commit", m(ApiKey::EndTxn), delay.clone());
    let add = rule("late-add", m(ApiKey::AddOffsetsToTxn), delay);
    let (end_id, add_id) = (proxy.add(end.clone()), proxy.add(add.clone()));
    assert_eq!(proxy.rule(end_id), Some(end.clone()));
    let mut c = Client::connect(listen).await;
    for (corr, tid) in [(1, "tid-b"), (2, "tid-c"), (3, "tid-b")] {
        c.send(&request(ApiKey::EndTxn, 5, corr, W0, &end_txn(tid))).await;
        assert_eq!(corr_of(&c.recv(SEC).await.unwrap()), corr, "not delayed");
    }
    let s = proxy.remove(end_id);
    assert_eq!((s.matched, s.other_ids, s.other_id_samples.clone()), (0, 3, vec!["tid-b".into(), "tid-c".into()]));
    assert!(!s.acted());
    assert_eq!(
        end.why_no_effect(&s),
        "the rule matched no frame: 3 EndTxn request frame(s) passed for other transactional ids (tid-b, tid-c), none for tid-a"
    );
    let s = proxy.remove(add_id);
    assert_eq!((s.matched, s.other_ids), (0, 0));
    assert_eq!(
        add.why_no_effect(&s),
        "the rule matched no frame: no AddOffsetsToTxn request frame passed the proxy while it was in place, for tid-a or any other transactional id"
    );
    assert_eq!(proxy.rule(end_id), None, "removed");
    proxy.shutdown().await;
}

#[tokio::test]
async fn nth_drops_only_the_nth_matching_request() {
    let (fake, proxy, listen) = setup(1).await;
    let id = proxy.add(rule(
        "second",
        Match {
            api_keys: vec![ApiKey::EndTxn as i16],
            frames: Some(Frames::Request),
            nth: Some(2),
            ..Match::default()
        },
        Action::Drop,
    ));
    let mut c = Client::connect(listen).await;
    for corr in 1..=3 {
        c.send(&request(ApiKey::EndTxn, 4, corr, W0, &end_txn("t"))).await;
    }
    assert_eq!(corr_of(&c.recv(SEC).await.unwrap()), 1);
    assert_eq!(corr_of(&c.recv(SEC).await.unwrap()), 3);
    assert_eq!(fake.seen_corrs(), vec![1, 3]);
    let s = proxy.stats(id);
    assert_eq!((s.matched, s.dropped), (3, 1));
    proxy.shutdown().await;
}

#[tokio::test]
async fn delay_holds_frames_in_order_and_remove_releases_them() {
    let (_fake, proxy, listen) = setup(7).await;
    // The first EndTxn request is held 400 ms; the second is not delayed by
    // the rule but must not overtake the first.
    let id = proxy.add(rule(
        "hold-first",
        Match {
            api_keys: vec![ApiKey::EndTxn as i16],
            frames: Some(Frames::Request),
            nth: Some(1),
            ..Match::default()
        },
        Action::Delay { delay_ms: 400, jitter_ms: 0 },
    ));
    let mut c = Client::connect(listen).await;
    let t0 = Instant::now();
    c.send(&request(ApiKey::EndTxn, 4, 1, W0, &end_txn("t"))).await;
    c.send(&request(ApiKey::EndTxn, 4, 2, W0, &end_txn("t"))).await;
    assert_eq!(corr_of(&c.recv(SEC).await.unwrap()), 1);
    let waited = t0.elapsed();
    assert_eq!(corr_of(&c.recv(SEC).await.unwrap()), 2);
    assert!(waited >= Duration::from_millis(390), "held only {waited:?}");
    assert_eq!(proxy.remove(id).delayed, 1);

    // A response held for a minute is released when its rule goes.
    let id = proxy.add(rule(
        "hold-long",
        Match { frames: Some(Frames::Response), ..Match::default() },
        Action::Delay { delay_ms: 60_000, jitter_ms: 1_000 },
    ));
    c.send(&request(ApiKey::EndTxn, 4, 3, W0, &end_txn("t"))).await;
    assert!(c.recv(SHORT).await.is_none(), "held");
    let t1 = Instant::now();
    let stats = proxy.remove(id);
    assert_eq!(stats.delayed, 1);
    assert!(stats.samples[0].contains("delayed") && stats.samples[0].contains("corr 3"), "{:?}", stats.samples);
    assert_eq!(corr_of(&c.recv(SEC).await.expect("released")), 3);
    assert!(t1.elapsed() < Duration::from_secs(1));
    proxy.shutdown().await;
}

/// KAFKA-17754's interleaving (docs/PROTOCOL.md §1.9): a held request still
/// reaches the broker after the client gave up on its connection, and a
/// retry the client sends on a new connection overtakes it. Java's
/// `NetworkClient` closes a connection whose request timed out and
/// `TransactionManager` re-sends the request on a new one; the bytes of the
/// first one, already on their way, are not called back by that close.
#[tokio::test]
async fn a_held_request_outlives_the_clients_close_and_a_retry_overtakes_it() {
    let (fake, proxy, listen) = setup(7).await;
    let id = proxy.add(rule(
        "late-commit",
        Match {
            api_keys: vec![ApiKey::EndTxn as i16],
            frames: Some(Frames::Request),
            nth: Some(1),
            ..Match::default()
        },
        Action::Delay { delay_ms: 400, jitter_ms: 0 },
    ));
    let t0 = Instant::now();
    let mut first = Client::connect(listen).await;
    first.send(&request(ApiKey::EndTxn, 4, 1, W0, &end_txn("t"))).await;
    assert!(first.recv(Duration::from_millis(100)).await.is_none(), "held");
    // The client times out and closes the connection (FIN), then retries.
    drop(first);
    let mut retry = Client::connect(listen).await;
    retry.send(&request(ApiKey::EndTxn, 4, 2, W0, &end_txn("t"))).await;
    assert_eq!(corr_of(&retry.recv(SEC).await.expect("the retry is answered")), 2);
    assert!(t0.elapsed() < Duration::from_millis(390), "the retry was not held");
    assert_eq!(fake.seen_corrs(), vec![2], "only the retry so far");
    // The first request arrives late, on the connection the client left.
    let deadline = Instant::now() + SEC;
    while fake.seen_corrs().len() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(fake.seen_corrs(), vec![2, 1], "the late request reached the broker after the retry");
    assert!(t0.elapsed() >= Duration::from_millis(390), "held only {:?}", t0.elapsed());
    let stats = proxy.remove(id);
    assert_eq!((stats.matched, stats.delayed), (2, 1));
    assert!(stats.samples[0].contains("corr 1") && stats.samples[0].contains("delayed 400 ms"), "{:?}", stats.samples);
    proxy.shutdown().await;
}

#[tokio::test]
async fn throttle_paces_a_link_to_its_rate_in_order_and_remove_releases_it() {
    let (_fake, proxy, listen) = setup(7).await;
    // Requests towards the broker at 25 000 bytes/s: five frames of about
    // 5 000 bytes take about a second, the first almost none of it.
    let id = proxy.add(rule(
        "slow-link",
        Match { frames: Some(Frames::Request), ..Match::default() },
        Action::Throttle { bytes_per_sec: 25_000 },
    ));
    let mut c = Client::connect(listen).await;
    let big = "t".repeat(5_000);
    let frames: Vec<Bytes> = (1..=5).map(|corr| request(ApiKey::EndTxn, 4, corr, W0, &end_txn(&big))).collect();
    let bytes: usize = frames.iter().map(|f| f.len()).sum();
    let t0 = Instant::now();
    for f in &frames {
        c.send(f).await;
    }
    let mut corrs = vec![];
    let mut first = None;
    for _ in 0..5 {
        corrs.push(corr_of(&c.recv(Duration::from_secs(5)).await.expect("answered")));
        first.get_or_insert(t0.elapsed());
    }
    let took = t0.elapsed();
    assert_eq!(corrs, vec![1, 2, 3, 4, 5], "order kept");
    let expected = Duration::from_secs_f64(bytes as f64 / 25_000.0);
    assert!(took + Duration::from_millis(50) >= expected, "{took:?} for {bytes} bytes at 25 000 bytes/s");
    assert!(took < expected + Duration::from_millis(800), "{took:?}: paced, not stalled");
    assert!(first.unwrap() < expected / 2, "the first frame went early: {first:?}");
    let stats = proxy.remove(id);
    assert_eq!((stats.throttled, stats.throttled_bytes), (5, bytes as u64), "{stats:?}");
    assert!(stats.acted() && stats.samples[0].contains("throttled"), "{:?}", stats.samples);

    // At one byte a second a frame would wait hours: the heal releases it.
    let id = proxy.add(rule(
        "crawl",
        Match { frames: Some(Frames::Request), ..Match::default() },
        Action::Throttle { bytes_per_sec: 1 },
    ));
    c.send(&request(ApiKey::EndTxn, 4, 6, W0, &end_txn("t"))).await;
    assert!(c.recv(SHORT).await.is_none(), "held");
    let t1 = Instant::now();
    assert_eq!(proxy.remove(id).throttled, 1);
    assert_eq!(corr_of(&c.recv(SEC).await.expect("released")), 6);
    assert!(t1.elapsed() < Duration::from_secs(1));
    proxy.shutdown().await;
}

#[tokio::test]
async fn error_on_requests_is_answered_by_the_proxy_in_response_order() {
    let (fake, proxy, listen) = setup(1).await;
    let id = proxy.add(rule(
        "no-coordinator",
        Match { api_keys: vec![ApiKey::FindCoordinator as i16], frames: Some(Frames::Request), ..Match::default() },
        Action::Error { code: 15 },
    ));
    let mut c = Client::connect(listen).await;
    // Metadata is answered 200 ms later by the broker; the injected answer to
    // the FindCoordinator sent after it must not overtake it.
    c.send(&request(ApiKey::Metadata, 12, 1, W0, &MetadataRequest::default())).await;
    for (corr, version) in [(2, 3), (3, 4)] {
        let fc = FindCoordinatorRequest::default().with_key_type(1);
        let fc = if version >= 4 {
            fc.with_coordinator_keys(vec![StrBytes::from_static_str("tid-x")])
        } else {
            fc.with_key(StrBytes::from_static_str("tid-x"))
        };
        c.send(&request(ApiKey::FindCoordinator, version, corr, W0, &fc)).await;
    }
    let first = c.recv(SEC).await.unwrap();
    assert_eq!(corr_of(&first), 1);
    for (corr, version) in [(2, 3), (3, 4)] {
        let r = c.recv(SEC).await.unwrap();
        assert_eq!(corr_of(&r), corr);
        let mut body = r.slice(9..); // FindCoordinator v3+ has response header v1
        let decoded = FindCoordinatorResponse::decode(&mut body, version).unwrap();
        if version >= 4 {
            assert_eq!(decoded.coordinators.len(), 1);
            assert_eq!(decoded.coordinators[0].error_code, 15);
            assert_eq!(decoded.coordinators[0].key.as_str(), "tid-x");
        } else {
            assert_eq!(decoded.error_code, 15);
        }
    }
    assert_eq!(fake.seen_corrs(), vec![1], "FindCoordinator never reached the broker");
    let s = proxy.remove(id);
    assert_eq!(s.errors_injected, 2);
    assert!(s.samples[0].starts_with("FindCoordinator v3 request corr 2 tid tid-x worker-0 → broker-1: error 15"));
    proxy.shutdown().await;
}

#[tokio::test]
async fn error_on_responses_replaces_the_brokers_code() {
    let (_fake, proxy, listen) = setup(1).await;
    proxy.add(rule(
        "fence",
        Match { api_keys: vec![ApiKey::EndTxn as i16], frames: Some(Frames::Response), ..Match::default() },
        Action::Error { code: 90 },
    ));
    let mut c = Client::connect(listen).await;
    c.send(&request(ApiKey::EndTxn, 5, 4, W0, &end_txn("t"))).await;
    let r = c.recv(SEC).await.unwrap();
    let mut body = r.slice(9..);
    let decoded = EndTxnResponse::decode(&mut body, 5).unwrap();
    assert_eq!(decoded.error_code, 90);
    assert_eq!(decoded.producer_epoch, EndTxnResponse::default().producer_epoch, "the rest is kept");
    proxy.shutdown().await;
}

async fn is_reset(c: &mut Client) -> bool {
    match tokio::time::timeout(SEC, c.rd.next()).await {
        Ok(Err(e)) => e.kind() == std::io::ErrorKind::ConnectionReset,
        _ => false,
    }
}

#[tokio::test]
async fn reset_closes_live_and_new_worker_connections_but_not_other_clients() {
    let (_fake, proxy, listen) = setup(1).await;
    let mut worker = Client::connect(listen).await;
    let mut other = Client::connect(listen).await;
    worker.send(&request(ApiKey::EndTxn, 4, 1, W0, &end_txn("t"))).await;
    other.send(&request(ApiKey::EndTxn, 4, 1, "sinkhole-probe", &end_txn("t"))).await;
    assert!(worker.recv(SEC).await.is_some() && other.recv(SEC).await.is_some());
    let id = proxy.add(rule(
        "reset-workers",
        Match { from: vec![PeerGroup::Workers], to: vec![PeerGroup::Broker(1)], ..Match::default() },
        Action::Reset,
    ));
    assert!(is_reset(&mut worker).await, "the live worker connection is reset");
    let mut again = Client::connect(listen).await;
    again.send(&request(ApiKey::EndTxn, 4, 1, W0, &end_txn("t"))).await;
    assert!(is_reset(&mut again).await, "a new worker connection is reset once classified");
    other.send(&request(ApiKey::EndTxn, 4, 2, "sinkhole-probe", &end_txn("t"))).await;
    assert_eq!(corr_of(&other.recv(SEC).await.expect("other clients pass")), 2);
    let s: RuleStats = proxy.remove(id);
    assert_eq!((s.matched, s.connections_reset), (2, 2), "{:?}", s.samples);
    assert!(s.samples.iter().any(|x| x.starts_with("live connection worker-0 → broker-1")), "{:?}", s.samples);
    assert!(s.samples.iter().any(|x| x.starts_with("new connection worker-0 → broker-1")), "{:?}", s.samples);
    proxy.shutdown().await;
}

#[tokio::test]
async fn one_way_drops_only_bytes_from_the_from_side() {
    let (fake, proxy, listen) = setup(1).await;
    // The connection goes worker-0 → broker-1; the rule's "from" is the
    // broker, so only bytes broker-1 sends (responses) are lost.
    let id = proxy.add(rule(
        "broker-to-worker",
        Match { from: vec![PeerGroup::Broker(1)], to: vec![PeerGroup::Worker(0)], one_way: true, ..Match::default() },
        Action::Drop,
    ));
    let mut c = Client::connect(listen).await;
    c.send(&request(ApiKey::EndTxn, 4, 1, W0, &end_txn("t"))).await;
    assert!(c.recv(SHORT).await.is_none());
    assert_eq!(fake.seen_corrs(), vec![1], "the request went through");
    let s = proxy.remove(id);
    assert!(s.samples[0].starts_with("EndTxn v4 response corr 1"), "{:?}", s.samples);

    // Two ways: the request is lost as well.
    let id = proxy.add(rule(
        "both",
        Match { from: vec![PeerGroup::Broker(1)], to: vec![PeerGroup::Worker(0)], both_ways: true, ..Match::default() },
        Action::Drop,
    ));
    c.send(&request(ApiKey::EndTxn, 4, 2, W0, &end_txn("t"))).await;
    assert!(c.recv(SHORT).await.is_none());
    assert_eq!(fake.seen_corrs(), vec![1], "the request was dropped too");
    assert_eq!(proxy.remove(id).dropped, 1);

    // A rule naming another broker does nothing to this connection.
    let id = proxy.add(rule(
        "unrelated",
        Match { from: vec![PeerGroup::Broker(2)], to: vec![PeerGroup::Worker(0)], both_ways: true, ..Match::default() },
        Action::Drop,
    ));
    c.send(&request(ApiKey::EndTxn, 4, 3, W0, &end_txn("t"))).await;
    assert_eq!(corr_of(&c.recv(SEC).await.unwrap()), 3);
    assert_eq!(proxy.remove(id).matched, 0);
    proxy.shutdown().await;
}

/// A partition as TCP lives it: the bytes that cannot cross are held, not
/// lost, and cross in order once it heals. The client that waited gets its
/// answer at the heal, not after its request timeout.
#[tokio::test]
async fn hold_keeps_frames_until_the_heal_and_delivers_them_in_order() {
    let (fake, proxy, listen) = setup(1).await;
    let id = proxy.add(rule(
        "partition",
        Match { from: vec![PeerGroup::Workers], to: vec![PeerGroup::Broker(1)], both_ways: true, ..Match::default() },
        Action::Hold,
    ));
    let mut c = Client::connect(listen).await;
    c.send(&request(ApiKey::EndTxn, 4, 1, W0, &end_txn("t"))).await;
    c.send(&request(ApiKey::EndTxn, 4, 2, W0, &end_txn("t"))).await;
    assert!(c.recv(SHORT).await.is_none(), "nothing crosses the partition");
    assert!(fake.seen_corrs().is_empty(), "the broker received nothing");
    let healed = Instant::now();
    let stats = proxy.remove(id);
    assert_eq!((stats.matched, stats.held, stats.dropped), (2, 2, 0));
    assert!(stats.acted());
    assert_eq!(stats.samples[0], "EndTxn v4 request corr 1 tid t worker-0 → broker-1: held until the heal");
    assert_eq!(corr_of(&c.recv(SEC).await.expect("answered after the heal")), 1);
    assert_eq!(corr_of(&c.recv(SEC).await.expect("in order")), 2);
    assert!(healed.elapsed() < Duration::from_secs(1), "delivered at the heal: {:?}", healed.elapsed());
    assert_eq!(fake.seen_corrs(), vec![1, 2]);
    proxy.shutdown().await;
}

/// Loss as TCP lives it: a lost frame is late by the retransmission timeout,
/// doubled for every further loss drawn, and the frames behind it wait.
/// Nothing is lost for good.
#[tokio::test]
async fn lose_makes_a_lost_frame_late_by_the_retransmission_timeouts_and_loses_none() {
    let (fake, proxy, listen) = setup(3).await;
    // Probability 1: every resend is lost again, up to the cap of 4 losses,
    // so the first request waits 100 × (2^4 − 1) = 1500 ms.
    let id = proxy.add(rule(
        "always-lost-once",
        Match { frames: Some(Frames::Request), nth: Some(1), probability: Some(1.0), ..Match::default() },
        Action::Lose { rto_ms: 100 },
    ));
    let mut c = Client::connect(listen).await;
    let t0 = Instant::now();
    c.send(&request(ApiKey::EndTxn, 4, 1, W0, &end_txn("t"))).await;
    c.send(&request(ApiKey::EndTxn, 4, 2, W0, &end_txn("t"))).await;
    assert_eq!(corr_of(&c.recv(Duration::from_secs(4)).await.expect("the lost request arrives")), 1);
    let waited = t0.elapsed();
    assert_eq!(corr_of(&c.recv(SEC).await.expect("the next one behind it")), 2);
    assert!(waited >= Duration::from_millis(1490), "late only {waited:?}");
    let stats = proxy.remove(id);
    assert_eq!((stats.resent, stats.dropped), (1, 0));
    assert!(stats.samples[0].ends_with("lost, sent again 1500 ms later"), "{:?}", stats.samples);

    // Half the frames lost: every one still arrives, in order.
    let id = proxy.add(rule(
        "half",
        Match { frames: Some(Frames::Request), probability: Some(0.5), ..Match::default() },
        Action::Lose { rto_ms: 5 },
    ));
    for corr in 3..23 {
        c.send(&request(ApiKey::EndTxn, 4, corr, W0, &end_txn("t"))).await;
    }
    let mut got = Vec::new();
    while let Some(r) = c.recv(SEC).await {
        got.push(corr_of(&r));
        if got.len() == 20 {
            break;
        }
    }
    assert_eq!(got, (3..23).collect::<Vec<_>>());
    let stats = proxy.remove(id);
    assert!(stats.resent > 0 && stats.resent < 20, "{stats:?}");
    assert_eq!(fake.seen_corrs().len(), 22);
    proxy.shutdown().await;
}

#[tokio::test]
async fn group_rules_never_touch_other_clients_and_probability_is_seeded() {
    let (_fake, proxy, listen) = setup(42).await;
    let id =
        proxy.add(rule("all-from-workers", Match { from: vec![PeerGroup::Workers], ..Match::default() }, Action::Drop));
    let mut c = Client::connect(listen).await;
    c.send(&request(ApiKey::EndTxn, 4, 1, "sinkhole-checker", &end_txn("t"))).await;
    assert!(c.recv(SEC).await.is_some());
    assert_eq!(proxy.remove(id).matched, 0);

    // Half the frames, chosen by the seed: two proxies with one seed choose alike.
    let mut picks = Vec::new();
    for _ in 0..2 {
        let (_fake, proxy, listen) = setup(42).await;
        let id = proxy.add(rule(
            "half",
            Match { frames: Some(Frames::Request), probability: Some(0.5), ..Match::default() },
            Action::Drop,
        ));
        let mut c = Client::connect(listen).await;
        for corr in 0..20 {
            c.send(&request(ApiKey::EndTxn, 4, corr, W0, &end_txn("t"))).await;
        }
        let mut got = Vec::new();
        while let Some(r) = c.recv(SHORT).await {
            got.push(corr_of(&r));
        }
        let s = proxy.remove(id);
        assert_eq!(s.dropped as usize + got.len(), 20);
        picks.push(got);
        proxy.shutdown().await;
    }
    assert_eq!(picks[0], picks[1]);
    assert!(!picks[0].is_empty() && picks[0].len() < 20, "{:?}", picks[0]);
    proxy.shutdown().await;
}

#[tokio::test]
async fn a_close_by_the_broker_reaches_the_client() {
    let (_fake, proxy, listen) = setup(1).await;
    let mut c = Client::connect(listen).await;
    c.send(&request(ApiKey::LeaveGroup, 4, 1, W0, &LeaveGroupRequest::default())).await;
    let r = tokio::time::timeout(SEC, c.rd.next()).await.expect("the close is passed on at once");
    assert!(matches!(r, Ok(None)), "{r:?}");
    proxy.shutdown().await;
}
