//! What can go wrong checking a mode: the topic cannot be drained, a saved drain or the
//! history cannot be read. At the bottom of the crate: the drain, the store and the check
//! all return it.
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum CheckerError {
    #[error("draining topic {topic}: {source}")]
    Kafka {
        topic: String,
        #[source]
        source: rdkafka::error::KafkaError,
    },
    #[error("topic {0} not found (or it has no partitions)")]
    NoTopic(String),
    #[error("{what} {}: {source}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The history, unreadable or damaged (file, line, column).
    #[error(transparent)]
    History(#[from] sinkhole_history::ReadError),
    #[error("{0}")]
    Other(String),
}
