//! Approvals on screen: the session client's one approval type, shown in
//! the prompt, answered by the user or by a session rule, by id.

use super::{outgoing, App, Outgoing};
use crate::tui::rules::Rule;
use crate::tui::state::PendingApproval;
use crate::tui::subagents::Change;
use crate::tui::transcript::ToolState;

impl App {
    /// A call waits for approval. The prompt shows its arguments as its
    /// card has them; a subagent's is labelled with the subagent and its
    /// card says it waits. A session rule that matches answers the call
    /// itself (a subagent's as the session's own), and its card says which
    /// rule did.
    pub(super) fn approval_requested(&mut self, mut approval: PendingApproval) {
        match approval.child_session.clone() {
            None => {
                self.transcript.update_tool(&approval.call_id, |card| {
                    card.state = ToolState::AwaitingApproval;
                    approval.arguments = card.arguments.clone();
                });
            }
            Some(child) => {
                if self.subagents.approval_requested(&approval) == Change::Card {
                    self.place_card(&child);
                }
                self.subagents.label(&child, &mut approval);
            }
        }
        if let Some(rule) = self.rules.find(&approval.call()).cloned() {
            let out = self.approve_by_rule(approval, &rule);
            for out in out {
                self.book_outbox(out);
            }
            return;
        }
        self.approval.push(approval, self.now);
    }

    /// Approves `approval` on behalf of `rule`; the card of the call (the
    /// session's, or in its subagent's transcript) says so.
    fn approve_by_rule(&mut self, approval: PendingApproval, rule: &Rule) -> Vec<Outgoing> {
        let label = rule.label();
        let transcript = match &approval.child_session {
            Some(child) => self.subagents.transcript_mut(child),
            None => Some(&mut self.transcript),
        };
        if let Some(transcript) = transcript {
            transcript.update_tool(&approval.call_id, |card| {
                card.approved_by = Some(label);
            });
        }
        self.resolve(approval, true)
    }

    /// `a`: approve this call, add its rule, and let the rule answer the
    /// calls already waiting that it matches.
    pub(super) fn approve_always(
        &mut self,
        approval: PendingApproval,
        rule: Rule,
    ) -> Vec<Outgoing> {
        let mut out = self.resolve(approval, true);
        let keep = match rule.claude() {
            Some(_) => "; /permissions keep keeps it",
            None => "",
        };
        self.notice(format!(
            "rule added: {} while scv runs (/approvals lists rules{keep})",
            rule.scope()
        ));
        let waiting = self
            .approval
            .take_where(|a| rule.matches(&a.call()), self.now);
        self.rules.add(rule.clone());
        for approval in waiting {
            out.extend(self.approve_by_rule(approval, &rule));
        }
        out
    }

    /// Answers `approval` (the session client remembers a denial: the
    /// call's failure then shows as denied).
    pub(super) fn resolve(&mut self, approval: PendingApproval, approved: bool) -> Vec<Outgoing> {
        self.book
            .client
            .resolve(&approval.approval_id, approved)
            .map(outgoing)
            .into_iter()
            .collect()
    }
}
