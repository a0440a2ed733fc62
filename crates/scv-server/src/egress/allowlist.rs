//! `sandbox_allowed_domains`: which hosts the session's proxy and
//! `web_fetch` reach, and which addresses they never reach unless told.
//!
//! An entry is a host name (`crates.io`: that host only), a wildcard
//! (`*.example.com`: every name below `example.com`, not the name itself)
//! or an IP address (that address only; a raw IP is refused otherwise).
//! A name is looked up by the daemon; if any address it resolves to is
//! loopback, private, link-local or otherwise not public, it is refused
//! unless the name is listed exactly (a wildcard says nothing about where
//! its names point: a planted `x.example.com -> 127.0.0.1` must not reach
//! the user's own machine) or the address itself is listed.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The default list: the package registries (ARCHITECTURE.md, "Network
/// egress").
pub const DEFAULT_ALLOWED: &[&str] = &[
    "crates.io",
    "static.crates.io",
    "index.crates.io",
    "pypi.org",
    "files.pythonhosted.org",
    "registry.npmjs.org",
    "proxy.golang.org",
    "deb.debian.org",
    "github.com",
    "codeload.github.com",
    "objects.githubusercontent.com",
];

/// Entries a configuration may list (each at most 253 bytes, a DNS
/// name's bound).
pub const MAX_ENTRIES: usize = 1024;

/// How a host was allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowed {
    /// Listed as it is (a name or an address).
    Exactly,
    /// Below a `*.` entry.
    ByWildcard,
}

/// The parsed list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    names: Vec<String>,
    suffixes: Vec<String>,
    addresses: Vec<IpAddr>,
}

impl Allowlist {
    /// Parses the configured entries; an error names the bad one.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Allowlist, String> {
        if entries.len() > MAX_ENTRIES {
            return Err(format!(
                "sandbox_allowed_domains has {} entries, at most {MAX_ENTRIES}",
                entries.len()
            ));
        }
        let mut list = Allowlist::default();
        for entry in entries {
            let raw = entry.as_ref();
            let entry = normalize(raw);
            if let Some(ip) = ip_of(&entry) {
                list.addresses.push(ip);
            } else if let Some(suffix) = entry.strip_prefix("*.") {
                if !is_name(suffix) {
                    return Err(bad(raw));
                }
                list.suffixes.push(format!(".{suffix}"));
            } else if is_name(&entry) {
                list.names.push(entry);
            } else {
                return Err(bad(raw));
            }
        }
        Ok(list)
    }

    /// The default list.
    pub fn default_list() -> Allowlist {
        #[allow(clippy::expect_used)] // a constant list of plain names
        Allowlist::parse(DEFAULT_ALLOWED).expect("the default list parses")
    }

    /// Whether `host` (a name or an address, as a URL or `CONNECT` gives
    /// it) is listed, and how.
    pub fn allows(&self, host: &str) -> Option<Allowed> {
        let host = normalize(host);
        if let Some(ip) = ip_of(&host) {
            return self.addresses.contains(&ip).then_some(Allowed::Exactly);
        }
        if self.names.contains(&host) {
            return Some(Allowed::Exactly);
        }
        self.suffixes
            .iter()
            .any(|suffix| host.len() > suffix.len() && host.ends_with(suffix.as_str()))
            .then_some(Allowed::ByWildcard)
    }

    /// Whether `ip` is listed itself.
    pub fn lists_address(&self, ip: IpAddr) -> bool {
        self.addresses.contains(&canonical_ip(ip))
    }
}

/// What commands under the allowlist reach without the proxy (their
/// `NO_PROXY`): their own loopback names, less those `list` names — a
/// listed `localhost` means the host's, reached through the proxy.
pub fn direct(list: &Allowlist) -> String {
    scv_sandbox::egress::DIRECT
        .iter()
        .filter(|name| list.allows(name).is_none())
        .copied()
        .collect::<Vec<_>>()
        .join(",")
}

fn bad(entry: &str) -> String {
    format!(
        "sandbox_allowed_domains: `{entry}` is not a host name, a `*.domain` wildcard or an IP address"
    )
}

/// Lower case, without a trailing dot or IPv6 brackets.
pub fn normalize(host: &str) -> String {
    let host = host.trim().trim_end_matches('.');
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.to_ascii_lowercase()
}

/// The address `host` spells, if it is one.
pub fn ip_of(host: &str) -> Option<IpAddr> {
    host.parse::<IpAddr>().ok().map(canonical_ip)
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

/// A DNS name of letters, digits, `-` and `_` labels (`_` appears in
/// real names), at most 253 bytes.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// Whether `ip` is an address of the public internet: not loopback,
/// private (RFC 1918, unique local), link-local, shared (CGNAT),
/// unspecified, multicast, broadcast, documentation or reserved.
pub fn is_public(ip: IpAddr) -> bool {
    match canonical_ip(ip) {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => public_v6(v6),
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240)
}

fn public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00 // unique local
        || (first & 0xffc0) == 0xfe80 // link-local
        || (first & 0xffc0) == 0xfec0 // site-local (deprecated)
        || first == 0x2001 && ip.segments()[1] == 0x0db8 // documentation
        || first == 0x0064 && ip.segments()[1] == 0xff9b) // NAT64: could map anything
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_wildcards_and_addresses_match_as_documented() {
        let list = Allowlist::parse(&["Crates.IO.", "*.example.com", "10.0.0.5", "[::1]"]).unwrap();
        assert_eq!(list.allows("crates.io"), Some(Allowed::Exactly));
        assert_eq!(list.allows("CRATES.io."), Some(Allowed::Exactly));
        assert_eq!(list.allows("static.crates.io"), None);
        assert_eq!(list.allows("a.example.com"), Some(Allowed::ByWildcard));
        assert_eq!(list.allows("a.b.example.com"), Some(Allowed::ByWildcard));
        assert_eq!(list.allows("example.com"), None);
        assert_eq!(list.allows("badexample.com"), None);
        assert_eq!(list.allows("10.0.0.5"), Some(Allowed::Exactly));
        assert_eq!(list.allows("10.0.0.6"), None);
        assert_eq!(list.allows("[::1]"), Some(Allowed::Exactly));
        assert_eq!(list.allows("::ffff:10.0.0.5"), Some(Allowed::Exactly));
        assert!(Allowlist::parse(&["exa mple.com"]).is_err());
        assert!(Allowlist::parse(&["*.*.com"]).is_err());
        assert!(Allowlist::parse(&["http://x.com"]).is_err());
        assert_eq!(
            Allowlist::default_list().allows("index.crates.io"),
            Some(Allowed::Exactly)
        );
    }

    #[test]
    fn private_and_loopback_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "64:ff9b::7f00:1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["151.101.1.1", "2606:4700::1111", "8.8.8.8"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }
}
