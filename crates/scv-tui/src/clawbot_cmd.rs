//! `scv clawbot login|status|enable|disable|logout`.
//!
//! Login runs the iLink QR flow in the terminal and saves the credentials;
//! the other commands are `daemon.control` through the control helper.
//! Every command leaves the daemon running with the change applied.

use crate::daemon_cmd::describe;
use anyhow::{bail, Context, Result};
use scv_client::control::control;
use scv_ilink::client::DEFAULT_BASE_URL;
use scv_ilink::types::QrStatus;
use scv_ilink::{AccountStore, Credentials, IlinkClient};
use scv_protocol::{DaemonCommand, RemoteTools};
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const LOGIN_TIMEOUT: Duration = Duration::from_secs(8 * 60);
const MAX_EXPIRED: u32 = 3;

/// The login server: `--base-url`, else config `ilink_base_url`, else the
/// public one.
fn login_base_url(home: &Path, flag: Option<String>) -> String {
    flag.or_else(|| {
        let text = std::fs::read_to_string(home.join("config.toml")).ok()?;
        let table: toml::Table = text.parse().ok()?;
        table.get("ilink_base_url")?.as_str().map(str::to_string)
    })
    .unwrap_or_else(|| DEFAULT_BASE_URL.to_string())
}

fn poll_interval() -> Duration {
    // Tests shorten the spec's one-second pause.
    let ms = std::env::var("SCV_CLAWBOT_POLL_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    Duration::from_millis(ms)
}

fn draw_qr(url: &str) {
    match qrcode::QrCode::new(url.as_bytes()) {
        Ok(code) => {
            let image = code
                .render::<qrcode::render::unicode::Dense1x2>()
                .quiet_zone(true)
                .build();
            println!("{image}");
        }
        Err(_) => println!("(this terminal QR code could not be drawn; open the link below)"),
    }
    // The login server chose this URL: shown, never obeyed.
    println!(
        "Scan with WeChat, or open: {}",
        scv_client::text::visible(url)
    );
}

pub async fn login(
    home: &Path,
    socket: &Path,
    account: &str,
    base_url: Option<String>,
) -> Result<ExitCode> {
    if !scv_ilink::store::valid_account(account) {
        bail!("invalid account name `{account}` (letters, digits, -, _ and .)");
    }
    let version = env!("CARGO_PKG_VERSION");
    let base = login_base_url(home, base_url);
    let confirmed = scan(&base, version).await?;
    save(home, socket, account, confirmed).await?;
    drop(scv_client::ensure_daemon(home, socket).await?);
    let status = control(socket, DaemonCommand::Reload).await?;
    print!(
        "{}",
        scv_client::text::visible(&describe(&status, socket, true))
    );
    Ok(ExitCode::SUCCESS)
}

/// Shows QR codes until one is confirmed on the phone (a fresh one when
/// it expires, at most [`MAX_EXPIRED`] times; within 8 minutes):
/// the bot's credentials, or `None` when it is already bound here.
async fn scan(base: &str, version: &str) -> Result<Option<Credentials>> {
    let http = reqwest::Client::new();
    let mut client = IlinkClient::new(http.clone(), base, None, version);
    let deadline = Instant::now() + LOGIN_TIMEOUT;
    let mut expired = 0;
    let confirmed = 'fresh_code: loop {
        let qr = client
            .get_qrcode()
            .await
            .context("cannot get a login QR code")?;
        draw_qr(&qr.url);
        let mut verify_code: Option<String> = None;
        let mut said_scanned = false;
        loop {
            if Instant::now() > deadline {
                bail!("login timed out after 8 minutes");
            }
            match client
                .qrcode_status(&qr.qrcode, verify_code.as_deref())
                .await?
            {
                QrStatus::Wait => {}
                QrStatus::Scanned => {
                    if !said_scanned {
                        println!("Scanned. Confirm the login on your phone.");
                        said_scanned = true;
                    }
                }
                QrStatus::NeedVerifyCode => {
                    print!("Enter the digits shown on your phone: ");
                    std::io::stdout().flush()?;
                    let mut line = String::new();
                    if std::io::stdin().lock().read_line(&mut line)? == 0 {
                        bail!("no verification code given");
                    }
                    verify_code = Some(line.trim().to_string());
                    continue;
                }
                QrStatus::VerifyCodeBlocked => {
                    println!("Too many wrong codes; starting over with a new QR code.");
                    continue 'fresh_code;
                }
                QrStatus::Expired => {
                    expired += 1;
                    if expired >= MAX_EXPIRED {
                        bail!("the QR code expired {MAX_EXPIRED} times; run `scv clawbot login` again");
                    }
                    println!("The QR code expired; here is a new one.");
                    continue 'fresh_code;
                }
                QrStatus::Redirect { host } => {
                    let scheme = if base.starts_with("http://") {
                        "http"
                    } else {
                        "https"
                    };
                    client = IlinkClient::new(
                        http.clone(),
                        &format!("{scheme}://{host}"),
                        None,
                        version,
                    );
                    continue;
                }
                QrStatus::AlreadyBound => break 'fresh_code None,
                QrStatus::Confirmed {
                    bot_token,
                    bot_id,
                    user_id,
                    base_url,
                } => {
                    break 'fresh_code Some(Credentials {
                        bot_token,
                        bot_id,
                        user_id,
                        base_url: base_url.unwrap_or_else(|| client.base_url().to_string()),
                        saved_at: scv_unix_now(),
                    });
                }
            }
            tokio::time::sleep(poll_interval()).await;
        }
    };
    Ok(confirmed)
}

/// Saves the credentials of a confirmed login (replacing the account
/// that held the same bot) and enables the account.
async fn save(
    home: &Path,
    socket: &Path,
    account: &str,
    confirmed: Option<Credentials>,
) -> Result<()> {
    let store = AccountStore::new(home);
    match confirmed {
        None => println!("This bot is already bound to this client; the saved login is unchanged."),
        Some(credentials) => {
            // One bot, one account: a login for a bot another account holds
            // replaces that account.
            if let Some(other) = store
                .account_with_bot(&credentials.bot_id)
                .filter(|a| a != account)
            {
                let _ = scv_client::ensure_daemon(home, socket).await;
                let _ = control(
                    socket,
                    DaemonCommand::ClawbotLogout {
                        account: other.clone(),
                    },
                )
                .await;
                store.remove(&other)?;
                println!("Account `{other}` held this bot; it was replaced by `{account}`.");
            }
            store.save_credentials(account, &credentials)?;
            let mut settings = store.settings(account);
            settings.enabled = true;
            store.save_settings(account, &settings)?;
            println!(
                "Logged in: bot {} (owner {}).",
                credentials.bot_id,
                credentials.user_id.as_deref().unwrap_or("unknown")
            );
        }
    }
    Ok(())
}

fn scv_unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// status / enable / disable / logout.
pub async fn manage(
    home: &Path,
    socket: &Path,
    command: DaemonCommand,
    json: bool,
) -> Result<ExitCode> {
    drop(scv_client::ensure_daemon(home, socket).await?);
    crate::daemon_cmd::status(socket, json, command).await
}

/// `enable` / `disable` as a `clawbot_set`.
pub fn set(
    account: String,
    enabled: bool,
    workspace: Option<&Path>,
    remote_tools: Option<RemoteTools>,
) -> Result<DaemonCommand> {
    let workspace = match workspace {
        Some(dir) => Some(
            dir.canonicalize()
                .with_context(|| format!("workspace {} does not exist", dir.display()))?
                .display()
                .to_string(),
        ),
        None => None,
    };
    Ok(DaemonCommand::ClawbotSet {
        account,
        enabled,
        workspace,
        remote_tools,
    })
}
