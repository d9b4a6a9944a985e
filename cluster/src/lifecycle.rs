//! The node lifecycle, written once for every backend: a node's states, the actions on it, the
//! one function that says whether an action is legal in a state and what it takes, and the
//! driver that carries it out through a backend's own operations ([`NodeOps`]).
//!
//! # Why one state machine
//!
//! Shaped after Kafka's `TransactionManager` (`org.apache.kafka.clients.producer.internals`):
//! its `State` enum knows its legal transitions in one place (`State.isTransitionValid`), every
//! change goes through one method (`transitionTo`), and an illegal one is an error naming both
//! states, never a silent no-op. Here, [`transition`] is that one place: from a [`NodeState`] and
//! a [`NodeAction`] it gives the [`Plan`] (the steps, each leaving the node in a known state) or a
//! typed [`Refusal`]; [`act`] is the only code that runs a plan and the only code that changes a
//! node's intent after it started. Each backend used to decide this for itself, three times, and
//! the copies had drifted apart in their corners (which backend may pause a frozen node, whether
//! the intent is recorded between the halves of a restart).
//!
//! # Why the state is a pair
//!
//! What the rig last asked of a node ([`Intent`]) and what its backend sees of it ([`Observed`])
//! differ exactly when something happened the rig did not ask for: a node meant to run whose
//! process is gone has crashed, and can be restarted but not killed; a stopped node whose process
//! still runs is stopped (gracefully) before it is started again. Legality depends on both, so
//! both are the state. The backend answers what it sees — the kernel's run state of the JVM
//! (local), the engine's state of the container (containers) — and a backend with nothing to
//! watch (external: no pid, effects confirmed through the Kafka protocol) answers from the
//! intent.
//!
//! # Why the backends supply steps, not actions
//!
//! What differs between backends is how a node is signalled, started and confirmed, not when
//! that is allowed: [`NodeOps`] has one operation per [`Step`] — a [`Signal`] to a live node
//! (kill, a graceful stop bounded by the timeout, freeze, thaw), a start, the wait until it
//! answers — and each records its own evidence in the [`NodeEffect`] (signals the kernel
//! confirmed, the engine's view, the commands run and what the protocol showed). The steps in
//! between — telling whoever waits that the node is down ([`OnDown`]), recording the intent
//! each step leaves — are the lifecycle's. A restart is a stop and a start, unless the backend
//! can do both in one step ([`RestartBy::OneStep`]: an external cluster's `restart` command);
//! either way the node is told down before it comes back.
use std::future::Future;
use std::time::{Duration, Instant};

use crate::node::tell_down;
pub use crate::node::Refusal;
use crate::{ClusterError, ClusterFuture, ClusterNodes, Intent, NodeAction, NodeEffect, OnDown};

/// What a backend sees of a node's process when an action begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observed {
    /// It runs.
    Up,
    /// It is frozen (SIGSTOP, the cgroup freezer): alive, its sockets open, answering nothing.
    Frozen,
    /// Nothing of it runs: exited, killed, never started.
    Down,
}

/// A node's state: what the rig last asked of it and what its backend sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeState {
    pub intent: Intent,
    pub observed: Observed,
}

/// What a backend sees of a node, with its hold on a live one (a pid, the engine's state): the
/// steps that act on a live node are handed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sight<H> {
    Up(H),
    Frozen(H),
    Down,
}

impl<H> Sight<H> {
    pub fn observed(&self) -> Observed {
        match self {
            Sight::Up(_) => Observed::Up,
            Sight::Frozen(_) => Observed::Frozen,
            Sight::Down => Observed::Down,
        }
    }

    fn hold(&self) -> Option<&H> {
        match self {
            Sight::Up(h) | Sight::Frozen(h) => Some(h),
            Sight::Down => None,
        }
    }
}

/// How a backend restarts a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartBy {
    /// A graceful stop (when anything runs), then a start: Kafka's rolling-restart order.
    StopThenStart,
    /// One operation does both halves (an external cluster's `restart` command).
    OneStep,
}

/// What a step does to a live node, each backend its own way: a signal to the JVM's process
/// group (local), the engine's operation on the container (containers), a command template
/// (external).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// End it at once (SIGKILL).
    Kill,
    /// A controlled shutdown (SIGTERM), forced after the action's timeout; the node may be
    /// frozen when it comes.
    Stop,
    /// Freeze it (SIGSTOP).
    Pause,
    /// Thaw it (SIGCONT).
    Resume,
}

/// One thing a plan does, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Act on the live node ([`NodeOps::signal`]).
    Signal(Signal),
    /// Tell whoever waits that the node is down ([`OnDown`]).
    TellDown,
    /// Start it again: same node id, same data.
    Start,
    /// Restart it in one operation ([`RestartBy::OneStep`]).
    Restart,
    /// Wait until it answers, within the action's timeout.
    AwaitReady,
}

impl Step {
    /// What the rig asks of the node once this step is done (None: unchanged).
    pub fn leaves(self) -> Option<Intent> {
        match self {
            Step::Signal(Signal::Kill) => Some(Intent::Killed),
            Step::Signal(Signal::Stop) => Some(Intent::Stopped),
            Step::Signal(Signal::Pause) => Some(Intent::Paused),
            Step::Signal(Signal::Resume) | Step::Start | Step::Restart => Some(Intent::Running),
            Step::TellDown | Step::AwaitReady => None,
        }
    }
}

/// The steps of a legal action, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub steps: &'static [Step],
}

impl Plan {
    /// What the rig asks of the node once every step is done.
    pub fn ends_in(&self) -> Option<Intent> {
        self.steps.iter().rev().find_map(|s| s.leaves())
    }
}

/// The one transition function: the plan `action` takes from state `from` on a backend that
/// restarts `by` this way, or why it is illegal there.
pub fn transition(from: NodeState, action: NodeAction, by: RestartBy) -> Result<Plan, Refusal> {
    use Step::{AwaitReady, Restart, Start, TellDown};
    const KILL: Step = Step::Signal(Signal::Kill);
    const STOP: Step = Step::Signal(Signal::Stop);
    const PAUSE: Step = Step::Signal(Signal::Pause);
    const RESUME: Step = Step::Signal(Signal::Resume);
    let alive = from.observed != Observed::Down;
    // Up again: a graceful stop first when anything runs, down, started, answering.
    let up_again: &'static [Step] =
        if alive { &[STOP, TellDown, Start, AwaitReady] } else { &[TellDown, Start, AwaitReady] };
    let steps: &'static [Step] = match (action, from.intent, from.observed) {
        (NodeAction::Kill | NodeAction::Stop, _, Observed::Down) => return Err(Refusal::Down),
        (NodeAction::Kill, _, _) => &[KILL, TellDown],
        (NodeAction::Stop, _, _) => &[STOP, TellDown],
        (NodeAction::Pause, Intent::Running, Observed::Up) => &[PAUSE],
        (NodeAction::Pause, Intent::Running, Observed::Frozen) => return Err(Refusal::Frozen),
        (NodeAction::Pause, Intent::Running, Observed::Down) => return Err(Refusal::Down),
        (NodeAction::Pause, _, _) => return Err(Refusal::NotRunning),
        (NodeAction::Resume, Intent::Paused, Observed::Down) => return Err(Refusal::Down),
        (NodeAction::Resume, Intent::Paused, _) => &[RESUME],
        (NodeAction::Resume, _, _) => return Err(Refusal::NotPaused),
        (NodeAction::Start, Intent::Running | Intent::Paused, _) => return Err(Refusal::MeantToRun),
        (NodeAction::Start, _, _) => up_again,
        (NodeAction::Restart, _, _) if by == RestartBy::OneStep => &[TellDown, Restart, AwaitReady],
        (NodeAction::Restart, _, _) => up_again,
    };
    Ok(Plan { steps })
}

/// One node in a backend's table, as the lifecycle reads and records it.
pub trait NodeEntry {
    fn id(&self) -> i32;
    fn intent(&self) -> Intent;
    fn set_intent(&mut self, to: Intent);
    /// Where clients reach it.
    fn bootstrap(&self) -> String;
}

/// A backend's own operations on its nodes, one per [`Step`]; [`act`] decides which run, when.
/// Each records its evidence in the effect; an operation that fails ends the action there (the
/// intent stays what the last completed step left). `i` is the node's index in [`Self::nodes`].
pub trait NodeOps: Send {
    type Node: NodeEntry;
    /// The backend's hold on a live node (a pid, the engine's state), handed to the steps that
    /// act on one.
    type Hold: Send + Sync;

    fn nodes(&self) -> &[Self::Node];
    fn nodes_mut(&mut self) -> &mut [Self::Node];

    /// The index of node `id`.
    fn index(&self, id: i32) -> Result<usize, ClusterError> {
        self.nodes()
            .iter()
            .position(|n| n.id() == id)
            .ok_or_else(|| ClusterError::UnknownNode { id, known: self.nodes().iter().map(|n| n.id()).collect() })
    }

    fn restart_by(&self) -> RestartBy {
        RestartBy::StopThenStart
    }

    /// What the backend sees of the node now.
    fn look(&mut self, i: usize) -> impl Future<Output = Result<Sight<Self::Hold>, ClusterError>> + Send;

    /// Kills, stops, pauses or resumes the live node `hold` is of; a stop is bounded by
    /// `timeout`, and so is a backend's confirmation when it has no shorter one of its own.
    fn signal(
        &mut self,
        i: usize,
        hold: &Self::Hold,
        signal: Signal,
        timeout: Duration,
        effect: &mut NodeEffect,
    ) -> impl Future<Output = Result<(), ClusterError>> + Send;

    /// Starts a node that is down.
    fn start(
        &mut self,
        i: usize,
        timeout: Duration,
        effect: &mut NodeEffect,
    ) -> impl Future<Output = Result<(), ClusterError>> + Send;

    /// Restarts the node in one operation; only asked of a backend whose
    /// [`NodeOps::restart_by`] is [`RestartBy::OneStep`].
    fn restart(
        &mut self,
        i: usize,
        _timeout: Duration,
        _effect: &mut NodeEffect,
    ) -> impl Future<Output = Result<(), ClusterError>> + Send {
        let id = self.nodes()[i].id();
        async move {
            Err(ClusterError::Unsupported(format!("node {id}: this backend restarts a node by a stop and a start")))
        }
    }

    /// Waits until the started node answers and records whether it did (`effect.ready`); an
    /// error is what ends the action (a node that exited), a slow node the backend's to judge.
    fn await_node_ready(
        &mut self,
        i: usize,
        timeout: Duration,
        effect: &mut NodeEffect,
    ) -> impl Future<Output = Result<(), ClusterError>> + Send;

    /// Until every node meant to run answers and sees the others ([`ClusterNodes::wait_ready`]).
    fn await_ready(&mut self, timeout: Duration) -> impl Future<Output = Result<(), ClusterError>> + Send;
}

/// Applies `action` to node `id` on backend `b` ([`ClusterNodes::act_with`]): the state it is
/// in, the plan [`transition`] gives (or the refusal, as [`ClusterError::WrongState`]), each
/// step through the backend, each step's intent recorded as it completes.
pub async fn act<B: NodeOps>(
    b: &mut B,
    id: i32,
    action: NodeAction,
    timeout: Duration,
    mut on_down: Option<OnDown>,
) -> Result<NodeEffect, ClusterError> {
    let i = b.index(id)?;
    let started = Instant::now();
    let mut effect = NodeEffect::new(id, action);
    let sight = b.look(i).await?;
    let state = NodeState { intent: b.nodes()[i].intent(), observed: sight.observed() };
    let wrong = |why| ClusterError::WrongState { id, state: state.intent, action, why };
    let plan = transition(state, action, b.restart_by()).map_err(wrong)?;
    for &step in plan.steps {
        match step {
            Step::Signal(signal) => {
                // The plan signals only a live node, and the look holds every live one.
                let hold = sight.hold().ok_or_else(|| wrong(Refusal::Down))?;
                b.signal(i, hold, signal, timeout, &mut effect).await?
            }
            Step::TellDown => tell_down(&mut on_down, &effect, started),
            Step::Start => b.start(i, timeout, &mut effect).await?,
            Step::Restart => b.restart(i, timeout, &mut effect).await?,
            Step::AwaitReady => b.await_node_ready(i, timeout, &mut effect).await?,
        }
        if let Some(to) = step.leaves() {
            b.nodes_mut()[i].set_intent(to);
        }
    }
    effect.elapsed_ms = started.elapsed().as_millis() as u64;
    let signals: Vec<&str> = effect.signals.iter().map(|s| s.signal.as_str()).collect();
    let commands: Vec<&str> = effect.commands.iter().map(|c| c.action.as_str()).collect();
    tracing::info!(node = id, ?action, ?signals, ?commands, elapsed_ms = effect.elapsed_ms, "node action");
    Ok(effect)
}

/// Every backend's node table and lifecycle, from its [`NodeOps`]: one implementation.
impl<B: NodeOps> ClusterNodes for B {
    fn node_ids(&self) -> Vec<i32> {
        self.nodes().iter().map(|n| n.id()).collect()
    }

    fn bootstrap_list(&self) -> Vec<String> {
        self.nodes().iter().map(|n| n.bootstrap()).collect()
    }

    fn bootstrap(&self) -> String {
        let running = self.nodes().iter().filter(|n| n.intent() == Intent::Running);
        running.map(|n| n.bootstrap()).collect::<Vec<_>>().join(",")
    }

    fn act_with(
        &mut self,
        node: i32,
        action: NodeAction,
        timeout: Duration,
        on_down: Option<OnDown>,
    ) -> ClusterFuture<'_, NodeEffect> {
        Box::pin(act(self, node, action, timeout, on_down))
    }

    fn wait_ready(&mut self, timeout: Duration) -> ClusterFuture<'_, ()> {
        Box::pin(self.await_ready(timeout))
    }
}

#[cfg(test)]
mod tests;
