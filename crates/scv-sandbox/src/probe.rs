//! Can this kernel enforce a sandbox? Asked once by the server, without
//! confining it: creating (not applying) a ruleset that insists on the
//! needed rights tells for Landlock; a child that builds the made-up
//! machine for real tells for the mount namespace. (The process bound is
//! the server's to make: `pids::CgroupTree`.)

use landlock::{
    Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetError, Scope, ABI,
};

/// Set to `1`, the probe answers "unavailable", as on a kernel without
/// Landlock. For tests only.
pub const TEST_NO_LANDLOCK: &str = "SCV_SANDBOX_TEST_NO_LANDLOCK";
/// Set to `1`, the probe finds user namespaces unusable, as on a machine
/// that disables them. For tests only.
pub const TEST_NO_USERNS: &str = "SCV_SANDBOX_TEST_NO_USERNS";

/// The filesystem rights the sandbox's promise needs: reading, writing,
/// linking across directories (`Refer`, Linux 5.19) and truncating
/// (`Truncate`, Linux 6.2). Below that a command could truncate any file.
const REQUIRED: ABI = ABI::V3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// Landlock enforces the filesystem rules. `scoped`: signals to and
    /// abstract sockets of processes outside the sandbox are refused too
    /// (Linux 6.12). `mount_namespace`: commands get the read-only mount
    /// layer. `gaps`: what of the second wall this machine cannot give,
    /// in words (empty when it is whole).
    Enforced {
        scoped: bool,
        mount_namespace: bool,
        gaps: Vec<String>,
    },
    /// The sandbox cannot be enforced here; why.
    Unavailable(String),
}

pub fn probe() -> Support {
    if std::env::var_os(TEST_NO_LANDLOCK).is_some_and(|v| v == "1") {
        return Support::Unavailable(format!("disabled for a test ({TEST_NO_LANDLOCK}=1)"));
    }
    if let Err(err) = insist(|r| r.handle_access(AccessFs::from_all(REQUIRED))) {
        return Support::Unavailable(format!(
            "the kernel's Landlock cannot enforce the filesystem rules (Linux 6.2 or later, with landlock in the lsm= list, is needed): {err}"
        ));
    }
    let scoped = insist(|r| {
        r.handle_access(AccessFs::from_all(REQUIRED))?
            .scope(Scope::from_all(ABI::V6))
    })
    .is_ok();
    let mut gaps = Vec::new();
    if !scoped {
        gaps.push(
            "commands can signal processes outside the sandbox (Landlock scopes need Linux 6.12)"
                .to_string(),
        );
    }
    let namespace = if std::env::var_os(TEST_NO_USERNS).is_some_and(|v| v == "1") {
        Err(format!("disabled for a test ({TEST_NO_USERNS}=1)"))
    } else {
        crate::namespace::probe()
    };
    let mount_namespace = match namespace {
        Ok(()) => true,
        Err(why) => {
            gaps.push(format!("user namespaces are unavailable ({why}): commands see the real machine cut down by Landlock instead of a made-up one (the names in your home are listable, file modes outside the workspace can change, and git directories in the workspace are writable)"));
            false
        }
    };
    Support::Enforced {
        scoped,
        mount_namespace,
        gaps,
    }
}

/// Creates a ruleset that must be fully supported; dropping it closes it.
fn insist(
    build: impl FnOnce(Ruleset) -> Result<Ruleset, RulesetError>,
) -> Result<(), RulesetError> {
    let ruleset = build(Ruleset::default().set_compatibility(CompatLevel::HardRequirement))?;
    ruleset.create().map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_answers_without_confining_the_caller() {
        let support = probe();
        eprintln!("{support:?}");
        // Still free: this process can open a file for writing anywhere it
        // could before.
        let dir = std::env::temp_dir().join(format!("scv-probe-{}", std::process::id()));
        assert!(std::fs::write(&dir, b"x").is_ok());
        let _ = std::fs::remove_file(&dir);
    }
}
