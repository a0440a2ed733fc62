//! Where a session's events go: the one place its `seq` is assigned.
//!
//! The turn task and the connection both emit for a session; the async
//! mutex makes "take the next seq, queue the frame" one step, so wire order
//! and seq order agree. The counter only moves once the frame is queued, so
//! an emit abandoned by cancellation leaves no gap.
//!
//! It is also where the connection's capabilities are consulted
//! ([`crate::gate`]): an event the client did not ask for is dropped here
//! before it takes a `seq`, and extension fields and codes it did not ask
//! for are taken out. Emitters build every event whole.

use crate::provider::Delta;
use crate::transport::{encode, DeltaEnvelope, DeltaKind, Outbound, SendError};
use scv_protocol::limits::MAX_SERVER_FRAME_BYTES;
use scv_protocol::{Capabilities, EventBody, EventRef, Parent};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EmitError {
    #[error(transparent)]
    Send(#[from] SendError),
    #[error("an event of {0} bytes exceeds the {MAX_SERVER_FRAME_BYTES}-byte server frame limit")]
    TooLarge(usize),
}

pub(crate) struct SessionSink {
    session_id: Arc<str>,
    next_seq: tokio::sync::Mutex<u64>,
    out: Outbound,
    /// Capability `detach`: once the session is detached, its events go
    /// to every attached connection instead of `out` (shared with its
    /// children's sinks).
    fan: Arc<Fan>,
    /// A child session's: the call that started it, on every event.
    parent: Option<Parent>,
    /// What the connection that opened the session opted into.
    caps: Capabilities,
    /// A child of a connection that did not ask for capability
    /// `subagents`: its events are numbered but not sent.
    silent: bool,
}

impl SessionSink {
    /// A sink whose first event gets `first_seq` (0 for a new session; a
    /// resumed one continues above its journal's last).
    /// `caps`: what the connection opted into.
    pub(crate) fn new(
        session_id: Arc<str>,
        out: Outbound,
        first_seq: u64,
        caps: Capabilities,
    ) -> Self {
        SessionSink {
            session_id,
            next_seq: tokio::sync::Mutex::new(first_seq),
            out,
            fan: Arc::default(),
            parent: None,
            caps,
            silent: false,
        }
    }

    /// A child session's sink on the same connection: its events carry
    /// `parent`, and reach the client only when it asked for capability
    /// `subagents`.
    pub(crate) fn child(&self, session_id: Arc<str>, parent: Parent) -> Self {
        SessionSink {
            session_id,
            next_seq: tokio::sync::Mutex::new(0),
            out: self.out.clone(),
            fan: self.fan.clone(),
            parent: Some(parent),
            caps: self.caps,
            silent: !crate::gate::Capability::Subagents.granted(&self.caps),
        }
    }

    /// Whether an event of `type_name` leaves this sink at all (numbered
    /// but unsent, for a child the client does not see, counts as leaving).
    pub(crate) fn sends(&self, type_name: &str) -> bool {
        crate::gate::allows(&self.caps, type_name)
    }

    /// Whether its events reach the client.
    pub(crate) fn visible(&self) -> bool {
        !self.silent
    }

    /// The `seq` the next event will get (exact while no turn of the
    /// session runs: the host is then its only emitter).
    pub(crate) async fn next_seq(&self) -> u64 {
        *self.next_seq.lock().await
    }

    pub(crate) fn session_id(&self) -> &Arc<str> {
        &self.session_id
    }

    /// Emits a session event with the next `seq`; returns that `seq`. An
    /// event the connection did not ask for ([`crate::gate::shape`]) is
    /// not sent and takes no `seq` (the `seq` returned is the next
    /// event's).
    pub(crate) async fn emit(
        &self,
        request_id: Option<&str>,
        turn_id: Option<&str>,
        body: &EventBody,
    ) -> Result<u64, EmitError> {
        self.emit_coded(request_id, turn_id, body, None).await
    }

    /// [`SessionSink::emit`] of a `turn.failed` whose `code` on the wire
    /// is `code` (an extension code, such as `budget_exceeded`, that only
    /// a connection which asked for it gets, [`crate::gate::code`]; `body`
    /// holds the document's code the journal keeps).
    pub(crate) async fn emit_coded(
        &self,
        request_id: Option<&str>,
        turn_id: Option<&str>,
        body: &EventBody,
        code: Option<&str>,
    ) -> Result<u64, EmitError> {
        let mut next_seq = self.next_seq.lock().await;
        let Some(body) = crate::gate::shape(&self.caps, body) else {
            return Ok(*next_seq);
        };
        let body = body.as_ref();
        let code = crate::gate::code(&self.caps, code);
        if self.silent {
            *next_seq += 1;
            return Ok(*next_seq - 1);
        }
        let event = EventRef {
            body,
            request_id,
            session_id: Some(&self.session_id),
            turn_id,
            seq: Some(*next_seq),
            parent: self.parent.as_ref(),
        };
        let frame = match code {
            None => encode(event),
            Some(code) => recoded(event, code),
        };
        if frame.len() > MAX_SERVER_FRAME_BYTES {
            return Err(EmitError::TooLarge(frame.len()));
        }
        if let EventBody::ApprovalRequested { approval_id, .. } = body {
            if self.parent.is_none() {
                // What an attaching connection is shown of it.
                let replay = EventRef { seq: None, ..event };
                self.fan
                    .approval_shown(approval_id, encode(replay), turn_id.unwrap_or_default());
            }
        }
        self.deliver(frame, 1).await?;
        let seq = *next_seq;
        *next_seq += 1;
        Ok(seq)
    }

    /// Sends `frames` frames joined in `data`: to the connection, or once
    /// detached to every attached one (one that fails is dropped from the
    /// session; the session goes on).
    async fn deliver(&self, data: bytes::Bytes, frames: usize) -> Result<(), SendError> {
        if !self.fan.is_detached() {
            return self.out.send_frames(data, frames).await;
        }
        for (conn, out) in self.fan.outs() {
            if out.send_frames(data.clone(), frames).await.is_err() {
                self.fan.remove(conn);
            }
        }
        Ok(())
    }

    /// The fan-out of a detached session.
    pub(crate) fn fan(&self) -> &Arc<Fan> {
        &self.fan
    }

    /// An approval whose call no longer waits: attaching connections are
    /// no longer shown it.
    pub(crate) fn approval_gone(&self, approval_id: &str) {
        self.fan.approval_gone(approval_id);
    }

    /// Attaches `out` (connection `conn`) to this detached session:
    /// under the seq lock, `session.attached` with the last `seq` sent,
    /// then `replays` (the queue, the transcript: no `seq`), then every
    /// approval still waiting, then `out` gets every event from the next
    /// `seq` on. Returns false when [`MAX_ATTACHMENTS_PER_SESSION`] are
    /// attached already.
    pub(crate) async fn attach(
        &self,
        conn: u64,
        out: Outbound,
        attached: bytes::Bytes,
        replays: Vec<bytes::Bytes>,
    ) -> Result<bool, SendError> {
        let next_seq = self.next_seq.lock().await;
        if self.fan.count() >= scv_protocol::MAX_ATTACHMENTS_PER_SESSION {
            return Ok(false);
        }
        let last = next_seq.saturating_sub(1);
        // `session.attached` carries the envelope's `seq`: spliced in.
        let mut head = attached.to_vec();
        if head.last() == Some(&b'}') {
            head.pop();
            head.extend_from_slice(format!(",\"seq\":{last}}}").as_bytes());
        }
        out.send(head.into()).await?;
        for frame in replays {
            out.send(frame).await?;
        }
        for frame in self.fan.approvals() {
            out.send(frame).await?;
        }
        self.fan.add(conn, out);
        Ok(true)
    }

    /// Emits an extension event that front ends' [`EventBody`] does not
    /// carry (yet): `type` and the envelope around `body`'s fields, with
    /// the next `seq`; gated on `type_name` as [`SessionSink::emit`] is.
    pub(crate) async fn emit_extension(
        &self,
        type_name: &str,
        turn_id: Option<&str>,
        body: &impl serde::Serialize,
    ) -> Result<u64, EmitError> {
        let mut next_seq = self.next_seq.lock().await;
        if !crate::gate::allows(&self.caps, type_name) {
            return Ok(*next_seq);
        }
        if self.silent {
            *next_seq += 1;
            return Ok(*next_seq - 1);
        }
        let mut event = serde_json::Map::new();
        event.insert("type".into(), type_name.into());
        if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(body) {
            event.extend(fields);
        }
        event.insert("session_id".into(), self.session_id.as_ref().into());
        if let Some(turn_id) = turn_id {
            event.insert("turn_id".into(), turn_id.into());
        }
        event.insert("seq".into(), (*next_seq).into());
        if let Some(parent) = &self.parent {
            if let Ok(parent) = serde_json::to_value(parent) {
                event.insert("parent".into(), parent);
            }
        }
        let frame = bytes::Bytes::from(serde_json::Value::Object(event).to_string());
        if frame.len() > MAX_SERVER_FRAME_BYTES {
            return Err(EmitError::TooLarge(frame.len()));
        }
        self.deliver(frame, 1).await?;
        let seq = *next_seq;
        *next_seq += 1;
        Ok(seq)
    }

    /// Emits `deltas` (at most [`WRITER_QUEUE_FRAMES`]) as consecutive
    /// `assistant.delta` / `reasoning.delta` events with consecutive
    /// `seq`s, queued as one batch: the same frames, in the same order, for
    /// one reservation and one wake-up of the writer. Encoded from the
    /// deltas' own text (no event built per delta: a batch of events held
    /// 32 KiB per streaming turn). Reasoning goes only to a connection
    /// that asked for it (never into the answer).
    pub(crate) async fn emit_deltas(
        &self,
        request_id: Option<&str>,
        turn_id: Option<&str>,
        deltas: &[Delta],
    ) -> Result<(), EmitError> {
        let reasoning = crate::gate::allows(&self.caps, "reasoning.delta");
        let sent = |delta: &&Delta| reasoning || matches!(delta, Delta::Text(_));
        let count = deltas.iter().filter(sent).count();
        if count == 0 {
            return Ok(());
        }
        let mut next_seq = self.next_seq.lock().await;
        if self.silent {
            *next_seq += count as u64;
            return Ok(());
        }
        let envelope = DeltaEnvelope::new(
            request_id,
            Some(&self.session_id),
            turn_id,
            self.parent.as_ref(),
        );
        // Room for the lot at once: a batch that outgrew a guess was
        // copied again at each doubling (a tenth of the stream path's
        // `memmove`).
        let text: usize = deltas.iter().filter(sent).map(|d| d.text().len()).sum();
        let mut buf = Vec::with_capacity(count * envelope.overhead() + text + text / 8);
        for (n, delta) in deltas.iter().filter(sent).enumerate() {
            let start = buf.len();
            if n > 0 {
                buf.push(b'\n');
            }
            let (kind, content) = match delta {
                Delta::Text(text) => (DeltaKind::Answer, text),
                Delta::Reasoning(text) => (DeltaKind::Reasoning, text),
            };
            envelope.encode(&mut buf, kind, content, Some(*next_seq + n as u64));
            let len = buf.len() - start - usize::from(n > 0);
            if len > MAX_SERVER_FRAME_BYTES {
                return Err(EmitError::TooLarge(len));
            }
        }
        self.deliver(buf.into(), count).await?;
        *next_seq += count as u64;
        Ok(())
    }
}

/// Where a detached session's events go: the connections attached, and
/// the approvals waiting (shown again to a connection that attaches).
#[derive(Default)]
pub(crate) struct Fan {
    detached: std::sync::atomic::AtomicBool,
    /// A turn of the session runs (for `session.listed`'s `state`).
    running: std::sync::atomic::AtomicBool,
    outs: std::sync::Mutex<Vec<(u64, Outbound)>>,
    /// Approval id, its `approval.requested` frame without `seq`, and
    /// its turn.
    waiting: std::sync::Mutex<Vec<(String, bytes::Bytes, String)>>,
}

impl Fan {
    /// A turn of the session started (true) or ended (false).
    pub(crate) fn set_running(&self, running: bool) {
        self.running
            .store(running, std::sync::atomic::Ordering::Release);
    }

    /// The session's state as `session.listed` says it.
    pub(crate) fn state(&self) -> scv_protocol::LiveState {
        let running = self.running.load(std::sync::atomic::Ordering::Acquire);
        match (running, self.first_waiting().is_some()) {
            (true, true) => scv_protocol::LiveState::AwaitingApproval,
            (true, false) => scv_protocol::LiveState::Running,
            (false, _) => scv_protocol::LiveState::Idle,
        }
    }

    pub(crate) fn is_detached(&self) -> bool {
        self.detached.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The session leaves its connection's hands: from now on its events
    /// go to the connections attached, `conn` first.
    pub(crate) fn detach(&self, conn: u64, out: Outbound) {
        crate::sync::lock(&self.outs).push((conn, out));
        self.detached
            .store(true, std::sync::atomic::Ordering::Release);
    }

    fn outs(&self) -> Vec<(u64, Outbound)> {
        crate::sync::lock(&self.outs).clone()
    }

    fn add(&self, conn: u64, out: Outbound) {
        crate::sync::lock(&self.outs).push((conn, out));
    }

    /// Connection `conn` no longer follows the session.
    pub(crate) fn remove(&self, conn: u64) {
        crate::sync::lock(&self.outs).retain(|(c, _)| *c != conn);
    }

    /// Every connection attached, let go (the session closed).
    pub(crate) fn take_all(&self) -> Vec<Outbound> {
        std::mem::take(&mut *crate::sync::lock(&self.outs))
            .into_iter()
            .map(|(_, out)| out)
            .collect()
    }

    /// Connections attached now.
    pub(crate) fn count(&self) -> usize {
        crate::sync::lock(&self.outs).len()
    }

    fn approval_shown(&self, approval_id: &str, frame: bytes::Bytes, turn_id: &str) {
        let mut waiting = crate::sync::lock(&self.waiting);
        // Bounded by the calls of one response (32) per running turn.
        if waiting.len() < 256 {
            waiting.push((approval_id.to_string(), frame, turn_id.to_string()));
        }
    }

    fn approval_gone(&self, approval_id: &str) {
        crate::sync::lock(&self.waiting).retain(|(id, _, _)| id != approval_id);
    }

    /// The waiting approvals' frames, oldest first.
    fn approvals(&self) -> Vec<bytes::Bytes> {
        crate::sync::lock(&self.waiting)
            .iter()
            .map(|(_, frame, _)| frame.clone())
            .collect()
    }

    /// Whether an approval waits, and the first one's frame.
    pub(crate) fn first_waiting(&self) -> Option<bytes::Bytes> {
        crate::sync::lock(&self.waiting)
            .first()
            .map(|(_, frame, _)| frame.clone())
    }
}

/// `event` encoded with its `code` field replaced by `code`.
fn recoded(event: EventRef<'_>, code: &str) -> bytes::Bytes {
    #[allow(clippy::expect_used)] // plain data with string keys always serializes
    let mut value = serde_json::to_value(event).expect("events always serialize");
    if let Some(object) = value.as_object_mut() {
        object.insert("code".into(), code.into());
    }
    #[allow(clippy::expect_used)] // as above
    bytes::Bytes::from(serde_json::to_vec(&value).expect("values always serialize"))
}
