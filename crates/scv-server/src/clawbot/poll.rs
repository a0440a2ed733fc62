//! The long-poll loop of one account. It saves the cursor (and the
//! latest context token per sender) before handing a batch on, drops
//! duplicates, and backs off 2 s, 2 s, then 30 s after three failures in a
//! row. `-14` ends it: the account must log in again.

use super::Status;
use scv_ilink::types::WireMessage;
use scv_ilink::{unix_now, AccountStore, Delivery, IlinkClient, IlinkError};
use scv_protocol::ComponentState;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Messages recently seen by sender + text + time, for duplicates that
/// arrive under a new `message_id`.
const RECENT_CONTENT: usize = 256;

/// One account's poll loop and what it needs.
pub(super) struct Poller {
    pub client: IlinkClient,
    pub store: AccountStore,
    pub account: String,
    pub bot_id: String,
    pub delivery: Arc<Mutex<Delivery>>,
    pub status: Status,
    pub batches: mpsc::Sender<Vec<WireMessage>>,
}

impl Poller {
    /// Polls until `token` is cancelled (a poll in flight is dropped) or
    /// the session expires.
    pub(super) async fn run(self, token: CancellationToken) {
        tokio::select! {
            _ = token.cancelled() => {}
            _ = self.poll() => {}
        }
    }

    async fn poll(self) {
        let Poller {
            client,
            store,
            account,
            bot_id,
            delivery,
            status,
            batches,
        } = self;
        let mut failures = 0u32;
        let mut hint = None;
        let mut recent: VecDeque<(String, String, u64)> = VecDeque::new();
        loop {
            let cursor = crate::sync::lock(&delivery).cursor.clone();
            match client.get_updates(&cursor, hint).await {
                Ok(updates) => {
                    failures = 0;
                    hint = updates.longpolling_timeout_ms.map(Duration::from_millis);
                    {
                        let mut s = status.lock();
                        s.state = ComponentState::Connected;
                        s.error = None;
                        s.last_success_unix_seconds = Some(unix_now());
                    }
                    let (fresh, snapshot) = {
                        let mut d = crate::sync::lock(&delivery);
                        if !updates.cursor.is_empty() {
                            d.cursor = updates.cursor.clone();
                        }
                        let mut fresh = Vec::new();
                        for msg in updates.msgs {
                            if msg.message_type == 2
                                || msg.from_user_id == bot_id
                                || msg.from_user_id.is_empty()
                            {
                                continue; // bot echoes
                            }
                            if !msg.context_token.is_empty() {
                                d.context_tokens
                                    .insert(msg.from_user_id.clone(), msg.context_token.clone());
                            }
                            let content = (
                                msg.from_user_id.clone(),
                                msg.text().unwrap_or_default(),
                                msg.create_time_ms,
                            );
                            if !d.remember(&msg.message_id) || recent.contains(&content) {
                                continue;
                            }
                            recent.push_back(content);
                            if recent.len() > RECENT_CONTENT {
                                recent.pop_front();
                            }
                            fresh.push(msg);
                        }
                        (fresh, d.clone())
                    };
                    // Saved (off the async threads, outside the lock) before
                    // the batch is handled: never replayed.
                    let saved = {
                        let (store, account) = (store.clone(), account.clone());
                        crate::blocking::run(move || store.save_delivery(&account, &snapshot)).await
                    };
                    match saved {
                        Ok(Ok(())) => {}
                        Ok(Err(err)) => {
                            tracing::warn!("clawbot:{account}: cannot save delivery state: {err}")
                        }
                        Err(err) => {
                            tracing::warn!("clawbot:{account}: cannot save delivery state: {err}")
                        }
                    }
                    if !fresh.is_empty() && batches.send(fresh).await.is_err() {
                        return;
                    }
                }
                Err(IlinkError::SessionExpired) => {
                    let mut s = status.lock();
                    s.state = ComponentState::Failed;
                    s.error = Some(IlinkError::SessionExpired.to_string());
                    return;
                }
                Err(err) => {
                    failures += 1;
                    let wait = if failures >= 3 {
                        Duration::from_secs(30)
                    } else {
                        Duration::from_secs(2)
                    };
                    {
                        let mut s = status.lock();
                        s.state = if failures >= 3 {
                            ComponentState::Backoff
                        } else {
                            ComponentState::Disconnected
                        };
                        s.error = Some(err.to_string());
                    }
                    tracing::info!("clawbot:{account}: poll failed ({err}); retrying in {wait:?}");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
}
