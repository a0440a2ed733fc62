//! Web servers on loopback for the egress tests: plain HTTP, and HTTPS
//! with a certificate from a test CA (rcgen), each counting what it
//! served. Paths: `/hello`, `/page` (HTML), `/text`, `/binary`,
//! `/left-pad` (an npm package document), `/huge`
//! (4 MiB), `/slow` (headers, then nothing), `/redirect?to=URL`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub(crate) struct WebServer {
    pub port: u16,
    pub hits: Arc<AtomicUsize>,
}

impl WebServer {
    pub(crate) fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// A test CA and a certificate it signed for `names`: (CA PEM, server
/// config).
pub(crate) fn test_ca(names: &[&str]) -> (String, Arc<rustls::ServerConfig>) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "SCV test CA");
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(names)
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let chain = vec![leaf.der().clone(), ca_cert.der().clone()];
    let key = rustls::pki_types::PrivateKeyDer::try_from(leaf_key.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    (ca_cert.pem(), Arc::new(config))
}

/// Starts a server; with `tls`, HTTPS with that configuration.
pub(crate) async fn serve(tls: Option<Arc<rustls::ServerConfig>>) -> WebServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let hits = counted.clone();
            let tls = tls.clone();
            tokio::spawn(async move {
                match tls {
                    Some(config) => {
                        let acceptor = tokio_rustls::TlsAcceptor::from(config);
                        if let Ok(stream) = acceptor.accept(stream).await {
                            answer(stream, &hits, "https").await;
                        }
                    }
                    None => answer(stream, &hits, "http").await,
                }
            });
        }
    });
    WebServer { port, hits }
}

const PAGE: &str = "<html><head><title>T</title><script>var x = 1;</script></head><body>\
<h1>Release notes</h1><p>See <a href=\"https://example.org/docs\">the docs</a>.</p>\
<pre><code>cargo build --release</code></pre>\
<table><tr><th>name</th><th>size</th></tr><tr><td>alpha</td><td>12</td></tr></table>\
</body></html>";

async fn answer<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    hits: &AtomicUsize,
    scheme: &str,
) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    hits.fetch_add(1, Ordering::SeqCst);
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    let cookie = head
        .lines()
        .any(|l| l.to_ascii_lowercase().starts_with("cookie:"));
    let send = |status: &str, kind: &str, extra: &str, body: Vec<u8>| {
        let mut out = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nSet-Cookie: s=1\r\n{extra}Connection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        out.extend(body);
        out
    };
    let reply = if path == "/hello" {
        send(
            "200 OK",
            "text/plain",
            "",
            format!("hello over {scheme}\n").into_bytes(),
        )
    } else if path == "/page" {
        send(
            "200 OK",
            "text/html; charset=utf-8",
            "",
            PAGE.as_bytes().to_vec(),
        )
    } else if path == "/text" {
        let body = format!("plain text, cookie sent: {cookie}\n");
        send("200 OK", "text/plain", "", body.into_bytes())
    } else if path == "/left-pad" {
        // An npm registry's package document.
        let body = r#"{"name":"left-pad","dist-tags":{"latest":"1.3.0"},"versions":{"1.3.0":{"name":"left-pad","version":"1.3.0","dist":{"tarball":"http://allowed.test/left-pad-1.3.0.tgz","shasum":"0"}}}}"#;
        send("200 OK", "application/json", "", body.as_bytes().to_vec())
    } else if path == "/binary" {
        send("200 OK", "application/octet-stream", "", vec![0u8, 1, 2, 3])
    } else if path == "/huge" {
        send(
            "200 OK",
            "text/plain",
            "",
            "0123456789abcdef\n".repeat(1 << 18).into_bytes(),
        )
    } else if path == "/slow" {
        let _ = stream
            .write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nstart",
            )
            .await;
        tokio::time::sleep(std::time::Duration::from_secs(120)).await;
        return;
    } else if let Some(to) = path.strip_prefix("/redirect?to=") {
        send(
            "302 Found",
            "text/plain",
            &format!("Location: {to}\r\n"),
            b"moved".to_vec(),
        )
    } else {
        send("404 Not Found", "text/plain", "", b"no such page".to_vec())
    };
    let _ = stream.write_all(&reply).await;
    let _ = stream.shutdown().await;
}
