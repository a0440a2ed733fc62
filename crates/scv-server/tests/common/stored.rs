//! Set-up for the durable-session tests.

use super::*;
use std::path::{Path, PathBuf};

/// A mock provider, a home with `extra` config lines, its workspace.
pub(crate) async fn setup(extra: &str) -> (MockProvider, TestHome, PathBuf) {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), extra);
    let workspace = home.workspace();
    (mock, home, workspace)
}

/// A `--stdio` server on `home` that asked for capability `sessions`.
pub(crate) async fn server(home: &Path) -> TestServer {
    let mut server = TestServer::spawn(BIN, home);
    server
        .send(
            json!({"type":"initialize","request_id":"init","protocol_version":2,
                     "capabilities":{"sessions":true}}),
        )
        .await;
    let init = server.expect("initialized").await;
    assert_eq!(init["capabilities"]["sessions"], true);
    server
}
