//! Request and response headers, read in place from a frame (size prefix
//! included) and written in front of a body.
//!
//! Kafka's `RequestHeader` / `ResponseHeader` (the JSON schemas
//! `RequestHeader.json`, `ResponseHeader.json`):
//!
//! | header | fields |
//! |---|---|
//! | request v0 | api key i16, api version i16, correlation id i32 |
//! | request v1 | v0 + client id (classic nullable string) |
//! | request v2 | v1 + tagged fields (flexible versions, KIP-482) |
//! | response v0 | correlation id i32 |
//! | response v1 | v0 + tagged fields |
//!
//! Which version a message uses follows from its API key and version
//! (Java's `ApiKeys.requestHeaderVersion` / `responseHeaderVersion`): a
//! flexible request version uses request header v2 and response header v1.
//! The client id stays a classic string even in header v2, so a broker can read
//! it before it knows the request version; and ApiVersions responses always use
//! response header v0, so a client can read the reply of a broker that does not
//! know the request version. Since the versions are not in the frame, every
//! reader here takes the API key and version of the request.
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;

use crate::frame::{FrameError, SIZE_PREFIX};
use crate::primitives::skip_tagged_fields;

/// The request header version `api_key` uses at `version` (2 = flexible);
/// `None` for an API key Kafka does not define.
pub fn request_header_version(api_key: i16, version: i16) -> Option<i16> {
    ApiKey::try_from(api_key).ok().map(|k| k.request_header_version(version))
}

/// The response header version of `api_key` at `version` (1 = flexible);
/// `None` for an API key Kafka does not define.
pub fn response_header_version(api_key: i16, version: i16) -> Option<i16> {
    ApiKey::try_from(api_key).ok().map(|k| k.response_header_version(version))
}

/// The request header fields of a frame, as offsets into it (nothing copied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHeader {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
    /// Byte range of the client id within the frame (None: null or header v0).
    pub client_id: Option<(usize, usize)>,
    /// Offset of the request body within the frame (None: unknown API key,
    /// whose header version cannot be known).
    pub body: Option<usize>,
}

impl RequestHeader {
    /// The client id (`""` when null, absent or not UTF-8).
    pub fn client_id<'a>(&self, frame: &'a [u8]) -> &'a str {
        self.client_id.and_then(|(a, b)| std::str::from_utf8(frame.get(a..b)?).ok()).unwrap_or("")
    }
}

/// Parses the request header of `frame` (size prefix included). `None` when
/// the frame is too short for the header it announces.
pub fn request_header(frame: &[u8]) -> Option<RequestHeader> {
    let at = SIZE_PREFIX;
    if frame.len() < at + 8 {
        return None;
    }
    let api_key = i16::from_be_bytes([frame[at], frame[at + 1]]);
    let api_version = i16::from_be_bytes([frame[at + 2], frame[at + 3]]);
    let correlation_id = i32::from_be_bytes([frame[at + 4], frame[at + 5], frame[at + 6], frame[at + 7]]);
    let header_version = request_header_version(api_key, api_version);
    let mut pos = at + 8;
    if header_version == Some(0) {
        return Some(RequestHeader { api_key, api_version, correlation_id, client_id: None, body: Some(pos) });
    }
    let len = i16::from_be_bytes([*frame.get(pos)?, *frame.get(pos + 1)?]);
    pos += 2;
    let client_id = if len >= 0 {
        let end = pos + len as usize;
        if end > frame.len() {
            return None;
        }
        let r = (pos, end);
        pos = end;
        Some(r)
    } else {
        None
    };
    let body = match header_version {
        Some(2) => {
            skip_tagged_fields(frame, &mut pos)?;
            Some(pos)
        }
        Some(_) => Some(pos),
        None => None,
    };
    Some(RequestHeader { api_key, api_version, correlation_id, client_id, body })
}

/// Writes a request header: v1 is `api_key, api_version, correlation_id,
/// client_id`; v2 appends an empty tagged-field section; v0 has no client id.
/// The client id must fit an i16 length (callers cut it).
pub(crate) fn put_request_header(
    buf: &mut BytesMut,
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: &str,
) {
    let header_version = api_key.request_header_version(version);
    buf.put_i16(api_key as i16);
    buf.put_i16(version);
    buf.put_i32(correlation_id);
    if header_version >= 1 {
        buf.put_i16(client_id.len() as i16);
        buf.put_slice(client_id.as_bytes());
    }
    if header_version >= 2 {
        buf.put_u8(0); // no tagged fields
    }
}

/// Writes a response header: the correlation id, and for v1 an empty
/// tagged-field section.
pub(crate) fn put_response_header(buf: &mut BytesMut, api_key: ApiKey, version: i16, correlation_id: i32) {
    buf.put_i32(correlation_id);
    if api_key.response_header_version(version) >= 1 {
        buf.put_u8(0); // no tagged fields
    }
}

/// The correlation id of a response frame (size prefix included).
pub fn response_correlation_id(frame: &[u8]) -> Option<i32> {
    let c = frame.get(SIZE_PREFIX..SIZE_PREFIX + 4)?;
    Some(i32::from_be_bytes([c[0], c[1], c[2], c[3]]))
}

/// Offset of the response body within `frame` (size prefix included): after
/// the correlation id, and after the tagged fields for response header v1.
/// `None` for an unknown API key or a header cut short.
pub fn response_body_offset(frame: &[u8], api_key: i16, version: i16) -> Option<usize> {
    let header_version = response_header_version(api_key, version)?;
    let mut pos = SIZE_PREFIX + 4;
    if frame.len() < pos {
        return None;
    }
    if header_version >= 1 {
        skip_tagged_fields(frame, &mut pos)?;
    }
    Some(pos)
}

/// Splits a response frame (size prefix included) into its correlation id and
/// body, reading the response header `api_key` at `version` uses.
pub fn split_response(frame: Bytes, api_key: ApiKey, version: i16) -> Result<(i32, Bytes), FrameError> {
    let truncated = || {
        let hv = api_key.response_header_version(version);
        FrameError::Codec(format!(
            "decoding response header v{hv} of {api_key:?} v{version}: a frame of {} bytes is too short",
            frame.len()
        ))
    };
    let correlation_id = response_correlation_id(&frame).ok_or_else(truncated)?;
    let offset = response_body_offset(&frame, api_key as i16, version).ok_or_else(truncated)?;
    Ok((correlation_id, frame.slice(offset..)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{EndTxnRequest, RequestHeader as KHeader, TransactionalId};
    use kafka_protocol::protocol::{Encodable, StrBytes};

    /// `payload` behind its size prefix.
    fn framed(payload: &[u8]) -> Bytes {
        let mut v = (payload.len() as i32).to_be_bytes().to_vec();
        v.extend_from_slice(payload);
        Bytes::from(v)
    }

    #[test]
    fn response_header_v0_and_v1() {
        // InitProducerId v1 is not flexible: response header v0 = correlation id only.
        let (corr, body) = split_response(framed(&[0, 0, 0, 42, 0xAA, 0xBB]), ApiKey::InitProducerId, 1).unwrap();
        assert_eq!(corr, 42);
        assert_eq!(&body[..], &[0xAA, 0xBB]);

        // InitProducerId v2+ is flexible: header v1 = correlation id + tagged fields.
        let (corr, body) = split_response(framed(&[0, 0, 1, 0, 0, 0xAA, 0xBB]), ApiKey::InitProducerId, 4).unwrap();
        assert_eq!(corr, 256);
        assert_eq!(&body[..], &[0xAA, 0xBB]);

        // A tagged field in the header (tag 3, 2 bytes) is skipped.
        let (corr, body) =
            split_response(framed(&[0, 0, 0, 7, 1, 3, 2, 9, 9, 0xCC]), ApiKey::InitProducerId, 5).unwrap();
        assert_eq!(corr, 7);
        assert_eq!(&body[..], &[0xCC]);

        // ApiVersions keeps header v0 even at flexible v3.
        let (corr, body) = split_response(framed(&[0, 0, 0, 9, 0, 0x23]), ApiKey::ApiVersions, 3).unwrap();
        assert_eq!(corr, 9);
        assert_eq!(&body[..], &[0, 0x23]);

        // Too short for a header.
        assert!(split_response(framed(&[0, 0]), ApiKey::InitProducerId, 1).is_err());
        // A tagged field longer than the frame.
        assert!(split_response(framed(&[0, 0, 0, 7, 1, 3, 9, 1]), ApiKey::InitProducerId, 5).is_err());
    }

    #[test]
    fn response_offsets_and_correlation_ids() {
        let f = framed(&[0, 0, 0, 5, 0, 0xEE]);
        assert_eq!(response_correlation_id(&f), Some(5));
        assert_eq!(response_body_offset(&f, ApiKey::EndTxn as i16, 3), Some(9), "flexible: after the tag count");
        assert_eq!(response_body_offset(&f, ApiKey::EndTxn as i16, 2), Some(8));
        assert_eq!(response_body_offset(&f, -3, 0), None, "unknown API");
        assert_eq!(response_correlation_id(&[0, 0, 0, 1, 9]), None);
    }

    fn frame_of(key: ApiKey, version: i16, corr: i32, client: Option<&str>, body: &impl Encodable) -> Bytes {
        let h = KHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(corr)
            .with_client_id(client.map(|c| StrBytes::from_string(c.to_string())));
        let mut buf = BytesMut::new();
        buf.put_i32(0);
        h.encode(&mut buf, key.request_header_version(version)).unwrap();
        body.encode(&mut buf, version).unwrap();
        let len = (buf.len() - 4) as i32;
        buf[..4].copy_from_slice(&len.to_be_bytes());
        buf.freeze()
    }

    #[test]
    fn headers_v1_and_v2_give_the_client_id_and_the_body() {
        for version in [2i16, 3, 5] {
            let body = EndTxnRequest::default()
                .with_transactional_id(TransactionalId(StrBytes::from_static_str("tid-a")))
                .with_committed(true);
            let f = frame_of(ApiKey::EndTxn, version, 77, Some("sinkhole-legacy-0-1"), &body);
            let h = request_header(&f).unwrap();
            assert_eq!((h.api_key, h.api_version, h.correlation_id), (26, version, 77));
            assert_eq!(h.client_id(&f), "sinkhole-legacy-0-1");
            let mut rest = BytesMut::new();
            body.encode(&mut rest, version).unwrap();
            assert_eq!(&f[h.body.unwrap()..], &rest[..], "v{version}: the body starts where the header ends");
        }
        let body = EndTxnRequest::default();
        let f = frame_of(ApiKey::EndTxn, 4, 1, None, &body);
        assert_eq!(request_header(&f).unwrap().client_id(&f), "");
    }

    #[test]
    fn request_headers_cut_short_or_unknown() {
        assert_eq!(request_header(&[0, 0, 0, 4, 0, 26, 0, 3]), None, "no correlation id");
        // Client id length 9, 2 bytes present.
        assert_eq!(request_header(&[0, 0, 0, 12, 0, 26, 0, 3, 0, 0, 0, 1, 0, 9, b'a', b'b']), None);
        // An API key Kafka does not define: the client id is read, the body offset is unknown.
        let h = request_header(&[0, 0, 0, 11, 0x7f, 0, 0, 0, 0, 0, 0, 2, 0, 1, b'x']).unwrap();
        assert_eq!(h.client_id, Some((14, 15)));
        assert_eq!(h.body, None);
    }

    #[test]
    fn header_versions_follow_the_api() {
        assert_eq!(request_header_version(ApiKey::EndTxn as i16, 2), Some(1));
        assert_eq!(request_header_version(ApiKey::EndTxn as i16, 3), Some(2));
        assert_eq!(response_header_version(ApiKey::EndTxn as i16, 3), Some(1));
        assert_eq!(response_header_version(ApiKey::ApiVersions as i16, 3), Some(0));
        assert_eq!(request_header_version(-1, 0), None);
    }

    #[test]
    fn written_headers_read_back() {
        for (key, version) in [(ApiKey::EndTxn, 2), (ApiKey::EndTxn, 5), (ApiKey::InitProducerId, 6)] {
            let mut buf = BytesMut::new();
            buf.put_i32(0);
            put_request_header(&mut buf, key, version, 31, "cid");
            let n = (buf.len() - 4) as i32;
            buf[..4].copy_from_slice(&n.to_be_bytes());
            let h = request_header(&buf).unwrap();
            assert_eq!((h.api_key, h.api_version, h.correlation_id), (key as i16, version, 31));
            assert_eq!(h.client_id(&buf), "cid");
            assert_eq!(h.body, Some(buf.len()));
        }
    }
}
