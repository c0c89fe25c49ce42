//! Which account a loop's check script runs as, and how the runner switches
//! to it (seed 001, point 1: the marker is set after the switch).

use std::path::{Path, PathBuf};

/// An account from the password database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentAccount {
    /// Its login name.
    pub name: String,
    /// Its uid.
    pub uid: u32,
    /// Its primary gid.
    pub gid: u32,
    /// Its home folder.
    pub home: PathBuf,
}

impl AgentAccount {
    /// Looks `name` up; `None` when there is no such account.
    pub fn lookup(name: &str) -> Option<AgentAccount> {
        let user = nix::unistd::User::from_name(name).ok().flatten()?;
        Some(AgentAccount {
            name: user.name,
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
            home: user.dir,
        })
    }

    /// The account this process runs as.
    pub fn current() -> AgentAccount {
        let uid = nix::unistd::geteuid();
        let user = nix::unistd::User::from_uid(uid).ok().flatten();
        AgentAccount {
            name: user
                .as_ref()
                .map_or_else(|| uid.to_string(), |u| u.name.clone()),
            uid: uid.as_raw(),
            gid: nix::unistd::getegid().as_raw(),
            home: user.map_or_else(
                || std::env::var_os("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from),
                |u| u.dir,
            ),
        }
    }
}

/// How the runner gets a script onto its account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Switch {
    /// No switch: the script runs as the runner's own account (there is no
    /// separate agent account, or the runner already is it).
    None,
    /// `sudo -n -u <name> /usr/bin/env CLOUDROOM_LOOP=<id> … bash -c …`.
    Sudo(String),
    /// setgroups([]), setgid, setuid between fork and exec (the runner is
    /// root and there is no sudo), with the same environment.
    Setuid {
        /// The agent's uid.
        uid: u32,
        /// The agent's primary gid.
        gid: u32,
    },
}

/// Whether `program` is an executable file on `PATH`.
pub fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The switch to `agent` (`None`: the runner's own account): none when it is
/// the runner's account, sudo where it exists, else setuid when the runner
/// is root. An error says why the runner cannot become that account.
pub fn switch_to(agent: Option<&AgentAccount>) -> Result<Switch, String> {
    let me = nix::unistd::geteuid().as_raw();
    match agent {
        None => Ok(Switch::None),
        Some(a) if a.uid == me => Ok(Switch::None),
        Some(a) if on_path("sudo").is_some() => Ok(Switch::Sudo(a.name.clone())),
        Some(a) if me == 0 => Ok(Switch::Setuid {
            uid: a.uid,
            gid: a.gid,
        }),
        Some(a) => Err(format!(
            "the website runs as uid {me}, which is not root, and there is no sudo to run scripts as {}",
            a.name
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runners_own_account_needs_no_switch() {
        let me = AgentAccount::current();
        assert_eq!(switch_to(Some(&me)), Ok(Switch::None));
        assert_eq!(switch_to(None), Ok(Switch::None));
        assert_eq!(AgentAccount::lookup("root").map(|a| a.uid), Some(0));
        assert_eq!(AgentAccount::lookup("no-such-account-7731"), None);
    }
}
