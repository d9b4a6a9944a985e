//! One TCP connection to a broker, one request in flight at a time.
//!
//! Kafka replies arrive as size-prefixed frames that TCP may split or merge
//! arbitrarily, so, as in mini-redis's `connection.rs`, reads go into a
//! `BytesMut` that keeps a partial frame until `sinkhole-kafka`'s
//! [`split_frame`] finds it complete.
//!
//! Each request gets the next correlation id; the reply must carry the same
//! one. With one request in flight a mismatch can only mean that the byte
//! stream is out of step (a late reply to a timed-out request, a proxy that
//! reorders), and Java's `NetworkClient` treats it as fatal for the
//! connection; so does this. After any transport error (I/O, timeout, peer
//! hang-up, mismatch) the connection is *broken*: it refuses further requests
//! and its owner must open a new one. A Kafka error code in a well-formed
//! reply leaves the connection usable.
//!
//! Sending just one request at a time keeps the state machine trivial; the
//! rig's transaction RPCs are sequential per producer anyway.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::{Decodable, Request, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tracing::{debug, trace};

use sinkhole_kafka::api::api_key_of;
use sinkhole_kafka::encode::{encode_raw_request, encode_request};
use sinkhole_kafka::frame::split_frame;
use sinkhole_kafka::header::split_response;

use super::error::WireError;
use super::security::Tls;

/// The byte stream under a connection: plain TCP, or TLS over it.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send + Sync {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync> Stream for T {}

/// Default largest response frame accepted (Java's `NetworkReceive` has no
/// client-side limit by default; the rig's responses are small, and a bogus
/// size from a misbehaving proxy should fail fast instead of allocating).
pub const DEFAULT_MAX_FRAME: usize = 100 * 1024 * 1024;

/// A connection to one broker.
pub struct Connection {
    stream: Box<dyn Stream>,
    /// Bytes read but not yet consumed as a frame.
    buffer: BytesMut,
    peer: String,
    client_id: String,
    next_correlation_id: i32,
    max_frame: usize,
    broken: bool,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("peer", &self.peer)
            .field("client_id", &self.client_id)
            .field("next_correlation_id", &self.next_correlation_id)
            .field("broken", &self.broken)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Opens a TCP connection to `addr` (`host:port`). No Kafka request is
    /// sent; the [`client`](super::client) follows up with ApiVersions.
    pub async fn connect(addr: &str, client_id: &str, timeout: Duration) -> Result<Connection, WireError> {
        let stream = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                debug!(peer = addr, error = %e, "connect failed");
                return Err(WireError::Io(e));
            }
            Err(_) => return Err(WireError::Timeout { what: format!("connecting to {addr} ({timeout:?})") }),
        };
        // Requests are small and latency-sensitive (commit latency is measured).
        stream.set_nodelay(true)?;
        debug!(peer = addr, "connected");
        Ok(Connection::over(Box::new(stream), addr, client_id))
    }

    /// Opens a TCP connection to `addr` and runs the TLS handshake on it (an SSL or SASL_SSL
    /// listener), checking the broker's certificate against `tls`'s CAs and the host of
    /// `addr` (Java's default `ssl.endpoint.identification.algorithm=https`).
    pub async fn connect_tls(
        addr: &str,
        client_id: &str,
        timeout: Duration,
        tls: &Tls,
    ) -> Result<Connection, WireError> {
        let host = addr.rsplit_once(':').map(|(h, _)| h).unwrap_or(addr).trim_start_matches('[').trim_end_matches(']');
        let name = rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| WireError::Tls {
            peer: addr.to_string(),
            detail: format!("{host:?} is no server name: {e}"),
        })?;
        let tcp = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return Err(WireError::Io(e)),
            Err(_) => return Err(WireError::Timeout { what: format!("connecting to {addr} ({timeout:?})") }),
        };
        tcp.set_nodelay(true)?;
        let connector = tokio_rustls::TlsConnector::from(tls.config.clone());
        let stream = match tokio::time::timeout(timeout, connector.connect(name, tcp)).await {
            Ok(Ok(s)) => s,
            // rustls' own refusals are final; a broken socket mid-handshake is a transport
            // error like any other (a broker restarting), retried by the client.
            Ok(Err(e)) if e.get_ref().is_some_and(|i| i.is::<rustls::Error>()) => {
                return Err(WireError::Tls { peer: addr.to_string(), detail: e.to_string() })
            }
            Ok(Err(e)) => return Err(WireError::Io(e)),
            Err(_) => return Err(WireError::Timeout { what: format!("TLS handshake with {addr} ({timeout:?})") }),
        };
        debug!(peer = addr, "connected (TLS)");
        Ok(Connection::over(Box::new(stream), addr, client_id))
    }

    fn over(stream: Box<dyn Stream>, addr: &str, client_id: &str) -> Connection {
        Connection {
            stream,
            buffer: BytesMut::with_capacity(8 * 1024),
            peer: addr.to_string(),
            client_id: client_id.to_string(),
            next_correlation_id: 0,
            max_frame: DEFAULT_MAX_FRAME,
            broken: false,
        }
    }

    /// The address this connection was opened to.
    pub fn peer(&self) -> &str {
        &self.peer
    }

    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// True after a transport error; such a connection refuses requests.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Largest response frame accepted (default [`DEFAULT_MAX_FRAME`]).
    pub fn set_max_frame(&mut self, max_frame: usize) {
        self.max_frame = max_frame;
    }

    /// The correlation id the next request will carry.
    pub fn next_correlation_id(&self) -> i32 {
        self.next_correlation_id
    }

    fn take_correlation_id(&mut self) -> i32 {
        let id = self.next_correlation_id;
        // Java's NetworkClient also wraps back to 0 rather than going negative.
        self.next_correlation_id = if id == i32::MAX { 0 } else { id + 1 };
        id
    }

    /// Sends `req` at `version` and decodes the reply. `timeout` bounds the
    /// whole exchange (write and read).
    pub async fn send<R: Request>(
        &mut self,
        req: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<R::Response, WireError> {
        let api_key = api_key_of::<R>()?;
        self.check_usable()?;
        let correlation_id = self.take_correlation_id();
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_string(self.client_id.clone())));
        let bytes = encode_request(&header, req, version)?;
        let mut body = self.round_trip(bytes, api_key, version, correlation_id, timeout).await?;
        R::Response::decode(&mut body, version)
            .map_err(|e| WireError::codec(&format!("decoding {api_key:?} v{version} response"), e))
    }

    /// Sends a body encoded by the caller and returns the reply body (after
    /// the response header) undecoded.
    pub async fn send_raw(
        &mut self,
        api_key: ApiKey,
        version: i16,
        body: &[u8],
        timeout: Duration,
    ) -> Result<Bytes, WireError> {
        self.check_usable()?;
        let correlation_id = self.take_correlation_id();
        let bytes = encode_raw_request(api_key, version, correlation_id, &self.client_id, body);
        self.round_trip(bytes, api_key, version, correlation_id, timeout).await
    }

    fn check_usable(&self) -> Result<(), WireError> {
        if self.broken {
            return Err(WireError::Disconnected { peer: self.peer.clone() });
        }
        Ok(())
    }

    async fn round_trip(
        &mut self,
        request: Bytes,
        api_key: ApiKey,
        version: i16,
        correlation_id: i32,
        timeout: Duration,
    ) -> Result<Bytes, WireError> {
        trace!(peer = %self.peer, ?api_key, version, correlation_id, bytes = request.len(), "send");
        let result = match tokio::time::timeout(timeout, self.exchange(&request)).await {
            Ok(result) => result,
            Err(_) => Err(WireError::Timeout {
                what: format!(
                    "{api_key:?} v{version} to {} (correlation id {correlation_id}) after {timeout:?}",
                    self.peer
                ),
            }),
        };
        let result = result.and_then(|frame| {
            let (got, body) = split_response(frame, api_key, version)?;
            if got != correlation_id {
                return Err(WireError::CorrelationMismatch { expected: correlation_id, got });
            }
            Ok(body)
        });
        if let Err(e) = &result {
            // Any failure before a whole, matching reply leaves the stream in
            // an unknown position: never reuse it.
            debug!(peer = %self.peer, ?api_key, version, correlation_id, error = %e, "connection broken");
            self.broken = true;
        }
        result
    }

    async fn exchange(&mut self, request: &[u8]) -> Result<Bytes, WireError> {
        self.stream.write_all(request).await?;
        self.read_frame().await
    }

    /// Reads until one whole frame (size prefix included) is buffered.
    async fn read_frame(&mut self) -> Result<Bytes, WireError> {
        loop {
            if let Some(frame) = split_frame(&mut self.buffer, self.max_frame)? {
                return Ok(frame);
            }
            if self.stream.read_buf(&mut self.buffer).await? == 0 {
                debug!(
                    peer = %self.peer,
                    buffered = self.buffer.len(),
                    "peer closed the connection {}",
                    if self.buffer.is_empty() { "before replying" } else { "mid-frame" }
                );
                return Err(WireError::Disconnected { peer: self.peer.clone() });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;
    use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
    use kafka_protocol::protocol::Encodable;
    use tokio::net::TcpListener;

    /// A scripted peer: reads one request frame, hands it to `respond`, which
    /// writes whatever it wants to the socket.
    async fn peer<F, Fut>(respond: F) -> String
    where
        F: FnOnce(TcpStream, Vec<u8>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut size = [0u8; 4];
            sock.read_exact(&mut size).await.unwrap();
            let mut req = vec![0u8; i32::from_be_bytes(size) as usize];
            sock.read_exact(&mut req).await.unwrap();
            respond(sock, req).await;
        });
        addr
    }

    fn correlation_of(req: &[u8]) -> i32 {
        i32::from_be_bytes([req[4], req[5], req[6], req[7]])
    }

    fn api_versions_reply(corr: i32) -> Vec<u8> {
        let resp = ApiVersionsResponse::default().with_error_code(35);
        let mut body = BytesMut::new();
        resp.encode(&mut body, 0).unwrap();
        let mut frame = BytesMut::new();
        frame.put_i32(4 + body.len() as i32);
        frame.put_i32(corr);
        frame.put_slice(&body);
        frame.to_vec()
    }

    const T: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn reply_in_tiny_pieces() {
        let addr = peer(|mut sock, req| async move {
            let reply = api_versions_reply(correlation_of(&req));
            for b in reply {
                sock.write_all(&[b]).await.unwrap();
                sock.flush().await.unwrap();
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await;
        let mut conn = Connection::connect(&addr, "test", T).await.unwrap();
        assert_eq!(conn.peer(), addr);
        let resp = conn.send(&ApiVersionsRequest::default(), 0, T).await.unwrap();
        assert_eq!(resp.error_code, 35);
        assert_eq!(conn.next_correlation_id(), 1);
        assert!(!conn.is_broken());
    }

    #[tokio::test]
    async fn correlation_mismatch_breaks_the_connection() {
        let addr = peer(|mut sock, req| async move {
            let reply = api_versions_reply(correlation_of(&req) + 5);
            sock.write_all(&reply).await.unwrap();
            tokio::time::sleep(Duration::from_millis(200)).await;
        })
        .await;
        let mut conn = Connection::connect(&addr, "test", T).await.unwrap();
        let err = conn.send(&ApiVersionsRequest::default(), 0, T).await.unwrap_err();
        assert!(matches!(err, WireError::CorrelationMismatch { expected: 0, got: 5 }), "{err}");
        assert!(conn.is_broken());
        let err = conn.send(&ApiVersionsRequest::default(), 0, T).await.unwrap_err();
        assert!(matches!(err, WireError::Disconnected { .. }), "{err}");
    }

    #[tokio::test]
    async fn close_mid_frame_is_disconnected() {
        let addr = peer(|mut sock, req| async move {
            let reply = api_versions_reply(correlation_of(&req));
            sock.write_all(&reply[..reply.len() - 3]).await.unwrap();
            // dropping the socket closes it
        })
        .await;
        let mut conn = Connection::connect(&addr, "test", T).await.unwrap();
        let err = conn.send(&ApiVersionsRequest::default(), 0, T).await.unwrap_err();
        assert!(matches!(err, WireError::Disconnected { ref peer } if *peer == addr), "{err}");
    }

    #[tokio::test]
    async fn close_before_reply_is_disconnected() {
        let addr = peer(|_sock, _req| async move {}).await;
        let mut conn = Connection::connect(&addr, "test", T).await.unwrap();
        let err = conn.send_raw(ApiKey::ApiVersions, 0, &[], T).await.unwrap_err();
        assert!(matches!(err, WireError::Disconnected { .. }), "{err}");
    }

    #[tokio::test]
    async fn silent_peer_times_out() {
        let addr = peer(|sock, _req| async move {
            let _keep_open = sock;
            tokio::time::sleep(Duration::from_secs(5)).await;
        })
        .await;
        let mut conn = Connection::connect(&addr, "test", T).await.unwrap();
        let err = conn.send(&ApiVersionsRequest::default(), 0, Duration::from_millis(100)).await.unwrap_err();
        assert!(matches!(err, WireError::Timeout { .. }), "{err}");
        assert!(err.is_connection_error());
        assert!(conn.is_broken());
    }

    #[tokio::test]
    async fn raw_request_carries_header_and_body() {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let addr = peer(|mut sock, req| async move {
            let reply = api_versions_reply(correlation_of(&req));
            sock.write_all(&reply).await.unwrap();
            tx.send(req).unwrap();
        })
        .await;
        let mut conn = Connection::connect(&addr, "cid", T).await.unwrap();
        let body = conn.send_raw(ApiKey::ApiVersions, 0, &[1, 2, 3], T).await.unwrap();
        assert_eq!(&body[..2], &[0, 35]); // error code of the reply body
        let req = rx.await.unwrap();
        // api key 18, version 0, correlation 0, client id "cid", body
        assert_eq!(req, vec![0, 18, 0, 0, 0, 0, 0, 0, 0, 3, b'c', b'i', b'd', 1, 2, 3]);
    }

    #[tokio::test]
    async fn connect_refused_is_io() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        let err = Connection::connect(&addr, "test", T).await.unwrap_err();
        assert!(matches!(err, WireError::Io(_)), "{err}");
    }
}
