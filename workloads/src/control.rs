//! The control channel between the coordinator and a worker: length-delimited
//! JSON messages (a 4-byte big-endian body length, then the JSON body) over a
//! Unix stream socket.
//!
//! The reading side keeps a buffer that survives partial frames (the shape of
//! mini-redis's `connection.rs`): a frame is parsed only once all of its
//! bytes are in, so [`Channel::recv`] / [`ChannelReader::recv`] are
//! cancellation safe and can sit in a `tokio::select!` next to a timer. A
//! clean end of stream between frames is `Ok(None)`; an end of stream inside
//! a frame is an error (the peer died mid-message, e.g. it was SIGKILLed).
use std::io;
use std::path::Path;

use bytes::{Buf, BytesMut};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;

/// Largest body accepted or sent. Control messages are small (the largest is
/// an `Ack` carrying a subtask's committables); anything near this is a bug
/// or a stream that is out of step, and is refused rather than buffered.
pub const MAX_FRAME: usize = 16 * 1024 * 1024;

const HEADER: usize = 4;

/// Length-delimited JSON messages over a Unix socket.
pub struct Channel {
    reader: ChannelReader,
    writer: ChannelWriter,
}

/// The receiving half of a [`Channel`].
pub struct ChannelReader {
    stream: OwnedReadHalf,
    buf: BytesMut,
}

/// The sending half of a [`Channel`].
pub struct ChannelWriter {
    stream: OwnedWriteHalf,
}

impl Channel {
    pub async fn connect(path: &Path) -> io::Result<Channel> {
        let stream = UnixStream::connect(path).await?;
        Ok(Channel::from_stream(stream))
    }

    pub fn from_stream(stream: UnixStream) -> Channel {
        let (r, w) = stream.into_split();
        Channel {
            reader: ChannelReader { stream: r, buf: BytesMut::with_capacity(8 * 1024) },
            writer: ChannelWriter { stream: w },
        }
    }

    pub async fn send<T: Serialize>(&mut self, msg: &T) -> io::Result<()> {
        self.writer.send(msg).await
    }

    /// None on a clean end of stream.
    pub async fn recv<T: DeserializeOwned>(&mut self) -> io::Result<Option<T>> {
        self.reader.recv().await
    }

    /// Separate halves, so one task can wait for messages while another
    /// (or the same one, between awaits) sends.
    pub fn into_split(self) -> (ChannelReader, ChannelWriter) {
        (self.reader, self.writer)
    }
}

impl ChannelWriter {
    /// Writes one whole frame. Not cancellation safe: a frame cut off by a
    /// dropped future leaves the stream out of step, so never race it.
    pub async fn send<T: Serialize>(&mut self, msg: &T) -> io::Result<()> {
        write_frame(&mut self.stream, msg).await
    }
}

impl ChannelReader {
    /// The next message; None on a clean end of stream. Cancellation safe.
    pub async fn recv<T: DeserializeOwned>(&mut self) -> io::Result<Option<T>> {
        read_frame(&mut self.stream, &mut self.buf).await
    }
}

/// Encodes one frame: 4-byte big-endian length, then the JSON body.
pub fn encode<T: Serialize>(msg: &T) -> io::Result<Vec<u8>> {
    let body = serde_json::to_vec(msg).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if body.len() > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("control message of {} bytes exceeds the {MAX_FRAME}-byte limit", body.len()),
        ));
    }
    let mut out = Vec::with_capacity(HEADER + body.len());
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// Takes one whole frame's body out of `buf`, if it is all there.
fn parse(buf: &mut BytesMut) -> io::Result<Option<BytesMut>> {
    if buf.len() < HEADER {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("control frame of {len} bytes exceeds the {MAX_FRAME}-byte limit"),
        ));
    }
    if buf.len() < HEADER + len {
        // Reserve for the rest now, so the next read fills it in one go.
        buf.reserve(HEADER + len - buf.len());
        return Ok(None);
    }
    buf.advance(HEADER);
    Ok(Some(buf.split_to(len)))
}

async fn read_frame<R, T>(stream: &mut R, buf: &mut BytesMut) -> io::Result<Option<T>>
where
    R: AsyncRead + Unpin,
    T: DeserializeOwned,
{
    loop {
        if let Some(body) = parse(buf)? {
            let msg = serde_json::from_slice(&body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            return Ok(Some(msg));
        }
        // `read_buf` either reads nothing (and is dropped) or appends to
        // `buf`, which outlives the future: no byte is ever lost.
        if stream.read_buf(buf).await? == 0 {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("control channel closed inside a frame ({} bytes buffered)", buf.len()),
                ))
            };
        }
    }
}

async fn write_frame<W, T>(stream: &mut W, msg: &T) -> io::Result<()>
where
    W: AsyncWrite + Unpin,
    T: Serialize,
{
    let frame = encode(msg)?;
    stream.write_all(&frame).await?;
    stream.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkhole_model::{Committable, FromWorker, SubtaskState, ToWorker, TxnProtocol};

    #[tokio::test]
    async fn round_trip_both_ways() {
        let (a, b) = UnixStream::pair().unwrap();
        let (mut a, mut b) = (Channel::from_stream(a), Channel::from_stream(b));
        a.send(&ToWorker::Checkpoint { id: 7 }).await.unwrap();
        a.send(&ToWorker::Stop).await.unwrap();
        assert_eq!(b.recv::<ToWorker>().await.unwrap(), Some(ToWorker::Checkpoint { id: 7 }));
        assert_eq!(b.recv::<ToWorker>().await.unwrap(), Some(ToWorker::Stop));
        let ack = FromWorker::Ack {
            subtask: 2,
            id: 7,
            state: SubtaskState {
                next_seq: 99,
                committables: vec![Committable {
                    checkpoint: 7,
                    transactional_id: "p-2-7".into(),
                    producer_id: 1000,
                    producer_epoch: 3,
                    protocol: TxnProtocol::V2,
                    records: 10,
                    first_seq: Some(89),
                    last_seq: Some(98),
                }],
            },
        };
        b.send(&ack).await.unwrap();
        assert_eq!(a.recv::<FromWorker>().await.unwrap(), Some(ack));
        drop(b);
        assert_eq!(a.recv::<FromWorker>().await.unwrap(), None, "clean EOF");
    }

    #[tokio::test]
    async fn split_halves_work_independently() {
        let (a, b) = UnixStream::pair().unwrap();
        let (mut ar, mut aw) = Channel::from_stream(a).into_split();
        let mut b = Channel::from_stream(b);
        aw.send(&FromWorker::EndOfInput { subtask: 1 }).await.unwrap();
        b.send(&ToWorker::Complete { id: 3 }).await.unwrap();
        assert_eq!(ar.recv::<ToWorker>().await.unwrap(), Some(ToWorker::Complete { id: 3 }));
        assert_eq!(b.recv::<FromWorker>().await.unwrap(), Some(FromWorker::EndOfInput { subtask: 1 }));
    }

    #[tokio::test]
    async fn partial_frames_are_buffered() {
        let (mut raw, b) = UnixStream::pair().unwrap();
        let mut b = Channel::from_stream(b);
        let mut bytes = encode(&ToWorker::Checkpoint { id: 1 }).unwrap();
        bytes.extend(encode(&ToWorker::Complete { id: 1 }).unwrap());
        let reader = tokio::spawn(async move {
            let first = b.recv::<ToWorker>().await.unwrap();
            let second = b.recv::<ToWorker>().await.unwrap();
            (first, second)
        });
        // One byte at a time, header split too, with pauses so the reader
        // sees every partial state.
        for byte in bytes {
            raw.write_all(&[byte]).await.unwrap();
            raw.flush().await.unwrap();
            tokio::task::yield_now().await;
        }
        let (first, second) = reader.await.unwrap();
        assert_eq!(first, Some(ToWorker::Checkpoint { id: 1 }));
        assert_eq!(second, Some(ToWorker::Complete { id: 1 }));
    }

    #[tokio::test]
    async fn recv_survives_cancellation() {
        let (mut raw, b) = UnixStream::pair().unwrap();
        let (mut r, _w) = Channel::from_stream(b).into_split();
        let bytes = encode(&ToWorker::Checkpoint { id: 42 }).unwrap();
        raw.write_all(&bytes[..5]).await.unwrap();
        // The first recv is cancelled after it has buffered part of a frame.
        let t = tokio::time::timeout(std::time::Duration::from_millis(50), r.recv::<ToWorker>()).await;
        assert!(t.is_err(), "nothing complete yet");
        raw.write_all(&bytes[5..]).await.unwrap();
        assert_eq!(r.recv::<ToWorker>().await.unwrap(), Some(ToWorker::Checkpoint { id: 42 }));
    }

    #[tokio::test]
    async fn eof_mid_frame_is_an_error() {
        for cut in [2usize, 4, 9] {
            let (mut raw, b) = UnixStream::pair().unwrap();
            let mut b = Channel::from_stream(b);
            let bytes = encode(&ToWorker::Checkpoint { id: 5 }).unwrap();
            raw.write_all(&bytes[..cut]).await.unwrap();
            drop(raw);
            let err = b.recv::<ToWorker>().await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "cut at {cut}: {err}");
        }
    }

    #[tokio::test]
    async fn oversize_frame_refused() {
        let (mut raw, b) = UnixStream::pair().unwrap();
        let mut b = Channel::from_stream(b);
        raw.write_all(&((MAX_FRAME as u32) + 1).to_be_bytes()).await.unwrap();
        let err = b.recv::<ToWorker>().await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("exceeds"), "{err}");
        // And the sending side refuses to build one.
        let big = "x".repeat(MAX_FRAME + 1);
        assert_eq!(encode(&big).unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }

    #[tokio::test]
    async fn malformed_json_is_an_error() {
        let (mut raw, b) = UnixStream::pair().unwrap();
        let mut b = Channel::from_stream(b);
        raw.write_all(&3u32.to_be_bytes()).await.unwrap();
        raw.write_all(b"{x}").await.unwrap();
        assert_eq!(b.recv::<ToWorker>().await.unwrap_err().kind(), io::ErrorKind::InvalidData);
    }
}
