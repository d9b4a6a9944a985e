//! The `sinkhole` binary: bad input gets one clear error and exit code 2; a
//! named cluster outlives one command, is driven node by node, is found stale
//! after a crash, and `down` leaves no process.
mod common;

use std::net::TcpListener;
use std::process::{Command, Output};

use serde_json::Value;
use sinkhole_faults::process::{ProcessId, RunState};

fn sinkhole(args: &[&str]) -> Output {
    Command::new(common::bin()).args(args).output().expect("run sinkhole")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exactly one error line, naming what was wrong.
fn assert_bad_input(o: &Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit code; stderr: {err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "one error line expected, got: {err}");
    assert!(err.contains(needle), "error should mention {needle:?}: {err}");
}

#[test]
fn bad_key_value_is_one_clear_error() {
    let o = sinkhole(&["cluster", "up", "--name", "never", "--broker-config", "transaction.max.timeout.ms"]);
    assert_bad_input(&o, "expected key=value");
    let o = sinkhole(&["cluster", "up", "--name", "never", "--broker-config", "node.id=4"]);
    assert_bad_input(&o, "set by sinkhole");
}

#[test]
fn unknown_version_is_one_clear_error() {
    let o = sinkhole(&["setup", "--kafka", "9.9.9"]);
    assert_bad_input(&o, "9.9.9");
    let o = sinkhole(&["setup", "--kafka", "four"]);
    assert_bad_input(&o, "four");
}

#[test]
fn occupied_port_is_one_clear_error() {
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    let o = sinkhole(&["cluster", "up", "--name", "never", "--base-port", &port.to_string()]);
    assert_bad_input(&o, &format!("port {port}"));
}

#[test]
fn bad_node_count_and_bad_bootstrap_are_refused() {
    let o = sinkhole(&["cluster", "up", "--name", "never", "--nodes", "2"]);
    assert_bad_input(&o, "--nodes 2");
    let o = sinkhole(&["probe", "--bootstrap", "localhost"]);
    assert_bad_input(&o, "host:port");
    let o = sinkhole(&["cluster", "status", "--name", "no-such-cluster"]);
    assert_bad_input(&o, "no cluster named 'no-such-cluster'");
}

fn status(name: &str) -> Value {
    let o = sinkhole(&["cluster", "status", "--name", name, "--json"]);
    assert!(o.status.success(), "status: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn pids(v: &Value) -> Vec<ProcessId> {
    v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["pid"].as_i64())
        .filter_map(|p| ProcessId::of(p as i32))
        .collect()
}

#[test]
fn a_named_cluster_outlives_commands_and_down_leaves_nothing() {
    let _turn = common::serial();
    common::dist("4.4.0");
    let name = format!("it-cli-{}", std::process::id());
    let o = sinkhole(&["cluster", "up", "--name", &name, "--json"]);
    assert!(o.status.success(), "up: {}", stderr(&o));
    let up: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(up["bootstrap"].as_str().unwrap().starts_with("127.0.0.1:"));

    let st = status(&name);
    let first = pids(&st);
    assert_eq!(first.len(), 1);
    assert_eq!(st["nodes"][0]["observed"], "running");

    // A second `up` with the same name refuses.
    let o = sinkhole(&["cluster", "up", "--name", &name]);
    assert_bad_input(&o, "already exists");

    let o = sinkhole(&["cluster", "pause", "1", "--name", &name]);
    assert!(o.status.success(), "pause: {}", stderr(&o));
    assert_eq!(status(&name)["nodes"][0]["observed"], "stopped");
    let o = sinkhole(&["cluster", "resume", "1", "--name", &name]);
    assert!(o.status.success(), "resume: {}", stderr(&o));

    let o = sinkhole(&["cluster", "kill", "1", "--name", &name, "--json"]);
    assert!(o.status.success(), "kill: {}", stderr(&o));
    let effect: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(effect["signals"][0]["confirmed"], true);
    assert!(first.iter().all(|p| !p.is_alive()));
    assert_eq!(status(&name)["nodes"][0]["intent"], "killed");

    let o = sinkhole(&["cluster", "restart", "1", "--name", &name, "--json"]);
    assert!(o.status.success(), "restart: {}", stderr(&o));
    let effect: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(effect["ready"], true);
    let second = pids(&status(&name));
    assert_eq!(second.len(), 1);
    assert_ne!(second[0], first[0]);

    let o = sinkhole(&["cluster", "down", "--name", &name]);
    assert!(o.status.success(), "down: {}", stderr(&o));
    assert!(second.iter().all(|p| matches!(p.state(), RunState::Gone | RunState::Zombie)));
    let o = sinkhole(&["cluster", "status", "--name", &name]);
    assert_bad_input(&o, "no cluster named");
}

#[test]
fn a_crashed_cluster_is_found_stale_and_cleaned() {
    let _turn = common::serial();
    common::dist("4.4.0");
    let name = format!("it-stale-{}", std::process::id());
    let o = sinkhole(&["cluster", "up", "--name", &name]);
    assert!(o.status.success(), "up: {}", stderr(&o));
    // Simulate a crash that took the brokers with it: kill them behind the rig's back.
    for p in pids(&status(&name)) {
        p.signal_group(nix::sys::signal::Signal::SIGKILL, std::time::Duration::from_secs(5)).unwrap();
    }
    let o = sinkhole(&["cluster", "status", "--name", &name]);
    assert_bad_input(&o, "crashed");
    assert!(stderr(&o).contains("stale"));
    // Cleaned: the next look finds nothing, and `up` works again.
    let o = sinkhole(&["cluster", "status", "--name", &name]);
    assert_bad_input(&o, "no cluster named");
}
