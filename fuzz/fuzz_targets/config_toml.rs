//! `config.toml` parsing and validation (`Config::parse`: TOML, the known
//! keys, providers, MCP servers, error locations) on any UTF-8 text.

#![no_main]

use libfuzzer_sys::fuzz_target;
use scv_server::config::Config;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(config) = Config::parse(text, Path::new("config.toml")) {
        let _ = config.is_secret("OPENAI_API_KEY");
    }
});
