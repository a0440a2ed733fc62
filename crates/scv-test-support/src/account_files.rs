//! What the crash tests check in a ClawBot account store after a kill.

use scv_ilink::{AccountStore, Credentials, Delivery, Settings};
use std::path::Path;

/// Every file of every account parses as its type reads it, strictly; a
/// write cut before its rename is only a `.NAME.PID.tmp` beside the real
/// file, and nothing else is there. Returns the accounts and, for each,
/// its credentials if it has any.
pub fn accounts_parse(home: &Path) -> Vec<(String, Option<Credentials>)> {
    let store = AccountStore::new(home);
    store
        .accounts()
        .into_iter()
        .map(|account| {
            let credentials = files_parse(&store, &account);
            (account, credentials)
        })
        .collect()
}

/// [`accounts_parse`] for one account; its credentials if it has any.
pub fn files_parse(store: &AccountStore, account: &str) -> Option<Credentials> {
    let mut credentials = None;
    for entry in std::fs::read_dir(store.dir(account)).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let bytes = std::fs::read(entry.path()).unwrap();
        match name.as_str() {
            "credentials.json" => credentials = Some(strict::<Credentials>(account, &name, &bytes)),
            "settings.json" => drop(strict::<Settings>(account, &name, &bytes)),
            "delivery.json" => drop(strict::<Delivery>(account, &name, &bytes)),
            tmp if tmp.starts_with('.') && tmp.ends_with(".tmp") => {}
            other => panic!("unexpected file {other} in account {account}"),
        }
    }
    credentials
}

fn strict<T: serde::de::DeserializeOwned>(account: &str, name: &str, bytes: &[u8]) -> T {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|err| panic!("{account}/{name} does not parse: {err}"))
}
