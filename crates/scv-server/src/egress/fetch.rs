//! `web_fetch`'s GET: the same checks as the proxy's ([`super::check`])
//! at every hop, the addresses checked being the ones connected to (the
//! client is pinned to them), redirects followed only to allowed hosts,
//! no cookies, no credentials, no proxy of the daemon's environment; the
//! body read up to `web_fetch_max_bytes`, HTML turned into Markdown.

use super::allowlist::Allowlist;
use super::check::{decide, lookup, Refusal};
use std::sync::Arc;
use std::time::Duration;

/// Redirects followed at most.
const MAX_REDIRECTS: usize = 10;

/// `web_fetch`'s settings.
#[derive(Debug, Clone)]
pub(crate) struct WebLimits {
    pub allowed: Arc<Allowlist>,
    pub max_bytes: usize,
    pub timeout: Duration,
}

/// Whether `url` names a host the allowlist lists (the call runs without
/// asking).
pub(crate) fn allowed_url(list: &Allowlist, url: &str) -> bool {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|url| url.host_str().map(|h| list.allows(h).is_some()))
        .unwrap_or(false)
}

/// What a fetch gives the model: the text and whether it was cut.
pub(crate) struct Page {
    pub text: String,
    pub truncated: bool,
}

/// Fetches `url` (approved by the user when its host is not listed).
pub(crate) async fn fetch(limits: &WebLimits, url: &str) -> Result<Page, String> {
    let first = parse(url)?;
    let first_host = host_of(&first)?;
    match tokio::time::timeout(limits.timeout, follow(limits, first, &first_host)).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "{url} did not answer within web_fetch_timeout_ms ({} ms)",
            limits.timeout.as_millis()
        )),
    }
}

async fn follow(limits: &WebLimits, mut url: reqwest::Url, approved: &str) -> Result<Page, String> {
    for _ in 0..=MAX_REDIRECTS {
        let host = host_of(&url)?;
        let port = url.port_or_known_default().unwrap_or(443);
        let addrs = check(&limits.allowed, &host, port, host == approved)
            .await
            .map_err(|refusal| format!("refused {}", refusal.explain()))?;
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .resolve_to_addrs(&host, &addrs)
            .connect_timeout(Duration::from_secs(15))
            .user_agent(concat!("scv/", env!("CARGO_PKG_VERSION"), " (web_fetch)"))
            .build()
            .map_err(|e| format!("cannot make the HTTP client: {e}"))?;
        let response = client
            .get(url.clone())
            .header(
                reqwest::header::ACCEPT,
                "text/html, text/markdown, text/plain, */*;q=0.5",
            )
            .send()
            .await
            .map_err(|e| format!("cannot fetch {url}: {}", error_chain(&e)))?;
        if response.status().is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| format!("{url} redirected without a Location"))?;
            let next = url
                .join(location)
                .map_err(|e| format!("{url} redirected to `{location}`, not a URL: {e}"))?;
            url = checked_scheme(next)?;
            continue;
        }
        return read(limits, &url, response).await;
    }
    Err(format!("more than {MAX_REDIRECTS} redirects"))
}

/// The addresses `host` may be fetched at: the allowlist's answer, or for
/// the host the user approved, any public address (never a private or
/// loopback one unless listed).
async fn check(
    list: &Allowlist,
    host: &str,
    port: u16,
    approved: bool,
) -> Result<Vec<std::net::SocketAddr>, Refusal> {
    if list.allows(host).is_some() || !approved {
        return decide(list, host, port).await;
    }
    let name = super::allowlist::normalize(host);
    let addrs = match super::allowlist::ip_of(&name) {
        Some(ip) => vec![std::net::SocketAddr::new(ip, port)],
        None => lookup(&name, port)
            .await
            .map_err(|why| Refusal::new(&name, format!("cannot be looked up: {why}")))?,
    };
    if let Some(private) = addrs
        .iter()
        .find(|a| !super::allowlist::is_public(a.ip()) && !list.lists_address(a.ip()))
    {
        return Err(Refusal::new(
            &name,
            format!(
                "is at {}, a private, loopback or link-local address",
                private.ip()
            ),
        ));
    }
    Ok(addrs)
}

fn parse(url: &str) -> Result<reqwest::Url, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    checked_scheme(parsed)
}

/// http or https, without credentials.
fn checked_scheme(url: reqwest::Url) -> Result<reqwest::Url, String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "{url}: web_fetch reads http:// and https:// URLs only"
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "{}: web_fetch sends no credentials; leave the user name and password out of the URL",
            url.host_str().unwrap_or("")
        ));
    }
    Ok(url)
}

fn host_of(url: &reqwest::Url) -> Result<String, String> {
    url.host_str()
        .map(super::allowlist::normalize)
        .ok_or_else(|| format!("{url} has no host"))
}

/// The body, up to the cap, as text: HTML as Markdown, text as is.
async fn read(
    limits: &WebLimits,
    url: &reqwest::Url,
    mut response: reqwest::Response,
) -> Result<Page, String> {
    let status = response.status();
    let kind = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mime = kind.split(';').next().unwrap_or("").trim().to_string();
    let html = matches!(mime.as_str(), "text/html" | "application/xhtml+xml");
    let text = mime.starts_with("text/")
        || mime.is_empty()
        || matches!(
            mime.as_str(),
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-yaml"
                | "application/yaml"
                | "application/toml"
        )
        || mime.ends_with("+json")
        || mime.ends_with("+xml");
    if !html && !text {
        return Err(format!(
            "{url} is `{mime}`, not a web page or text; web_fetch reads HTML and text only"
        ));
    }
    let mut body = Vec::new();
    let mut truncated = false;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("reading {url}: {}", error_chain(&e)))?
    {
        let room = limits.max_bytes - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    let raw = String::from_utf8_lossy(&body).into_owned();
    let mut text = if html { markdown(&raw) } else { raw };
    if !status.is_success() {
        text = format!("[HTTP {status}]\n{text}");
    }
    if truncated {
        text.push_str(&format!(
            "\n\n[truncated: the page is longer than web_fetch_max_bytes ({} bytes); only its start was read]",
            limits.max_bytes
        ));
    }
    Ok(Page { text, truncated })
}

/// HTML as Markdown: headings, links, code blocks and tables kept;
/// scripts, styles and the like dropped.
pub(crate) fn markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "svg", "head",
        ])
        .build();
    converter.convert(html).unwrap_or_else(|_| html.to_string())
}

/// An error with its causes (reqwest's own message names only the top).
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
