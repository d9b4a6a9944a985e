//! One proxied connection: requests from the client to the upstream
//! listener, responses back, frame by frame, each checked against the rules.
//!
//! Four futures per connection, polled together: a reader and a writer per
//! direction. Readers parse and decide; writers hold delayed frames (in
//! order: a frame never overtakes an earlier one in its direction, as on a
//! TCP stream) and write. The queues between them are unbounded: Kafka is
//! request/response with a bounded number of requests in flight per
//! connection (`max.in.flight.requests.per.connection`, and brokers read one
//! request at a time per connection), so what a queue can hold is bounded by
//! the peers, not by the proxy.
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use sinkhole_kafka::encode::{encode_response, replace_body};
use sinkhole_kafka::header::{request_header, response_body_offset, response_correlation_id};
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::watch;
use tokio::time::Instant;

use super::frame::{self, FrameReader};
use super::inject;
use super::{classify, lock, Action, FrameInfo, Frames, Outcome, Peer, Pending, PendingEntry, Route, RuleId, Shared};

/// A frame on its way to a writer, possibly held by a Delay rule.
struct Out {
    frame: Bytes,
    hold: Option<(Instant, RuleId)>,
}

/// What a writer is asked to do: write a frame, or close its side (FIN)
/// once the frames before have gone, because the other peer closed.
enum Write {
    Frame(Out),
    Close,
}

impl From<Out> for Write {
    fn from(o: Out) -> Write {
        Write::Frame(o)
    }
}

struct Conn {
    id: u64,
    route: Route,
    source: OnceLock<Peer>,
    kill: Arc<watch::Sender<bool>>,
    pending: Mutex<Pending>,
}

impl Conn {
    fn source(&self) -> Peer {
        self.source.get().cloned().unwrap_or_else(|| Peer::Other(String::new()))
    }
    fn kill(&self) {
        let _ = self.kill.send(true);
    }
}

/// What a rule that holds a frame (`hold` long, `len` bytes) did with it.
fn held(action: &Action, hold: Duration, len: usize) -> Outcome {
    match action {
        Action::Throttle { .. } => Outcome::Throttled(hold, len),
        Action::Hold => Outcome::Held,
        Action::Lose { .. } => Outcome::Resent(hold),
        _ => Outcome::Delayed(hold),
    }
}

/// Serves one accepted connection until both directions end.
pub(crate) async fn serve(shared: Arc<Shared>, route: Route, client: TcpStream) {
    let upstream = match tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(route.upstream)).await {
        Ok(Ok(s)) => s,
        other => {
            // The node is down: answer as its closed port would, with a reset.
            let why = match other {
                Ok(Err(e)) => e.to_string(),
                _ => "timed out".to_string(),
            };
            tracing::debug!(upstream = %route.upstream, "proxy cannot reach the upstream: {why}");
            let _ = client.set_zero_linger();
            return;
        }
    };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (kill, _) = watch::channel(false);
    let kill = Arc::new(kill);
    let id = shared.register(&route, kill.clone());
    let conn = Conn { id, route, source: OnceLock::new(), kill, pending: Mutex::new(Pending::default()) };
    let (crd, cwr) = client.into_split();
    let (urd, uwr) = upstream.into_split();
    let (to_client, client_rx) = unbounded_channel();
    let (to_upstream, upstream_rx) = unbounded_channel();
    tokio::join!(
        requests(&shared, &conn, crd, to_upstream, to_client.clone()),
        responses(&shared, &conn, urd, to_client),
        write_loop(&shared, &conn, cwr, client_rx),
        write_loop(&shared, &conn, uwr, upstream_rx),
    );
    shared.unregister(id);
}

/// Waits for the kill switch; never returns if it is not thrown.
async fn killed(kill: &mut watch::Receiver<bool>) {
    if kill.wait_for(|k| *k).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// What one direction's reader gets next.
enum Next {
    Frame(Bytes),
    /// The peer closed its side cleanly.
    Closed,
    /// The connection was killed (reset) or its stream broke (then the whole
    /// connection is reset): this direction is over.
    Gone,
}

/// The next frame of one direction, unless the connection is killed first.
async fn next_frame(
    conn: &Conn,
    frames: &mut FrameReader<OwnedReadHalf>,
    kill: &mut watch::Receiver<bool>,
    direction: &str,
) -> Next {
    let next = tokio::select! {
        biased;
        _ = killed(kill) => {
            let _ = frames.get_ref().as_ref().set_zero_linger();
            return Next::Gone;
        }
        r = frames.next() => r,
    };
    match next {
        Ok(Some(f)) => Next::Frame(f),
        Ok(None) => Next::Closed,
        Err(e) => {
            tracing::debug!(conn = conn.id, "proxy: {direction} stream ended: {e}");
            let _ = frames.get_ref().as_ref().set_zero_linger();
            conn.kill();
            Next::Gone
        }
    }
}

async fn write_loop(shared: &Shared, conn: &Conn, mut wr: OwnedWriteHalf, mut rx: UnboundedReceiver<Write>) {
    let mut kill = conn.kill.subscribe();
    let mut removals = shared.removals.subscribe();
    let abort = |wr: OwnedWriteHalf| {
        // SO_LINGER 0: the close sends RST, and no FIN goes first.
        let _ = wr.as_ref().set_zero_linger();
        wr.forget();
    };
    loop {
        let out = tokio::select! {
            biased;
            _ = killed(&mut kill) => return abort(wr),
            o = rx.recv() => match o {
                Some(Write::Frame(o)) => o,
                // The peer closed (or the reader ended): dropping `wr` sends FIN.
                Some(Write::Close) | None => return,
            },
        };
        if let Some((until, rule)) = out.hold {
            // Held until the deadline, or until its rule is removed.
            while shared.rule_active(rule) {
                tokio::select! {
                    biased;
                    _ = killed(&mut kill) => return abort(wr),
                    _ = tokio::time::sleep_until(until) => break,
                    r = removals.changed() => if r.is_err() { break },
                }
            }
        }
        tokio::select! {
            biased;
            _ = killed(&mut kill) => return abort(wr),
            r = wr.write_all(&out.frame) => if r.is_err() {
                conn.kill();
                return abort(wr);
            },
        }
    }
}

async fn requests(
    shared: &Shared,
    conn: &Conn,
    rd: OwnedReadHalf,
    to_upstream: UnboundedSender<Write>,
    to_client: UnboundedSender<Write>,
) {
    let mut kill = conn.kill.subscribe();
    let mut frames = FrameReader::new(rd);
    loop {
        let frame = match next_frame(conn, &mut frames, &mut kill, "request").await {
            Next::Frame(f) => f,
            Next::Closed | Next::Gone => return,
        };
        let Some(h) = request_header(&frame) else {
            let _ = to_upstream.send(Out { frame, hold: None }.into());
            continue;
        };
        if conn.source.get().is_none() {
            let client_id = h.client_id(&frame);
            let source = classify(client_id);
            let _ = conn.source.set(source.clone());
            if shared.classified(conn.id, &source, client_id) {
                let _ = frames.get_ref().as_ref().set_zero_linger();
                return;
            }
        }
        let body = h.body.map(|b| frame.slice(b..));
        let facts = match &body {
            Some(b) if shared.has_rules() => frame::request_facts(h.api_key, h.api_version, b),
            Some(b) => frame::RequestFacts {
                transactional_ids: vec![],
                expects_response: h.api_key != 0 || frame::produce_expects_response(h.api_version, b),
            },
            None => frame::RequestFacts { transactional_ids: vec![], expects_response: true },
        };
        let source = conn.source();
        let verdict = if shared.has_rules() {
            let info = FrameInfo {
                source: &source,
                node: conn.route.node,
                kind: conn.route.kind,
                dir: Frames::Request,
                api_key: Some(h.api_key),
                api_version: h.api_version,
                correlation_id: h.correlation_id,
                transactional_ids: &facts.transactional_ids,
                len: frame.len(),
            };
            shared.decide(&info).map(|v| (v, info.clone()))
        } else {
            None
        };
        let remember = |facts: frame::RequestFacts| {
            if facts.expects_response {
                lock(&conn.pending).queue.push_back(PendingEntry::Forwarded {
                    correlation_id: h.correlation_id,
                    api_key: h.api_key,
                    api_version: h.api_version,
                    transactional_ids: facts.transactional_ids,
                });
            }
        };
        let Some((v, info)) = verdict else {
            remember(facts);
            let _ = to_upstream.send(Out { frame, hold: None }.into());
            continue;
        };
        match v.action {
            Action::Drop => shared.record(v.rule, Outcome::Dropped, |w| info.describe(w)),
            Action::Delay { .. } | Action::Throttle { .. } | Action::Hold | Action::Lose { .. } => {
                shared.record(v.rule, held(&v.action, v.hold, frame.len()), |w| info.describe(w));
                remember(facts.clone());
                let _ = to_upstream.send(Out { frame, hold: Some((Instant::now() + v.hold, v.rule)) }.into());
            }
            Action::Error { code } => {
                let answer = match &body {
                    _ if !facts.expects_response => Err("acks=0: the client expects no answer".to_string()),
                    Some(b) => inject::error_response(h.api_key, h.api_version, b, code).and_then(|body| {
                        encode_response(h.api_key, h.api_version, h.correlation_id, &body).map_err(|e| e.to_string())
                    }),
                    None => Err("unknown API".to_string()),
                };
                match answer {
                    Ok(answer) => {
                        shared.record(v.rule, Outcome::ErrorInjected(code), |w| info.describe(w));
                        let mut p = lock(&conn.pending);
                        if p.queue.is_empty() {
                            let _ = to_client.send(Out { frame: answer, hold: None }.into());
                        } else {
                            p.queue.push_back(PendingEntry::Injected(answer));
                        }
                    }
                    Err(why) => {
                        shared.record(v.rule, Outcome::Failed(why), |w| info.describe(w));
                        remember(facts.clone());
                        let _ = to_upstream.send(Out { frame, hold: None }.into());
                    }
                }
            }
            Action::Reset => {
                shared.record(v.rule, Outcome::Reset, |w| info.describe(w));
                let _ = frames.get_ref().as_ref().set_zero_linger();
                conn.kill();
                return;
            }
        }
    }
}

async fn responses(shared: &Shared, conn: &Conn, rd: OwnedReadHalf, to_client: UnboundedSender<Write>) {
    let mut kill = conn.kill.subscribe();
    let mut frames = FrameReader::new(rd);
    loop {
        let frame = match next_frame(conn, &mut frames, &mut kill, "response").await {
            Next::Frame(f) => f,
            Next::Closed => {
                // The broker closed: so does the client's side, as it would
                // see without the proxy (the requests reader holds a sender
                // too, so the writer would not end by itself).
                let _ = to_client.send(Write::Close);
                return;
            }
            Next::Gone => return,
        };
        let mut pending = lock(&conn.pending);
        let request = response_correlation_id(&frame).and_then(|corr| {
            let pos = pending
                .queue
                .iter()
                .position(|e| matches!(e, PendingEntry::Forwarded { correlation_id, .. } if *correlation_id == corr))?;
            match pending.queue.remove(pos) {
                Some(PendingEntry::Forwarded { correlation_id, api_key, api_version, transactional_ids }) => {
                    Some((correlation_id, api_key, api_version, transactional_ids))
                }
                _ => None,
            }
        });
        let frame = match &request {
            Some((_, key, version, _)) => shared.advertised(frame, *key, *version),
            None => frame,
        };
        let source = conn.source();
        let decided = match &request {
            Some((corr, key, version, tids)) if shared.has_rules() => {
                let info = FrameInfo {
                    source: &source,
                    node: conn.route.node,
                    kind: conn.route.kind,
                    dir: Frames::Response,
                    api_key: Some(*key),
                    api_version: *version,
                    correlation_id: *corr,
                    transactional_ids: tids,
                    len: frame.len(),
                };
                shared.decide(&info).map(|v| (v, info.clone()))
            }
            _ => None,
        };
        match decided {
            None => {
                let _ = to_client.send(Out { frame, hold: None }.into());
            }
            Some((v, info)) => match v.action {
                Action::Drop => shared.record(v.rule, Outcome::Dropped, |w| info.describe(w)),
                Action::Delay { .. } | Action::Throttle { .. } | Action::Hold | Action::Lose { .. } => {
                    shared.record(v.rule, held(&v.action, v.hold, frame.len()), |w| info.describe(w));
                    let _ = to_client.send(Out { frame, hold: Some((Instant::now() + v.hold, v.rule)) }.into());
                }
                Action::Error { code } => {
                    let key = info.api_key.unwrap_or(-1);
                    let rewritten = response_body_offset(&frame, key, info.api_version)
                        .ok_or_else(|| "unparsable response header".to_string())
                        .and_then(|off| {
                            let body = inject::replace_errors(key, info.api_version, &frame.slice(off..), code)?;
                            replace_body(&frame, off, &body).map_err(|e| e.to_string())
                        });
                    match rewritten {
                        Ok(f) => {
                            shared.record(v.rule, Outcome::ErrorInjected(code), |w| info.describe(w));
                            let _ = to_client.send(Out { frame: f, hold: None }.into());
                        }
                        Err(why) => {
                            shared.record(v.rule, Outcome::Failed(why), |w| info.describe(w));
                            let _ = to_client.send(Out { frame, hold: None }.into());
                        }
                    }
                }
                Action::Reset => {
                    shared.record(v.rule, Outcome::Reset, |w| info.describe(w));
                    drop(pending);
                    let _ = frames.get_ref().as_ref().set_zero_linger();
                    conn.kill();
                    return;
                }
            },
        }
        // Answers the proxy wrote go out once every response before them has.
        while matches!(pending.queue.front(), Some(PendingEntry::Injected(_))) {
            if let Some(PendingEntry::Injected(f)) = pending.queue.pop_front() {
                let _ = to_client.send(Out { frame: f, hold: None }.into());
            }
        }
    }
}
