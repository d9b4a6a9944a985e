//! The `sinkhole` binary: bad input gets one clear error and exit code 2; a
//! named cluster outlives one command, is driven node by node, is found stale
//! after a crash, and `down` leaves no process; Ctrl-C leaves no broker and
//! no Maven behind; NO_COLOR turns the colours off.
use crate::common;

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
fn shrink_and_calibrate_refuse_bad_input() {
    let o = sinkhole(&["shrink", "/nonexistent/run"]);
    assert_bad_input(&o, "not a run directory");
    let o = sinkhole(&["calibrate", "--mutants", "legacy~nothing"]);
    assert_bad_input(&o, "unknown mutant");
    // A run in which no mode failed: nothing to shrink.
    let dir = common::test_dir("shrink-nothing");
    std::fs::create_dir_all(&dir).unwrap();
    let summary = serde_json::json!({
        "run_id": "r", "scenario": "s", "source": "s.yaml", "kafka": "4.4.0", "seed": 1, "dir": dir,
        "exit_code": 0, "modes": [{"mode": "legacy", "outcome": "pass", "expected_met": true, "expected": "clean",
        "reason": "clean", "counts": {"expected": 1, "committed": 1, "lost": 0, "duplicated": 0, "unexpected": 0},
        "verdict": null, "wall_ms": 1, "checked": true}]
    });
    std::fs::write(dir.join("summary.json"), summary.to_string()).unwrap();
    let o = sinkhole(&["shrink", dir.to_str().unwrap()]);
    assert_bad_input(&o, "no mode failed");
}

#[test]
fn explore_refuses_bad_input_before_any_run() {
    let scenario = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/notification-lost.yaml");
    let scenario = scenario.to_str().unwrap();
    let results = common::test_dir("explore-bad-input");
    let results = results.to_str().unwrap();
    let explore = |extra: &[&str]| {
        let mut a = vec!["explore", scenario, "--results", results];
        a.extend_from_slice(extra);
        sinkhole(&a)
    };
    assert_bad_input(&explore(&["--runs", "0"]), "--runs 0");
    assert_bad_input(&explore(&["--time", "0"]), "--time 0");
    assert_bad_input(&explore(&["--mode", "at-least-once"]), "does not run it");
    assert_bad_input(&explore(&["--mode", "legacy~nothing"]), "unknown mode");
    let o = explore(&["--time", "5x"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("unknown unit"), "{}", stderr(&o));
    assert_bad_input(&explore(&["--shard", "1/2"]), "--shard 1/2 needs --seed");
    assert_bad_input(&explore(&["--shard", "3/2", "--seed", "1"]), "expected I/N with 1 ≤ I ≤ N");
    // A `shape:` bound no job can meet, at its place, before any run.
    let text = std::fs::read_to_string(scenario).unwrap();
    let shaped = common::test_dir("explore-bad-shape").join("bad-shape.yaml");
    std::fs::create_dir_all(shaped.parent().unwrap()).unwrap();
    std::fs::write(&shaped, format!("{text}shape:\n  parallelism: [3, 1]\n")).unwrap();
    let line = text.lines().count() + 2;
    let o = sinkhole(&["explore", shaped.to_str().unwrap(), "--results", results]);
    assert_bad_input(
        &o,
        &format!("bad-shape.yaml:{line}:16: shape.parallelism: [3, 1]: the minimum is above the maximum"),
    );
    // `sinkhole replay` of a file that is no saved finding, or no file: refused before any try.
    assert_bad_input(&sinkhole(&["replay", scenario, "--results", results]), "no `# signature:` line");
    assert_bad_input(&sinkhole(&["replay", "/nonexistent/01-lost.yaml", "--results", results]), "01-lost.yaml");
    // Nothing was started, nothing written.
    assert!(std::fs::read_dir(results).map(|d| d.count() == 0).unwrap_or(true));
}

#[test]
fn merge_refuses_explorations_that_are_not_one_campaigns_shards() {
    let dir = common::test_dir("merge-explore-bad");
    let (a, b) = (dir.join("a"), dir.join("b"));
    for (d, scenario, index) in [(&a, "one", 1), (&b, "two", 1)] {
        std::fs::create_dir_all(d).unwrap();
        let json = format!(
            "{{\"scenario\":\"{scenario}\",\"source\":\"s.yaml\",\"dir\":\"x\",\"modes\":[\"legacy\"],\
             \"first_seed\":5,\"shard\":{{\"index\":{index},\"count\":2}},\"runs_budget\":1,\"time_budget_ms\":1,\
             \"shrink_runs\":0,\"stop\":\"runs\",\"wall_ms\":1,\"runs_done\":0,\"inconclusive\":0,\"rig_errors\":0,\
             \"findings\":[],\"detection\":[],\"coverage\":[],\"coverage_text\":\"\",\"runs\":[]}}"
        );
        std::fs::write(d.join("explore.json"), json).unwrap();
    }
    let out = dir.join("out");
    let o = sinkhole(&["merge", a.to_str().unwrap(), b.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_bad_input(&o, "scenario two, not one");
    assert_bad_input(&o, "shard 1/2 given twice");
    assert!(!out.exists(), "nothing written");
    // Two shards of one campaign merge, with nothing found: exit 0, the page written.
    let two = std::fs::read_to_string(b.join("explore.json"))
        .unwrap()
        .replace("two", "one")
        .replace("\"index\":1", "\"index\":2");
    std::fs::write(b.join("explore.json"), two).unwrap();
    let o = sinkhole(&["merge", a.to_str().unwrap(), b.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("0 runs of one [2 shards merged]"), "{o:?}");
    assert!(out.join("explore.html").is_file() && out.join("explore.json").is_file());
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

/// The direct children of a process (all its threads).
fn children(pid: u32) -> Vec<i32> {
    let mut out = vec![];
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(s.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
            }
        }
    }
    out
}

/// Starts a probe whose throwaway broker stays up for a while, waits until
/// the broker is ready, and returns the rig's process and the broker's identity.
fn probe_with_live_broker() -> (std::process::Child, ProcessId) {
    use std::io::{BufRead, BufReader};
    common::dist("4.4.0");
    let mut child = Command::new(common::bin())
        // A long client timeout keeps the probe waiting for the abort scan.
        .args(["probe", "--kafka", "4.4.0", "--short-timeout-ms", "30000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("probe stderr ended before the broker was ready").unwrap();
        if line.starts_with("sinkhole: ready in ") {
            break;
        }
    }
    // Keep draining stderr so the rig never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    let jvm = children(child.id())
        .into_iter()
        .filter_map(ProcessId::of)
        .find(|p| std::fs::read_to_string(format!("/proc/{}/cmdline", p.pid)).is_ok_and(|c| c.contains("kafka.Kafka")))
        .expect("the broker JVM is a child of the rig");
    (child, jvm)
}

fn wait_gone(p: ProcessId) {
    let t0 = std::time::Instant::now();
    while matches!(p.state(), RunState::Running | RunState::Stopped) {
        assert!(t0.elapsed() < std::time::Duration::from_secs(10), "broker pid {} outlived the rig", p.pid);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn ctrl_c_and_sigkill_of_the_rig_leave_no_broker() {
    let _turn = common::serial();
    // Ctrl-C: the signal handler kills every process group the rig started.
    let (mut rig, jvm) = probe_with_live_broker();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(rig.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let status = rig.wait().unwrap();
    assert_eq!(status.code(), Some(130), "exit 128+SIGINT");
    wait_gone(jvm);

    // SIGKILL: no code of the rig runs; the kernel's parent-death signal does it.
    let first_dir = sinkhole_cluster::state::clusters_root().join(format!("probe-{}", rig.id()));
    let (mut rig, jvm) = probe_with_live_broker();
    // The second probe swept the directory the first (interrupted) one left.
    assert!(!first_dir.exists(), "{} left behind", first_dir.display());
    let second_dir = sinkhole_cluster::state::clusters_root().join(format!("probe-{}", rig.id()));
    rig.kill().unwrap();
    rig.wait().unwrap();
    wait_gone(jvm);
    assert!(second_dir.exists(), "a SIGKILLed probe cannot clean up: the next probe does");
}

/// A scratch directory with `bin/mvn`, a fake Maven running `body` (sh),
/// and an empty cache for `SINKHOLE_CACHE`.
fn fake_maven(name: &str, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = common::test_dir(name);
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::fs::create_dir_all(dir.join("cache")).unwrap();
    let mvn = dir.join("bin").join("mvn");
    std::fs::write(&mvn, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&mvn, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// `sinkhole ARGS` with the fake Maven of `dir` first on PATH and its cache.
fn with_fake_maven(dir: &std::path::Path, args: &[&str]) -> Command {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![dir.join("bin")];
    paths.extend(std::env::split_paths(&path));
    let mut cmd = Command::new(common::bin());
    cmd.args(args)
        .env("PATH", std::env::join_paths(paths).unwrap())
        .env(sinkhole_install::CACHE_ENV, dir.join("cache"))
        .env("FAKE_MVN_PID", dir.join("mvn.pid"))
        .env_remove(sinkhole_install::MAVEN_REPO_ENV)
        .env_remove("RUST_LOG");
    cmd
}

/// Kills a process the test watches if the rig left it running, so a failed
/// assertion leaves nothing behind either.
struct KillOnDrop(ProcessId);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.signal(nix::sys::signal::Signal::SIGKILL, std::time::Duration::from_secs(2));
    }
}

#[test]
fn ctrl_c_during_setup_leaves_no_mvn() {
    use std::time::{Duration, Instant};
    // A Maven that hangs (exec: the pid it writes stays the sleeping process).
    let dir = fake_maven("setup-ctrl-c", "echo $$ > \"$FAKE_MVN_PID\"\nexec sleep 300");
    let mut rig = with_fake_maven(&dir, &["setup", "--kafka", "9.9.5"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid_file = dir.join("mvn.pid");
    let t0 = Instant::now();
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|t| t.trim().parse::<i32>().ok()) {
            break pid;
        }
        if let Ok(Some(status)) = rig.try_wait() {
            panic!("setup ended ({status}) before it ran mvn");
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "setup did not run mvn within 60 s");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mvn = ProcessId::of(pid).expect("the fake mvn runs");
    let _cleanup = KillOnDrop(mvn);
    assert!(children(rig.id()).contains(&pid), "mvn is a child of the rig");

    nix::sys::signal::kill(nix::unistd::Pid::from_raw(rig.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = rig.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "exit 128+SIGINT; stderr: {err}");
    assert!(err.contains("SIGINT received: killed 1 process group(s)"), "{err}");
    let t0 = Instant::now();
    while mvn.is_alive() {
        assert!(t0.elapsed() < Duration::from_secs(10), "mvn pid {pid} outlived the interrupted setup");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the command with its stderr on a pseudo-terminal and returns what
/// it wrote there.
fn stderr_on_a_terminal(mut cmd: Command) -> String {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two descriptors into the integers; no name, termios or size.
    let rc =
        unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors are fresh and owned here alone.
    let (master, slave) = unsafe { (std::fs::File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::from(slave))
        .spawn()
        .unwrap();
    // The command held the only other copy of the terminal's end: once the
    // child exits, reading the master ends (EIO).
    drop(cmd);
    let mut text = Vec::new();
    let mut master = master;
    let mut buf = [0u8; 4096];
    loop {
        match master.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => text.extend_from_slice(&buf[..n]),
        }
    }
    child.wait().unwrap();
    String::from_utf8_lossy(&text).into_owned()
}

#[test]
fn no_color_turns_the_terminal_colours_off() {
    // An interrupted install's leftovers make `setup -v` log one line
    // (tracing, INFO) before its fake Maven fails.
    let dir = fake_maven("no-color", "echo 'no maven here'; exit 1");
    let leftover = dir.join("cache").join("kafka").join(".9.9.4.partial-999999999-1");
    let log = |no_color: Option<&str>| {
        std::fs::create_dir_all(&leftover).unwrap();
        let mut cmd = with_fake_maven(&dir, &["-v", "setup", "--kafka", "9.9.4"]);
        match no_color {
            Some(v) => cmd.env("NO_COLOR", v),
            None => cmd.env_remove("NO_COLOR"),
        };
        let text = stderr_on_a_terminal(cmd);
        assert!(text.contains("removing the leftovers of an interrupted install"), "{text}");
        assert!(text.contains("sinkhole: error: mvn failed (exit code 1)"), "{text}");
        text
    };
    assert!(log(None).contains("\x1b["), "a terminal gets colour");
    assert!(log(Some("")).contains("\x1b["), "an empty NO_COLOR counts as unset");
    let plain = log(Some("1"));
    assert!(!plain.contains('\x1b'), "NO_COLOR=1 still coloured: {plain:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_of_a_directory_that_is_no_run_is_one_clear_error() {
    let dir = common::test_dir("report-not-a-run");
    std::fs::create_dir_all(&dir).unwrap();
    let o = sinkhole(&["report", dir.to_str().unwrap()]);
    assert_bad_input(&o, "not a run directory (no summary.json)");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Seeds: none, absurdly many, repeated, negative or not a number are each
/// one error naming the flag (exit 2), before any scenario runs; `calibrate`
/// takes the same flags and refuses the same.
#[test]
fn bad_seeds_are_one_clear_error_naming_the_flag() {
    let tiny = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/shard-tiny.yaml");
    for (args, needle) in [
        (&["--seed-count", "0"][..], "'--seed-count <N>': at least one seed"),
        (&["--seed-count", "1001"], "'--seed-count <N>': at most 1000 seeds: each seed is one more run"),
        (&["--seed-count", "99999999999999999999999"], "'--seed-count <N>': at most 1000 seeds"),
        (&["--seed-count", "-1"], "'--seed-count <N>': not a count: a whole number of seeds from 1 to 1000"),
        (&["--seed-count", "five"], "'--seed-count <N>': not a count"),
        (&["--seeds", "1,-2"], "'--seeds <SEEDS>': not a seed: a seed is a whole number from 0 to"),
        (&["--seeds", "1,x"], "'--seeds <SEEDS>': not a seed"),
        (&["--seed", "-3", "--seed-count", "2"], "'--seed <SEED>': not a seed"),
        (&["--seeds", "4,5,4"], "--seeds 4,5,4: seed 4 is given 2 times"),
    ] {
        for command in ["matrix", "calibrate"] {
            let mut all = vec![command, tiny, "--results", "/nonexistent/never-written"];
            all.extend_from_slice(args);
            assert_bad_input(&sinkhole(&all), needle);
        }
    }
}
