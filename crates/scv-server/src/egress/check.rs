//! Whether one host may be reached, and at which addresses: the
//! allowlist, then the name looked up once by the daemon and every
//! address it gave checked, so the connection goes to an address that was
//! checked (a second lookup could answer differently).
//!
//! Tests name their loopback servers through `SCV_TEST_RESOLVE`
//! (`name=ip,name=ip`), read here only, by the daemon: those names
//! resolve to those addresses without asking the system. It changes no
//! rule (a name resolving to loopback still needs an exact entry).

use super::allowlist::{is_public, Allowed, Allowlist};
use std::net::{IpAddr, SocketAddr};

/// The test-only name override (see the module's documentation).
pub const TEST_RESOLVE: &str = "SCV_TEST_RESOLVE";

/// How long a lookup may take.
const LOOKUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Why a host was refused, in words; `host` as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub host: String,
    pub why: String,
}

impl Refusal {
    pub fn new(host: &str, why: impl Into<String>) -> Refusal {
        Refusal {
            host: host.to_string(),
            why: why.into(),
        }
    }

    /// Whether the allowlist refused it (else the host is listed but has
    /// no address here).
    pub fn is_policy(&self) -> bool {
        !(self.why.starts_with("cannot be looked up") || self.why == "has no address")
    }

    /// The refusal with how to allow the host, for a tool result (a host
    /// that is listed but cannot be looked up or reached is only named).
    pub fn explain(&self) -> String {
        if !self.is_policy() {
            return format!("{}: {}", self.host, self.why);
        }
        format!(
            "{}: {}; to allow it, add \"{}\" to sandbox_allowed_domains in config.toml",
            self.host, self.why, self.host
        )
    }
}

/// The addresses `host:port` may be reached at, or why it may not.
pub async fn decide(list: &Allowlist, host: &str, port: u16) -> Result<Vec<SocketAddr>, Refusal> {
    let name = super::allowlist::normalize(host);
    let allowed = list.allows(&name);
    if let Some(ip) = super::allowlist::ip_of(&name) {
        return match allowed {
            Some(_) => Ok(vec![SocketAddr::new(ip, port)]),
            None => Err(Refusal::new(
                &name,
                "a raw IP address, which is reached only when sandbox_allowed_domains lists it",
            )),
        };
    }
    let Some(allowed) = allowed else {
        return Err(Refusal::new(&name, "not in sandbox_allowed_domains"));
    };
    let addrs = lookup(&name, port)
        .await
        .map_err(|why| Refusal::new(&name, format!("cannot be looked up: {why}")))?;
    if addrs.is_empty() {
        return Err(Refusal::new(&name, "has no address"));
    }
    if allowed == Allowed::ByWildcard {
        if let Some(private) = addrs
            .iter()
            .find(|a| !is_public(a.ip()) && !list.lists_address(a.ip()))
        {
            return Err(Refusal::new(
                &name,
                format!(
                    "resolves to {}, a private, loopback or link-local address, which only a name listed exactly (not through a wildcard) may",
                    private.ip()
                ),
            ));
        }
    }
    Ok(addrs)
}

/// The addresses of `name`: the test override, else the system's lookup.
pub async fn lookup(name: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    if let Some(ip) = overridden(name) {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    match tokio::time::timeout(LOOKUP_TIMEOUT, tokio::net::lookup_host((name, port))).await {
        Ok(Ok(addrs)) => Ok(addrs.take(16).collect()),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err("the lookup timed out".into()),
    }
}

/// `name`'s address in `SCV_TEST_RESOLVE`, if there.
fn overridden(name: &str) -> Option<IpAddr> {
    let table = std::env::var(TEST_RESOLVE).ok()?;
    table.split(',').find_map(|pair| {
        let (n, ip) = pair.split_once('=')?;
        (n.trim().eq_ignore_ascii_case(name))
            .then(|| ip.trim().parse().ok())
            .flatten()
    })
}
