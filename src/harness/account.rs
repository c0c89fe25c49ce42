//! The account harnesses run as. When the config's `agent_uid` names
//! another account than the service's own, each turn runs as that account:
//! its uid, its primary group, its supplementary groups and its HOME, all
//! from its passwd and group entries. Otherwise nothing changes and the turn
//! runs as the service.

use std::ffi::CString;
use std::path::PathBuf;
use std::sync::Mutex;

use nix::unistd::{Uid, User};

/// An account from the passwd database, as a spawner needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// Its name (`USER` and `LOGNAME` in the harness's environment).
    pub name: String,
    /// Its uid.
    pub uid: u32,
    /// Its primary group.
    pub gid: u32,
    /// Every group it is in, the primary one included (`initgroups`'s list).
    pub groups: Vec<u32>,
    /// Its home folder (`HOME`).
    pub home: PathBuf,
}

impl Account {
    /// Looks `uid` up in the passwd and group databases.
    pub fn lookup(uid: u32) -> Result<Account, String> {
        let user = User::from_uid(Uid::from_raw(uid))
            .map_err(|e| format!("cannot read the passwd entry of uid {uid}: {e}"))?
            .ok_or_else(|| format!("the agent account uid {uid} has no passwd entry"))?;
        let name = CString::new(user.name.clone())
            .map_err(|_| format!("the account name of uid {uid} holds a NUL byte"))?;
        let groups = nix::unistd::getgrouplist(&name, user.gid)
            .map_err(|e| format!("cannot read the groups of {}: {e}", user.name))?;
        Ok(Account {
            name: user.name,
            uid,
            gid: user.gid.as_raw(),
            groups: groups.iter().map(|g| g.as_raw()).collect(),
            home: user.dir,
        })
    }
}

/// Accounts looked up so far (the passwd file is read once per uid, not per
/// turn; an account added while the service runs is found on its first use).
static CACHE: Mutex<Vec<Account>> = Mutex::new(Vec::new());

/// The account a turn runs as: `None` when `agent_uid` is unset or is the
/// service's own effective uid (the turn runs as the service), else the
/// looked-up account.
pub(crate) fn for_agent(agent_uid: Option<u32>) -> Result<Option<Account>, String> {
    let Some(uid) = agent_uid else {
        return Ok(None);
    };
    if uid == nix::unistd::geteuid().as_raw() {
        return Ok(None);
    }
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(a) = cache.iter().find(|a| a.uid == uid) {
        return Ok(Some(a.clone()));
    }
    let account = Account::lookup(uid)?;
    cache.push(account.clone());
    Ok(Some(account))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_services_own_uid_is_no_switch() {
        let me = nix::unistd::geteuid().as_raw();
        assert_eq!(for_agent(None), Ok(None));
        assert_eq!(for_agent(Some(me)), Ok(None));
    }

    #[test]
    fn an_account_comes_with_its_groups_and_home() {
        // uid 0 is in every passwd file, whoever runs the test.
        let root = Account::lookup(0).unwrap();
        assert_eq!(root.name, "root");
        assert_eq!(root.gid, 0);
        assert!(root.groups.contains(&0), "{root:?}");
        assert!(root.home.is_absolute());
    }

    #[test]
    fn a_uid_without_an_entry_is_refused() {
        let e = Account::lookup(3_999_999_999).unwrap_err();
        assert!(e.contains("no passwd entry"), "{e}");
    }
}
