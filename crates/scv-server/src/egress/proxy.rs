//! One connection to a session's proxy: an HTTP request for an absolute
//! `http://` URL is forwarded; `CONNECT host:port` opens a tunnel once the
//! TLS ClientHello that comes through it names the same host. Anything
//! refused gets `403` with a body naming the host and the line to add
//! (or, once a tunnel was answered, the connection closed), and is
//! recorded for the tool result.

use super::check::{decide, Refusal};
use super::sni::{self, Hello};
use super::Shared;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A request's head, at most.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client may take to send its head or its ClientHello.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connecting to the host may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Serves one client connection.
pub(super) async fn serve(shared: &Shared, mut client: TcpStream) {
    let Ok(Ok((head, rest))) = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await
    else {
        let _ = reply(
            &mut client,
            400,
            "Bad Request",
            "scv: expected an HTTP proxy request\n",
        )
        .await;
        return;
    };
    let request = match Request::parse(&head) {
        Ok(request) => request,
        Err(why) => {
            let _ = reply(&mut client, 400, "Bad Request", &format!("scv: {why}\n")).await;
            return;
        }
    };
    let addrs = match decide(&shared.allowlist, &request.host, request.port).await {
        Ok(addrs) => addrs,
        Err(refusal) => return refuse(shared, &mut client, refusal).await,
    };
    let Some(mut upstream) = connect(&addrs).await else {
        let body = format!("scv: cannot connect to {}:{}\n", request.host, request.port);
        let _ = reply(&mut client, 502, "Bad Gateway", &body).await;
        return;
    };
    if request.connect {
        if reply_raw(&mut client, b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await
            .is_err()
        {
            return;
        }
        let mut hello = rest;
        match tokio::time::timeout(HEAD_TIMEOUT, read_hello(&mut client, &mut hello)).await {
            Ok(Ok(Hello::Name(Some(name))))
                if super::allowlist::normalize(&name) == request.host => {}
            // Clients send no server name for an address (a listed IP).
            Ok(Ok(Hello::Name(None))) if super::allowlist::ip_of(&request.host).is_some() => {}
            Ok(Ok(hello)) => {
                let why = match hello {
                    Hello::Name(Some(name)) => format!(
                        "the TLS server name (SNI) `{name}` of the tunnel differs from the CONNECT host"
                    ),
                    _ => "the tunnel did not start with a TLS ClientHello naming the host".into(),
                };
                shared.record(Refusal::new(&request.host, why));
                return;
            }
            _ => return,
        }
        if upstream.write_all(&hello).await.is_err() {
            return;
        }
    } else {
        let mut out = request.forwarded_head();
        out.extend_from_slice(&rest);
        if upstream.write_all(&out).await.is_err() {
            return;
        }
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// Records `refusal` and answers 403 naming it.
async fn refuse(shared: &Shared, client: &mut TcpStream, refusal: Refusal) {
    let (code, reason, body) = if refusal.is_policy() {
        let body = format!(
            "scv: the sandbox's network allowlist refused {}\n",
            refusal.explain()
        );
        (403, "Forbidden", body)
    } else {
        (502, "Bad Gateway", format!("scv: {}\n", refusal.explain()))
    };
    shared.record(refusal);
    let _ = reply(client, code, reason, &body).await;
}

async fn connect(addrs: &[SocketAddr]) -> Option<TcpStream> {
    for addr in addrs {
        if let Ok(Ok(stream)) =
            tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await
        {
            let _ = stream.set_nodelay(true);
            return Some(stream);
        }
    }
    None
}

/// Reads until the end of the head; the head and what came after it.
async fn read_head(client: &mut TcpStream) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let start = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = memchr::memmem::find(&buf[start..], b"\r\n\r\n") {
            let end = start + end + 4;
            let rest = buf.split_off(end);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
    }
}

/// Reads the tunnel's first bytes into `hello` until the ClientHello is
/// whole: its server name, or `NotTls` (also when it never completes).
async fn read_hello(client: &mut TcpStream, hello: &mut Vec<u8>) -> std::io::Result<Hello> {
    let mut chunk = [0u8; 4096];
    loop {
        match sni::parse(hello) {
            Hello::Incomplete if hello.len() >= sni::MAX_HELLO => return Ok(Hello::NotTls),
            Hello::Incomplete => {}
            done => return Ok(done),
        }
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(Hello::NotTls);
        }
        hello.extend_from_slice(&chunk[..n]);
    }
}

async fn reply(client: &mut TcpStream, code: u16, reason: &str, body: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    reply_raw(client, head.as_bytes()).await
}

async fn reply_raw(client: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    client.write_all(bytes).await?;
    client.flush().await
}

/// A proxy request's head.
struct Request {
    connect: bool,
    host: String,
    port: u16,
    /// Forwarded requests: method, origin-form target, version, headers
    /// (without the proxy's own).
    method: String,
    target: String,
    headers: Vec<(String, Vec<u8>)>,
}

impl Request {
    fn parse(head: &[u8]) -> Result<Request, String> {
        let mut headers = [httparse::EMPTY_HEADER; 128];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(head) {
            Ok(httparse::Status::Complete(_)) => {}
            _ => return Err("a malformed request head".into()),
        }
        let method = parsed.method.unwrap_or_default().to_string();
        let target = parsed.path.unwrap_or_default();
        if method == "CONNECT" {
            let (host, port) = split_authority(target, 443)?;
            return Ok(Request {
                connect: true,
                host,
                port,
                method,
                target: String::new(),
                headers: Vec::new(),
            });
        }
        let Some(rest) = target.strip_prefix("http://") else {
            return Err(format!(
                "this is a proxy: ask for an absolute http:// URL or CONNECT, not `{target}`"
            ));
        };
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        let authority = authority.rsplit('@').next().unwrap_or(authority);
        let (host, port) = split_authority(authority, 80)?;
        let mut kept = Vec::new();
        for header in parsed.headers.iter() {
            let name = header.name.to_ascii_lowercase();
            // One request per connection (`Connection: close` below): a
            // client's next request, for any host, comes on a new one.
            if name.starts_with("proxy-") || name == "connection" || name == "keep-alive" {
                continue;
            }
            if name == "host" {
                let said = String::from_utf8_lossy(header.value);
                let (said, _) = split_authority(said.trim(), port)?;
                if said != host {
                    return Err(format!(
                        "the Host header `{said}` differs from the URL's host `{host}`"
                    ));
                }
            }
            kept.push((header.name.to_string(), header.value.to_vec()));
        }
        Ok(Request {
            connect: false,
            host,
            port,
            method,
            target: path.to_string(),
            headers: kept,
        })
    }

    fn forwarded_head(&self) -> Vec<u8> {
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, self.target).into_bytes();
        for (name, value) in &self.headers {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"Connection: close\r\n\r\n");
        out
    }
}

/// `host[:port]` (IPv6 in brackets), the host normalized.
fn split_authority(authority: &str, default_port: u16) -> Result<(String, u16), String> {
    let bad = || format!("`{authority}` is not host:port");
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(bad)?;
        let port = match after.strip_prefix(':') {
            Some(port) => port.parse().map_err(|_| bad())?,
            None if after.is_empty() => default_port,
            None => return Err(bad()),
        };
        (host, port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, port.parse().map_err(|_| bad())?),
            None => (authority, default_port),
        }
    };
    if host.is_empty() {
        return Err(bad());
    }
    Ok((super::allowlist::normalize(host), port))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(head: &str) -> Result<Request, String> {
        Request::parse(head.as_bytes())
    }

    #[test]
    fn requests_name_their_host_once_and_drop_the_proxys_headers() {
        let r = parse("CONNECT Crates.IO.:443 HTTP/1.1\r\nHost: crates.io:443\r\n\r\n").unwrap();
        assert!(r.connect);
        assert_eq!((r.host.as_str(), r.port), ("crates.io", 443));
        let r = parse("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((r.host.as_str(), r.port), ("::1", 8443));
        let r = parse(
            "GET http://user:pw@pypi.org/simple/ HTTP/1.1\r\nHost: pypi.org\r\nProxy-Authorization: x\r\nAccept: */*\r\n\r\n",
        )
        .unwrap();
        assert!(!r.connect);
        assert_eq!((r.host.as_str(), r.port), ("pypi.org", 80));
        let head = String::from_utf8(r.forwarded_head()).unwrap();
        assert_eq!(
            head,
            "GET /simple/ HTTP/1.1\r\nHost: pypi.org\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        // The credentials' `@` cannot smuggle another host in.
        let r = parse("GET http://pypi.org@evil.test/ HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(r.host, "evil.test");
        for bad in [
            "GET http://pypi.org/ HTTP/1.1\r\nHost: evil.test\r\n\r\n",
            "GET /simple/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n",
            "GET https://pypi.org/ HTTP/1.1\r\n\r\n",
            "CONNECT pypi.org:http HTTP/1.1\r\n\r\n",
            "CONNECT :443 HTTP/1.1\r\n\r\n",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
