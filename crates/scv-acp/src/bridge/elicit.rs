//! MCP servers' questions to the user (the daemon's capability
//! `elicitation`, asked for only when the editor declared
//! `clientCapabilities.elicitation`): each `elicitation.requested` becomes
//! an ACP `elicitation/create` scoped to the session — form mode with the
//! server's schema, URL mode with its page (SCV never opens it) — and the
//! editor's answer goes back as `elicitation.resolve`. A mode the editor
//! did not declare, or a schema ACP cannot carry, is declined at once; a
//! failed or cancelled request cancels the question; content the daemon
//! refuses (not matching the form) cancels it too, so the call goes on.
//! The questions still open when their turn ends are withdrawn.
//!
//! The workspace trust prompt too (capability `trust`, asked with form
//! elicitation): a session whose workspace carries repository
//! configuration SCV skips (`session.started.trust`) asks the editor, as
//! the TUI asks its user, once as it opens; "trust" sends
//! `workspace.trust`, and `workspace.trusted` is said in the conversation.

use super::{Bridge, Command};
use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, CreateElicitationResponse, ElicitationAction, ElicitationContentValue,
};
use agent_client_protocol::Error;
use scv_protocol::{
    ClientMessage, ElicitationRequested, ElicitationResolve, WorkspaceTrust, WorkspaceTrustRequest,
};

/// The question id of a session's trust prompt (never an MCP server's:
/// the daemon's ids are UUIDs).
pub(super) const TRUST: &str = "scv-workspace-trust";

/// What elicitation the editor declared in `initialize`.
#[derive(Debug, Default, Clone, Copy)]
pub struct EditorElicitation {
    pub form: bool,
    pub url: bool,
}

impl EditorElicitation {
    /// The editor takes either mode: the daemon is asked for questions.
    pub fn any(self) -> bool {
        self.form || self.url
    }
}

/// The ACP request for `asked` in `session_id`; `None` when the editor
/// cannot take it (its mode undeclared, a schema ACP does not carry).
fn request(
    editor: EditorElicitation,
    session_id: &str,
    asked: &ElicitationRequested,
) -> Option<CreateElicitationRequest> {
    let json = match (&asked.url, &asked.schema) {
        (Some(url), _) if editor.url => serde_json::json!({
            "mode": "url",
            "sessionId": session_id,
            "elicitationId": asked.elicitation_id,
            "url": url,
            "message": format!("{} (MCP server `{}`)", asked.message, asked.server),
        }),
        (None, Some(schema)) if editor.form => serde_json::json!({
            "mode": "form",
            "sessionId": session_id,
            "requestedSchema": schema,
            "message": format!("{} (MCP server `{}`)", asked.message, asked.server),
        }),
        _ => return None,
    };
    serde_json::from_value(json)
        .map_err(|err| tracing::info!("an MCP server's question ACP cannot carry: {err}"))
        .ok()
}

/// The form asking to trust `trust`'s workspace.
fn trust_request(session_id: &str, trust: &WorkspaceTrust) -> Option<CreateElicitationRequest> {
    let files: Vec<String> = trust
        .files
        .iter()
        .filter(|f| f.state != "trusted")
        .map(|f| format!("{} ({}: {})", f.path, f.state, f.enables.join(", ")))
        .collect();
    let message = format!(
        "{} is not trusted, so SCV does not use its repository configuration: {}. Trust it (as `scv trust` does)?",
        trust.workspace,
        files.join("; ")
    );
    let json = serde_json::json!({
        "mode": "form",
        "sessionId": session_id,
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {"trust": {"type": "boolean", "title": "Trust this workspace", "default": false}},
            "required": ["trust"],
        },
    });
    serde_json::from_value(json).ok()
}

impl Bridge {
    /// `elicitation.requested` → `elicitation/create`, answered in a task
    /// of the connection.
    pub(super) async fn elicit(&mut self, session_id: &str, asked: ElicitationRequested) {
        let Some(request) = request(self.editor, session_id, &asked) else {
            self.resolve(session_id, &asked.elicitation_id, Err(()))
                .await;
            return;
        };
        self.ask_editor(session_id, asked.elicitation_id, request);
    }

    /// A session opened in a workspace whose configuration SCV skips: the
    /// editor is asked to trust it (form elicitation only).
    pub(super) fn ask_trust(&mut self, session_id: &str, trust: &WorkspaceTrust) {
        if !self.editor.form || !trust.asks() {
            return;
        }
        if let Some(request) = trust_request(session_id, trust) {
            self.ask_editor(session_id, TRUST.to_string(), request);
        }
    }

    /// Sends `request`, kept as question `id` of the session until the
    /// editor answers (in a task of the connection).
    fn ask_editor(&mut self, session_id: &str, id: String, request: CreateElicitationRequest) {
        let Some(session) = self.sessions.get_mut(session_id) else {
            return;
        };
        let sent = self.cx.send_request(request);
        session
            .questions
            .insert(id.clone(), sent.cancellation_handle());
        let commands = self.commands.clone();
        let session_id = session_id.to_string();
        let elicitation_id = id;
        let task = async move {
            let answer = sent.block_task().await;
            let _ = commands
                .send(Command::Elicited {
                    session_id,
                    elicitation_id,
                    answer,
                })
                .await;
            Ok(())
        };
        if let Err(err) = self.cx.spawn(task) {
            tracing::warn!("cannot wait for an elicitation answer: {err}");
        }
    }

    /// The editor answered (or failed) an `elicitation/create`.
    pub(super) async fn elicited(
        &mut self,
        session_id: &str,
        elicitation_id: &str,
        answer: Result<CreateElicitationResponse, Error>,
    ) {
        let open = self
            .sessions
            .get_mut(session_id)
            .and_then(|s| s.questions.remove(elicitation_id))
            .is_some();
        if !open {
            return;
        }
        if elicitation_id == TRUST {
            let trusted = matches!(
                answer.map(|a| a.action),
                Ok(ElicitationAction::Accept(accept))
                    if accept.content.as_ref().and_then(|c| c.get("trust"))
                        == Some(&ElicitationContentValue::Boolean(true))
            );
            if trusted {
                self.trust(session_id).await;
            }
            return;
        }
        self.resolve(session_id, elicitation_id, Ok(answer)).await;
    }

    /// `workspace.trust` for the session's workspace.
    async fn trust(&mut self, session_id: &str) {
        let Some(session) = self.sessions.get_mut(session_id) else {
            return;
        };
        let trust = session
            .client
            .request(ClientMessage::WorkspaceTrust(WorkspaceTrustRequest {
                session_id: session_id.to_string(),
            }));
        let _ = self.send_request(&trust).await;
    }

    /// `workspace.trusted`: said in the conversation.
    pub(super) fn trusted(&self, session_id: &str, trust: &WorkspaceTrust) {
        let files: Vec<&str> = trust.files.iter().map(|f| f.path.as_str()).collect();
        let text = format!(
            "trusted {}: {} run and apply from the next turn",
            trust.workspace,
            files.join(", ")
        );
        self.say(session_id, &text);
    }

    /// `elicitation.resolve`: the editor's answer (`Err(())`: declined
    /// here; a failed request: cancelled).
    async fn resolve(
        &mut self,
        session_id: &str,
        elicitation_id: &str,
        answer: Result<Result<CreateElicitationResponse, Error>, ()>,
    ) {
        use scv_protocol::ElicitationAction as Action;
        let (action, content) = match answer {
            Err(()) => (Action::Decline, None),
            Ok(Ok(response)) => match response.action {
                ElicitationAction::Accept(accept) => {
                    let content = accept
                        .content
                        .and_then(|c| serde_json::to_value(c).ok())
                        .unwrap_or_else(|| serde_json::json!({}));
                    (Action::Accept, Some(content))
                }
                ElicitationAction::Decline => (Action::Decline, None),
                _ => (Action::Cancel, None),
            },
            Ok(Err(err)) => {
                tracing::info!("elicitation request failed ({err}); cancelling the question");
                (Action::Cancel, None)
            }
        };
        let Some(session) = self.sessions.get_mut(session_id) else {
            return;
        };
        let resolve =
            session
                .client
                .request(ClientMessage::ElicitationResolve(ElicitationResolve {
                    session_id: session_id.to_string(),
                    elicitation_id: elicitation_id.to_string(),
                    action,
                    content,
                }));
        let _ = self.send_request(&resolve).await;
    }

    /// The daemon refused an answer (content not matching the form): the
    /// question is cancelled so the call goes on.
    pub(super) async fn elicitation_refused(&mut self, session_id: &str, elicitation_id: &str) {
        tracing::info!(
            "the MCP server's question {elicitation_id} refused the answer; cancelling it"
        );
        let Some(session) = self.sessions.get_mut(session_id) else {
            return;
        };
        let cancel =
            session
                .client
                .request(ClientMessage::ElicitationResolve(ElicitationResolve {
                    session_id: session_id.to_string(),
                    elicitation_id: elicitation_id.to_string(),
                    action: scv_protocol::ElicitationAction::Cancel,
                    content: None,
                }));
        let _ = self.send_request(&cancel).await;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn asked(url: Option<&str>, schema: Option<serde_json::Value>) -> ElicitationRequested {
        ElicitationRequested {
            elicitation_id: "e1".into(),
            server: "fake".into(),
            message: "Who?".into(),
            schema,
            url: url.map(str::to_string),
        }
    }

    #[test]
    fn modes_the_editor_declared() {
        let both = EditorElicitation {
            form: true,
            url: true,
        };
        let form_only = EditorElicitation {
            form: true,
            url: false,
        };
        let schema = serde_json::json!({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]});
        let form = request(both, "s1", &asked(None, Some(schema.clone()))).unwrap();
        let json = serde_json::to_value(&form).unwrap();
        assert_eq!(json["mode"], "form");
        assert_eq!(json["sessionId"], "s1");
        assert_eq!(
            json["requestedSchema"]["properties"]["name"]["type"],
            "string"
        );
        assert_eq!(json["message"], "Who? (MCP server `fake`)");
        let url = request(both, "s1", &asked(Some("https://example.com/x"), None)).unwrap();
        let json = serde_json::to_value(&url).unwrap();
        assert_eq!(
            (json["mode"].as_str(), json["url"].as_str()),
            (Some("url"), Some("https://example.com/x"))
        );
        assert_eq!(json["elicitationId"], "e1");
        assert!(request(form_only, "s1", &asked(Some("https://example.com/x"), None)).is_none());
        assert!(request(
            EditorElicitation::default(),
            "s1",
            &asked(None, Some(schema))
        )
        .is_none());
    }

    #[test]
    fn the_trust_form() {
        let trust = WorkspaceTrust {
            workspace: "/w".into(),
            trusted: false,
            files: vec![scv_protocol::TrustFile {
                path: ".mcp.json".into(),
                state: "untrusted".into(),
                enables: vec!["MCP servers: x".into()],
            }],
        };
        let json = serde_json::to_value(trust_request("s1", &trust).unwrap()).unwrap();
        assert_eq!(json["mode"], "form");
        assert_eq!(json["sessionId"], "s1");
        assert_eq!(
            json["requestedSchema"]["properties"]["trust"]["type"],
            "boolean"
        );
        let message = json["message"].as_str().unwrap();
        assert!(
            message.contains("/w is not trusted")
                && message.contains(".mcp.json (untrusted: MCP servers: x)"),
            "{message}"
        );
    }
}
