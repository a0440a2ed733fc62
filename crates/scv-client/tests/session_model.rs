#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The session client against a model of the server, under random
//! interleavings of what the client does (submit, cancel at any stage,
//! answer approvals) and what the server does (take requests in order,
//! start, queue, dequeue, ask for approvals, end turns — completed, failed
//! or cancelled), with frames in flight both ways at any moment.
//!
//! The model server follows the protocol document: an idle session starts
//! a prompt at once, a busy one queues it (`queue.enqueued`); queue
//! removals need the current revision (`queue_conflict` with the entry
//! otherwise); `turn.cancel` of a turn not running is `turn_not_found`; a
//! terminal event precedes the next `queue.dequeued`; `seq` is gap-free.
//!
//! What must hold: cancels are sent once the cancelled prompts are placed,
//! removals before the turn's cancel; every prompt ends exactly once, as one of started-then-
//! ended, withdrawn or refused, and none is left at the end; a cancelled
//! prompt ends cancelled or withdrawn unless the server had already ended
//! it when the cancel reached it; the server gets at most one cancel that
//! takes effect per prompt; no approval is left waiting after its turn.

use proptest::prelude::*;
use scv_client::session::{Outcome, Request, SessionClient, Stage, Update};
use scv_protocol::{
    ClientMessage, ErrorBody, ErrorCode, Event, EventBody, FailureCode, QueueEntry, Risk,
};
use std::collections::{HashMap, HashSet, VecDeque};

const SESSION: &str = "s1";

#[derive(Debug, Clone)]
enum Op {
    Submit,
    CancelCurrent,
    /// Cancel the n-th prompt the client still tracks (modulo).
    Cancel(usize),
    /// Answer the oldest waiting approval.
    Resolve(bool),
    /// The server takes up to n requests.
    ServerReads(usize),
    /// The client reads up to n events.
    ClientReads(usize),
    /// The running turn asks for an approval.
    AskApproval,
    /// The running turn ends: 0 completed, 1 failed (a cancel asked for
    /// wins either way).
    EndTurn(u8),
    /// A prompt the server refuses (`invalid_request`, as an empty one).
    SubmitRefused,
    /// Cancel everything in flight.
    CancelAll,
    /// The user edits the n-th queued prompt (`queue.update` with the
    /// revision the client knows).
    Edit(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Submit),
        1 => Just(Op::SubmitRefused),
        2 => Just(Op::CancelCurrent),
        1 => Just(Op::CancelAll),
        2 => (0usize..8).prop_map(Op::Cancel),
        1 => any::<bool>().prop_map(Op::Resolve),
        4 => (1usize..4).prop_map(Op::ServerReads),
        4 => (1usize..6).prop_map(Op::ClientReads),
        1 => Just(Op::AskApproval),
        2 => (0u8..2).prop_map(Op::EndTurn),
        2 => (0usize..8).prop_map(Op::Edit),
    ]
}

struct Queued {
    queue_id: String,
    revision: u64,
    prompt: String,
    request_id: String,
}

#[derive(Default)]
struct ModelServer {
    seq: u64,
    next_id: u64,
    queue: Vec<Queued>,
    /// Turn id, prompt's request id, cancel asked.
    running: Option<(String, String, bool)>,
    approvals: HashSet<String>,
    /// Cancels that took effect, by prompt request id.
    effective_cancels: HashMap<String, usize>,
    /// Prompts the server ended (or removed) before any cancel of theirs
    /// arrived, by request id.
    ended_uncancelled: HashSet<String>,
    /// Every prompt the server has seen, by request id.
    seen: HashSet<String>,
}

impl ModelServer {
    fn id(&mut self, kind: &str) -> String {
        self.next_id += 1;
        format!("{kind}-{}", self.next_id)
    }

    fn session_event(&mut self, body: EventBody, request_id: &str, turn_id: Option<&str>) -> Event {
        self.seq += 1;
        Event {
            body,
            request_id: Some(request_id.to_string()),
            session_id: Some(SESSION.into()),
            turn_id: turn_id.map(String::from),
            seq: Some(self.seq),
            parent: None,
        }
    }

    fn error(request_id: &str, code: ErrorCode, entry: Option<QueueEntry>) -> Event {
        Event::reply(
            Some(request_id.into()),
            EventBody::Error(ErrorBody {
                code,
                message: code.to_string(),
                fatal: false,
                entry,
                conflicts: None,
            }),
        )
    }

    fn entry(queued: &Queued) -> QueueEntry {
        QueueEntry {
            queue_id: queued.queue_id.clone(),
            revision: queued.revision,
            prompt: queued.prompt.clone(),
            submitter: "client".into(),
        }
    }

    fn start(&mut self, request_id: &str, out: &mut Vec<Event>) {
        let turn_id = self.id("turn");
        self.running = Some((turn_id.clone(), request_id.to_string(), false));
        out.push(self.session_event(EventBody::TurnStarted {}, request_id, Some(&turn_id)));
    }

    fn handle(&mut self, request: &Request, out: &mut Vec<Event>) {
        let rid = request.request_id.as_str();
        match &request.message {
            ClientMessage::TurnStart(start) => {
                if start.prompt.is_empty() {
                    out.push(Self::error(rid, ErrorCode::InvalidRequest, None));
                    return;
                }
                self.seen.insert(rid.to_string());
                if self.running.is_none() {
                    self.start(rid, out);
                } else {
                    let queued = Queued {
                        queue_id: self.id("q"),
                        revision: 1,
                        prompt: start.prompt.clone(),
                        request_id: rid.to_string(),
                    };
                    let entry = Self::entry(&queued);
                    self.queue.push(queued);
                    let position = self.queue.len() - 1;
                    out.push(self.session_event(
                        EventBody::QueueEnqueued { entry, position },
                        rid,
                        None,
                    ));
                }
            }
            ClientMessage::TurnCancel(cancel) => match &mut self.running {
                Some((turn_id, prompt, asked)) if *turn_id == cancel.turn_id => {
                    if !*asked {
                        *asked = true;
                        *self.effective_cancels.entry(prompt.clone()).or_default() += 1;
                    }
                }
                _ => out.push(Self::error(rid, ErrorCode::TurnNotFound, None)),
            },
            ClientMessage::QueueRemove(remove) => {
                match self
                    .queue
                    .iter()
                    .position(|q| q.queue_id == remove.queue_id)
                {
                    None => out.push(Self::error(rid, ErrorCode::QueueNotFound, None)),
                    Some(i) if self.queue[i].revision != remove.revision => {
                        let entry = Self::entry(&self.queue[i]);
                        out.push(Self::error(rid, ErrorCode::QueueConflict, Some(entry)));
                    }
                    Some(i) => {
                        let queued = self.queue.remove(i);
                        *self
                            .effective_cancels
                            .entry(queued.request_id.clone())
                            .or_default() += 1;
                        out.push(self.session_event(
                            EventBody::QueueRemoved {
                                queue_id: queued.queue_id,
                            },
                            rid,
                            None,
                        ));
                    }
                }
            }
            ClientMessage::QueueUpdate(update) => {
                match self
                    .queue
                    .iter()
                    .position(|q| q.queue_id == update.queue_id)
                {
                    None => out.push(Self::error(rid, ErrorCode::QueueNotFound, None)),
                    Some(i) if self.queue[i].revision != update.revision => {
                        let entry = Self::entry(&self.queue[i]);
                        out.push(Self::error(rid, ErrorCode::QueueConflict, Some(entry)));
                    }
                    Some(i) => {
                        self.queue[i].revision += 1;
                        self.queue[i].prompt = update.prompt.clone();
                        let entry = Self::entry(&self.queue[i]);
                        out.push(self.session_event(EventBody::QueueUpdated { entry }, rid, None));
                    }
                }
            }
            ClientMessage::ApprovalResolve(resolve) => {
                if !self.approvals.remove(&resolve.approval_id) {
                    out.push(Self::error(rid, ErrorCode::ApprovalNotFound, None));
                }
            }
            other => panic!("the session client sent {other:?}"),
        }
    }

    fn ask_approval(&mut self, out: &mut Vec<Event>) {
        let Some((turn_id, prompt, _)) = self.running.clone() else {
            return;
        };
        let call_id = self.id("call");
        let approval_id = self.id("approval");
        self.approvals.insert(approval_id.clone());
        out.push(self.session_event(
            EventBody::ToolProposed {
                call_id: call_id.clone(),
                name: "bash".into(),
                arguments: serde_json::json!({"command": "true"}),
            },
            &prompt,
            Some(&turn_id),
        ));
        out.push(self.session_event(
            EventBody::ApprovalRequested {
                approval_id,
                call_id,
                name: "bash".into(),
                risk: Risk::Process,
                cwd: "/w".into(),
                summary: "Run shell command: true".into(),
                sandboxed: None,
            },
            &prompt,
            Some(&turn_id),
        ));
    }

    fn end_turn(&mut self, how: u8, out: &mut Vec<Event>) {
        let Some((turn_id, prompt, cancelled)) = self.running.take() else {
            return;
        };
        self.approvals.clear();
        let body = if cancelled {
            EventBody::TurnCancelled {}
        } else {
            self.ended_uncancelled.insert(prompt.clone());
            match how {
                0 => EventBody::TurnCompleted {
                    steps: 1,
                    usage: None,
                    cost: None,
                },
                _ => EventBody::TurnFailed {
                    code: FailureCode::ProviderError,
                    message: "down".into(),
                },
            }
        };
        out.push(self.session_event(body, &prompt, Some(&turn_id)));
        if !self.queue.is_empty() {
            let next = self.queue.remove(0);
            out.push(self.session_event(
                EventBody::QueueDequeued {
                    queue_id: next.queue_id,
                },
                &next.request_id,
                None,
            ));
            self.start(&next.request_id, out);
        }
    }
}

/// What the client side saw of each prompt.
#[derive(Default)]
struct Seen {
    started: HashSet<String>,
    ends: HashMap<String, Vec<String>>,
    cancelled: HashSet<String>,
    /// Prompts the client knew the place of (queued or running) while a
    /// cancel of them was asked, before they ended.
    placed_and_cancelled: HashSet<String>,
    turn_of: HashMap<String, String>,
    queue_of: HashMap<String, String>,
    /// Cancel requests the client sent, by prompt.
    cancels_sent: HashMap<String, usize>,
    /// `turn.cancel`s sent, by turn.
    turn_cancels: HashMap<String, usize>,
    /// Cancel requests sent for a prompt since it was last placed.
    since_placement: HashMap<String, usize>,
}

impl Seen {
    /// Notes the cancels among `requests` (just made by `client`). A
    /// turn's cancel never goes out while a cancelled prompt is still on
    /// its way: the server could end the turn and start that prompt before
    /// its removal arrives.
    fn sent_by(&mut self, client: &SessionClient, requests: &[Request]) {
        if requests
            .iter()
            .any(|r| matches!(r.message, ClientMessage::TurnCancel(_)))
        {
            assert!(
                !holding(client),
                "a turn.cancel went out while a cancelled prompt was on its way"
            );
        }
        self.sent(requests);
    }

    /// Notes the cancels among `requests`.
    fn sent(&mut self, requests: &[Request]) {
        for request in requests {
            let prompt = match &request.message {
                ClientMessage::TurnCancel(cancel) => {
                    *self.turn_cancels.entry(cancel.turn_id.clone()).or_default() += 1;
                    self.turn_of.get(&cancel.turn_id)
                }
                ClientMessage::QueueRemove(remove) => self.queue_of.get(&remove.queue_id),
                _ => None,
            };
            if let Some(prompt) = prompt.cloned() {
                *self.cancels_sent.entry(prompt.clone()).or_default() += 1;
                *self.since_placement.entry(prompt).or_default() += 1;
            }
        }
    }

    /// Every prompt the client wants cancelled and knows the place of has
    /// had a cancel sent since it got that place.
    fn check(&self, client: &SessionClient) {
        // Cancels wait while a cancelled prompt is still on its way.
        if holding(client) {
            return;
        }
        for p in client.prompts() {
            if p.cancel && p.stage != Stage::Sent {
                assert!(
                    self.since_placement
                        .get(&p.request_id)
                        .copied()
                        .unwrap_or(0)
                        >= 1,
                    "prompt {} is wanted cancelled at {:?} and nothing was sent",
                    p.request_id,
                    p.stage
                );
            }
        }
    }

    /// The client knows `request_id` is placed; was a cancel asked?
    fn placed(&mut self, client: &SessionClient, request_id: &str) {
        if client.prompt(request_id).is_some_and(|p| p.cancel) {
            self.placed_and_cancelled.insert(request_id.to_string());
        }
    }
}

fn end(seen: &mut Seen, request_id: &str, how: &str) {
    seen.ends
        .entry(request_id.to_string())
        .or_default()
        .push(how.to_string());
}

fn apply(
    client: &mut SessionClient,
    event: &Event,
    seen: &mut Seen,
    to_server: &mut VecDeque<Request>,
) {
    let applied = client.apply(event);
    for update in &applied.updates {
        match update {
            Update::Queued {
                request_id, entry, ..
            } => {
                seen.queue_of
                    .insert(entry.queue_id.clone(), request_id.clone());
                seen.since_placement.insert(request_id.clone(), 0);
                seen.placed(client, request_id);
            }
            Update::Started {
                request_id,
                turn_id,
                ..
            } => {
                assert!(seen.started.insert(request_id.clone()), "started twice");
                seen.turn_of.insert(turn_id.clone(), request_id.clone());
                seen.since_placement.insert(request_id.clone(), 0);
                seen.placed(client, request_id);
            }
            Update::Ended {
                request_id: Some(request_id),
                outcome,
                ..
            } => {
                assert!(seen.started.contains(request_id), "ended before it started");
                let how = match outcome {
                    Outcome::Completed { .. } => "completed",
                    Outcome::Cancelled => "cancelled",
                    Outcome::Failed { .. } => "failed",
                };
                end(seen, request_id, how);
            }
            Update::Withdrawn { request_id, .. } => end(seen, request_id, "withdrawn"),
            Update::Refused { request_id, .. } => end(seen, request_id, "refused"),
            Update::SeqGap { expected, got } => panic!("seq gap: {expected} then {got}"),
            _ => {}
        }
    }
    seen.sent_by(client, &applied.requests);
    seen.check(client);
    to_server.extend(applied.requests);
}

/// A cancelled prompt is still on its way: the client sends no cancel
/// until the server has placed it.
fn holding(client: &SessionClient) -> bool {
    client
        .prompts()
        .iter()
        .any(|p| p.cancel && p.stage == Stage::Sent)
}

/// Before the server dequeues its next prompt: a prompt the client wants
/// cancelled and knows is queued must have its removal on the way (to the
/// server, or the conflict that makes the client try again, to the
/// client). Otherwise it would run although it was cancelled in the queue.
fn check_dequeue(
    server: &ModelServer,
    client: &SessionClient,
    to_server: &VecDeque<Request>,
    to_client: &VecDeque<Event>,
) {
    let (Some(_), Some(next)) = (&server.running, server.queue.first()) else {
        return;
    };
    let Some(prompt) = client.prompt(&next.request_id) else {
        return;
    };
    if !prompt.cancel || !matches!(prompt.stage, Stage::Queued { .. }) || holding(client) {
        return;
    }
    let removing = to_server.iter().any(|r| {
        matches!(&r.message, ClientMessage::QueueRemove(remove) if remove.queue_id == next.queue_id)
    });
    let retrying = to_client.iter().any(|e| {
        matches!(&e.body, EventBody::Error(error)
            if error.entry.as_ref().is_some_and(|entry| entry.queue_id == next.queue_id))
    });
    assert!(
        removing || retrying,
        "prompt {} was cancelled in the queue but no removal is on its way",
        next.request_id
    );
}

fn run(ops: Vec<Op>) {
    let mut client = SessionClient::new("c");
    client.set_session(SESSION);
    let mut server = ModelServer::default();
    let mut to_server: VecDeque<Request> = VecDeque::new();
    let mut to_client: VecDeque<Event> = VecDeque::new();
    let mut seen = Seen::default();
    let mut submitted = Vec::new();
    let mut n = 0;
    let server_reads = |server: &mut ModelServer,
                        to_server: &mut VecDeque<Request>,
                        to_client: &mut VecDeque<Event>,
                        count: usize| {
        for _ in 0..count {
            let Some(request) = to_server.pop_front() else {
                break;
            };
            let mut out = Vec::new();
            server.handle(&request, &mut out);
            to_client.extend(out);
        }
    };
    for op in ops {
        seen.check(&client);
        match op {
            Op::Submit | Op::SubmitRefused => {
                n += 1;
                let text = if matches!(op, Op::Submit) {
                    format!("prompt {n}")
                } else {
                    String::new()
                };
                let request = client.submit(text);
                submitted.push(request.request_id.clone());
                to_server.push_back(request);
            }
            Op::CancelCurrent => {
                let before: Vec<(String, bool)> = client
                    .prompts()
                    .iter()
                    .map(|p| (p.request_id.clone(), p.cancel))
                    .collect();
                let requests = client.cancel_current();
                seen.sent_by(&client, &requests);
                to_server.extend(requests);
                let asked: Vec<String> = client
                    .prompts()
                    .iter()
                    .filter(|p| p.cancel && !before.iter().any(|(id, c)| *id == p.request_id && *c))
                    .map(|p| p.request_id.clone())
                    .collect();
                for id in asked {
                    seen.cancelled.insert(id.clone());
                    if client.prompt(&id).is_some_and(|p| p.stage != Stage::Sent) {
                        seen.placed(&client, &id);
                    }
                }
            }
            Op::Cancel(i) => {
                if !client.prompts().is_empty() {
                    let id = client.prompts()[i % client.prompts().len()]
                        .request_id
                        .clone();
                    seen.cancelled.insert(id.clone());
                    let requests = client.cancel(&id);
                    seen.sent_by(&client, &requests);
                    to_server.extend(requests);
                    if client.prompt(&id).is_some_and(|p| p.stage != Stage::Sent) {
                        seen.placed(&client, &id);
                    }
                }
            }
            Op::Edit(i) => {
                let queued: Vec<(String, u64)> = client
                    .prompts()
                    .iter()
                    .filter_map(|p| match &p.stage {
                        Stage::Queued { queue_id, revision } => Some((queue_id.clone(), *revision)),
                        _ => None,
                    })
                    .collect();
                if !queued.is_empty() {
                    let (queue_id, revision) = queued[i % queued.len()].clone();
                    n += 1;
                    let request =
                        client.request(ClientMessage::QueueUpdate(scv_protocol::QueueUpdate {
                            session_id: SESSION.into(),
                            queue_id,
                            revision,
                            prompt: format!("edited {n}"),
                        }));
                    to_server.push_back(request);
                }
            }
            Op::CancelAll => {
                for p in client.prompts() {
                    seen.cancelled.insert(p.request_id.clone());
                }
                let requests = client.cancel_all();
                seen.sent_by(&client, &requests);
                to_server.extend(requests);
                let placed: Vec<String> = client
                    .prompts()
                    .iter()
                    .filter(|p| p.stage != Stage::Sent)
                    .map(|p| p.request_id.clone())
                    .collect();
                for id in placed {
                    seen.placed(&client, &id);
                }
            }
            Op::Resolve(approved) => {
                if let Some(approval) = client.approvals().first().cloned() {
                    let request = client.resolve(&approval.approval_id, approved).unwrap();
                    to_server.push_back(request);
                }
            }
            Op::ServerReads(count) => {
                server_reads(&mut server, &mut to_server, &mut to_client, count)
            }
            Op::ClientReads(count) => {
                for _ in 0..count {
                    let Some(event) = to_client.pop_front() else {
                        break;
                    };
                    apply(&mut client, &event, &mut seen, &mut to_server);
                }
            }
            Op::AskApproval => {
                let mut out = Vec::new();
                server.ask_approval(&mut out);
                to_client.extend(out);
            }
            Op::EndTurn(how) => {
                check_dequeue(&server, &client, &to_server, &to_client);
                let mut out = Vec::new();
                server.end_turn(how, &mut out);
                to_client.extend(out);
            }
        }
    }
    // Drain: everything is delivered, every turn ends.
    for _ in 0..10_000 {
        if to_server.is_empty()
            && to_client.is_empty()
            && server.running.is_none()
            && server.queue.is_empty()
        {
            break;
        }
        server_reads(&mut server, &mut to_server, &mut to_client, usize::MAX);
        while let Some(event) = to_client.pop_front() {
            apply(&mut client, &event, &mut seen, &mut to_server);
        }
        if to_server.is_empty() {
            check_dequeue(&server, &client, &to_server, &to_client);
            let mut out = Vec::new();
            server.end_turn(0, &mut out);
            to_client.extend(out);
        }
    }
    assert!(
        client.prompts().is_empty(),
        "left in flight: {:?}",
        client.prompts()
    );
    assert!(
        client.approvals().is_empty(),
        "approvals left: {:?}",
        client.approvals()
    );
    assert!(client.running_turn().is_none());
    for (turn, count) in &seen.turn_cancels {
        assert!(*count <= 1, "turn {turn} was cancelled {count} times");
    }
    for id in &submitted {
        let ends = seen.ends.get(id).cloned().unwrap_or_default();
        assert_eq!(ends.len(), 1, "prompt {id} ended {ends:?}");
        if seen.cancelled.contains(id) && !server.ended_uncancelled.contains(id) {
            assert!(
                matches!(ends[0].as_str(), "cancelled" | "withdrawn" | "refused"),
                "cancelled prompt {id} ended {}",
                ends[0]
            );
        }
        if !seen.cancelled.contains(id) {
            assert!(
                !matches!(ends[0].as_str(), "cancelled" | "withdrawn"),
                "uncancelled prompt {id} ended {}",
                ends[0]
            );
        }
        assert!(server.effective_cancels.get(id).copied().unwrap_or(0) <= 1);
        // (That a cancel went out once the prompt was placed, unless the
        // client was holding cancels, is checked after every step.)
        if ends[0] == "refused" {
            assert!(!server.seen.contains(id));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn the_session_client_follows_the_model(ops in prop::collection::vec(op(), 1..60)) {
        run(ops);
    }
}

/// The rule that lived twice: a cancel before the server said where the
/// prompt is takes effect when it says — as `turn.cancel` when it starts,
/// as `queue.remove` when it is queued.
#[test]
fn a_cancel_before_the_server_placed_the_prompt_is_sent_when_it_does() {
    for queued in [false, true] {
        let mut client = SessionClient::new("c");
        client.set_session(SESSION);
        let request = client.submit("hi");
        assert_eq!(
            client.prompt(&request.request_id).unwrap().stage,
            Stage::Sent
        );
        assert!(client.cancel_current().is_empty(), "nothing to send yet");
        let body = if queued {
            EventBody::QueueEnqueued {
                entry: QueueEntry {
                    queue_id: "q1".into(),
                    revision: 3,
                    prompt: "hi".into(),
                    submitter: "client".into(),
                },
                position: 0,
            }
        } else {
            EventBody::TurnStarted {}
        };
        let event = Event {
            body,
            request_id: Some(request.request_id.clone()),
            session_id: Some(SESSION.into()),
            turn_id: (!queued).then(|| "t1".to_string()),
            seq: Some(1),
            parent: None,
        };
        let applied = client.apply(&event);
        assert_eq!(applied.requests.len(), 1);
        match &applied.requests[0].message {
            ClientMessage::QueueRemove(remove) if queued => {
                assert_eq!((remove.queue_id.as_str(), remove.revision), ("q1", 3));
            }
            ClientMessage::TurnCancel(cancel) if !queued => assert_eq!(cancel.turn_id, "t1"),
            other => panic!("{other:?}"),
        }
        // Asking again sends nothing more.
        assert!(client.cancel(&request.request_id).is_empty());
    }
}

/// A subagent's events: its approval waits here and is answered naming
/// the child's session; its turn's end never ends the parent's; events of
/// another session's children are not ours.
#[test]
fn a_childs_approval_names_the_child_and_its_end_is_not_ours() {
    let mut client = SessionClient::new("c");
    client.set_session(SESSION);
    let turn = client.submit("go");
    let event = |body: EventBody, session: &str, parent: Option<&str>| Event {
        body,
        request_id: Some(turn.request_id.clone()),
        session_id: Some(session.into()),
        turn_id: Some(format!("{session}-turn")),
        seq: Some(1),
        parent: parent.map(|p| scv_protocol::Parent {
            session_id: p.into(),
            turn_id: "t1".into(),
            call_id: "task-1".into(),
        }),
    };
    client.apply(&event(EventBody::TurnStarted {}, SESSION, None));
    let started = scv_protocol::SubagentStarted {
        agent: None,
        description: "look".into(),
        provider: "openai".into(),
        model: "m".into(),
        tools: vec!["bash".into()],
        depth: 1,
    };
    let applied = client.apply(&event(
        EventBody::SubagentStarted(started.clone()),
        "child",
        Some(SESSION),
    ));
    assert!(matches!(
        applied.updates[..],
        [Update::SubagentStarted { .. }]
    ));
    client.apply(&event(
        EventBody::ToolProposed {
            call_id: "k".into(),
            name: "bash".into(),
            arguments: serde_json::json!({"command": "ls"}),
        },
        "child",
        Some(SESSION),
    ));
    let asked = client.apply(&event(
        EventBody::ApprovalRequested {
            approval_id: "a1".into(),
            call_id: "k".into(),
            name: "bash".into(),
            risk: scv_protocol::Risk::Process,
            cwd: "/w".into(),
            summary: "Run shell command: ls".into(),
            sandboxed: None,
        },
        "child",
        Some(SESSION),
    ));
    let Some(Update::ApprovalRequested(approval)) = asked.updates.first() else {
        panic!("{asked:?}");
    };
    assert_eq!(approval.child_session.as_deref(), Some("child"));
    assert_eq!(approval.arguments["command"], "ls");
    // Another session's child is not ours.
    let other = client.apply(&event(
        EventBody::SubagentStarted(started),
        "stranger",
        Some("another-session"),
    ));
    assert!(other.updates.is_empty());
    // The child's end is not the parent's.
    let ended = client.apply(&event(
        EventBody::TurnCompleted {
            steps: 1,
            usage: None,
            cost: None,
        },
        "child",
        Some(SESSION),
    ));
    assert!(!ended
        .updates
        .iter()
        .any(|u| matches!(u, Update::Ended { .. })));
    assert_eq!(
        client.running_turn(),
        Some(format!("{SESSION}-turn").as_str())
    );
    // Its approval went with it.
    assert!(ended
        .updates
        .iter()
        .any(|u| matches!(u, Update::ApprovalGone { approval_id } if approval_id == "a1")));
    assert!(client.resolve("a1", true).is_none());
}

#[test]
fn a_childs_approval_is_resolved_with_the_childs_session_id() {
    let mut client = SessionClient::new("c");
    client.set_session(SESSION);
    let asked = Event {
        body: EventBody::ApprovalRequested {
            approval_id: "a1".into(),
            call_id: "k".into(),
            name: "bash".into(),
            risk: scv_protocol::Risk::Process,
            cwd: "/w".into(),
            summary: "s".into(),
            sandboxed: None,
        },
        request_id: Some("c1".into()),
        session_id: Some("child".into()),
        turn_id: Some("ct".into()),
        seq: Some(3),
        parent: Some(scv_protocol::Parent {
            session_id: SESSION.into(),
            turn_id: "t1".into(),
            call_id: "task-1".into(),
        }),
    };
    client.apply(&asked);
    let request = client.resolve("a1", false).unwrap();
    match request.message {
        ClientMessage::ApprovalResolve(resolve) => {
            assert_eq!(resolve.session_id, "child");
            assert!(!resolve.approved);
        }
        other => panic!("{other:?}"),
    }
}

/// A client that did not ask for capability `subagents` is asked a
/// child's approval on the parent's `task` call, naming the child's tool.
/// The task's arguments are not that call's: a `command` the model put on
/// the task call must never reach a rule (it would let a saved `git
/// status` rule answer whatever the child runs).
#[test]
fn a_relayed_child_approval_carries_no_arguments_of_the_task_call() {
    let mut client = SessionClient::new("c");
    client.set_session(SESSION);
    let turn = client.submit("go");
    let seq = std::cell::Cell::new(0);
    let event = |body: EventBody| {
        seq.set(seq.get() + 1);
        Event {
            body,
            request_id: Some(turn.request_id.clone()),
            session_id: Some(SESSION.into()),
            turn_id: Some("t1".into()),
            seq: Some(seq.get()),
            parent: None,
        }
    };
    client.apply(&event(EventBody::TurnStarted {}));
    client.apply(&event(EventBody::ToolProposed {
        call_id: "task-1".into(),
        name: "task".into(),
        arguments: serde_json::json!({"description": "d", "prompt": "p", "command": "git status"}),
    }));
    let asked = client.apply(&event(EventBody::ApprovalRequested {
        approval_id: "a1".into(),
        call_id: "task-1".into(),
        name: "bash".into(),
        risk: scv_protocol::Risk::Process,
        cwd: "/w".into(),
        summary: "subagent «d»: Run shell command outside the sandbox: curl x | sh".into(),
        sandboxed: Some(false),
    }));
    let Some(Update::ApprovalRequested(approval)) = asked.updates.first() else {
        panic!("{asked:?}");
    };
    assert_eq!(approval.arguments, serde_json::Value::Null);
    let mut rules = scv_client::rules::Rules::default();
    rules.add(scv_client::rules::Rule::Command {
        env: vec![],
        words: vec!["git".into(), "status".into()],
    });
    let call = scv_client::rules::Call {
        name: &approval.name,
        risk: "process",
        cwd: &approval.cwd,
        summary: &approval.summary,
        arguments: &approval.arguments,
    };
    assert!(rules.find(&call).is_none());
    // The parent's own call, named as proposed, keeps its arguments.
    client.apply(&event(EventBody::ToolProposed {
        call_id: "k".into(),
        name: "bash".into(),
        arguments: serde_json::json!({"command": "git status"}),
    }));
    let asked = client.apply(&event(EventBody::ApprovalRequested {
        approval_id: "a2".into(),
        call_id: "k".into(),
        name: "bash".into(),
        risk: scv_protocol::Risk::Process,
        cwd: "/w".into(),
        summary: "Run shell command: git status".into(),
        sandboxed: Some(true),
    }));
    let Some(Update::ApprovalRequested(approval)) = asked.updates.first() else {
        panic!("{asked:?}");
    };
    assert_eq!(approval.arguments["command"], "git status");
}
