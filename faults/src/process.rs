//! Signals to processes, with identity checks and confirmed effects.
//!
//! Why identities: a pid is only a number, and the kernel reuses it. A state file
//! written by one `sinkhole cluster up` may be read hours later, after the broker
//! died and its pid went to something else. Every process the rig starts is
//! therefore remembered as a [`ProcessId`] = pid + the start time the kernel
//! records in `/proc/<pid>/stat` (field 22, in clock ticks since boot). A signal
//! is only sent when both still match.
//!
//! Why process groups: a broker is started in a process group of its own (its
//! pid is the group id), so a signal to the group reaches the JVM and anything it
//! spawned, and a Ctrl-C in the rig's terminal does not reach the brokers directly
//! (the rig decides how they end).
use std::fs;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{self, Signal};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

/// A process as the rig knows it: pid plus the kernel's start time, so that a
/// reused pid is never mistaken for the process the rig started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessId {
    pub pid: i32,
    /// `/proc/<pid>/stat` field 22 (starttime, clock ticks after boot).
    pub start_ticks: u64,
}

/// The scheduler state of a process, from `/proc/<pid>/stat` field 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunState {
    /// R, S, D, I and the like: it runs or could run.
    Running,
    /// T or t: stopped by a signal (SIGSTOP) or a tracer.
    Stopped,
    /// Z: exited, not yet reaped by its parent.
    Zombie,
    /// No such process, or the pid now belongs to another process.
    Gone,
}

#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    #[error("process {pid} is gone (or its pid was reused): the {signal} was not sent")]
    Gone { pid: i32, signal: Signal },
    #[error("sending {signal} to {pid}: {source}")]
    Send {
        pid: i32,
        signal: Signal,
        #[source]
        source: nix::Error,
    },
}

/// What a delivered signal was seen to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignalEffect {
    pub pid: i32,
    pub signal: String,
    /// Whether the state expected after the signal was observed before the deadline.
    pub confirmed: bool,
    /// The state seen last.
    pub observed: RunState,
    /// How long it took to observe it.
    pub after_ms: u64,
}

/// One parsed `/proc/<pid>/stat` line. The command name (field 2) is in
/// parentheses and may itself contain spaces and parentheses, so parsing starts
/// after the *last* `)`.
fn read_stat(pid: i32) -> Option<(char, u64)> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

fn parse_stat(text: &str) -> Option<(char, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); starttime is field 22 → index 19 here.
    let state = fields.first()?.chars().next()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, start))
}

impl ProcessId {
    /// Reads the identity of a live pid (None if there is no such process).
    pub fn of(pid: i32) -> Option<ProcessId> {
        read_stat(pid).map(|(_, start_ticks)| ProcessId { pid, start_ticks })
    }

    /// The current state, `Gone` when the pid no longer names this process.
    pub fn state(&self) -> RunState {
        match read_stat(self.pid) {
            Some((_, start)) if start != self.start_ticks => RunState::Gone,
            Some(('T' | 't', _)) => RunState::Stopped,
            Some(('Z' | 'X', _)) => RunState::Zombie,
            Some(_) => RunState::Running,
            None => RunState::Gone,
        }
    }

    /// Alive = running or stopped (a zombie has exited).
    pub fn is_alive(&self) -> bool {
        matches!(self.state(), RunState::Running | RunState::Stopped)
    }

    /// Sends `signal` to the process group this process leads (the rig starts
    /// brokers and workers with pgid = pid) and waits up to `confirm_within` for
    /// the effect the signal should have.
    pub fn signal_group(&self, signal: Signal, confirm_within: Duration) -> Result<SignalEffect, SignalError> {
        self.deliver(signal, confirm_within, signal::killpg)
    }

    /// Like [`signal_group`](Self::signal_group) but to this pid only.
    pub fn signal(&self, signal: Signal, confirm_within: Duration) -> Result<SignalEffect, SignalError> {
        self.deliver(signal, confirm_within, signal::kill)
    }

    fn deliver(
        &self,
        signal: Signal,
        confirm_within: Duration,
        send: fn(Pid, Signal) -> nix::Result<()>,
    ) -> Result<SignalEffect, SignalError> {
        if !self.is_alive() {
            return Err(SignalError::Gone { pid: self.pid, signal });
        }
        send(Pid::from_raw(self.pid), signal).map_err(|source| SignalError::Send { pid: self.pid, signal, source })?;
        Ok(self.confirm(signal, confirm_within))
    }

    fn confirm(&self, signal: Signal, within: Duration) -> SignalEffect {
        let expected: fn(RunState) -> bool = match signal {
            Signal::SIGSTOP | Signal::SIGTSTP => |s| s == RunState::Stopped,
            Signal::SIGCONT => |s| s != RunState::Stopped,
            // SIGKILL and SIGTERM end the process; a zombie has ended.
            _ => |s| matches!(s, RunState::Zombie | RunState::Gone),
        };
        let started = Instant::now();
        loop {
            let observed = self.state();
            if expected(observed) || started.elapsed() >= within {
                return SignalEffect {
                    pid: self.pid,
                    signal: signal.as_str().to_string(),
                    confirmed: expected(observed),
                    observed,
                    after_ms: started.elapsed().as_millis() as u64,
                };
            }
            thread::sleep(Duration::from_millis(5));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    #[test]
    fn parses_stat_with_spaces_and_parens_in_the_name() {
        let line = "4242 (java (x) y) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 30 0 987654 0 0";
        assert_eq!(parse_stat(line), Some(('S', 987654)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn pause_resume_kill_are_confirmed_and_a_dead_pid_is_refused() {
        let mut child = Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
        let id = ProcessId::of(child.id() as i32).unwrap();
        assert_eq!(id.state(), RunState::Running);

        let e = id.signal_group(Signal::SIGSTOP, Duration::from_secs(2)).unwrap();
        assert!(e.confirmed, "{e:?}");
        assert_eq!(e.observed, RunState::Stopped);

        let e = id.signal_group(Signal::SIGCONT, Duration::from_secs(2)).unwrap();
        assert!(e.confirmed, "{e:?}");
        assert_eq!(e.observed, RunState::Running);

        let e = id.signal_group(Signal::SIGKILL, Duration::from_secs(2)).unwrap();
        assert!(e.confirmed, "{e:?}");
        assert_eq!(e.observed, RunState::Zombie);
        child.wait().unwrap();
        assert_eq!(id.state(), RunState::Gone);
        assert!(matches!(id.signal_group(Signal::SIGKILL, Duration::from_millis(10)), Err(SignalError::Gone { .. })));
    }

    #[test]
    fn a_reused_pid_is_not_the_same_process() {
        let me = ProcessId::of(std::process::id() as i32).unwrap();
        let impostor = ProcessId { start_ticks: me.start_ticks + 1, ..me };
        assert!(me.is_alive());
        assert_eq!(impostor.state(), RunState::Gone);
    }
}
