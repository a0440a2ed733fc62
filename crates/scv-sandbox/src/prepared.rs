//! A policy made ready for one command: the ruleset and filters built and
//! the private temp directory made, all before `fork`; what runs between
//! `fork` and `exec` is only the kernel calls that apply them.

use crate::policy::{Mode, Policy};
use crate::{network, ruleset};
use landlock::{RulesetCreated, RulesetStatus};
use seccompiler::BpfProgram;
use std::path::Path;

pub struct Prepared {
    confinement: Option<Confinement>,
    /// The command's own temp directory (read-only mode, or a temp
    /// directory holding a denied tree); removed when this is dropped.
    private_tmp: Option<tempfile::TempDir>,
}

/// What [`Confinement::apply`] applies in the child.
pub struct Confinement {
    ruleset: Option<RulesetCreated>,
    filters: Vec<BpfProgram>,
}

impl Prepared {
    pub fn new(policy: &Policy) -> Result<Prepared, crate::Error> {
        let temp = policy
            .temp_dirs
            .first()
            .map(|dir| ruleset::canonical(dir))
            .unwrap_or_else(std::env::temp_dir);
        // A temp directory that holds a denied tree can only be written
        // below its entries, not at its top (`mktemp` would fail there).
        let holds_denied = policy
            .denied
            .iter()
            .any(|d| ruleset::canonical(d).starts_with(&temp));
        let private_tmp = if policy.mode == Mode::ReadOnly || holds_denied {
            let dir = tempfile::Builder::new()
                .prefix("scv-tool-")
                .tempdir_in(&temp)
                .map_err(|e| {
                    crate::Error::io(
                        format!("cannot create a temp directory in {}", temp.display()),
                        e,
                    )
                })?;
            Some(dir)
        } else {
            None
        };
        let ruleset = ruleset::build(policy, private_tmp.as_ref().map(|d| d.path()))?;
        let filters = if policy.network {
            Vec::new()
        } else {
            network::filters()?
        };
        Ok(Prepared {
            confinement: Some(Confinement {
                ruleset: Some(ruleset),
                filters,
            }),
            private_tmp,
        })
    }

    /// The temp directory to give the command as `TMPDIR`, if it has its own.
    pub fn tmpdir(&self) -> Option<&Path> {
        self.private_tmp.as_ref().map(|d| d.path())
    }

    /// The confinement, to move into the child's pre-exec hook (once).
    pub fn take_confinement(&mut self) -> Option<Confinement> {
        self.confinement.take()
    }
}

impl Confinement {
    /// Applies the sandbox to the calling process. Meant for the child
    /// between `fork` and `exec`: it allocates nothing and takes no lock.
    /// No-new-privileges first (Landlock sets it), then Landlock, then the
    /// seccomp filters. A ruleset the kernel does not enforce fails with
    /// EOPNOTSUPP rather than run the command unconfined.
    pub fn apply(&mut self) -> std::io::Result<()> {
        let Some(ruleset) = self.ruleset.take() else {
            return Err(std::io::Error::from_raw_os_error(libc::EALREADY));
        };
        match ruleset.restrict_self() {
            Ok(status) if status.ruleset == RulesetStatus::NotEnforced => {
                return Err(std::io::Error::from_raw_os_error(libc::EOPNOTSUPP))
            }
            Ok(_) => {}
            Err(err) => return Err(std::io::Error::from_raw_os_error(errno_of(&err))),
        }
        for filter in &self.filters {
            if let Err(err) = seccompiler::apply_filter(filter) {
                return Err(std::io::Error::from_raw_os_error(errno_of(&err)));
            }
        }
        Ok(())
    }
}

/// The OS error somewhere in `err`'s chain (EPERM if none), without
/// allocating.
fn errno_of(err: &(dyn std::error::Error + 'static)) -> i32 {
    let mut current = Some(err);
    while let Some(err) = current {
        if let Some(code) = err
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
        {
            return code;
        }
        current = err.source();
    }
    libc::EPERM
}
