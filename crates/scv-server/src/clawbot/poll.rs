//! The long-poll loop of one account. It saves the cursor (and the
//! latest context token per sender) before handing a batch on, drops
//! duplicates, and backs off 2 s, 2 s, then 30 s after three failures in a
//! row. `-14` ends it: the account must log in again.

use super::unix_now;
use scv_ilink::types::WireMessage;
use scv_ilink::{AccountStore, Delivery, IlinkClient, IlinkError};
use scv_protocol::{ComponentState, ComponentStatus};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// Messages recently seen by sender + text + time, for duplicates that
/// arrive under a new `message_id`.
const RECENT_CONTENT: usize = 256;

pub async fn run(
    client: IlinkClient,
    store: AccountStore,
    account: String,
    bot_id: String,
    delivery: Arc<Mutex<Delivery>>,
    status: Arc<Mutex<ComponentStatus>>,
    batches: mpsc::Sender<Vec<WireMessage>>,
) {
    let mut failures = 0u32;
    let mut hint = None;
    let mut recent: VecDeque<(String, String, u64)> = VecDeque::new();
    loop {
        let cursor = delivery.lock().unwrap().cursor.clone();
        match client.get_updates(&cursor, hint).await {
            Ok(updates) => {
                failures = 0;
                hint = updates.longpolling_timeout_ms.map(Duration::from_millis);
                {
                    let mut s = status.lock().unwrap();
                    s.state = ComponentState::Connected;
                    s.error = None;
                    s.last_success_unix_seconds = Some(unix_now());
                }
                let fresh = {
                    let mut d = delivery.lock().unwrap();
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
                    // Saved before the batch is handled: never replayed.
                    if let Err(err) = store.save_delivery(&account, &d) {
                        tracing::warn!("clawbot:{account}: cannot save delivery state: {err}");
                    }
                    fresh
                };
                if !fresh.is_empty() && batches.send(fresh).await.is_err() {
                    return;
                }
            }
            Err(IlinkError::SessionExpired) => {
                let mut s = status.lock().unwrap();
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
                    let mut s = status.lock().unwrap();
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
