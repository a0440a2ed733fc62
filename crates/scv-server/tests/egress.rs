#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! `sandbox_network = "allowlist"` through the real binaries: sandboxed
//! `bash` commands (curl, python3) against web servers on this machine's
//! loopback, reached by names the daemon resolves through
//! `SCV_TEST_RESOLVE`. The servers run outside the sandbox, as the
//! internet would: a command reaches them only through the session's
//! proxy, and only those the allowlist names.

mod common;
#[path = "common/web.rs"]
mod web;
use common::sandbox::*;
use common::*;

/// Names the daemon resolves to loopback, and the list allowing some.
const RESOLVE: &str =
    "allowed.test=127.0.0.1,other.test=127.0.0.1,evil.wild.test=127.0.0.1,a.b.wild.test=127.0.0.1,wild.test=127.0.0.1";

fn config(extra: &str) -> String {
    format!(
        "{AUTO_SANDBOXED}\nsandbox_network = \"allowlist\"\nsandbox_allowed_domains = [\"allowed.test\", \"*.wild.test\"]\n{extra}"
    )
}

async fn start_allowlist(extra: &str) -> Option<(Place, Rig, String)> {
    if !enforced() {
        return None;
    }
    let place = Place::new();
    let mut rig = rig_in(&place, &config(extra), &[("SCV_TEST_RESOLVE", RESOLVE)]).await;
    let session = rig.session().await;
    Some((place, rig, session))
}

/// Runs one sandboxed command; its output.
async fn run(rig: &mut Rig, session: &str, command: &str) -> String {
    let results = run_all(rig, session, &[("c", command.to_string())]).await;
    results[0].2.clone()
}

#[tokio::test]
async fn allowed_hosts_are_reached_through_the_proxy_and_others_are_refused_by_name() {
    let Some((_place, mut rig, session)) = start_allowlist("").await else {
        return;
    };
    let http = web::serve(None).await;
    let port = http.port;
    // Allowed by name: curl honours HTTP_PROXY, and the proxy forwards.
    let out = run(
        &mut rig,
        &session,
        &format!("curl -sS -m 20 http://allowed.test:{port}/hello"),
    )
    .await;
    assert!(out.starts_with("hello over http\n"), "{out}");
    assert_eq!(http.hits(), 1);
    // Not listed: 403 with a body naming it, and the tool result says
    // which line to add.
    let out = run(
        &mut rig,
        &session,
        &format!("curl -sS -m 20 http://other.test:{port}/hello"),
    )
    .await;
    assert!(
        out.contains("the sandbox's network allowlist refused other.test"),
        "{out}"
    );
    assert!(
        out.contains("[network: the sandbox's allowlist refused other.test: not in sandbox_allowed_domains; to allow it, add \"other.test\" to sandbox_allowed_domains in config.toml]"),
        "{out}"
    );
    // A wildcard entry whose name resolves to loopback: refused.
    let out = run(
        &mut rig,
        &session,
        &format!(
            "curl -sS -m 20 -o /dev/null -w '%{{http_code}}' http://evil.wild.test:{port}/hello"
        ),
    )
    .await;
    assert!(out.starts_with("403"), "{out}");
    assert!(
        out.contains("resolves to 127.0.0.1, a private, loopback or link-local address"),
        "{out}"
    );
    // A raw IP through the proxy: refused.
    let out = run(&mut rig, &session, &format!("curl -sS -m 20 --noproxy '' -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{port}/hello")).await;
    assert!(out.starts_with("403"), "{out}");
    assert!(out.contains("refused 127.0.0.1: a raw IP address"), "{out}");
    assert_eq!(http.hits(), 1, "a refused request reached the server");
}

/// The wall: without the proxy nothing is reachable, however it is
/// tried — the server's loopback, a public address, the proxy's port
/// under another host name.
#[tokio::test]
async fn direct_connections_reach_nothing() {
    let Some((_place, mut rig, session)) = start_allowlist("").await else {
        return;
    };
    let http = web::serve(None).await;
    let port = http.port;
    let script = format!(
        "import socket\nfor host, port in [('127.0.0.1', {port}), ('1.1.1.1', 443), ('::1', {port})]:\n    try:\n        socket.create_connection((host, port), timeout=5)\n        print('connected', host)\n    except OSError as e:\n        print('failed', host, e.__class__.__name__)\n"
    );
    std::fs::write(rig.home.workspace().join("direct.py"), script).unwrap();
    let out = run(
        &mut rig,
        &session,
        "python3 direct.py; curl -sS -m 10 --noproxy '*' http://allowed.test/ 2>&1 | head -c 200",
    )
    .await;
    assert!(!out.contains("connected"), "{out}");
    assert!(out.contains("failed 127.0.0.1"), "{out}");
    assert!(out.contains("failed 1.1.1.1"), "{out}");
    assert!(out.contains("Could not resolve host"), "{out}");
    assert_eq!(http.hits(), 0);
}

#[tokio::test]
async fn https_is_tunnelled_only_when_the_tls_server_name_is_the_connect_host() {
    let Some((_place, mut rig, session)) = start_allowlist("").await else {
        return;
    };
    let (ca, tls) = web::test_ca(&["allowed.test", "other.test"]);
    let https = web::serve(Some(tls)).await;
    let port = https.port;
    let ws = rig.home.workspace();
    std::fs::write(ws.join("ca.pem"), ca).unwrap();
    // Allowed, with the test CA.
    let out = run(
        &mut rig,
        &session,
        &format!("curl -sS -m 20 --cacert ca.pem https://allowed.test:{port}/hello"),
    )
    .await;
    assert!(out.starts_with("hello over https\n"), "{out}");
    assert_eq!(https.hits(), 1);
    // Not listed: the CONNECT is answered 403.
    let out = run(
        &mut rig,
        &session,
        &format!("curl -sS -m 20 --cacert ca.pem https://other.test:{port}/hello"),
    )
    .await;
    assert!(out.contains("403"), "{out}");
    assert!(
        out.contains("refused other.test: not in sandbox_allowed_domains"),
        "{out}"
    );
    // CONNECT to the allowed name, but a ClientHello for another: closed
    // before anything reaches the server, and said.
    let script = format!(
        "import socket, ssl\ns = socket.create_connection(('127.0.0.1', 3128))\ns.sendall(b'CONNECT allowed.test:{port} HTTP/1.1\\r\\nHost: allowed.test:{port}\\r\\n\\r\\n')\nprint(s.recv(100))\nctx = ssl.create_default_context(cafile='ca.pem')\ntry:\n    t = ctx.wrap_socket(s, server_hostname='other.test')\n    t.sendall(b'GET /hello HTTP/1.1\\r\\nHost: other.test\\r\\n\\r\\n')\n    print('got', t.recv(100))\nexcept (OSError, ssl.SSLError) as e:\n    print('refused', e.__class__.__name__)\n"
    );
    std::fs::write(ws.join("sni.py"), script).unwrap();
    let out = run(&mut rig, &session, "python3 sni.py").await;
    assert!(out.contains("200 Connection established"), "{out}");
    assert!(out.contains("refused"), "{out}");
    assert!(!out.contains("got"), "{out}");
    assert!(
        out.contains(
            "the TLS server name (SNI) `other.test` of the tunnel differs from the CONNECT host"
        ),
        "{out}"
    );
    assert_eq!(https.hits(), 1, "the mismatched tunnel reached the server");
}

/// Whether the package managers work through the proxy with the default
/// allowlist, against the real registries (ignored: it needs the
/// internet; run with `--ignored` to decide the default again). Each
/// prints OK or its error.
#[tokio::test]
#[ignore]
async fn package_managers_work_through_the_proxy_with_the_default_list() {
    if !enforced() {
        return;
    }
    let place = Place::new();
    // This machine's toolchains, shown read-only.
    let home = std::env::var("HOME").unwrap();
    let mut rig = rig_in(
        &place,
        &format!("{AUTO_SANDBOXED}\nsandbox_network = \"allowlist\"\nbash_timeout_ms = 300000\nsandbox_readable_roots = [\"{home}/.cargo\", \"{home}/.rustup\"]"),
        &[],
    )
    .await;
    let session = rig.session().await;
    let ws = rig.home.workspace();
    std::fs::create_dir_all(ws.join("crate/src")).unwrap();
    std::fs::write(
        ws.join("crate/Cargo.toml"),
        "[package]\nname = \"probe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nitoa = \"1\"\n",
    )
    .unwrap();
    std::fs::write(ws.join("crate/src/lib.rs"), "").unwrap();
    let cargo = format!("cd crate && RUSTUP_HOME={home}/.rustup CARGO_HOME=\"$TMPDIR/cargo\" {home}/.cargo/bin/cargo fetch && echo OK");
    let checks = [
        ("pip", "PIP_FIND_LINKS= pip download --no-deps --no-cache-dir -d \"$TMPDIR/pip\" six==1.16.0 -q && echo OK"),
        ("npm", "npm view left-pad version --cache \"$TMPDIR/npm\" && echo OK"),
        ("cargo", cargo.as_str()),
        ("git", "git ls-remote https://github.com/rust-lang/log HEAD && echo OK"),
        ("curl", "curl -sS -o /dev/null -w '%{http_code}\\n' https://pypi.org/simple/six/ && echo OK"),
        ("go", "command -v go >/dev/null || { echo 'go: not installed here'; exit 0; }; cd \"$TMPDIR\" && mkdir -p g && cd g && go mod init probe >/dev/null 2>&1; GOPATH=\"$TMPDIR/go\" GOMODCACHE=\"$TMPDIR/gomod\" go get golang.org/x/text@v0.14.0 && echo OK"),
    ];
    for (name, command) in checks {
        let out = run(&mut rig, &session, command).await;
        eprintln!("=== {name}\n{out}");
    }
}

/// The proxy's cost per connection (ignored: a measurement, not a test;
/// `docs/BENCHMARKS.md` has the figures): 300 sequential requests, each on
/// a new connection, to a loopback server — through the proxy in the
/// allowlist's namespace, and directly with `sandbox_network = true` —
/// over HTTP and over HTTPS (a tunnel, TLS handshake included).
#[tokio::test]
#[ignore]
async fn proxy_cost_per_connection() {
    if !enforced() {
        return;
    }
    let (ca, tls) = web::test_ca(&["allowed.test", "localhost"]);
    let http = web::serve(None).await;
    let https = web::serve(Some(tls)).await;
    let script = |proxied: bool| {
        let (host, prefix, connect) = if proxied {
            (
                "allowed.test",
                format!("http://allowed.test:{}", http.port),
                "('127.0.0.1', 3128)".to_string(),
            )
        } else {
            (
                "localhost",
                String::new(),
                format!("('127.0.0.1', {})", http.port),
            )
        };
        let tunnel = if proxied {
            format!(
                "s.sendall(b'CONNECT allowed.test:{0} HTTP/1.1\\r\\n\\r\\n'); s.recv(100)",
                https.port
            )
        } else {
            String::new()
        };
        let tls_connect = if proxied {
            "('127.0.0.1', 3128)".to_string()
        } else {
            format!("('127.0.0.1', {})", https.port)
        };
        format!(
            "import socket, ssl, time, statistics\n\
def http():\n    s = socket.create_connection({connect})\n    s.sendall(b'GET {prefix}/hello HTTP/1.1\\r\\nHost: {host}\\r\\n\\r\\n')\n    while s.recv(4096): pass\n    s.close()\n\
ctx = ssl.create_default_context(cafile='ca.pem')\n\
def https():\n    s = socket.create_connection({tls_connect})\n    {tunnel}\n    t = ctx.wrap_socket(s, server_hostname='{host}')\n    t.sendall(b'GET /hello HTTP/1.1\\r\\nHost: {host}\\r\\n\\r\\n')\n    while t.recv(4096): pass\n    t.close()\n\
for name, f in [('http', http), ('https', https)]:\n    for _ in range(20): f()\n    times = []\n    for _ in range(300):\n        t0 = time.perf_counter(); f(); times.append(time.perf_counter() - t0)\n    print(name, 'median_us', int(statistics.median(times) * 1e6), 'p90_us', int(sorted(times)[270] * 1e6))\n"
        )
    };
    for (proxied, config) in [
        (
            true,
            "sandbox_network = \"allowlist\"\nsandbox_allowed_domains = [\"allowed.test\"]",
        ),
        (false, "sandbox_network = true"),
    ] {
        let place = Place::new();
        let mut rig = rig_in(
            &place,
            &format!("{AUTO_SANDBOXED}\n{config}\nbash_timeout_ms = 300000"),
            &[("SCV_TEST_RESOLVE", RESOLVE)],
        )
        .await;
        let session = rig.session().await;
        let ws = rig.home.workspace();
        std::fs::write(ws.join("ca.pem"), &ca).unwrap();
        std::fs::write(ws.join("bench.py"), script(proxied)).unwrap();
        let out = run(&mut rig, &session, "python3 bench.py").await;
        eprintln!(
            "=== {}\n{out}",
            if proxied {
                "through the proxy"
            } else {
                "direct"
            }
        );
    }
}

/// Loopback under the allowlist: a command's own servers are reached
/// directly (its namespace's loopback, `NO_PROXY`); the host's
/// `localhost` only when the list names it, through the proxy.
#[tokio::test]
async fn a_listed_localhost_is_the_hosts_and_the_commands_own_loopback_stays_direct() {
    if !enforced() {
        return;
    }
    let http = web::serve(None).await;
    let port = http.port;
    let place = Place::new();
    let mut rig = rig_in(
        &place,
        &format!("{AUTO_SANDBOXED}\nsandbox_network = \"allowlist\"\nsandbox_allowed_domains = [\"localhost\"]"),
        &[],
    )
    .await;
    let session = rig.session().await;
    let out = run(
        &mut rig,
        &session,
        &format!("echo \"NO_PROXY=$NO_PROXY\"; curl -sS -m 20 http://localhost:{port}/hello"),
    )
    .await;
    assert!(
        out.starts_with("NO_PROXY=127.0.0.1,::1\nhello over http\n"),
        "{out}"
    );
    assert_eq!(http.hits(), 1);
    // Its own server on its own loopback, with the host's port number:
    // reached directly, never the host's.
    let own = format!(
        "cd \"$TMPDIR\" && echo own > own.txt && (python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1 &) && sleep 1 && curl -sS -m 10 http://127.0.0.1:{port}/own.txt"
    );
    let out = run(&mut rig, &session, &own).await;
    assert!(out.starts_with("own\n"), "{out}");
    assert_eq!(http.hits(), 1);
}

/// Clients that read the proxy variables on their own: Python's urllib
/// (what pip's vendored requests follows too) and npm.
#[tokio::test]
async fn python_and_npm_clients_go_through_the_proxy() {
    let Some((_place, mut rig, session)) = start_allowlist("").await else {
        return;
    };
    let http = web::serve(None).await;
    let port = http.port;
    let python = format!(
        "python3 -c \"import urllib.request; print(urllib.request.urlopen('http://allowed.test:{port}/hello').read().decode())\""
    );
    let out = run(&mut rig, &session, &python).await;
    assert!(out.starts_with("hello over http"), "{out}");
    let npm = format!(
        "command -v npm >/dev/null || {{ echo 'no npm'; exit 0; }}; npm view left-pad version --registry http://allowed.test:{port}/ --cache \"$TMPDIR/npm\" --no-update-notifier"
    );
    let out = run(&mut rig, &session, &npm).await;
    assert!(
        out.starts_with("1.3.0") || out.starts_with("no npm"),
        "{out}"
    );
    let refused = format!(
        "python3 -c \"import urllib.request; urllib.request.urlopen('http://other.test:{port}/hello')\" 2>&1 | tail -1"
    );
    let out = run(&mut rig, &session, &refused).await;
    assert!(out.contains("HTTP Error 403"), "{out}");
    assert!(out.contains("refused other.test"), "{out}");
}

/// A listed address is reached through a tunnel too: clients send no
/// server name for an address, and none is asked for.
#[tokio::test]
async fn a_listed_address_is_tunnelled_without_a_server_name() {
    if !enforced() {
        return;
    }
    let (ca, tls) = web::test_ca(&["127.0.0.1"]);
    let https = web::serve(Some(tls)).await;
    let port = https.port;
    let place = Place::new();
    let mut rig = rig_in(
        &place,
        &format!("{AUTO_SANDBOXED}\nsandbox_network = \"allowlist\"\nsandbox_allowed_domains = [\"127.0.0.1\"]"),
        &[],
    )
    .await;
    let session = rig.session().await;
    std::fs::write(rig.home.workspace().join("ca.pem"), ca).unwrap();
    // 127.0.0.1 is listed, so it is not in NO_PROXY: curl tunnels.
    let out = run(&mut rig, &session, &format!("echo \"NO_PROXY=$NO_PROXY\"; curl -sS -m 20 --cacert ca.pem https://127.0.0.1:{port}/hello")).await;
    assert!(
        out.starts_with("NO_PROXY=localhost,::1\nhello over https\n"),
        "{out}"
    );
    assert_eq!(https.hits(), 1);
}

/// A wildcard covers the names below its domain, not the domain itself;
/// here the address they lead to is listed too, so loopback is allowed.
#[tokio::test]
async fn a_wildcard_covers_subdomains_only() {
    if !enforced() {
        return;
    }
    let http = web::serve(None).await;
    let port = http.port;
    let place = Place::new();
    let mut rig = rig_in(
        &place,
        &format!("{AUTO_SANDBOXED}\nsandbox_network = \"allowlist\"\nsandbox_allowed_domains = [\"*.wild.test\", \"127.0.0.1\"]"),
        &[("SCV_TEST_RESOLVE", RESOLVE)],
    )
    .await;
    let session = rig.session().await;
    let fetch =
        |host: &str| format!("curl -sS -m 20 -w ' %{{http_code}}\\n' http://{host}:{port}/hello");
    let out = run(
        &mut rig,
        &session,
        &format!("{}; {}", fetch("evil.wild.test"), fetch("a.b.wild.test")),
    )
    .await;
    assert!(
        out.starts_with("hello over http\n 200\nhello over http\n 200\n"),
        "{out}"
    );
    let out = run(&mut rig, &session, &fetch("wild.test")).await;
    assert!(out.contains(" 403"), "{out}");
    assert!(
        out.contains("refused wild.test: not in sandbox_allowed_domains"),
        "{out}"
    );
    assert_eq!(http.hits(), 2);
}
