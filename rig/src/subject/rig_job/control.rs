//! The control channel's server side: the coordinator's Unix socket, one
//! reader task per worker connection.
//!
//! Each reader stamps a message with its arrival time before forwarding it,
//! so a heartbeat is judged by when it arrived even if the coordinator's
//! loop was busy, and a history event is placed at the moment it happened.
//! A connection is tied to its subtask by the peer's pid (`SO_PEERCRED`) or by
//! the subtask its first message names; until then its messages are kept in
//! order.
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sinkhole_base::rundir::ModeDir;
use sinkhole_model::{FromWorker, SinkMode};
use sinkhole_workloads::control::{Channel, ChannelWriter};
use tokio::net::UnixListener;
use tokio::sync::mpsc;

pub(super) struct Inbound {
    pub conn: u64,
    pub at: Instant,
    pub what: ConnEvent,
}

pub(super) enum ConnEvent {
    Hello { peer_pid: Option<u32>, writer: ChannelWriter },
    Msg(Box<FromWorker>),
    Closed(Option<String>),
}

/// A control connection not yet tied to a subtask (it is tied by the peer's
/// pid, or by its `Ready`); messages before that are kept in order.
pub(super) struct Conn {
    pub peer_pid: Option<u32>,
    pub writer: Option<ChannelWriter>,
    pub subtask: Option<u32>,
    pub buffered: Vec<(Instant, FromWorker)>,
}

/// The control socket: `<dir>/control.sock`, unless that path is too long for
/// a Unix socket address (108 bytes on Linux), then a short one in the temp dir.
pub(super) fn socket_path(dir: &ModeDir, run_id: &str, mode: SinkMode) -> PathBuf {
    let p = dir.control_socket();
    if p.as_os_str().len() < 100 {
        return p;
    }
    let tag: String = run_id.chars().filter(|c| c.is_ascii_alphanumeric()).take(16).collect();
    std::env::temp_dir().join(format!("sinkhole-{}-{tag}-{}.sock", std::process::id(), mode.name()))
}

/// The subtask a message says it comes from.
pub(super) fn claimed_subtask(msg: &FromWorker) -> Option<u32> {
    match msg {
        FromWorker::Ready { subtask, .. }
        | FromWorker::Heartbeat { subtask, .. }
        | FromWorker::Ack { subtask, .. }
        | FromWorker::Committed { subtask, .. }
        | FromWorker::EndOfInput { subtask }
        | FromWorker::Failed { subtask, .. } => Some(*subtask),
        FromWorker::Event { .. } => None,
    }
}

/// Accepts worker connections; each gets a reader task that forwards its
/// messages stamped with their arrival time.
pub(super) async fn accept_loop(listener: UnixListener, tx: mpsc::UnboundedSender<Inbound>, counter: Arc<AtomicU64>) {
    let mut readers = tokio::task::JoinSet::new();
    loop {
        let stream = tokio::select! {
            r = listener.accept() => r,
            Some(_) = readers.join_next(), if !readers.is_empty() => continue,
        };
        let stream = match stream {
            Ok((s, _)) => s,
            Err(e) => {
                tracing::warn!("accepting a worker connection: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let conn = counter.fetch_add(1, Ordering::SeqCst);
        let peer_pid = stream.peer_cred().ok().and_then(|c| c.pid()).map(|p| p as u32);
        let (mut reader, writer) = Channel::from_stream(stream).into_split();
        if tx.send(Inbound { conn, at: Instant::now(), what: ConnEvent::Hello { peer_pid, writer } }).is_err() {
            return;
        }
        let tx = tx.clone();
        readers.spawn(async move {
            loop {
                let r = reader.recv::<FromWorker>().await;
                let at = Instant::now();
                let (what, end) = match r {
                    Ok(Some(m)) => (ConnEvent::Msg(Box::new(m)), false),
                    Ok(None) => (ConnEvent::Closed(None), true),
                    Err(e) => (ConnEvent::Closed(Some(e.to_string())), true),
                };
                if tx.send(Inbound { conn, at, what }).is_err() || end {
                    return;
                }
            }
        });
    }
}
