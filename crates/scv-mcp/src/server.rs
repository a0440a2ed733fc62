//! One server's supervisor: start, list tools, serve, and after a failure
//! wait (2 s, doubling, at most 60 s) and start again — until stopped.

use crate::auth::client::login_changed;
use crate::handler::Handler;
use crate::limits::{BACKOFF_FIRST, BACKOFF_MAX};
use crate::names;
use crate::spec::ServerSpec;
use crate::state::{HubEnv, Link, Live, Shared, State};
use crate::tools::{self, Listing};
use crate::transport::{self, over_the_cap, Connection, Opened, Process};
use rmcp::model::{ClientRequest, ListToolsRequest, PaginatedRequestParams, ServerResult};
use rmcp::{Peer, RoleClient};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Pages of `tools/list` read at most.
const MAX_PAGES: usize = 16;

pub(crate) async fn supervise(
    spec: ServerSpec,
    shared: Arc<Shared>,
    env: Arc<HubEnv>,
    roots: Arc<std::sync::Mutex<Vec<std::path::PathBuf>>>,
    stop: CancellationToken,
    tracker: TaskTracker,
) {
    let mut backoff = BACKOFF_FIRST;
    let mut attempts = 0u32;
    loop {
        if attempts > 0 {
            shared.update(|s| s.restarts += 1);
        }
        attempts += 1;
        shared.update(|s| s.state = State::Starting);
        let tools_changed = Arc::new(Notify::new());
        let handler = Handler {
            server: spec.name.clone(),
            roots: crate::state::lock(&roots).clone(),
            tools_changed: tools_changed.clone(),
            askers: shared.askers.clone(),
            initialize_only: shared.initialize_only.clone(),
        };
        // An OAuth server's login, as this attempt sees it: a new login
        // or a logout restarts the connection within a second.
        let store = transport::login_store(&spec, &env).filter(|_| !spec.client_credentials());
        let since = store.as_ref().and_then(|s| s.login_id());
        let mut login = Box::pin(login_changed(store, since));
        let started = start(&spec, &env, handler, &tracker, &stop).await;
        match started {
            Ok((connection, listing)) => {
                backoff = BACKOFF_FIRST;
                let link = Link {
                    peer: connection.service.peer().clone(),
                    handler: connection.service.service().clone(),
                    oversized: connection.oversized.clone(),
                    auth_refused: connection.auth_refused.clone(),
                    broken: CancellationToken::new(),
                };
                publish(&spec, &shared, Some(link.clone()), listing);
                let end = serve(
                    &spec,
                    &shared,
                    connection,
                    &link,
                    &tools_changed,
                    &stop,
                    login.as_mut(),
                )
                .await;
                publish(&spec, &shared, None, Listing::default());
                match end {
                    End::Stopped => break,
                    End::Relogin => {
                        tracing::info!(target: "scv::mcp", server = %spec.name, "the OAuth login changed; reconnecting");
                        backoff = BACKOFF_FIRST;
                        continue;
                    }
                    End::Died(why) => {
                        tracing::warn!(target: "scv::mcp", server = %spec.name, "{why}; restarting in {} s", backoff.as_secs());
                        shared.update(|s| {
                            s.state = State::Backoff;
                            s.error = Some(env.sanitize(&why, &spec));
                        });
                    }
                }
            }
            Err(Failure::Stopped) => break,
            Err(Failure::Failed(why)) => {
                tracing::warn!(target: "scv::mcp", server = %spec.name, "start failed: {why}; retrying in {} s", backoff.as_secs());
                shared.update(|s| {
                    s.state = State::Failed;
                    s.error = Some(env.sanitize(&why, &spec));
                });
            }
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = stop.cancelled() => break,
            // A login (or logout) is tried at once.
            () = login.as_mut() => {
                backoff = BACKOFF_FIRST;
                continue;
            }
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
    shared.update(|s| s.state = State::Stopped);
}

/// Why a start produced no connection.
enum Failure {
    /// The server was stopped meanwhile (and whatever started, ended).
    Stopped,
    Failed(String),
}

/// Connects and lists the tools, each within `startup_timeout`; a stop
/// meanwhile ends the process at once (a server still starting is as
/// much a process to end as a connected one).
async fn start(
    spec: &ServerSpec,
    env: &HubEnv,
    handler: Handler,
    tracker: &TaskTracker,
    stop: &CancellationToken,
) -> Result<(Connection, Listing), Failure> {
    let limit = spec.startup_timeout;
    let within = format!("did not finish starting within {} ms", limit.as_millis());
    let Opened {
        mut process,
        handshake,
        oversized,
        auth_refused,
    } = transport::open(spec, env, handler, tracker).map_err(Failure::Failed)?;
    let initialized = tokio::select! {
        initialized = tokio::time::timeout(limit, handshake) => initialized,
        () = stop.cancelled() => {
            end_process(&mut process).await;
            return Err(Failure::Stopped);
        }
    };
    let service = match initialized {
        Ok(Ok(service)) => service,
        Ok(Err(why)) => {
            // A server that exited is the better explanation than the
            // pipe it left closed.
            let exited = match process.as_mut() {
                Some(process) => process.exited(Duration::from_millis(500)).await.is_some(),
                None => false,
            };
            end_process(&mut process).await;
            return Err(Failure::Failed(if exited {
                "the server exited before answering initialize (its stderr is in the log)".into()
            } else {
                why
            }));
        }
        Err(_) => {
            end_process(&mut process).await;
            return Err(Failure::Failed(within));
        }
    };
    let peer = service.peer().clone();
    let connection = Connection {
        service,
        process,
        oversized,
        auth_refused,
    };
    let listed = tokio::select! {
        listed = tokio::time::timeout(limit, list(&peer, spec)) => listed,
        () = stop.cancelled() => {
            connection.close().await;
            return Err(Failure::Stopped);
        }
    };
    match listed {
        Ok(Ok(listing)) => Ok((connection, listing)),
        Ok(Err(why)) => {
            connection.close().await;
            Err(Failure::Failed(why))
        }
        Err(_) => {
            connection.close().await;
            Err(Failure::Failed(within))
        }
    }
}

async fn end_process(process: &mut Option<Process>) {
    if let Some(process) = process.as_mut() {
        process.end().await;
    }
}

enum End {
    Stopped,
    /// The OAuth login changed (a new login, a logout).
    Relogin,
    Died(String),
}

/// Serves until the connection ends or the server is stopped; re-lists
/// the tools when the server says they changed.
async fn serve(
    spec: &ServerSpec,
    shared: &Arc<Shared>,
    connection: Connection,
    link: &Link,
    tools_changed: &Notify,
    stop: &CancellationToken,
    mut login: std::pin::Pin<&mut (impl std::future::Future<Output = ()> + ?Sized)>,
) -> End {
    let Connection {
        service,
        mut process,
        ..
    } = connection;
    let cancel = service.cancellation_token();
    let mut subscription = crate::revision::listen(&link.peer, &spec.name).await;
    let mut waiting = Box::pin(service.waiting());
    let mut ended = false;
    let end = loop {
        tokio::select! {
            () = stop.cancelled() => break End::Stopped,
            () = login.as_mut() => break End::Relogin,
            () = link.broken.cancelled() => break End::Died(if link.oversized.load(Ordering::SeqCst) {
                over_the_cap("a message from the server")
            } else {
                "the connection to the server broke".into()
            }),
            _ = &mut waiting => {
                ended = true;
                break End::Died(why_closed(&link.oversized, process.as_mut()));
            }
            () = changed(tools_changed, &mut subscription) => match list(&link.peer, spec).await {
                Ok(listing) => publish(spec, shared, Some(link.clone()), listing),
                Err(why) => tracing::warn!(target: "scv::mcp", server = %spec.name, "cannot list tools again: {why}"),
            },
        }
    };
    if !ended {
        cancel.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(1), waiting).await;
    }
    end_process(&mut process).await;
    end
}

/// A tools-list change, told either way: a 2025 server's notice (through
/// the handler) or a 2026 one's subscription.
async fn changed(notice: &Notify, subscription: &mut Option<rmcp::service::Subscription>) {
    tokio::select! {
        () = notice.notified() => {}
        () = crate::revision::tools_changed(subscription) => {}
    }
}

fn why_closed(oversized: &AtomicBool, process: Option<&mut Process>) -> String {
    if oversized.load(Ordering::SeqCst) {
        return over_the_cap("a message from the server");
    }
    match process.map(|p| p.try_exited()) {
        Some(Some(_)) => "the server exited".into(),
        Some(None) => "the server closed its output".into(),
        None => "the server closed the connection".into(),
    }
}

/// Every page of `tools/list`, read leniently.
async fn list(peer: &Peer<RoleClient>, spec: &ServerSpec) -> Result<Listing, String> {
    let mut pages: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(
            PaginatedRequestParams::default().with_cursor(cursor.take()),
        ));
        let page = match peer.send_request(request).await {
            Ok(ServerResult::ListToolsResult(result)) => {
                serde_json::to_value(&result).map_err(|e| e.to_string())?
            }
            Ok(ServerResult::CustomResult(custom)) => custom.0,
            Ok(_) => return Err("tools/list answered something else".into()),
            Err(err) => {
                return Err(format!(
                    "tools/list failed: {}",
                    crate::errors::service(&err)
                ))
            }
        };
        cursor = page
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_owned);
        pages.push(page);
        if cursor.is_none() {
            break;
        }
    }
    let listing = tools::read(&spec.name, &pages, spec.tools.as_deref());
    for why in &listing.left_out {
        tracing::warn!(target: "scv::mcp", server = %spec.name, "tool left out: {why}");
    }
    Ok(listing)
}

/// Makes the server's peer and tools what sessions see, each tool under
/// a name of its own ([`names::assign`]).
fn publish(spec: &ServerSpec, shared: &Arc<Shared>, connected: Option<Link>, listing: Listing) {
    let mut tools = listing.tools;
    for tool in &mut tools {
        tool.auto_approve = spec.auto_approve;
        tool.timeout = spec.tool_timeout;
    }
    let left_out = listing.left_out.len();
    let Some(link) = connected else {
        // Disconnected: no tools, and the names given stay reserved for
        // their tools when the server is back.
        shared.set_connection(Live::default());
        return;
    };
    {
        let mut names = crate::state::lock(&shared.names);
        let own: Vec<&str> = tools.iter().map(|t| t.tool.as_str()).collect();
        let (given, notes) = names::assign(&spec.name, &own, &names);
        for note in notes {
            tracing::warn!(target: "scv::mcp", server = %spec.name, "{note}");
        }
        for (tool, name) in tools.iter_mut().zip(given) {
            tool.name = name;
        }
        *names = tools
            .iter()
            .map(|tool| (tool.tool.clone(), tool.name.clone()))
            .collect();
    }
    shared.set_connection(Live {
        link: Some(link),
        tools: tools.into_iter().map(Arc::new).collect(),
    });
    shared.update(|s| {
        s.state = State::Connected;
        s.last_success_unix_seconds = Some(crate::state::now_unix());
        s.error = (left_out > 0).then(|| {
            format!("{left_out} tools left out (invalid, repeated, or over the bound); see the log")
        });
    });
}
