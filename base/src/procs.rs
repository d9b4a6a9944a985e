//! Spawning the processes the rig owns, and making sure none outlives it.
//!
//! Three mechanisms, because each covers a way the rig can end that the others
//! miss:
//! 1. **Drop**: a [`sinkhole_cluster::local::LocalCluster`] kills its nodes when it
//!    goes out of scope, including while a panic unwinds.
//! 2. **Signals**: [`install_signal_teardown`] (called by the binary, not by
//!    tests) catches SIGINT, SIGTERM and SIGHUP, kills every registered process
//!    group, and exits with 128+signal.
//! 3. **Parent-death signal**: an owned child asks the kernel
//!    (`prctl(PR_SET_PDEATHSIG, SIGKILL)`) to be killed when its parent dies —
//!    which covers `kill -9` of the rig, where no code of ours runs. The kernel
//!    fires it when the *thread* that forked the child exits, not the process, so
//!    all owned children are forked from one dedicated thread that lives as long
//!    as the process ([`spawner`]). Forking from a tokio blocking-pool thread
//!    would kill the broker the moment that idle thread is retired.
//!
//! Detached children (`sinkhole cluster up`, a cluster meant to outlive the
//! command) get a session of their own and no death signal; the cluster state
//! file is what finds them again.
use std::collections::BTreeMap;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::Duration;

use nix::sys::signal::Signal;
use sinkhole_faults::process::ProcessId;

/// Whether a child dies with the rig or outlives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// Killed when the rig exits in any way (Drop, signal, parent death).
    Owned,
    /// Survives the rig; found again through a state file.
    Detached,
}

type Job = (Command, mpsc::Sender<io::Result<Child>>);

/// The thread all owned children are forked from (see the module docs).
fn spawner() -> &'static Mutex<mpsc::Sender<Job>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        thread::Builder::new()
            .name("sinkhole-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("start the spawner thread");
        Mutex::new(tx)
    })
}

/// Owned processes still alive, by pid, so a signal handler can kill them all.
fn registry() -> &'static Mutex<BTreeMap<i32, ProcessId>> {
    static LIVE: OnceLock<Mutex<BTreeMap<i32, ProcessId>>> = OnceLock::new();
    LIVE.get_or_init(Default::default)
}

/// Spawns `cmd` as the leader of a new process group.
pub fn spawn(mut cmd: Command, lifetime: Lifetime) -> io::Result<(Child, ProcessId)> {
    match lifetime {
        Lifetime::Owned => {
            let parent = std::process::id() as libc::pid_t;
            // SAFETY: only async-signal-safe calls (prctl, getppid, _exit, setpgid,
            // sigprocmask) between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::setpgid(0, 0) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    // The parent may have died between fork and prctl.
                    if libc::getppid() != parent {
                        libc::_exit(1);
                    }
                    unblock_all_signals();
                    Ok(())
                });
            }
            let (tx, rx) = mpsc::channel();
            spawner()
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .send((cmd, tx))
                .map_err(|_| io::Error::other("spawner thread is gone"))?;
            let child = rx.recv().map_err(|_| io::Error::other("spawner thread is gone"))??;
            let id = identify(&child)?;
            registry().lock().unwrap_or_else(|p| p.into_inner()).insert(id.pid, id);
            Ok((child, id))
        }
        Lifetime::Detached => {
            // SAFETY: setsid and sigprocmask are async-signal-safe.
            unsafe {
                cmd.pre_exec(|| {
                    if libc::setsid() < 0 {
                        return Err(io::Error::last_os_error());
                    }
                    unblock_all_signals();
                    Ok(())
                });
            }
            let child = cmd.spawn()?;
            let id = identify(&child)?;
            Ok((child, id))
        }
    }
}

/// [`Command::output`] for an owned child (stdin closed, stdout and stderr
/// captured): a short command the rig waits for, still killed with the rig.
pub fn output(mut cmd: Command) -> io::Result<Output> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let (child, id) = spawn(cmd, Lifetime::Owned)?;
    let out = child.wait_with_output();
    forget(id.pid);
    out
}

/// The signal-teardown thread blocks nothing, but a caller may have; children
/// must start with the default mask or SIGTERM would not reach a broker.
fn unblock_all_signals() {
    // SAFETY: plain libc calls on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

fn identify(child: &Child) -> io::Result<ProcessId> {
    ProcessId::of(child.id() as i32)
        .ok_or_else(|| io::Error::other(format!("process {} exited right after it was started", child.id())))
}

/// Forgets an owned process (it was reaped, or handed over to a state file).
pub fn forget(pid: i32) {
    registry().lock().unwrap_or_else(|p| p.into_inner()).remove(&pid);
}

/// Kills every registered process group with SIGKILL. Returns how many were alive.
pub fn kill_all_registered() -> usize {
    let live: Vec<ProcessId> = registry().lock().unwrap_or_else(|p| p.into_inner()).values().copied().collect();
    let mut killed = 0;
    for id in live {
        if id.signal_group(Signal::SIGKILL, Duration::from_secs(2)).is_ok() {
            killed += 1;
        }
    }
    killed
}

/// What runs after the signal teardown killed the rig's processes and before
/// the process exits (the signal number as argument).
pub type SignalHook = Box<dyn FnOnce(i32) + Send>;

fn signal_hook_slot() -> &'static Mutex<Option<SignalHook>> {
    static HOOK: OnceLock<Mutex<Option<SignalHook>>> = OnceLock::new();
    HOOK.get_or_init(Default::default)
}

/// Lets a long command (`sinkhole matrix`) write what it has when a signal
/// ends it: the hook runs once, after every owned process group is killed.
/// `None` removes it.
pub fn set_signal_hook(hook: Option<SignalHook>) {
    *signal_hook_slot().lock().unwrap_or_else(|p| p.into_inner()) = hook;
}

/// Set once the signal teardown has begun.
static TEARING_DOWN: AtomicBool = AtomicBool::new(false);

/// Whether the signal teardown has begun: the rig's processes are being
/// killed and the process exits with 128+signal next.
pub fn tearing_down() -> bool {
    TEARING_DOWN.load(Ordering::SeqCst)
}

/// Blocks the calling thread for good once the signal teardown has begun.
/// The command's own end calls it first: a command whose child the teardown
/// just killed (`mvn` under `sinkhole setup`) would otherwise race it, and
/// exit 1 with that child's failure instead of 128+signal.
pub fn wait_for_teardown() {
    while tearing_down() {
        thread::park();
    }
}

/// Installs the SIGINT/SIGTERM/SIGHUP teardown (binary only).
pub fn install_signal_teardown() -> io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    thread::Builder::new().name("sinkhole-signals".into()).spawn(move || {
        if let Some(sig) = signals.forever().next() {
            TEARING_DOWN.store(true, Ordering::SeqCst);
            let n = kill_all_registered();
            let name = Signal::try_from(sig).map(|s| s.as_str()).unwrap_or("signal");
            eprintln!("sinkhole: {name} received: killed {n} process group(s) the rig started; exiting");
            let hook = signal_hook_slot().lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(hook) = hook {
                hook(sig);
            }
            std::process::exit(128 + sig);
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkhole_faults::process::RunState;

    #[test]
    fn owned_children_lead_their_own_group_and_are_registered() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let (mut child, id) = spawn(cmd, Lifetime::Owned).unwrap();
        let pgid = nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(id.pid))).unwrap();
        assert_eq!(pgid.as_raw(), id.pid);
        assert!(registry().lock().unwrap().contains_key(&id.pid));
        // Not kill_all_registered(): tests run in parallel and share the registry.
        id.signal_group(Signal::SIGKILL, Duration::from_secs(2)).unwrap();
        child.wait().unwrap();
        forget(id.pid);
        assert_eq!(id.state(), RunState::Gone);
    }

    #[test]
    fn output_of_an_owned_child_is_captured_and_forgotten() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo $$; echo err >&2; read x || echo stdin-closed; exit 3"]);
        let out = output(cmd).unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let (pid, rest) = stdout.split_once('\n').unwrap();
        assert_eq!(rest, "stdin-closed\n");
        assert!(!registry().lock().unwrap().contains_key(&pid.parse::<i32>().unwrap()), "still registered");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
        assert_eq!(out.status.code(), Some(3));
        let err = output(Command::new("/nonexistent/sinkhole-no-such-binary")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn owned_children_die_with_the_thread_that_forked_them_not_before() {
        // The spawner thread outlives the calling thread: a child spawned from
        // a short-lived thread must stay alive after that thread ends.
        let (child, id) = thread::spawn(|| {
            let mut cmd = Command::new("sleep");
            cmd.arg("30");
            spawn(cmd, Lifetime::Owned).unwrap()
        })
        .join()
        .unwrap();
        thread::sleep(Duration::from_millis(100));
        assert_eq!(id.state(), RunState::Running);
        id.signal_group(Signal::SIGKILL, Duration::from_secs(2)).unwrap();
        let mut child = child;
        child.wait().unwrap();
        forget(id.pid);
    }
}
