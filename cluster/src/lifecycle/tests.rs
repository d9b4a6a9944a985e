use super::*;
use sinkhole_faults::process::{RunState, SignalEffect};
use Intent::{Killed, Paused, Running, Stopped};
use NodeAction::{Kill, Pause, Restart, Resume, Start, Stop};
use Observed::{Down, Frozen, Up};

/// An action's plan as the table writes it: the steps and the intent they leave, or the refusal.
type Expect = Result<(&'static [Step], Intent), Refusal>;

const SIGKILL: Step = Step::Signal(Signal::Kill);
const SIGTERM: Step = Step::Signal(Signal::Stop);
const SIGSTOP: Step = Step::Signal(Signal::Pause);
const SIGCONT: Step = Step::Signal(Signal::Resume);

const KILL: Expect = Ok((&[SIGKILL, Step::TellDown], Killed));
const STOP: Expect = Ok((&[SIGTERM, Step::TellDown], Stopped));
const PAUSE: Expect = Ok((&[SIGSTOP], Paused));
const RESUME: Expect = Ok((&[SIGCONT], Running));
/// Up again after a graceful stop of what still runs.
const CYCLE: Expect = Ok((&[SIGTERM, Step::TellDown, Step::Start, Step::AwaitReady], Running));
/// Up again from down.
const BOOT: Expect = Ok((&[Step::TellDown, Step::Start, Step::AwaitReady], Running));
/// Up again in the backend's one restart operation.
const ONE_STEP: Expect = Ok((&[Step::TellDown, Step::Restart, Step::AwaitReady], Running));
const DOWN: Expect = Err(Refusal::Down);
const NOT_RUNNING: Expect = Err(Refusal::NotRunning);
const FROZEN: Expect = Err(Refusal::Frozen);
const NOT_PAUSED: Expect = Err(Refusal::NotPaused);
const MEANT_TO_RUN: Expect = Err(Refusal::MeantToRun);

const ACTIONS: [NodeAction; 6] = [Kill, Stop, Pause, Resume, Start, Restart];

/// Every state — what the rig asked × what the backend sees — and what each action of
/// [`ACTIONS`] does there, on a backend that restarts by a stop and a start.
#[rustfmt::skip]
const TABLE: [(Intent, Observed, [Expect; 6]); 12] = [
    //                  kill  stop  pause        resume      start         restart
    (Running, Up,     [KILL, STOP, PAUSE,       NOT_PAUSED, MEANT_TO_RUN, CYCLE]),
    (Running, Frozen, [KILL, STOP, FROZEN,      NOT_PAUSED, MEANT_TO_RUN, CYCLE]),
    (Running, Down,   [DOWN, DOWN, DOWN,        NOT_PAUSED, MEANT_TO_RUN, BOOT]),
    (Paused,  Up,     [KILL, STOP, NOT_RUNNING, RESUME,     MEANT_TO_RUN, CYCLE]),
    (Paused,  Frozen, [KILL, STOP, NOT_RUNNING, RESUME,     MEANT_TO_RUN, CYCLE]),
    (Paused,  Down,   [DOWN, DOWN, NOT_RUNNING, DOWN,       MEANT_TO_RUN, BOOT]),
    (Stopped, Up,     [KILL, STOP, NOT_RUNNING, NOT_PAUSED, CYCLE,        CYCLE]),
    (Stopped, Frozen, [KILL, STOP, NOT_RUNNING, NOT_PAUSED, CYCLE,        CYCLE]),
    (Stopped, Down,   [DOWN, DOWN, NOT_RUNNING, NOT_PAUSED, BOOT,         BOOT]),
    (Killed,  Up,     [KILL, STOP, NOT_RUNNING, NOT_PAUSED, CYCLE,        CYCLE]),
    (Killed,  Frozen, [KILL, STOP, NOT_RUNNING, NOT_PAUSED, CYCLE,        CYCLE]),
    (Killed,  Down,   [DOWN, DOWN, NOT_RUNNING, NOT_PAUSED, BOOT,         BOOT]),
];

/// Every variant, with no wildcard: a new intent, sight or action does not compile here until
/// the table has its rows or column.
fn every_variant(i: Intent, o: Observed, a: NodeAction) -> bool {
    let i = match i {
        Running | Paused | Stopped | Killed => true,
    };
    let o = match o {
        Up | Frozen | Down => true,
    };
    let a = match a {
        Kill | Stop | Pause | Resume | Start | Restart => true,
    };
    i && o && a
}

fn plan(intent: Intent, observed: Observed, action: NodeAction, by: RestartBy) -> Expect {
    let p = transition(NodeState { intent, observed }, action, by)?;
    Ok((p.steps, p.ends_in().expect("every plan leaves the node in a state")))
}

#[test]
fn every_state_and_action_is_in_the_table_once() {
    for intent in [Running, Paused, Stopped, Killed] {
        for observed in [Up, Frozen, Down] {
            let rows = TABLE.iter().filter(|(i, o, _)| (*i, *o) == (intent, observed)).count();
            assert_eq!(rows, 1, "{intent:?} seen {observed:?}");
            assert!(ACTIONS.iter().all(|&a| every_variant(intent, observed, a)));
        }
    }
}

#[test]
fn every_transition_is_the_tables() {
    for (intent, observed, row) in TABLE {
        for (action, want) in ACTIONS.into_iter().zip(row) {
            let got = plan(intent, observed, action, RestartBy::StopThenStart);
            assert_eq!(got, want, "{action:?} from {intent:?} seen {observed:?}");
        }
    }
}

#[test]
fn a_one_step_restart_is_taken_from_every_state_and_changes_nothing_else() {
    for (intent, observed, row) in TABLE {
        for (action, want) in ACTIONS.into_iter().zip(row) {
            let want = if action == Restart { ONE_STEP } else { want };
            assert_eq!(plan(intent, observed, action, RestartBy::OneStep), want, "{action:?} from {intent:?}");
        }
    }
}

#[test]
fn the_node_is_told_down_once_in_every_plan_that_takes_it_down_and_never_otherwise() {
    for by in [RestartBy::StopThenStart, RestartBy::OneStep] {
        for (intent, observed, _) in TABLE {
            for action in ACTIONS {
                let Ok(p) = transition(NodeState { intent, observed }, action, by) else { continue };
                let told = p.steps.iter().filter(|s| **s == Step::TellDown).count();
                let goes_down = !matches!(action, Pause | Resume);
                assert_eq!(told, usize::from(goes_down), "{action:?} from {intent:?} seen {observed:?}");
                // Never told down before what still runs is stopped, nor after it runs again.
                let at = p.steps.iter().position(|s| *s == Step::TellDown);
                if let Some(at) = at {
                    assert!(!p.steps[at..].contains(&SIGTERM) && !p.steps[..at].contains(&Step::Start), "{p:?}");
                }
            }
        }
    }
}

/// A backend that only writes down what it was asked; its start fails when told to.
struct Fake {
    nodes: Vec<FakeNode>,
    sees: Observed,
    by: RestartBy,
    calls: Vec<&'static str>,
    fail_start: bool,
}

struct FakeNode {
    id: i32,
    intent: Intent,
}

impl NodeEntry for FakeNode {
    fn id(&self) -> i32 {
        self.id
    }
    fn intent(&self) -> Intent {
        self.intent
    }
    fn set_intent(&mut self, to: Intent) {
        self.intent = to;
    }
    fn bootstrap(&self) -> String {
        format!("node-{}:9092", self.id)
    }
}

fn fake(intent: Intent, sees: Observed) -> Fake {
    let nodes = (1..=3).map(|id| FakeNode { id, intent: if id == 2 { intent } else { Running } }).collect();
    Fake { nodes, sees, by: RestartBy::StopThenStart, calls: vec![], fail_start: false }
}

fn signal_effect(name: &str, pid: u32) -> SignalEffect {
    SignalEffect { pid: pid as i32, signal: name.into(), confirmed: true, observed: RunState::Gone, after_ms: 0 }
}

impl NodeOps for Fake {
    type Node = FakeNode;
    type Hold = u32;

    fn nodes(&self) -> &[FakeNode] {
        &self.nodes
    }
    fn nodes_mut(&mut self) -> &mut [FakeNode] {
        &mut self.nodes
    }
    fn restart_by(&self) -> RestartBy {
        self.by
    }
    async fn look(&mut self, _: usize) -> Result<Sight<u32>, ClusterError> {
        self.calls.push("look");
        Ok(match self.sees {
            Up => Sight::Up(41),
            Frozen => Sight::Frozen(41),
            Down => Sight::Down,
        })
    }
    async fn signal(
        &mut self,
        _: usize,
        pid: &u32,
        signal: Signal,
        _: Duration,
        e: &mut NodeEffect,
    ) -> Result<(), ClusterError> {
        let (call, name) = match signal {
            Signal::Kill => ("kill", "SIGKILL"),
            Signal::Stop => ("stop", "SIGTERM"),
            Signal::Pause => ("pause", "SIGSTOP"),
            Signal::Resume => ("resume", "SIGCONT"),
        };
        self.calls.push(call);
        e.signals.push(signal_effect(name, *pid));
        Ok(())
    }
    async fn start(&mut self, _: usize, _: Duration, e: &mut NodeEffect) -> Result<(), ClusterError> {
        self.calls.push("start");
        if self.fail_start {
            return Err(ClusterError::Unsupported("no JVM today".into()));
        }
        e.new_pid = Some(42);
        Ok(())
    }
    async fn restart(&mut self, _: usize, _: Duration, e: &mut NodeEffect) -> Result<(), ClusterError> {
        self.calls.push("restart");
        e.new_pid = Some(43);
        Ok(())
    }
    async fn await_node_ready(&mut self, _: usize, _: Duration, e: &mut NodeEffect) -> Result<(), ClusterError> {
        self.calls.push("await-ready");
        e.ready = Some(true);
        Ok(())
    }
    async fn await_ready(&mut self, _: Duration) -> Result<(), ClusterError> {
        self.calls.push("await-cluster");
        Ok(())
    }
}

const T: Duration = Duration::from_secs(1);

#[tokio::test]
async fn a_restart_stops_tells_down_between_the_halves_and_starts() {
    let mut b = fake(Running, Up);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let effect = b.act_with(2, Restart, T, Some(tx)).await.unwrap();
    assert_eq!(b.calls, ["look", "stop", "start", "await-ready"]);
    let down = rx.await.unwrap();
    assert_eq!(
        (down.signals.len(), down.new_pid, down.ready),
        (1, None, None),
        "told after the stop, before the start"
    );
    assert_eq!(down.signals[0].pid, 41, "the stop acts on the process the look saw");
    assert_eq!((effect.node_id, effect.action, effect.new_pid, effect.ready), (2, Restart, Some(42), Some(true)));
    assert_eq!(b.nodes[1].intent, Running);
    // A restart in one operation: down first, then the backend's restart.
    let mut b = fake(Stopped, Down);
    b.by = RestartBy::OneStep;
    let effect = b.act(2, Restart, T).await.unwrap();
    assert_eq!(b.calls, ["look", "restart", "await-ready"]);
    assert_eq!((effect.new_pid, b.nodes[1].intent), (Some(43), Running));
}

#[tokio::test]
async fn each_step_records_its_intent_so_a_failed_start_leaves_the_node_stopped() {
    let mut b = fake(Running, Up);
    b.fail_start = true;
    let e = b.act(2, Restart, T).await.unwrap_err();
    assert_eq!(e.to_string(), "no JVM today");
    assert_eq!(b.calls, ["look", "stop", "start"]);
    assert_eq!(b.nodes[1].intent, Stopped, "the stop half completed; the node is not meant to run");
    assert_eq!(b.bootstrap(), "node-1:9092,node-3:9092");
}

#[tokio::test]
async fn a_refused_action_is_an_error_naming_why_and_acts_on_nothing() {
    let mut b = fake(Stopped, Down);
    let e = b.act(2, Pause, T).await.unwrap_err();
    assert!(matches!(e, ClusterError::WrongState { id: 2, state: Stopped, action: Pause, why: Refusal::NotRunning }));
    assert_eq!(e.to_string(), "node 2 is Stopped: cannot Pause it (only a node meant to run can be paused)");
    let e = b.act(2, Kill, T).await.unwrap_err();
    assert!(matches!(e, ClusterError::WrongState { why: Refusal::Down, .. }), "{e}");
    assert_eq!(b.calls, ["look", "look"], "nothing but the looks");
    assert_eq!(b.nodes[1].intent, Stopped);
    assert!(matches!(b.act(7, Kill, T).await, Err(ClusterError::UnknownNode { id: 7, .. })));
}

#[tokio::test]
async fn kill_pause_and_resume_record_their_states_and_the_table_serves_the_cluster() {
    let mut b = fake(Running, Up);
    let (tx, rx) = tokio::sync::oneshot::channel();
    b.act_with(2, Pause, T, Some(tx)).await.unwrap();
    assert!(rx.await.is_err(), "a pause never takes the node down: the sender is dropped unsent");
    assert_eq!((b.nodes[1].intent, b.bootstrap().as_str()), (Paused, "node-1:9092,node-3:9092"));
    b.sees = Frozen;
    let effect = b.act(2, Resume, T).await.unwrap();
    assert_eq!((effect.signals[0].signal.as_str(), b.nodes[1].intent), ("SIGCONT", Running));
    let (tx, rx) = tokio::sync::oneshot::channel();
    b.act_with(2, Kill, T, Some(tx)).await.unwrap();
    assert_eq!(rx.await.unwrap().signals[0].signal, "SIGKILL");
    assert_eq!(b.nodes[1].intent, Killed);
    assert_eq!(b.node_ids(), [1, 2, 3]);
    assert_eq!(b.bootstrap_list(), ["node-1:9092", "node-2:9092", "node-3:9092"]);
    b.wait_ready(T).await.unwrap();
    assert_eq!(b.calls.last(), Some(&"await-cluster"));
}
