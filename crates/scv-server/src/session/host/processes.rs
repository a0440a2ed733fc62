//! A client's requests about a session's background processes
//! (capability `processes`): `process.kill` stops one as `bash_kill`
//! does, `process.peek` shows the end of its output without taking it
//! from the model. Both answer `process.state`.

use super::SessionHost;
use crate::session::reject::{invalid, Handled};
use scv_protocol::{EventBody, ProcessRequest, ProcessState, MAX_PROCESS_PEEK_BYTES};

impl SessionHost {
    /// `process.kill` (`kill`) or `process.peek`. A kill waits until
    /// nothing of the process is left (bounded by the reaper's grace).
    pub(super) async fn process(
        &mut self,
        rid: &str,
        request: ProcessRequest,
        kill: bool,
    ) -> Handled {
        if !self.caps.processes {
            let kind = if kill { "process.kill" } else { "process.peek" };
            return Err(invalid(format!(
                "{kind} needs capability `processes` (ask for it in initialize)"
            )));
        }
        let background = self
            .session(&request.session_id)?
            .settings
            .background
            .clone();
        let proc = background.get(&request.process_id).map_err(invalid)?;
        if kill && !proc.ended() {
            proc.kill().await;
        }
        let state = ProcessState {
            process_id: proc.id.clone(),
            command: proc.command.clone(),
            running: !proc.ended(),
            status: proc.status(),
            output: (!kill).then(|| proc.peek(MAX_PROCESS_PEEK_BYTES)),
        };
        let body = EventBody::ProcessState(state);
        self.reply(rid, Some(request.session_id), body).await;
        Ok(())
    }
}
