//! Shared helpers for the integration tests: real brokers, started by the test.
#![allow(dead_code)]
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};

use sinkhole_rig::install::{self, KafkaDist};

/// Clusters are heavy on a 2-core machine: tests that start one take turns.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: OnceLock<Mutex<()>> = OnceLock::new();
    LOCK.get_or_init(|| Mutex::new(())).lock().unwrap_or_else(|p| p.into_inner())
}

/// Kafka 4.4.0 from the cache, installed on first use.
pub fn dist(version: &str) -> KafkaDist {
    install::ensure(version, &mut |l| eprintln!("setup: {l}")).expect("install Kafka")
}

/// A fresh directory for one test's cluster.
pub fn test_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sinkhole-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sinkhole"))
}
