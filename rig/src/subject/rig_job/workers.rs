//! How the coordinator starts, signals and reaps the job's workers.
//!
//! The coordinator only sees the [`Launcher`] trait, so its state machine can
//! be driven by in-process fake workers in tests; [`ProcessLauncher`] is the
//! real one: one `sinkhole worker` OS process per subtask, in a process group of
//! its own that dies with the rig ([`sinkhole_base::procs`]), so faults are real
//! signals.
use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::Signal;
use sinkhole_faults::process::{ProcessId, RunState, SignalEffect};
use sinkhole_model::WorkerConfig;

use sinkhole_base::procs::{self, Lifetime};

/// What one start of a worker needs besides its configuration.
#[derive(Debug, Clone)]
pub struct LaunchSpec<'a> {
    pub config: &'a WorkerConfig,
    /// The configuration as written to disk (`workers/worker-<s>-attempt-<a>.json`).
    pub config_path: &'a Path,
    /// The coordinator's control socket.
    pub control: &'a Path,
    /// Where stdout and stderr are appended (`logs/worker-<s>.log`).
    pub log: &'a Path,
}

/// Starts, signals and reaps workers. Workers are named by the pid the
/// launcher returned (a worker reports it in `Ready`).
pub trait Launcher: Send {
    /// Starts one subtask attempt; returns its pid.
    fn launch(&mut self, spec: LaunchSpec<'_>) -> anyhow::Result<u32>;
    /// Delivers `signal` to the worker's process group and reports the effect
    /// observed. SIGKILL also reaps the worker: it is not reported again by
    /// [`exited`](Self::exited).
    fn signal(&mut self, pid: u32, signal: Signal) -> Result<SignalEffect, String>;
    /// Workers that ended on their own since the last call: (pid, exit status).
    fn exited(&mut self) -> Vec<(u32, String)>;
    /// Whether the worker is still alive (running or stopped).
    fn alive(&mut self, pid: u32) -> bool;
}

/// `sinkhole worker` processes.
pub struct ProcessLauncher {
    bin: PathBuf,
    children: BTreeMap<u32, (Child, ProcessId)>,
}

impl ProcessLauncher {
    pub fn new(bin: PathBuf) -> ProcessLauncher {
        ProcessLauncher { bin, children: BTreeMap::new() }
    }
}

impl Launcher for ProcessLauncher {
    fn launch(&mut self, spec: LaunchSpec<'_>) -> anyhow::Result<u32> {
        let mut log = OpenOptions::new().create(true).append(true).open(spec.log)?;
        writeln!(
            log,
            "=== sinkhole: subtask {} attempt {} ({}) ===",
            spec.config.subtask,
            spec.config.attempt,
            spec.config_path.display()
        )?;
        let log2 = log.try_clone()?;
        let mut cmd = Command::new(&self.bin);
        cmd.arg("worker")
            .arg("--config")
            .arg(spec.config_path)
            .arg("--control")
            .arg(spec.control)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        let (child, id) = procs::spawn(cmd, Lifetime::Owned)
            .map_err(|e| anyhow::anyhow!("starting {} worker: {e}", self.bin.display()))?;
        let pid = id.pid as u32;
        self.children.insert(pid, (child, id));
        Ok(pid)
    }

    fn signal(&mut self, pid: u32, signal: Signal) -> Result<SignalEffect, String> {
        let Some((_, id)) = self.children.get(&pid) else {
            return Err(format!("worker {pid} is not running"));
        };
        let effect = id.signal_group(signal, Duration::from_secs(5)).map_err(|e| e.to_string())?;
        if signal == Signal::SIGKILL {
            if let Some((mut child, id)) = self.children.remove(&pid) {
                let _ = child.wait();
                procs::forget(id.pid);
            }
        }
        Ok(effect)
    }

    fn exited(&mut self) -> Vec<(u32, String)> {
        let mut out = Vec::new();
        let pids: Vec<u32> = self.children.keys().copied().collect();
        for pid in pids {
            let done = match self.children.get_mut(&pid) {
                Some((child, _)) => child.try_wait().ok().flatten(),
                None => None,
            };
            if let Some(status) = done {
                if let Some((_, id)) = self.children.remove(&pid) {
                    procs::forget(id.pid);
                }
                out.push((pid, status.to_string()));
            }
        }
        out
    }

    fn alive(&mut self, pid: u32) -> bool {
        self.children.get(&pid).is_some_and(|(_, id)| matches!(id.state(), RunState::Running | RunState::Stopped))
    }
}

impl Drop for ProcessLauncher {
    /// Nothing outlives the runner: workers still around (an error path) are
    /// killed and reaped.
    fn drop(&mut self) {
        for (_, (mut child, id)) in std::mem::take(&mut self.children) {
            let _ = id.signal_group(Signal::SIGKILL, Duration::from_secs(2));
            let _ = child.wait();
            procs::forget(id.pid);
        }
    }
}
