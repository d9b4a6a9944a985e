//! The protocol's primitive types, for the few places that read or write a
//! body by hand instead of through `kafka-protocol`: the proxy reads the
//! transactional id at the front of a request without decoding the rest, and
//! the wire client writes InitProducerId v6, which the crate cannot encode.
//!
//! The encodings are those of Kafka's `org.apache.kafka.common.protocol.types.Type`
//! and `ByteUtils`: `UNSIGNED_VARINT` (7 bits per byte, least significant
//! group first, high bit = more), `NULLABLE_STRING` (i16 length, -1 = null)
//! and, in flexible versions (KIP-482), `COMPACT_NULLABLE_STRING` (unsigned
//! varint of length + 1, 0 = null) and tagged-field sections (a count, then
//! per field a tag and a size, both unsigned varints, and the data).
//!
//! Readers take a position they advance and return `None` when the input ends
//! early or is malformed: they run on bytes from the network.
use bytes::BufMut;

/// Reads an `UNSIGNED_VARINT` of at most 5 bytes (a u32, as Java's
/// `ByteUtils.readUnsignedVarint`).
pub fn read_unsigned_varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut out = 0u64;
    for shift in (0..35).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        out |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Some(out);
        }
    }
    None
}

/// Writes an `UNSIGNED_VARINT`.
pub fn put_unsigned_varint(buf: &mut impl BufMut, mut v: u32) {
    while v >= 0x80 {
        buf.put_u8((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

/// Writes a `COMPACT_NULLABLE_STRING`.
pub fn put_compact_nullable_string(buf: &mut impl BufMut, s: Option<&str>) {
    match s {
        None => put_unsigned_varint(buf, 0),
        Some(s) => {
            put_unsigned_varint(buf, s.len() as u32 + 1);
            buf.put_slice(s.as_bytes());
        }
    }
}

/// The length of the nullable string at `pos` (`None` inside: null), moving
/// `pos` past its length field: classic (i16) or `compact` (varint length + 1).
fn nullable_string_len(b: &[u8], pos: &mut usize, compact: bool) -> Option<Option<usize>> {
    if compact {
        let n = read_unsigned_varint(b, pos)?;
        Some((n > 0).then(|| (n - 1) as usize))
    } else {
        let n = i16::from_be_bytes([*b.get(*pos)?, *b.get(*pos + 1)?]);
        *pos += 2;
        Some((n >= 0).then_some(n as usize))
    }
}

/// Reads a nullable string (classic or `compact`); `Some(None)` is null. Not
/// UTF-8, or cut short: `None`.
pub fn read_nullable_string(b: &[u8], pos: &mut usize, compact: bool) -> Option<Option<String>> {
    let Some(len) = nullable_string_len(b, pos, compact)? else {
        return Some(None);
    };
    let s = std::str::from_utf8(b.get(*pos..pos.checked_add(len)?)?).ok()?.to_string();
    *pos += len;
    Some(Some(s))
}

/// Moves `pos` past a nullable string (classic or `compact`).
pub fn skip_nullable_string(b: &[u8], pos: &mut usize, compact: bool) -> Option<()> {
    let len = nullable_string_len(b, pos, compact)?.unwrap_or(0);
    *pos = pos.checked_add(len).filter(|&p| p <= b.len())?;
    Some(())
}

/// Moves `pos` past a tagged-field section.
pub fn skip_tagged_fields(b: &[u8], pos: &mut usize) -> Option<()> {
    let n = read_unsigned_varint(b, pos)?;
    for _ in 0..n {
        read_unsigned_varint(b, pos)?; // tag
        let size = read_unsigned_varint(b, pos)? as usize;
        *pos = pos.checked_add(size).filter(|&p| p <= b.len())?;
    }
    Some(())
}

/// A UUID as Kafka writes it in text (Java's `Uuid.toString`): the 16 bytes
/// in URL-safe base64 without padding, 22 characters. Topic ids take this
/// form in the share coordinator's key (`FindCoordinatorRequest.json` v6)
/// and member ids are generated in it (`Uuid.randomUuid().toString()`).
pub fn uuid_to_kafka_string(bytes: &[u8; 16]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(22);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        // 3 bytes → 4 characters; the last 1-byte chunk → 2 characters.
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    #[test]
    fn uuids_print_as_kafka_prints_them() {
        // Java: new Uuid(0L, 1L).toString() and Uuid.ZERO_UUID.toString().
        let mut one = [0u8; 16];
        one[15] = 1;
        assert_eq!(uuid_to_kafka_string(&one), "AAAAAAAAAAAAAAAAAAAAAQ");
        assert_eq!(uuid_to_kafka_string(&[0; 16]), "AAAAAAAAAAAAAAAAAAAAAA");
        // URL-safe alphabet: 0xFB 0xFF → "-_" characters, never '+' or '/'.
        let s = uuid_to_kafka_string(&[0xFB, 0xFF, 0xBF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF]);
        assert_eq!(s.len(), 22);
        assert!(s.starts_with("-_-_") && !s.contains('+') && !s.contains('/'), "{s}");
        assert!(s.ends_with("_w"), "{s}");
    }

    #[test]
    fn varint_encoding() {
        for (v, bytes) in [
            (0u32, vec![0u8]),
            (127, vec![0x7f]),
            (128, vec![0x80, 0x01]),
            (300, vec![0xAC, 0x02]),
            (16384, vec![0x80, 0x80, 0x01]),
        ] {
            let mut b = BytesMut::new();
            put_unsigned_varint(&mut b, v);
            assert_eq!(&b[..], &bytes[..], "{v}");
            let mut pos = 0;
            assert_eq!(read_unsigned_varint(&b, &mut pos), Some(u64::from(v)));
            assert_eq!(pos, bytes.len());
        }
        let mut pos = 0;
        assert_eq!(read_unsigned_varint(&[0x80, 0x80], &mut pos), None, "cut short");
        let mut pos = 0;
        assert_eq!(read_unsigned_varint(&[0xff; 6], &mut pos), None, "longer than 5 bytes");
    }

    #[test]
    fn nullable_strings_classic_and_compact() {
        let mut b = BytesMut::new();
        put_compact_nullable_string(&mut b, Some("tid"));
        put_compact_nullable_string(&mut b, None);
        b.put_slice(&[0, 2, b'a', b'b', 0xff, 0xff]);
        let mut pos = 0;
        assert_eq!(read_nullable_string(&b, &mut pos, true), Some(Some("tid".to_string())));
        assert_eq!(read_nullable_string(&b, &mut pos, true), Some(None));
        let mut skip = pos;
        assert_eq!(read_nullable_string(&b, &mut pos, false), Some(Some("ab".to_string())));
        skip_nullable_string(&b, &mut skip, false).unwrap();
        assert_eq!(skip, pos);
        assert_eq!(read_nullable_string(&b, &mut pos, false), Some(None));
        assert_eq!(pos, b.len());
        // A length past the end.
        let mut pos = 0;
        assert_eq!(read_nullable_string(&[0, 9, b'x'], &mut pos, false), None);
        let mut pos = 0;
        assert_eq!(skip_nullable_string(&[0, 9, b'x'], &mut pos, false), None);
    }

    #[test]
    fn tagged_fields_are_skipped() {
        let b = [2, 0, 1, 0xAA, 5, 2, 0xBB, 0xCC, 0xEE];
        let mut pos = 0;
        skip_tagged_fields(&b, &mut pos).unwrap();
        assert_eq!(pos, 8);
        let mut pos = 0;
        assert_eq!(skip_tagged_fields(&[1, 0, 4, 1], &mut pos), None, "a field longer than the input");
    }
}
