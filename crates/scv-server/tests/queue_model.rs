#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The shared queue against a model, through the real binary: random
//! sequences of `turn.start`, `queue.update` / `queue.move` /
//! `queue.remove` with current and stale revisions, `session.pause`,
//! `turn.cancel`, `session.clear` and turn completions. Checked after every
//! step: each answer is the one the model predicts (a stale revision is
//! `queue_conflict` carrying the model's entry), `seq` has no gap, and at
//! the end every prompt ran exactly once, in the model's order.
//!
//! A turn is held active deterministically by its `bash` call waiting for
//! approval; it completes when the test denies the call (the model then
//! answers) and is cancelled with `turn.cancel`.

mod common;
use common::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Start,
    /// On the queued entry at this index (mod the queue's length); with a
    /// stale revision when the flag is set.
    Update(usize, bool),
    Move(usize, Option<usize>, bool),
    Remove(usize, bool),
    Pause(bool),
    Cancel,
    Complete,
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => Just(Op::Start),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(i, s)| Op::Update(i, s)),
        2 => (any::<usize>(), prop::option::of(any::<usize>()), any::<bool>())
            .prop_map(|(i, j, s)| Op::Move(i, j, s)),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(i, s)| Op::Remove(i, s)),
        2 => any::<bool>().prop_map(Op::Pause),
        2 => Just(Op::Cancel),
        3 => Just(Op::Complete),
        1 => Just(Op::Clear),
    ]
}

#[derive(Debug, Clone, PartialEq)]
struct Entry {
    id: String,
    revision: u64,
    prompt: String,
}

/// The model: what the protocol document says the queue does.
#[derive(Default)]
struct Model {
    running: Option<Running>,
    paused: bool,
    queue: Vec<Entry>,
    /// Prompts in the order their turns started.
    ran: Vec<String>,
}

struct Running {
    turn_id: String,
    approval_id: String,
}

struct Driver {
    rig: Rig,
    session: String,
    model: Model,
    last_seq: Option<u64>,
    next_prompt: usize,
    next_request: usize,
}

impl Driver {
    fn rid(&mut self) -> String {
        self.next_request += 1;
        format!("r{}", self.next_request)
    }

    async fn send(&mut self, mut message: Value) {
        message["session_id"] = json!(self.session);
        self.rig.server.send(message).await;
    }

    /// The next event, with the session's `seq` checked for gaps.
    async fn next(&mut self) -> Value {
        let event = self.rig.server.next().await;
        if let Some(seq) = event["seq"].as_u64() {
            if let Some(last) = self.last_seq {
                assert_eq!(seq, last + 1, "seq gap before {event}");
            }
            self.last_seq = Some(seq);
        }
        event
    }

    async fn expect(&mut self, kind: &str) -> Value {
        let event = self.next().await;
        assert_eq!(event["type"], kind, "expected {kind}, got {event}");
        event
    }

    async fn expect_error(&mut self, code: &str, rid: &str) -> Value {
        let event = self.expect("error").await;
        assert_eq!(
            (event["code"].as_str(), event["request_id"].as_str()),
            (Some(code), Some(rid)),
            "{event}"
        );
        event
    }

    /// Events through `kind`; the turn's own progress (tool, assistant,
    /// usage events) may come before it, nothing of the queue, the session
    /// or another turn, and no error.
    async fn until(&mut self, kind: &str) -> Value {
        loop {
            let event = self.next().await;
            let got = event["type"].as_str().unwrap().to_string();
            if got == kind {
                return event;
            }
            let foreign = ["queue.", "turn.", "session.", "error"]
                .iter()
                .any(|p| got.starts_with(p));
            assert!(!foreign, "unexpected {event} before {kind}");
        }
    }

    /// A turn for `prompt` has just been started by the server: its
    /// `turn.started`, then the parked `bash` call's approval.
    async fn started(&mut self, prompt: String) {
        let started = self.expect("turn.started").await;
        let approval = self.until("approval.requested").await;
        self.model.running = Some(Running {
            turn_id: started["turn_id"].as_str().unwrap().into(),
            approval_id: approval["approval_id"].as_str().unwrap().into(),
        });
        self.model.ran.push(prompt);
    }

    /// The provider's answer for a turn about to start: a `bash` call that
    /// waits for approval.
    fn script_parked_turn(&self) {
        self.rig.mock.push(Reply::tool_calls(&[(
            "park",
            "bash",
            json!({"command": "true"}),
        )]));
    }

    /// After a turn ended: the server dequeues the next prompt unless paused.
    fn will_dequeue(&self) -> bool {
        !self.model.paused && !self.model.queue.is_empty()
    }

    async fn dequeued(&mut self) {
        let front = self.model.queue.remove(0);
        let event = self.expect("queue.dequeued").await;
        assert_eq!(event["queue_id"], front.id);
        self.started(front.prompt).await;
    }

    fn pick(&self, index: usize) -> Option<Entry> {
        (!self.model.queue.is_empty())
            .then(|| self.model.queue[index % self.model.queue.len()].clone())
    }

    fn revision(entry: &Entry, stale: bool) -> u64 {
        if stale {
            entry.revision + 1
        } else {
            entry.revision
        }
    }

    async fn step(&mut self, op: Op) {
        let rid = self.rid();
        match op {
            Op::Start => {
                self.next_prompt += 1;
                let prompt = format!("prompt-{}", self.next_prompt);
                if self.model.running.is_none() {
                    self.script_parked_turn();
                    self.send(json!({"type":"turn.start","request_id":rid,"prompt":prompt}))
                        .await;
                    self.started(prompt).await;
                } else {
                    self.send(json!({"type":"turn.start","request_id":rid,"prompt":prompt}))
                        .await;
                    let event = self.expect("queue.enqueued").await;
                    assert_eq!(event["position"], self.model.queue.len());
                    let entry = &event["entry"];
                    assert_eq!(
                        (entry["revision"].as_u64(), entry["prompt"].as_str()),
                        (Some(1), Some(prompt.as_str()))
                    );
                    self.model.queue.push(Entry {
                        id: entry["queue_id"].as_str().unwrap().into(),
                        revision: 1,
                        prompt,
                    });
                }
            }
            Op::Update(index, stale) => {
                let Some(entry) = self.pick(index) else {
                    return self.unknown_entry(rid).await;
                };
                let prompt = format!("{}-u{}", entry.prompt, self.next_request);
                self.send(
                    json!({"type":"queue.update","request_id":rid,"queue_id":entry.id,
                    "revision":Self::revision(&entry, stale),"prompt":prompt}),
                )
                .await;
                if stale {
                    return self.conflict(&rid, &entry).await;
                }
                let event = self.expect("queue.updated").await;
                let updated = Entry {
                    revision: entry.revision + 1,
                    prompt,
                    ..entry
                };
                assert_eq!(entry_of(&event["entry"]), updated);
                let at = self
                    .model
                    .queue
                    .iter()
                    .position(|e| e.id == updated.id)
                    .unwrap();
                self.model.queue[at] = updated;
            }
            Op::Move(index, before, stale) => {
                let Some(entry) = self.pick(index) else {
                    return self.unknown_entry(rid).await;
                };
                let before = before
                    .and_then(|b| self.pick(b))
                    .filter(|b| b.id != entry.id);
                self.send(
                    json!({"type":"queue.move","request_id":rid,"queue_id":entry.id,
                    "revision":Self::revision(&entry, stale),
                    "before_queue_id":before.as_ref().map(|b| b.id.clone())}),
                )
                .await;
                if stale {
                    return self.conflict(&rid, &entry).await;
                }
                let event = self.expect("queue.moved").await;
                let at = self
                    .model
                    .queue
                    .iter()
                    .position(|e| e.id == entry.id)
                    .unwrap();
                let mut moved = self.model.queue.remove(at);
                moved.revision += 1;
                let position = match &before {
                    Some(b) => self.model.queue.iter().position(|e| e.id == b.id).unwrap(),
                    None => self.model.queue.len(),
                };
                assert_eq!(event["position"], position, "{event}");
                assert_eq!(entry_of(&event["entry"]), moved);
                self.model.queue.insert(position, moved);
            }
            Op::Remove(index, stale) => {
                let Some(entry) = self.pick(index) else {
                    return self.unknown_entry(rid).await;
                };
                self.send(
                    json!({"type":"queue.remove","request_id":rid,"queue_id":entry.id,
                    "revision":Self::revision(&entry, stale)}),
                )
                .await;
                if stale {
                    return self.conflict(&rid, &entry).await;
                }
                self.expect("queue.removed").await;
                self.model.queue.retain(|e| e.id != entry.id);
            }
            Op::Pause(paused) => {
                self.model.paused = paused;
                let dequeues = self.model.running.is_none() && self.will_dequeue();
                if dequeues {
                    self.script_parked_turn();
                }
                self.send(json!({"type":"session.pause","request_id":rid,"paused":paused}))
                    .await;
                let snapshot = self.expect("queue.snapshot").await;
                let entries: Vec<Entry> = snapshot["entries"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(entry_of)
                    .collect();
                assert_eq!(
                    entries, self.model.queue,
                    "the snapshot differs from the model"
                );
                if dequeues {
                    self.dequeued().await;
                }
            }
            Op::Cancel => {
                let Some(running) = self.model.running.take() else {
                    self.send(json!({"type":"turn.cancel","request_id":rid,"turn_id":uuid()}))
                        .await;
                    self.expect_error("turn_not_found", &rid).await;
                    return;
                };
                let dequeues = self.will_dequeue();
                if dequeues {
                    self.script_parked_turn();
                }
                self.send(json!({"type":"turn.cancel","request_id":rid,"turn_id":running.turn_id}))
                    .await;
                self.until("turn.cancelled").await;
                if dequeues {
                    self.dequeued().await;
                }
            }
            Op::Complete => {
                let Some(running) = self.model.running.take() else {
                    return;
                };
                let dequeues = self.will_dequeue();
                // The answer after the denial, then (FIFO) the next turn's.
                self.rig.mock.push(Reply::text(["done"]));
                if dequeues {
                    self.script_parked_turn();
                }
                self.send(json!({"type":"approval.resolve","request_id":rid,
                    "approval_id":running.approval_id,"approved":false}))
                    .await;
                self.until("turn.completed").await;
                if dequeues {
                    self.dequeued().await;
                }
            }
            Op::Clear => {
                self.send(json!({"type":"session.clear","request_id":rid}))
                    .await;
                if self.model.running.is_some() {
                    self.expect_error("turn_active", &rid).await;
                } else {
                    self.expect("session.cleared").await;
                    self.model.queue.clear();
                }
            }
        }
    }

    async fn conflict(&mut self, rid: &str, entry: &Entry) {
        let event = self.expect_error("queue_conflict", rid).await;
        assert_eq!(
            entry_of(&event["entry"]),
            *entry,
            "the conflict must carry the current entry"
        );
    }

    async fn unknown_entry(&mut self, rid: String) {
        self.send(json!({"type":"queue.remove","request_id":rid,"queue_id":uuid(),"revision":1}))
            .await;
        self.expect_error("queue_not_found", &rid).await;
    }
}

fn entry_of(value: &Value) -> Entry {
    Entry {
        id: value["queue_id"].as_str().unwrap().into(),
        revision: value["revision"].as_u64().unwrap(),
        prompt: value["prompt"].as_str().unwrap().into(),
    }
}

fn uuid() -> String {
    "00000000-0000-4000-8000-000000000000".into()
}

/// The prompt of each turn the provider saw, in order (a completed turn
/// asks twice with the same last user message; prompts are unique).
fn prompts_run(mock: &MockProvider) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for request in mock.requests() {
        let messages = request.body["messages"].as_array().unwrap();
        let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
        let prompt = user["content"].as_str().unwrap().to_string();
        if out.last() != Some(&prompt) {
            out.push(prompt);
        }
    }
    out
}

async fn run(ops: Vec<Op>) {
    let mut rig = Rig::new("provider_max_retries = 0\n").await;
    let session = rig.session().await;
    let mut driver = Driver {
        rig,
        session,
        model: Model::default(),
        last_seq: None,
        next_prompt: 0,
        next_request: 0,
    };
    for op in ops {
        driver.step(op).await;
    }
    // Drain: unpause, then complete every turn left, queued ones included.
    driver.step(Op::Pause(false)).await;
    while driver.model.running.is_some() {
        driver.step(Op::Complete).await;
    }
    assert!(driver.model.queue.is_empty());
    assert_eq!(
        prompts_run(&driver.rig.mock),
        driver.model.ran,
        "prompts lost, repeated or out of order"
    );
    let mut unique = driver.model.ran.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), driver.model.ran.len(), "a prompt ran twice");
    assert!(driver.rig.mock.violations().is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, max_shrink_iters: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_queue_follows_the_model(ops in prop::collection::vec(op(), 1..40)) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(run(ops));
    }
}
