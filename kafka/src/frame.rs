//! Kafka framing: a 4-byte big-endian size, then that many bytes.
//!
//! A request frame is `size | request header | body`; a response frame is
//! `size | response header | body`. The header versions are not in the frame:
//! they follow from the API key and version of the request (see
//! [`header`](crate::header)).
//!
//! [`split_frame`] takes one whole frame off the front of a connection's read
//! buffer, or says that more bytes are needed; the size checks mirror Java's
//! `NetworkReceive`, which rejects a negative size, or one above its maximum,
//! before allocating anything. Writing whole frames is [`encode`](crate::encode)'s,
//! one layer up: this file is the bottom of the crate (the headers and the
//! encoders read its size prefix and return its error), so it uses no other.
use bytes::{Bytes, BytesMut};

/// Bytes of the size prefix.
pub const SIZE_PREFIX: usize = 4;

/// What can go wrong cutting or writing a frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The size prefix is negative: the stream is out of step.
    #[error("invalid frame size {0}")]
    NegativeSize(i32),
    /// The size prefix is above the reader's limit (a corrupt length must not
    /// become an allocation).
    #[error("frame of {size} bytes exceeds the maximum of {max}")]
    TooLarge { size: usize, max: usize },
    /// A header or body could not be encoded or decoded.
    #[error("{0}")]
    Codec(String),
}

impl FrameError {
    pub(crate) fn codec(context: &str, err: impl std::fmt::Display) -> Self {
        FrameError::Codec(format!("{context}: {err}"))
    }
}

/// Takes one whole frame, size prefix included, off the front of `buf`.
///
/// Returns `Ok(None)` while the frame is incomplete: the bytes stay in `buf`
/// (with room reserved for the rest, so the next read does not reallocate
/// twice) and the next read appends to them. The returned frame shares
/// `buf`'s allocation. A negative size, or one above `max_frame`, is an error;
/// the stream cannot be resynchronised after it.
pub fn split_frame(buf: &mut BytesMut, max_frame: usize) -> Result<Option<Bytes>, FrameError> {
    if buf.len() < SIZE_PREFIX {
        return Ok(None);
    }
    let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if size < 0 {
        return Err(FrameError::NegativeSize(size));
    }
    let size = size as usize;
    if size > max_frame {
        return Err(FrameError::TooLarge { size, max: max_frame });
    }
    let total = SIZE_PREFIX + size;
    if buf.len() < total {
        buf.reserve(total - buf.len());
        return Ok(None);
    }
    Ok(Some(buf.split_to(total).freeze()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;

    /// The bytes of a frame after its size prefix.
    fn payload(frame: &Bytes) -> &[u8] {
        &frame[SIZE_PREFIX..]
    }

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
            let got = split_frame(&mut buf, 1024).unwrap();
            if i + 1 < wire.len() {
                assert!(got.is_none(), "frame complete too early at byte {i}");
                assert_eq!(buf.len(), i + 1, "partial bytes must stay buffered");
            } else {
                let got = got.unwrap();
                assert_eq!(&got[..], &wire[..], "the whole frame, size prefix included");
                assert_eq!(payload(&got), b"hello kafka");
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
        assert_eq!(payload(&split_frame(&mut buf, 1024).unwrap().unwrap()), &b"one"[..]);
        assert_eq!(payload(&split_frame(&mut buf, 1024).unwrap().unwrap()), &b"second"[..]);
        assert!(split_frame(&mut buf, 1024).unwrap().is_none());
        assert_eq!(&buf[..], &[0, 0, 0]);
    }

    #[test]
    fn partial_frame_reserves_room_for_the_rest() {
        let mut buf = BytesMut::from(&[0u8, 0, 1, 0, 1, 2][..]); // 256 bytes announced, 2 here
        assert!(split_frame(&mut buf, 1024).unwrap().is_none());
        assert!(buf.capacity() >= 4 + 256, "capacity {}", buf.capacity());
    }

    #[test]
    fn empty_frame() {
        let mut buf = BytesMut::from(&[0u8, 0, 0, 0][..]);
        let f = split_frame(&mut buf, 1024).unwrap().unwrap();
        assert_eq!(f.len(), SIZE_PREFIX);
        assert_eq!(payload(&f).len(), 0);
    }

    #[test]
    fn oversize_frame_is_an_error() {
        let mut buf = BytesMut::from(&[0u8, 0, 4, 1][..]); // 1025
        let err = split_frame(&mut buf, 1024).unwrap_err();
        assert_eq!(err, FrameError::TooLarge { size: 1025, max: 1024 });
        assert!(err.to_string().contains("1025"), "{err}");
        // exactly the maximum is fine
        let mut buf = BytesMut::from(&frame_of(&[7u8; 1024])[..]);
        assert_eq!(payload(&split_frame(&mut buf, 1024).unwrap().unwrap()).len(), 1024);
    }

    #[test]
    fn negative_size_is_an_error() {
        let mut buf = BytesMut::from(&[0xffu8, 0xff, 0xff, 0xfe, 1, 2][..]);
        let err = split_frame(&mut buf, 1024).unwrap_err();
        assert_eq!(err, FrameError::NegativeSize(-2));
        assert!(err.to_string().contains("-2"), "{err}");
    }
}
