//! A client's requests about a session's background processes
//! (capability `processes`): `process.kill` stops one as `bash_kill`
//! does, `process.peek` shows the end of its output without taking it
//! from the model. Both answer `process.state`; `process.list` lists
//! them (`process.listed`).

use super::SessionHost;
use crate::background::Proc;
use crate::session::reject::{invalid, Handled};
use scv_protocol::{EventBody, ProcessList, ProcessRequest, ProcessState, MAX_PROCESS_PEEK_BYTES};

impl SessionHost {
    /// `process.kill` (`kill`) or `process.peek`. A kill waits until
    /// nothing of the process is left (bounded by the reaper's grace).
    pub(super) async fn process(
        &mut self,
        rid: &str,
        request: ProcessRequest,
        kill: bool,
    ) -> Handled {
        let background = self
            .session(&request.session_id)?
            .settings
            .background
            .clone();
        let proc = background.get(&request.process_id).map_err(invalid)?;
        if kill && !proc.ended() {
            proc.kill().await;
        }
        let mut state = state(&proc);
        if !kill {
            state.output = Some(proc.peek(MAX_PROCESS_PEEK_BYTES));
        }
        let body = EventBody::ProcessState(state);
        self.reply(rid, Some(request.session_id), body).await;
        Ok(())
    }

    /// `process.list`.
    pub(super) async fn processes(&mut self, rid: &str, list: ProcessList) -> Handled {
        let background = self.session(&list.session_id)?.settings.background.clone();
        let processes = background.list().iter().map(|p| state(p)).collect();
        let body = EventBody::ProcessListed { processes };
        self.reply(rid, Some(list.session_id), body).await;
        Ok(())
    }
}

/// A process as `process.state` and `process.listed` show it (no output).
fn state(proc: &Proc) -> ProcessState {
    ProcessState {
        process_id: proc.id.clone(),
        command: proc.command.clone(),
        running: !proc.ended(),
        status: proc.status(),
        output: None,
    }
}
