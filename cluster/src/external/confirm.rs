//! An external node's state, seen through the protocol (there is no pid to watch): a node is
//! down when it does not answer a new connection's ApiVersions (and the authentication the
//! listener asks for) within a short timeout — a killed broker refuses the connection, a paused
//! one accepts it in the kernel and never answers; it is up when it answers and its Metadata
//! lists every node meant to run ([`node_sees`], the rule the other backends are ready by).
use std::time::{Duration, Instant};

use sinkhole_client::wire::client::{Client, ClientConfig};

use crate::lookup::node_sees;

/// The state an action is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Want {
    Down,
    Up,
}

/// What the protocol showed, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Seen {
    pub observed: String,
    pub confirmed: bool,
    /// From `since` (the command's start) to the confirmation, or to the last look.
    pub after_ms: u64,
}

/// How often the node is looked at.
const POLL: Duration = Duration::from_millis(200);

/// Whether the broker at `addr` answers a new connection now.
async fn answers(addr: &str) -> Result<(), String> {
    let config = ClientConfig {
        client_id: "sinkhole-faults".into(),
        request_timeout: Duration::from_millis(1500),
        retry_deadline: Duration::from_millis(500),
        ..ClientConfig::default()
    };
    Client::probe(&config, addr).await.map_err(|e| sinkhole_client::wire::security::redact(&e.to_string()))
}

/// Looks at `addr` until it is in state `want` (Up: answering, its Metadata listing
/// `expected`) or `timeout` has passed since the first look.
pub(super) async fn wait_for(addr: &str, want: Want, expected: &[i32], since: Instant, timeout: Duration) -> Seen {
    let first = Instant::now();
    let mut last;
    loop {
        let (ok, observed) = match want {
            Want::Down => match answers(addr).await {
                Err(e) => (true, format!("not answering ({e})")),
                Ok(()) => (false, "still answering".to_string()),
            },
            Want::Up => match node_sees(addr, expected).await {
                Ok(()) => (true, format!("answering, Metadata lists {expected:?}")),
                Err(e) => (false, format!("not ready: {}", sinkhole_client::wire::security::redact(&e))),
            },
        };
        last = observed;
        let after_ms = since.elapsed().as_millis() as u64;
        if ok {
            return Seen { observed: last, confirmed: true, after_ms };
        }
        if first.elapsed() >= timeout {
            return Seen { observed: last, confirmed: false, after_ms };
        }
        tokio::time::sleep(POLL).await;
    }
}
