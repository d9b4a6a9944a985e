//! Whole frames written: `size | header | body`, for the wire client's
//! requests and for the answers the fault proxy writes in a broker's place.
//!
//! What Java's `SendBuilder.buildRequestSend` / `buildResponseSend` do: write
//! the header the API key and version call for ([`header`]),
//! then the body, then patch the size prefix ([`frame`](crate::frame)) once
//! the length is known. It sits above the framing, the headers and the API
//! names, which all stay below it.
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::{Encodable, Request};

use crate::api::api_key_of;
use crate::frame::{FrameError, SIZE_PREFIX};
use crate::header;

/// Writes the size of `buf` (everything after its first 4 bytes) into those bytes.
fn patch_size(buf: &mut BytesMut) -> Result<(), FrameError> {
    let size = i32::try_from(buf.len() - SIZE_PREFIX)
        .map_err(|_| FrameError::Codec(format!("frame of {} bytes is too large", buf.len())))?;
    buf[..SIZE_PREFIX].copy_from_slice(&size.to_be_bytes());
    Ok(())
}

/// Encodes `size | header | body` for a request the `kafka-protocol` crate
/// knows. The header version follows from the API key and `version`; the
/// header's own api key and version must match `R` and `version`.
pub fn encode_request<R: Request>(header: &RequestHeader, req: &R, version: i16) -> Result<Bytes, FrameError> {
    let api_key = api_key_of::<R>()?;
    if header.request_api_key != R::KEY || header.request_api_version != version {
        return Err(FrameError::Codec(format!(
            "request header says api {} v{}, body is {:?} v{}",
            header.request_api_key, header.request_api_version, api_key, version
        )));
    }
    let versions = R::VERSIONS;
    if version < versions.min || version > versions.max {
        return Err(FrameError::Codec(format!(
            "{api_key:?} v{version}: kafka-protocol encodes only v{}..=v{}",
            versions.min, versions.max
        )));
    }
    let header_version = api_key.request_header_version(version);
    let mut buf = BytesMut::new();
    buf.put_i32(0); // size, patched below
    header.encode(&mut buf, header_version).map_err(|e| FrameError::codec("encoding request header", e))?;
    req.encode(&mut buf, version).map_err(|e| FrameError::codec(&format!("encoding {api_key:?} v{version}"), e))?;
    patch_size(&mut buf)?;
    Ok(buf.freeze())
}

/// Encodes `size | header | body` around an already encoded body, for the
/// requests encoded by hand (InitProducerId v6) and for probes that send a
/// version the crate does not know.
///
/// The header is written here (`header::put_request_header`) rather than by
/// `kafka-protocol` so that this cannot fail; a client id longer than
/// `i16::MAX` bytes is cut at a character boundary.
pub fn encode_raw_request(api_key: ApiKey, version: i16, correlation_id: i32, client_id: &str, body: &[u8]) -> Bytes {
    let client_id = truncate_str(client_id, i16::MAX as usize);
    let mut buf = BytesMut::with_capacity(SIZE_PREFIX + 10 + client_id.len() + 1 + body.len());
    buf.put_i32(0); // size, patched below
    header::put_request_header(&mut buf, api_key, version, correlation_id, client_id);
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

/// A whole response frame: size, the response header `api_key` at `version`
/// uses (v1 adds an empty tagged-field section), body. What a broker writes;
/// the proxy uses it for the answers it writes in a broker's place.
pub fn encode_response(api_key: i16, version: i16, correlation_id: i32, body: &[u8]) -> Result<Bytes, FrameError> {
    let key = ApiKey::try_from(api_key).map_err(|_| FrameError::Codec(format!("unknown api key {api_key}")))?;
    let mut out = BytesMut::with_capacity(SIZE_PREFIX + 5 + body.len());
    out.put_i32(0); // size, patched below
    header::put_response_header(&mut out, key, version, correlation_id);
    out.put_slice(body);
    patch_size(&mut out)?;
    Ok(out.freeze())
}

/// `frame` with everything from `body_offset` on replaced by `body`: the same
/// header (correlation id, tagged fields), a new body, the size fixed.
pub fn replace_body(frame: &[u8], body_offset: usize, body: &[u8]) -> Result<Bytes, FrameError> {
    if !(SIZE_PREFIX..=frame.len()).contains(&body_offset) {
        return Err(FrameError::Codec(format!("body offset {body_offset} outside a frame of {} bytes", frame.len())));
    }
    let mut out = BytesMut::with_capacity(body_offset + body.len());
    out.put_i32(0); // size, patched below
    out.put_slice(&frame[SIZE_PREFIX..body_offset]);
    out.put_slice(body);
    patch_size(&mut out)?;
    Ok(out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::InitProducerIdRequest;
    use kafka_protocol::messages::TransactionalId;
    use kafka_protocol::protocol::StrBytes;

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
        let req = kafka_protocol::messages::ApiVersionsRequest::default();
        let err = encode_request(&header(ApiKey::Metadata, 3, 1, "c"), &req, 3).unwrap_err();
        assert!(matches!(err, FrameError::Codec(_)));
        let ipi = InitProducerIdRequest::default();
        let err = encode_request(&header(ApiKey::InitProducerId, 6, 1, "c"), &ipi, 6).unwrap_err();
        assert!(err.to_string().contains("v0..=v5"), "{err}");
    }

    #[test]
    fn raw_request_cuts_a_long_client_id_at_a_char_boundary() {
        let long = "é".repeat(20_000); // 40,000 bytes
        let raw = encode_raw_request(ApiKey::ApiVersions, 0, 1, &long, b"");
        let len = i16::from_be_bytes([raw[12], raw[13]]) as usize;
        assert!(len <= i16::MAX as usize && len % 2 == 0, "{len}");
        assert!(std::str::from_utf8(&raw[14..14 + len]).is_ok());
    }

    #[test]
    fn response_frames_carry_the_header_their_version_uses() {
        // EndTxn v3 is flexible: header v1, an empty tagged-field section.
        let f = encode_response(ApiKey::EndTxn as i16, 3, 9, &[1, 2]).unwrap();
        assert_eq!(&f[..], &[0, 0, 0, 7, 0, 0, 0, 9, 0, 1, 2]);
        // EndTxn v2 is not: header v0.
        let f = encode_response(ApiKey::EndTxn as i16, 2, 9, &[1, 2]).unwrap();
        assert_eq!(&f[..], &[0, 0, 0, 6, 0, 0, 0, 9, 1, 2]);
        // ApiVersions keeps header v0 even when flexible.
        let f = encode_response(ApiKey::ApiVersions as i16, 3, 1, &[]).unwrap();
        assert_eq!(&f[..], &[0, 0, 0, 4, 0, 0, 0, 1]);
        assert!(encode_response(-7, 0, 1, &[]).is_err());
    }

    #[test]
    fn replace_body_keeps_the_header_and_fixes_the_size() {
        let f = encode_response(ApiKey::EndTxn as i16, 3, 9, &[1, 2]).unwrap();
        let g = replace_body(&f, 9, &[7, 7, 7, 7]).unwrap();
        assert_eq!(&g[..], &[0, 0, 0, 9, 0, 0, 0, 9, 0, 7, 7, 7, 7]);
        assert!(replace_body(&f, 2, &[]).is_err());
        assert!(replace_body(&f, 12, &[]).is_err());
    }
}
