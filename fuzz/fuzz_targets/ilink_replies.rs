//! iLink reply bodies: the `ret`/`errcode` check every reply goes through
//! (`sendmessage`'s among them), then the `getupdates`, `get_bot_qrcode`
//! and `get_qrcode_status` readers, on the checked reply or, when the check
//! refused it, on any JSON the bytes hold. Invariant: a message's text is
//! never blank.

#![no_main]

use libfuzzer_sys::fuzz_target;
use scv_ilink::client::{check_reply, parse_qrcode, parse_qrcode_status, parse_updates};

fuzz_target!(|data: &[u8]| {
    let reply = match check_reply(data) {
        Ok(reply) => reply,
        Err(_) => match serde_json::from_slice(data) {
            Ok(value) => value,
            Err(_) => return,
        },
    };
    if let Ok(updates) = parse_updates(&reply) {
        for message in &updates.msgs {
            if let Some(text) = message.text() {
                assert!(!text.trim().is_empty(), "a blank message text");
            }
        }
    }
    let _ = parse_qrcode(&reply);
    let _ = parse_qrcode_status(&reply);
});
