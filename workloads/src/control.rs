//! The control channel between the coordinator and a worker. STUB: the
//! contract; the implementation replaces every `todo!()`.
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Length-delimited JSON messages over a Unix socket.
pub struct Channel {
    _private: (),
}

impl Channel {
    pub async fn connect(_path: &Path) -> std::io::Result<Channel> {
        todo!()
    }
    pub fn from_stream(_stream: tokio::net::UnixStream) -> Channel {
        todo!()
    }
    pub async fn send<T: Serialize>(&mut self, _msg: &T) -> std::io::Result<()> {
        todo!()
    }
    /// None on a clean end of stream.
    pub async fn recv<T: DeserializeOwned>(&mut self) -> std::io::Result<Option<T>> {
        todo!()
    }
}
