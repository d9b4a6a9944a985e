//! Kafka framing: a 4-byte big-endian size, then that many bytes.
//!
//! A request frame is `size | request header | body`; a response frame is
//! `size | response header | body`. The header versions are not in the
//! frame: they follow from the API key and version of the request
//! (`ApiKey::request_header_version` / `response_header_version`), which is
//! why [`split_response`] needs both. Flexible versions (KIP-482) use request
//! header v2 and response header v1, which add a tagged-field section; the
//! client id stays a classic nullable string even in header v2. ApiVersions
//! responses always use response header v0, so that a client can read the
//! reply of a broker that does not know the request version.
//!
//! Everything here is a pure function over byte buffers, so the tricky part
//! (partial frames) is testable without sockets, as in mini-redis's
//! `frame.rs`. The size checks mirror Java's `NetworkReceive`, which rejects a
//! negative size or one above its maximum before allocating anything.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, Request};

use super::error::WireError;

/// Bytes of the size prefix.
pub const SIZE_PREFIX: usize = 4;

/// Default largest response frame accepted (Java's `NetworkReceive` has no
/// client-side limit by default; the rig's responses are small, and a bogus
/// size from a misbehaving proxy should fail fast instead of allocating).
pub const DEFAULT_MAX_FRAME: usize = 100 * 1024 * 1024;

/// The `ApiKey` of a request type.
pub fn api_key_of<R: Request>() -> Result<ApiKey, WireError> {
    ApiKey::try_from(R::KEY).map_err(|_| WireError::Codec(format!("unknown api key {}", R::KEY)))
}

/// Encodes `size | header | body` for a request the `kafka-protocol` crate
/// knows. The header version follows from the API key and `version`; the
/// header's own api key and version must match `R` and `version`.
pub fn encode_request<R: Request>(header: &RequestHeader, req: &R, version: i16) -> Result<Bytes, WireError> {
    let api_key = api_key_of::<R>()?;
    if header.request_api_key != R::KEY || header.request_api_version != version {
        return Err(WireError::Codec(format!(
            "request header says api {} v{}, body is {:?} v{}",
            header.request_api_key, header.request_api_version, api_key, version
        )));
    }
    let versions = R::VERSIONS;
    if version < versions.min || version > versions.max {
        return Err(WireError::Codec(format!(
            "{api_key:?} v{version}: kafka-protocol encodes only v{}..=v{}",
            versions.min, versions.max
        )));
    }
    let header_version = api_key.request_header_version(version);
    let mut buf = BytesMut::new();
    buf.put_i32(0); // size, patched below
    header.encode(&mut buf, header_version).map_err(|e| WireError::codec("encoding request header", e))?;
    req.encode(&mut buf, version).map_err(|e| WireError::codec(&format!("encoding {api_key:?} v{version}"), e))?;
    patch_size(&mut buf)?;
    Ok(buf.freeze())
}

/// Encodes `size | header | body` around an already encoded body, for the
/// requests this crate encodes by hand (InitProducerId v6).
///
/// The header is written here rather than by the crate so that this cannot
/// fail: v1 is `api_key i16, api_version i16, correlation_id i32, client_id
/// nullable string`; v2 appends an empty tagged-field section. A client id
/// longer than `i16::MAX` bytes is cut at a character boundary.
pub fn encode_raw_request(api_key: ApiKey, version: i16, correlation_id: i32, client_id: &str, body: &[u8]) -> Bytes {
    let header_version = api_key.request_header_version(version);
    let client_id = truncate_str(client_id, i16::MAX as usize);
    let mut buf = BytesMut::with_capacity(SIZE_PREFIX + 10 + client_id.len() + 1 + body.len());
    buf.put_i32(0); // size, patched below
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
    buf.put_slice(body);
    let size = (buf.len() - SIZE_PREFIX) as i32;
    buf[..SIZE_PREFIX].copy_from_slice(&size.to_be_bytes());
    buf.freeze()
}

fn truncate_str(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn patch_size(buf: &mut BytesMut) -> Result<(), WireError> {
    let size = i32::try_from(buf.len() - SIZE_PREFIX)
        .map_err(|_| WireError::Codec(format!("request of {} bytes is too large", buf.len())))?;
    buf[..SIZE_PREFIX].copy_from_slice(&size.to_be_bytes());
    Ok(())
}

/// Takes one whole frame (without its size prefix) off the front of `buf`.
///
/// Returns `Ok(None)` while the frame is incomplete; the bytes stay in `buf`
/// and the next read appends to them. A negative size, or one above
/// `max_frame`, is an error (the stream cannot be resynchronised after it).
pub fn parse_frame(buf: &mut BytesMut, max_frame: usize) -> Result<Option<Bytes>, WireError> {
    if buf.len() < SIZE_PREFIX {
        return Ok(None);
    }
    let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if size < 0 {
        return Err(WireError::Codec(format!("invalid frame size {size}")));
    }
    let size = size as usize;
    if size > max_frame {
        return Err(WireError::Codec(format!("frame of {size} bytes exceeds the maximum of {max_frame}")));
    }
    if buf.len() < SIZE_PREFIX + size {
        // Make room for the rest so the next read does not reallocate twice.
        buf.reserve(SIZE_PREFIX + size - buf.len());
        return Ok(None);
    }
    buf.advance(SIZE_PREFIX);
    Ok(Some(buf.split_to(size).freeze()))
}

/// Splits a response frame into its correlation id and body, reading the
/// response header version that `api_key` at `version` uses (v0: correlation
/// id; v1: correlation id and tagged fields, which are skipped).
pub fn split_response(mut frame: Bytes, api_key: ApiKey, version: i16) -> Result<(i32, Bytes), WireError> {
    let header_version = api_key.response_header_version(version);
    let header = ResponseHeader::decode(&mut frame, header_version).map_err(|e| {
        WireError::codec(&format!("decoding response header v{header_version} of {api_key:?} v{version}"), e)
    })?;
    Ok((header.correlation_id, frame))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{ApiVersionsRequest, InitProducerIdRequest, TransactionalId};
    use kafka_protocol::protocol::StrBytes;

    fn frame_of(payload: &[u8]) -> Vec<u8> {
        let mut v = (payload.len() as i32).to_be_bytes().to_vec();
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn partial_frame_byte_by_byte() {
        let wire = frame_of(b"hello kafka");
        let mut buf = BytesMut::new();
        for (i, b) in wire.iter().enumerate() {
            buf.put_u8(*b);
            let got = parse_frame(&mut buf, 1024).unwrap();
            if i + 1 < wire.len() {
                assert!(got.is_none(), "frame complete too early at byte {i}");
                assert_eq!(buf.len(), i + 1, "partial bytes must stay buffered");
            } else {
                assert_eq!(got.unwrap(), Bytes::from_static(b"hello kafka"));
            }
        }
        assert!(buf.is_empty());
    }

    #[test]
    fn two_frames_in_one_buffer() {
        let mut wire = frame_of(b"one");
        wire.extend(frame_of(b"second"));
        wire.extend(&[0, 0, 0]); // start of a third frame's size
        let mut buf = BytesMut::from(&wire[..]);
        assert_eq!(parse_frame(&mut buf, 1024).unwrap().unwrap(), &b"one"[..]);
        assert_eq!(parse_frame(&mut buf, 1024).unwrap().unwrap(), &b"second"[..]);
        assert!(parse_frame(&mut buf, 1024).unwrap().is_none());
        assert_eq!(&buf[..], &[0, 0, 0]);
    }

    #[test]
    fn empty_frame() {
        let mut buf = BytesMut::from(&[0u8, 0, 0, 0][..]);
        assert_eq!(parse_frame(&mut buf, 1024).unwrap().unwrap().len(), 0);
    }

    #[test]
    fn oversize_frame_is_an_error() {
        let mut buf = BytesMut::from(&[0u8, 0, 4, 1][..]); // 1025
        let err = parse_frame(&mut buf, 1024).unwrap_err();
        assert!(matches!(err, WireError::Codec(ref m) if m.contains("1025")), "{err}");
        // exactly the maximum is fine
        let mut buf = BytesMut::from(&frame_of(&[7u8; 1024])[..]);
        assert_eq!(parse_frame(&mut buf, 1024).unwrap().unwrap().len(), 1024);
    }

    #[test]
    fn negative_size_is_an_error() {
        let mut buf = BytesMut::from(&[0xffu8, 0xff, 0xff, 0xfe, 1, 2][..]);
        let err = parse_frame(&mut buf, 1024).unwrap_err();
        assert!(matches!(err, WireError::Codec(ref m) if m.contains("-2")), "{err}");
    }

    #[test]
    fn response_header_v0_and_v1() {
        // InitProducerId v1 is not flexible: response header v0 = correlation id only.
        let frame = Bytes::from_static(&[0, 0, 0, 42, 0xAA, 0xBB]);
        let (corr, body) = split_response(frame, ApiKey::InitProducerId, 1).unwrap();
        assert_eq!(corr, 42);
        assert_eq!(&body[..], &[0xAA, 0xBB]);

        // InitProducerId v2+ is flexible: header v1 = correlation id + tagged fields.
        let frame = Bytes::from_static(&[0, 0, 1, 0, 0, 0xAA, 0xBB]);
        let (corr, body) = split_response(frame, ApiKey::InitProducerId, 4).unwrap();
        assert_eq!(corr, 256);
        assert_eq!(&body[..], &[0xAA, 0xBB]);

        // A tagged field in the header (tag 3, 2 bytes) is skipped.
        let frame = Bytes::from_static(&[0, 0, 0, 7, 1, 3, 2, 9, 9, 0xCC]);
        let (corr, body) = split_response(frame, ApiKey::InitProducerId, 5).unwrap();
        assert_eq!(corr, 7);
        assert_eq!(&body[..], &[0xCC]);

        // ApiVersions keeps header v0 even at flexible v3.
        let frame = Bytes::from_static(&[0, 0, 0, 9, 0, 0x23]);
        let (corr, body) = split_response(frame, ApiKey::ApiVersions, 3).unwrap();
        assert_eq!(corr, 9);
        assert_eq!(&body[..], &[0, 0x23]);

        // Too short for a header.
        let frame = Bytes::from_static(&[0, 0]);
        assert!(split_response(frame, ApiKey::InitProducerId, 1).is_err());
    }

    fn header(key: ApiKey, version: i16, corr: i32, client: &'static str) -> RequestHeader {
        RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(corr)
            .with_client_id(Some(StrBytes::from_static_str(client)))
    }

    #[test]
    fn encode_request_layout() {
        let req = InitProducerIdRequest::default()
            .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str("t"))))
            .with_transaction_timeout_ms(1000);
        // v1: header v1, classic string body
        let bytes = encode_request(&header(ApiKey::InitProducerId, 1, 5, "c"), &req, 1).unwrap();
        #[rustfmt::skip]
        let expected: &[u8] = &[
            0, 0, 0, 18,        // size
            0, 22, 0, 1,        // api key 22, version 1
            0, 0, 0, 5,         // correlation id
            0, 1, b'c',         // client id "c"
            0, 1, b't',         // transactional id "t" (int16 length)
            0, 0, 0x03, 0xE8,   // timeout 1000
        ];
        assert_eq!(&bytes[..], expected);
    }

    #[test]
    fn raw_header_equals_crate_header() {
        for (key, version) in [
            (ApiKey::InitProducerId, 1),
            (ApiKey::InitProducerId, 5),
            (ApiKey::ApiVersions, 0),
            (ApiKey::ApiVersions, 3),
            (ApiKey::Metadata, 12),
        ] {
            let h = header(key, version, 77, "sinkhole-test");
            let mut crate_bytes = BytesMut::new();
            h.encode(&mut crate_bytes, key.request_header_version(version)).unwrap();
            let raw = encode_raw_request(key, version, 77, "sinkhole-test", b"BODY");
            assert_eq!(&raw[4..raw.len() - 4], &crate_bytes[..], "{key:?} v{version}");
            assert_eq!(&raw[raw.len() - 4..], b"BODY");
            let size = i32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]) as usize;
            assert_eq!(size, raw.len() - 4);
        }
    }

    #[test]
    fn encode_request_checks_header_and_codec_range() {
        let req = ApiVersionsRequest::default();
        let err = encode_request(&header(ApiKey::Metadata, 3, 1, "c"), &req, 3).unwrap_err();
        assert!(matches!(err, WireError::Codec(_)));
        let ipi = InitProducerIdRequest::default();
        let err = encode_request(&header(ApiKey::InitProducerId, 6, 1, "c"), &ipi, 6).unwrap_err();
        assert!(err.to_string().contains("v0..=v5"), "{err}");
    }
}
