//! The bridge between the ACP client and the SCV daemon: it owns the
//! sessions, the prompts waiting for their answer and the permission
//! requests in flight, sends what ACP asks for to the daemon and turns
//! each daemon event into what ACP expects.
//!
//! Each SCV session has a [`SessionClient`] that follows its prompts —
//! sent, queued, running — and carries out `session/cancel` at whatever
//! stage a prompt is; the bridge keeps only what ACP needs beside it (the
//! responder waiting for each prompt's answer). A prompt sent while a turn
//! runs is queued by the daemon and answered when its own turn ends.
//!
//! One task, one loop: commands from the ACP handlers, daemon events (read
//! only while fewer than [`MAX_UNWRITTEN_UPDATES`] notifications wait for
//! stdout), and the end of stdin.
//!
//! [`MAX_UNWRITTEN_UPDATES`]: crate::stdio::MAX_UNWRITTEN_UPDATES

use crate::daemon::Link;
use crate::meter::Meter;
use crate::options::{Options, MAX_PROMPTS_PER_SESSION, MAX_SESSIONS};
use crate::replay::chunk;
use crate::stdio::Outflow;
use crate::subagents::Subagents;
use crate::updates::ToolCalls;
use crate::{errors, mcp, prompt};

mod approvals;
mod configure;
mod dirs;
mod elicit;
mod ending;
mod live;
pub use elicit::EditorElicitation;
mod lifecycle;
mod render;
use agent_client_protocol::v1::schema::{
    AvailableCommandsUpdate, CloseSessionRequest, CloseSessionResponse, CreateElicitationResponse,
    DeleteSessionRequest, DeleteSessionResponse, ListSessionsRequest, ListSessionsResponse,
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, RequestPermissionResponse, ResumeSessionRequest, ResumeSessionResponse,
    SessionInfo, SessionInfoUpdate, SessionModeState, SessionNotification, SessionUpdate,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse, StopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, RequestCancellationHandle};
use approvals::Asked;
use scv_client::rules::Rules;
use scv_client::session::{Request, SessionClient};
use scv_protocol::{
    ClientMessage, Event, EventBody, Mode, SessionList, SessionStart, StoredSession,
};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// The permission option that approves a call.
pub const ALLOW: &str = "allow_once";
/// The permission option that denies it.
pub const REJECT: &str = "reject_once";
/// The permission option that approves it and adds the session rule the
/// TUI's "always" would (`scv_client::rules`).
pub const ALWAYS: &str = "allow_always";

/// How long the end of stdin waits for the daemon to take the cancels.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// What the ACP handlers (and permission answers) ask of the bridge.
pub enum Command {
    NewSession {
        request: NewSessionRequest,
        responder: Responder<NewSessionResponse>,
    },
    LoadSession {
        request: LoadSessionRequest,
        responder: Responder<LoadSessionResponse>,
    },
    ListSessions {
        request: ListSessionsRequest,
        responder: Responder<ListSessionsResponse>,
    },
    Prompt {
        request: PromptRequest,
        responder: Responder<PromptResponse>,
    },
    Cancel {
        session_id: String,
    },
    /// `session/resume`.
    ResumeSession {
        request: ResumeSessionRequest,
        responder: Responder<ResumeSessionResponse>,
    },
    /// `session/close`.
    CloseSession {
        request: CloseSessionRequest,
        responder: Responder<CloseSessionResponse>,
    },
    /// `session/delete`.
    DeleteSession {
        request: DeleteSessionRequest,
        responder: Responder<DeleteSessionResponse>,
    },
    /// What elicitation the editor declared (from `initialize`).
    Editor(EditorElicitation),
    /// The editor answered (or failed) an `elicitation/create`.
    Elicited {
        session_id: String,
        elicitation_id: String,
        answer: Result<CreateElicitationResponse, Error>,
    },
    /// `$/cancel_request` for the prompt whose `turn.start` had this
    /// request id.
    CancelPrompt {
        request_id: String,
    },
    /// `session/set_config_option`: the model or the mode.
    SetConfigOption {
        request: SetSessionConfigOptionRequest,
        responder: Responder<SetSessionConfigOptionResponse>,
    },
    /// `session/set_mode`: `default` or `plan`.
    SetMode {
        request: SetSessionModeRequest,
        responder: Responder<SetSessionModeResponse>,
    },
    /// The client answered (or failed) a `session/request_permission`.
    Permission {
        session_id: String,
        approval_id: String,
        answer: Result<RequestPermissionResponse, Error>,
    },
}

struct Session {
    /// The canonical workspace, from `session.started`.
    cwd: PathBuf,
    tools: ToolCalls,
    /// Permission requests in flight, by SCV approval id.
    approvals: HashMap<String, Asked>,
    /// Rules "Always allow" added: they answer later calls themselves.
    rules: Rules,
    /// Where each of its prompts is, and what cancelling means there.
    client: SessionClient,
    /// Its subagents, shown inside the `task` calls that started them.
    subagents: Subagents,
    /// Text of the current model response was streamed as deltas.
    streamed: bool,
    /// Its mode, as `session.started` and `session.configured` said.
    mode: Mode,
    /// Its usage, title and message ids.
    meter: Meter,
    /// MCP servers' questions asked of the editor, by elicitation id (at
    /// most 16: the daemon's bound per session).
    questions: HashMap<String, RequestCancellationHandle>,
    /// Its provider definition and model, as the daemon last said.
    provider: String,
    model: String,
    /// Its reasoning effort as set here (`default`: config.toml's).
    effort: String,
}

impl Session {
    /// The session is gone here (closed, or the daemon with it): what it
    /// asked the editor is withdrawn, the trust prompt too.
    fn ended(&mut self) {
        self.turn_ended();
        for (_, question) in self.questions.drain() {
            let _ = question.cancel();
        }
    }

    /// The running turn ended: its calls and questions are over.
    fn turn_ended(&mut self) {
        self.tools.clear();
        self.subagents.clear();
        for (_, asked) in self.approvals.drain() {
            let _ = asked.request.cancel();
        }
        // The trust prompt is the session's, not the turn's.
        self.questions.retain(|id, question| {
            let keep = id == elicit::TRUST;
            if !keep {
                let _ = question.cancel();
            }
            keep
        });
    }
}

/// A prompt waiting for its answer (its stage is the session client's).
struct Prompt {
    responder: Responder<PromptResponse>,
    /// Dropped with the prompt: its `$/cancel_request` watch ends.
    _watch: tokio::sync::oneshot::Sender<()>,
}

pub struct Bridge {
    options: Options,
    cx: ConnectionTo<Client>,
    /// For permission answers, which come back as commands.
    commands: mpsc::Sender<Command>,
    outflow: Arc<Outflow>,
    link: Option<Link>,
    /// `session/new` requests by the request id of their `session.start`.
    starting: HashMap<String, Responder<NewSessionResponse>>,
    /// `session/load` requests by the request id of their `session.resume`
    /// until `session.started`, ...
    loading: HashMap<String, Responder<LoadSessionResponse>>,
    /// ... then by session id until its `session.transcript` is replayed.
    replaying: HashMap<String, (Responder<LoadSessionResponse>, SessionModeState)>,
    /// `session/load`s whose request is a `session.attach` (a live
    /// session), with the session id to resume if none is live.
    attaching: HashMap<String, (String, Vec<String>)>,
    /// `session/list` requests by the request id of their `session.list`.
    listing: HashMap<String, Responder<ListSessionsResponse>>,
    /// `session/set_mode` requests by the request id of their
    /// `session.configure`.
    moding: HashMap<String, Responder<SetSessionModeResponse>>,
    sessions: HashMap<String, Session>,
    /// Prompts by the request id of their `turn.start`.
    prompts: HashMap<String, Prompt>,
    /// `session/set_config_option` requests by the request id of their
    /// `session.configure`.
    /// (with the reasoning effort it sets, if it does).
    configuring: HashMap<String, (Responder<SetSessionConfigOptionResponse>, Option<String>)>,
    /// Each provider's models (`models.list`, asked once per provider;
    /// at most 500 each, the daemon's bound).
    models: HashMap<String, Vec<String>>,
    /// What elicitation the editor takes.
    editor: EditorElicitation,
    /// Resumes, closes and deletes waiting for the daemon.
    life: lifecycle::Pending,
    /// A session was ever started (tells "unknown session" from "no
    /// session yet").
    started_any: bool,
    /// Sessions started so far, for request-id prefixes unique on the link.
    started: u64,
}

impl Bridge {
    pub fn new(
        options: Options,
        cx: ConnectionTo<Client>,
        commands: mpsc::Sender<Command>,
        outflow: Arc<Outflow>,
    ) -> Bridge {
        Bridge {
            options,
            cx,
            commands,
            outflow,
            link: None,
            starting: HashMap::new(),
            loading: HashMap::new(),
            replaying: HashMap::new(),
            attaching: HashMap::new(),
            listing: HashMap::new(),
            moding: HashMap::new(),
            sessions: HashMap::new(),
            prompts: HashMap::new(),
            life: lifecycle::Pending::default(),
            configuring: HashMap::new(),
            editor: EditorElicitation::default(),
            models: HashMap::new(),
            started_any: false,
            started: 0,
        }
    }

    /// Serves until stdin ends, then cancels what runs.
    pub async fn run(mut self, mut commands: mpsc::Receiver<Command>) -> Result<(), Error> {
        let cx = self.cx.clone();
        let closed = cx.incoming_closed();
        tokio::pin!(closed);
        let outflow = self.outflow.clone();
        loop {
            let connected = self.link.is_some();
            let room = outflow.has_room();
            tokio::select! {
                biased;
                () = &mut closed => break,
                Some(command) = commands.recv() => self.command(command).await,
                event = next_event(&mut self.link), if connected && room => self.daemon(event).await,
                () = outflow.room(), if connected && !room => {}
            }
        }
        self.shutdown().await;
        Ok(())
    }

    async fn command(&mut self, command: Command) {
        match command {
            Command::NewSession { request, responder } => {
                if let Err(err) = self.new_session(request, responder).await {
                    tracing::debug!("session/new refused: {err}");
                }
            }
            Command::LoadSession { request, responder } => {
                if let Err(err) = self.load_session(request, responder).await {
                    tracing::debug!("session/load refused: {err}");
                }
            }
            Command::ListSessions { request, responder } => {
                self.list_sessions(request, responder).await
            }
            Command::Prompt { request, responder } => self.prompt(request, responder).await,
            Command::Cancel { session_id } => self.cancel(&session_id).await,
            Command::ResumeSession { request, responder } => {
                if let Err(err) = self.resume_session(request, responder).await {
                    tracing::debug!("session/resume refused: {err}");
                }
            }
            Command::CloseSession { request, responder } => {
                self.close_session(request, responder).await
            }
            Command::DeleteSession { request, responder } => {
                self.delete_session(request, responder).await
            }
            Command::CancelPrompt { request_id } => self.cancel_prompt(&request_id).await,
            Command::Editor(editor) => self.editor = editor,
            Command::Elicited {
                session_id,
                elicitation_id,
                answer,
            } => self.elicited(&session_id, &elicitation_id, answer).await,
            Command::SetMode { request, responder } => self.set_mode(request, responder).await,
            Command::SetConfigOption { request, responder } => {
                self.set_config_option(request, responder).await
            }
            Command::Permission {
                session_id,
                approval_id,
                answer,
            } => self.permission(session_id, approval_id, answer).await,
        }
    }

    /// `session/new` → `session.start`; answered at `session.started`.
    async fn new_session(
        &mut self,
        request: NewSessionRequest,
        responder: Responder<NewSessionResponse>,
    ) -> Result<(), Error> {
        if !request.cwd.is_absolute() {
            return refuse(
                responder,
                errors::invalid_params("cwd must be an absolute path"),
            );
        }
        let Some(cwd) = request.cwd.to_str().map(str::to_string) else {
            return refuse(responder, errors::invalid_params("cwd is not valid UTF-8"));
        };
        if let Err(err) = self.check_room() {
            return refuse(responder, err);
        }
        let additional_directories = match dirs::strings(&request.additional_directories) {
            Ok(dirs) => dirs,
            Err(err) => return refuse(responder, err),
        };
        let mcp_servers = mcp::for_session(&request.mcp_servers);
        if let Err(err) = self.connect().await {
            return refuse(responder, err);
        }
        let start = ClientMessage::SessionStart(SessionStart {
            cwd,
            provider: self.options.provider.clone(),
            model: self.options.model.clone(),
            mcp_servers,
            additional_directories,
            ..Default::default()
        });
        match self.send(start).await {
            Ok(request_id) => {
                self.starting.insert(request_id, responder);
                Ok(())
            }
            Err(err) => refuse(responder, err),
        }
    }

    /// The daemon link, opened (starting the daemon) when there is none.
    async fn connect(&mut self) -> Result<(), Error> {
        if self.link.is_none() {
            let link = Link::open(&self.options.endpoint, self.editor.any())
                .await
                .map_err(|err| errors::daemon(format!("cannot be reached: {err:#}")))?;
            self.link = Some(link);
        }
        Ok(())
    }

    /// Sessions held or on their way here.
    fn session_count(&self) -> usize {
        self.sessions.len() + self.starting.len() + self.loading.len() + self.life.resuming.len()
    }

    /// Room for one more session (`session/close` makes room).
    fn check_room(&self) -> Result<(), Error> {
        if self.session_count() >= MAX_SESSIONS {
            return Err(errors::limit(format!(
                "at most {MAX_SESSIONS} sessions at once (close one with session/close)"
            )));
        }
        Ok(())
    }

    /// `session/load` → `session.resume`: the stored session, live again
    /// under the same id. Its past conversation is replayed as
    /// `session/update`s before the answer (the daemon's
    /// `session.transcript`); what was still queued does not run.
    async fn load_session(
        &mut self,
        request: LoadSessionRequest,
        responder: Responder<LoadSessionResponse>,
    ) -> Result<(), Error> {
        if !request.cwd.is_absolute() {
            return refuse(
                responder,
                errors::invalid_params("cwd must be an absolute path"),
            );
        }
        let session_id = request.session_id.0.to_string();
        let dirs = match dirs::strings(&request.additional_directories) {
            Ok(dirs) => dirs,
            Err(err) => return refuse(responder, err),
        };
        if self.sessions.contains_key(&session_id) || self.replaying.contains_key(&session_id) {
            let err = errors::invalid_params(format!("session {session_id} is already loaded"));
            return refuse(responder, err);
        }
        if let Err(err) = self.check_room() {
            return refuse(responder, err);
        }
        if !request.mcp_servers.is_empty() {
            // The SCV protocol's resume takes no MCP servers (yet).
            tracing::info!(
                "session/load: the editor's MCP servers are not attached to a loaded session"
            );
        }
        if let Err(err) = self.connect().await {
            return refuse(responder, err);
        }
        // A live session is attached (`live.rs`); else the stored one
        // is resumed.
        let attach = ClientMessage::SessionAttach(scv_protocol::SessionAttach {
            session_id: session_id.clone(),
        });
        match self.send(attach).await {
            Ok(request_id) => {
                // A live session keeps its own directories; a stored one
                // resumed gets these.
                self.attaching
                    .insert(request_id.clone(), (session_id, dirs));
                self.loading.insert(request_id, responder);
                Ok(())
            }
            Err(err) => refuse(responder, err),
        }
    }

    /// `session/list` → `session.list`: the stored sessions (of `cwd`, when
    /// given), most recently updated first, all in one page (the daemon
    /// lists at most 1000).
    async fn list_sessions(
        &mut self,
        request: ListSessionsRequest,
        responder: Responder<ListSessionsResponse>,
    ) {
        if request.cursor.is_some() {
            let err = errors::invalid_params("no such cursor: session/list answers in one page");
            let _ = responder.respond_with_error(err);
            return;
        }
        let cwd = match request.cwd.as_deref().map(|p| p.to_str()) {
            Some(None) => {
                let _ =
                    responder.respond_with_error(errors::invalid_params("cwd is not valid UTF-8"));
                return;
            }
            Some(Some(cwd)) => Some(cwd.to_string()),
            None => None,
        };
        if let Err(err) = self.connect().await {
            let _ = responder.respond_with_error(err);
            return;
        }
        let list = ClientMessage::SessionList(SessionList {
            cwd,
            limit: Some(scv_protocol::MAX_SESSION_LIST_LIMIT),
        });
        match self.send(list).await {
            Ok(request_id) => {
                self.listing.insert(request_id, responder);
            }
            Err(err) => {
                let _ = responder.respond_with_error(err);
            }
        }
    }

    /// `session/prompt` → `turn.start`; answered when its turn ends.
    async fn prompt(&mut self, request: PromptRequest, responder: Responder<PromptResponse>) {
        let session_id = request.session_id.0.to_string();
        let Some(session) = self.sessions.get(&session_id) else {
            let err = if self.started_any {
                errors::unknown_session(&session_id)
            } else {
                errors::no_session_yet()
            };
            let _ = responder.respond_with_error(err);
            return;
        };
        if session.client.prompts().len() >= MAX_PROMPTS_PER_SESSION {
            let err = errors::limit(format!(
                "at most {MAX_PROMPTS_PER_SESSION} prompts may wait in one session"
            ));
            let _ = responder.respond_with_error(err);
            return;
        }
        let prompt::Rendered { text, images } = match prompt::render_with_images(&request.prompt) {
            Ok(rendered) => rendered,
            Err(err) => {
                let _ = responder.respond_with_error(errors::invalid_params(err.to_string()));
                return;
            }
        };
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return;
        };
        // `/NAME args`: a custom command or skill (advertised with
        // `available_commands_update`), as ACP clients send them.
        let title = session.meter.title(&text);
        let start = if !images.is_empty() {
            session.client.submit_with_images(text, images)
        } else if text.starts_with('/') {
            session.client.submit_command(text)
        } else {
            session.client.submit(text)
        };
        let request_id = start.request_id.clone();
        match self.send_request(&start).await {
            Ok(()) => {
                if let Some(title) = title {
                    self.titled(&session_id, title);
                }
                let watch = self.watch_cancel_request(&responder, &request_id);
                let prompt = Prompt {
                    responder,
                    _watch: watch,
                };
                self.prompts.insert(request_id, prompt);
            }
            Err(err) => {
                let _ = responder.respond_with_error(err);
            }
        }
    }

    /// `session/set_mode` → `session.configure {mode}`; answered at
    /// `session.configured` (and told as a `current_mode_update`).
    async fn set_mode(
        &mut self,
        request: SetSessionModeRequest,
        responder: Responder<SetSessionModeResponse>,
    ) {
        let session_id = request.session_id.0.to_string();
        if !self.sessions.contains_key(&session_id) {
            let _ = responder.respond_with_error(errors::unknown_session(&session_id));
            return;
        }
        let Some(mode) = crate::modes::parse(&request.mode_id.0) else {
            let err = errors::invalid_params(format!(
                "unknown mode `{}` (modes: default, plan)",
                request.mode_id.0
            ));
            let _ = responder.respond_with_error(err);
            return;
        };
        let configure = ClientMessage::SessionConfigure(scv_protocol::SessionConfigure {
            session_id: session_id.clone(),
            mode: Some(mode),
            ..Default::default()
        });
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return;
        };
        let configure = session.client.request(configure);
        match self.send_request(&configure).await {
            Ok(()) => {
                self.moding.insert(configure.request_id, responder);
            }
            Err(err) => {
                let _ = responder.respond_with_error(err);
            }
        }
    }

    /// The session's title, told at its first prompt.
    fn titled(&self, session_id: &str, title: String) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let info = SessionInfoUpdate::new()
            .title(title)
            .updated_at(scv_client::time::rfc3339(now));
        self.notify(session_id, SessionUpdate::SessionInfoUpdate(info));
    }

    /// `session/cancel`: the running turn is cancelled, queued prompts are
    /// taken off the queue, and prompts on their way are cancelled when
    /// they reach either state (the session client's rule). All answer
    /// `cancelled`.
    async fn cancel(&mut self, session_id: &str) {
        let Some(session) = self.sessions.get_mut(session_id) else {
            tracing::debug!("session/cancel for unknown session {session_id}");
            return;
        };
        let requests = session.client.cancel_all();
        self.send_all(&requests).await;
    }

    /// A daemon read: an event, the end of the connection or a failure.
    async fn daemon(&mut self, read: anyhow::Result<Option<Event>>) {
        match read {
            Ok(Some(event)) => self.event(event).await,
            Ok(None) => self.lost("it closed the connection"),
            Err(err) => self.lost(&format!("{err:#}")),
        }
    }

    async fn event(&mut self, event: Event) {
        let request_id = event.request_id.clone().unwrap_or_default();
        // What is asked before a session exists (it opens, or the list of
        // stored ones) is the bridge's own; everything else is a
        // session's, read through its client.
        match &event.body {
            EventBody::SessionStarted(started) => {
                let session_id = event.session_id.clone().unwrap_or_default();
                self.session_started(&request_id, session_id, started).await;
                return;
            }
            EventBody::SessionAttached(attached) => {
                let session_id = event.session_id.clone().unwrap_or_default();
                self.session_attached(&request_id, session_id, attached);
            }
            EventBody::Error(error) if self.attaching.contains_key(&request_id) => {
                let error = error.clone();
                self.attach_refused(&request_id, &error).await;
                return;
            }
            EventBody::Error(error) if self.refused_before_session(&request_id, error) => return,
            EventBody::SessionDeleted {} if self.life.deleted(&request_id) => return,
            EventBody::SessionListed { sessions } if self.listing.contains_key(&request_id) => {
                if let Some(responder) = self.listing.remove(&request_id) {
                    let infos = sessions.iter().cloned().map(session_info).collect();
                    let _ = responder.respond(ListSessionsResponse::new(infos));
                }
                return;
            }
            _ => {}
        }
        // The session: the event's own (a subagent's: the one it descends
        // from), or (errors) the one whose client sent the request.
        let session_id = self.sessions.iter().find_map(|(id, s)| {
            let ours = match (&event.parent, &event.session_id) {
                (Some(parent), _) => {
                    *id == parent.session_id || s.client.subagent(&parent.session_id).is_some()
                }
                (None, Some(session)) => id == session,
                (None, None) => s.client.owns(&request_id),
            };
            ours.then(|| id.clone())
        });
        let Some(session_id) = session_id else {
            if let EventBody::Error(error) = &event.body {
                tracing::debug!(
                    "the daemon refused request {request_id}: {}: {}",
                    error.code,
                    error.message
                );
            }
            return;
        };
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return;
        };
        let applied = session.client.apply(&event);
        self.send_all(&applied.requests).await;
        for update in applied.updates {
            self.update(&session_id, update).await;
        }
    }

    /// An `error` answering a request made before its session existed
    /// (`session/new`, `session/load`, `session/list`): that request fails.
    fn refused_before_session(
        &mut self,
        request_id: &str,
        error: &scv_protocol::ErrorBody,
    ) -> bool {
        let refused = errors::refused(error.code, &error.message);
        let _ = if let Some(responder) = self.starting.remove(request_id) {
            responder.respond_with_error(refused)
        } else if let Some(responder) = self.loading.remove(request_id) {
            responder.respond_with_error(refused)
        } else if let Some(responder) = self.listing.remove(request_id) {
            responder.respond_with_error(refused)
        } else {
            return self.life.refused(request_id, error);
        };
        true
    }

    async fn session_started(
        &mut self,
        request_id: &str,
        session_id: String,
        started: &scv_protocol::SessionStarted,
    ) {
        let new = self.starting.remove(request_id);
        let loaded = self.loading.remove(request_id);
        let resumed = self.life.resuming.remove(request_id);
        if new.is_none() && loaded.is_none() && resumed.is_none() {
            return;
        }
        tracing::info!(
            "session {session_id} in {} (model {}, sandbox {})",
            started.cwd,
            started.model,
            started.sandbox.as_deref().unwrap_or("unknown")
        );
        self.started += 1;
        let mut client = SessionClient::new(format!("acp{}-", self.started));
        client.set_session(session_id.clone());
        self.sessions.insert(
            session_id.clone(),
            Session {
                cwd: PathBuf::from(started.cwd.clone()),
                tools: ToolCalls::default(),
                approvals: HashMap::new(),
                rules: Rules::default(),
                client,
                subagents: Subagents::default(),
                streamed: false,
                mode: started.mode.unwrap_or_default(),
                meter: Meter::of(started),
                questions: HashMap::new(),
                provider: started.provider.clone().unwrap_or_default(),
                model: started.model.clone(),
                effort: "default".to_string(),
            },
        );
        self.started_any = true;
        let modes = crate::modes::state(started.mode.unwrap_or_default());
        let options = self.config_options(&session_id);
        if let Some(responder) = new {
            let answer = NewSessionResponse::new(session_id.clone())
                .modes(modes)
                .config_options(options);
            let _ = responder.respond(answer);
        } else if let Some(responder) = loaded {
            // Answered once the past conversation is replayed.
            self.replaying
                .insert(session_id.clone(), (responder, modes));
        } else if let Some(responder) = resumed {
            // Nothing replayed: its `session.transcript` is not shown.
            let answer = ResumeSessionResponse::new()
                .modes(modes)
                .config_options(options);
            let _ = responder.respond(answer);
        }
        // What is wrong with the configuration (a broken edit of
        // config.toml, an unknown key, a provider without its key): the
        // editor's user is told as the session opens, as the TUI's is.
        // Command, skill and agent files it could not use whole (an
        // agent's tools SCV lacks) are said the same way.
        let warnings: Vec<&String> = started
            .config_warnings
            .iter()
            .chain(&started.command_diagnostics)
            .collect();
        if !warnings.is_empty() {
            let text: String = warnings
                .iter()
                .map(|w| format!("⚠ {}\n", scv_client::text::visible(w)))
                .collect();
            self.notify(&session_id, SessionUpdate::AgentMessageChunk(chunk(text)));
        }
        // The session's custom commands and skills, after its answer.
        let commands = crate::modes::commands(started.commands.as_deref().unwrap_or_default());
        if !commands.is_empty() {
            self.notify(
                &session_id,
                SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
            );
        }
        // The provider's models, for the `model` option.
        self.list_models(&session_id).await;
        // Its workspace's configuration SCV skips: the editor is asked.
        if let Some(trust) = &started.trust {
            self.ask_trust(&session_id, trust);
        }
    }

    /// Answers a prompt and forgets it.
    fn finish(&mut self, request_id: &str, result: Result<StopReason, Error>) {
        let Some(prompt) = self.prompts.remove(request_id) else {
            return;
        };
        let _ = prompt
            .responder
            .respond_with_result(result.map(PromptResponse::new));
    }

    /// One `session/update`, counted until stdout has it.
    fn notify(&self, session_id: &str, update: SessionUpdate) {
        if !self.sessions.contains_key(session_id) {
            return;
        }
        self.outflow.sent();
        let notification = SessionNotification::new(session_id.to_string(), update);
        if let Err(err) = self.cx.send_notification(notification) {
            tracing::debug!("session/update not sent: {err}");
        }
    }

    /// Sends a session client's request; a failure loses the link.
    async fn send_request(&mut self, request: &Request) -> Result<(), Error> {
        let Some(link) = self.link.as_mut() else {
            return Err(errors::daemon("not connected"));
        };
        match link.send_request(request).await {
            Ok(()) => Ok(()),
            Err(err) => {
                let reason = format!("{err:#}");
                self.lost(&reason);
                Err(errors::daemon(format!("went away ({reason})")))
            }
        }
    }

    async fn send_all(&mut self, requests: &[Request]) {
        for request in requests {
            if self.send_request(request).await.is_err() {
                break;
            }
        }
    }

    /// Sends to the daemon; a failure loses the link.
    async fn send(&mut self, message: ClientMessage) -> Result<String, Error> {
        let Some(link) = self.link.as_mut() else {
            return Err(errors::daemon("not connected"));
        };
        match link.send(message).await {
            Ok(request_id) => Ok(request_id),
            Err(err) => {
                let reason = format!("{err:#}");
                self.lost(&reason);
                Err(errors::daemon(format!("went away ({reason})")))
            }
        }
    }
}

/// Answers a request with `err`, and returns it (for the log).
fn refuse<T: agent_client_protocol::JsonRpcResponse>(
    responder: Responder<T>,
    err: Error,
) -> Result<(), Error> {
    let _ = responder.respond_with_error(err.clone());
    Err(err)
}

/// A stored session as ACP lists it.
fn session_info(stored: StoredSession) -> SessionInfo {
    let title = (!stored.title.is_empty()).then_some(stored.title);
    SessionInfo::new(stored.session_id, PathBuf::from(stored.cwd))
        .title(title)
        .updated_at(scv_client::time::rfc3339(stored.updated_unix_seconds))
}

/// The next daemon event; pending forever without a link.
async fn next_event(link: &mut Option<Link>) -> anyhow::Result<Option<Event>> {
    match link {
        Some(link) => link.next_event().await,
        None => std::future::pending().await,
    }
}
