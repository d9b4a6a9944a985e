//! The brokers' addresses in responses, rewritten to the proxy's: for a cluster whose
//! advertised listeners the rig cannot set (an external cluster), so that a client that
//! bootstraps through the proxy keeps talking through it.
//!
//! On the local and containers backends the brokers themselves advertise the proxy's ports
//! (`advertised.listeners`), and nothing here runs. An external cluster advertises its own
//! addresses; a client learns them from three answers and nowhere else (Java's `Metadata` and
//! `FindCoordinatorResponse` handling; `docs/PROTOCOL.md` §7): Metadata's broker list,
//! FindCoordinator's coordinator (top level up to v3, one per key from v4) and DescribeCluster's
//! broker list. Each node's host and port there become its route's listen address, found by
//! node id; a node without a route keeps its own address (the client then goes around the
//! proxy to it, which is why the external backend routes every node Metadata lists).
use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, DescribeClusterResponse, FindCoordinatorResponse, MetadataResponse};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// The answers that carry broker addresses.
pub fn carries_addresses(api_key: i16) -> bool {
    [ApiKey::Metadata, ApiKey::FindCoordinator, ApiKey::DescribeCluster].iter().any(|k| *k as i16 == api_key)
}

/// The response body with every node's address replaced by `to(node)`'s, or None when no
/// address in it changes.
pub fn rewrite(
    api_key: i16,
    version: i16,
    body: &Bytes,
    to: impl Fn(i32) -> Option<SocketAddr>,
) -> Result<Option<BytesMut>, String> {
    let mut changed = false;
    let mut swap = |node: i32, host: &mut StrBytes, port: &mut i32| {
        if let Some(a) = to(node) {
            let h = a.ip().to_string();
            if host.as_str() != h || *port != i32::from(a.port()) {
                *host = StrBytes::from_string(h);
                *port = i32::from(a.port());
                changed = true;
            }
        }
    };
    let mut b = body.clone();
    let err = |e: anyhow::Error| format!("decoding api {api_key} v{version}: {e}");
    let mut out = BytesMut::new();
    let enc = |r: &dyn Fn(&mut BytesMut) -> anyhow::Result<()>, out: &mut BytesMut| {
        r(out).map_err(|e| format!("encoding api {api_key} v{version}: {e}"))
    };
    match ApiKey::try_from(api_key) {
        Ok(ApiKey::Metadata) => {
            let mut r = MetadataResponse::decode(&mut b, version).map_err(err)?;
            for br in &mut r.brokers {
                swap(br.node_id.0, &mut br.host, &mut br.port);
            }
            enc(&|o| r.encode(o, version), &mut out)?;
        }
        Ok(ApiKey::FindCoordinator) => {
            let mut r = FindCoordinatorResponse::decode(&mut b, version).map_err(err)?;
            if version < 4 {
                let node = r.node_id.0;
                swap(node, &mut r.host, &mut r.port);
            } else {
                for c in &mut r.coordinators {
                    let node = c.node_id.0;
                    swap(node, &mut c.host, &mut c.port);
                }
            }
            enc(&|o| r.encode(o, version), &mut out)?;
        }
        Ok(ApiKey::DescribeCluster) => {
            let mut r = DescribeClusterResponse::decode(&mut b, version).map_err(err)?;
            for br in &mut r.brokers {
                swap(br.broker_id.0, &mut br.host, &mut br.port);
            }
            enc(&|o| r.encode(o, version), &mut out)?;
        }
        _ => return Ok(None),
    }
    Ok(changed.then_some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::find_coordinator_response::Coordinator;
    use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
    use kafka_protocol::messages::BrokerId;

    fn to(node: i32) -> Option<SocketAddr> {
        (node == 2).then(|| "127.0.0.1:40002".parse().unwrap())
    }

    #[test]
    fn metadata_brokers_are_advertised_at_their_routes() {
        for version in [1, 9, 12] {
            let mut r = MetadataResponse::default();
            r.brokers = [1, 2]
                .into_iter()
                .map(|n| {
                    let mut b = MetadataResponseBroker::default();
                    b.node_id = BrokerId(n);
                    b.host = StrBytes::from_string(format!("kafka-{n}.example"));
                    b.port = 9092;
                    b
                })
                .collect();
            let mut body = BytesMut::new();
            r.encode(&mut body, version).unwrap();
            let out = rewrite(3, version, &body.freeze(), to).unwrap().expect("changed");
            let back = MetadataResponse::decode(&mut out.freeze(), version).unwrap();
            assert_eq!((back.brokers[0].host.as_str(), back.brokers[0].port), ("kafka-1.example", 9092));
            assert_eq!((back.brokers[1].host.as_str(), back.brokers[1].port), ("127.0.0.1", 40002));
        }
    }

    #[test]
    fn find_coordinator_is_rewritten_at_the_top_level_and_per_key() {
        let mut r = FindCoordinatorResponse::default();
        r.node_id = BrokerId(2);
        r.host = StrBytes::from_static_str("kafka-2.example");
        r.port = 9093;
        let mut body = BytesMut::new();
        r.encode(&mut body, 3).unwrap();
        let back =
            FindCoordinatorResponse::decode(&mut rewrite(10, 3, &body.freeze(), to).unwrap().unwrap().freeze(), 3)
                .unwrap();
        assert_eq!((back.host.as_str(), back.port), ("127.0.0.1", 40002));

        let mut c = Coordinator::default();
        c.node_id = BrokerId(2);
        c.host = StrBytes::from_static_str("kafka-2.example");
        c.port = 9093;
        let mut r = FindCoordinatorResponse::default();
        r.coordinators = vec![c];
        let mut body = BytesMut::new();
        r.encode(&mut body, 4).unwrap();
        let back =
            FindCoordinatorResponse::decode(&mut rewrite(10, 4, &body.freeze(), to).unwrap().unwrap().freeze(), 4)
                .unwrap();
        assert_eq!((back.coordinators[0].host.as_str(), back.coordinators[0].port), ("127.0.0.1", 40002));
        // Nothing to change: no new body.
        let mut body = BytesMut::new();
        FindCoordinatorResponse::default().encode(&mut body, 4).unwrap();
        assert!(rewrite(10, 4, &body.freeze(), to).unwrap().is_none());
        assert!(rewrite(0, 9, &Bytes::new(), to).unwrap().is_none());
        assert!(carries_addresses(3) && carries_addresses(10) && carries_addresses(60) && !carries_addresses(0));
    }
}
