//! The data folders of this process's servers (a redis-server's, an
//! ensemble member's), named here and removed however the process ends
//! normally.
//!
//! Each server removes its own folder when it is dropped. Some are never
//! dropped: a cell's task ended by `std::process::exit` after Ctrl-C or
//! SIGTERM, a server a test binary holds until it exits. So the first
//! folder made registers an `atexit` handler that removes what is left of
//! this process's folders. `kill -9` alone leaves them, until the next
//! process that makes a folder sweeps the folders of processes that are gone.
//!
//! The variables that move the ensembles' folders elsewhere are named here
//! too: the sweep must look where they point, and the stores' files take
//! them from here.

#![allow(unsafe_code)]

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::sync::Once;

/// Where ZooKeeper members' data folders go (the temporary directory by
/// default).
pub const ZOOKEEPER_DATA_DIR_VAR: &str = "LOCKSTAGES_ZOOKEEPER_DATA_DIR";
/// Where etcd members' data folders go (a tmpfs when there is one).
pub const ETCD_DATA_DIR_VAR: &str = "LOCKSTAGES_ETCD_DATA_DIR";

/// A fresh folder under `base` for one server of this process, named
/// `lockstages-<kind>-<pid>-<tag>-<uuid>` (the tag tells servers of one
/// kind apart: a port, an attempt), and left to be removed at exit if its
/// server does not remove it first.
pub(crate) fn new_folder(base: &Path, kind: &str, tag: impl Display) -> PathBuf {
    remove_at_exit();
    base.join(format!(
        "lockstages-{kind}-{}-{tag}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ))
}

/// Removes what is left of the folders [`new_folder`] named for this
/// process, wherever they went.
fn remove_folders_of_this_process() {
    let pid = std::process::id().to_string();
    remove_folders_where(|owner| owner == pid);
}

/// Removes the folders of processes that are gone: a process ended by
/// `kill -9` (a test that kills a `lockstages` run, say) runs no exit
/// handler, so the next process to make a folder sweeps for it.
fn remove_folders_of_ended_processes() {
    remove_folders_where(|owner| {
        owner.parse::<u32>().is_ok() && !Path::new("/proc").join(owner).exists()
    });
}

/// Removes every `lockstages-<kind>-<pid>-…` folder whose pid `owned`
/// accepts, in each place a server's folder may be.
fn remove_folders_where(owned: impl Fn(&str) -> bool) {
    let mut bases = vec![std::env::temp_dir(), PathBuf::from("/dev/shm")];
    for var in [ZOOKEEPER_DATA_DIR_VAR, ETCD_DATA_DIR_VAR] {
        if let Ok(base) = std::env::var(var) {
            bases.push(PathBuf::from(base));
        }
    }
    bases.sort();
    bases.dedup();
    for base in bases {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let mut parts = name.to_str().unwrap_or_default().split('-');
            let ours = parts.next() == Some("lockstages") && parts.nth(1).is_some_and(&owned);
            if ours {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// Registers, once per process, the removal of its folders at exit (and
/// sweeps the folders that ended processes left).
fn remove_at_exit() {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        remove_folders_of_ended_processes();
        extern "C" fn at_exit() {
            // The servers first: a folder goes once nothing writes in it.
            crate::process::stop_all();
            remove_folders_of_this_process();
        }
        // SAFETY: `at_exit` is a plain function that takes and returns
        // nothing and does not unwind (it only reads directories and removes
        // folders); `atexit` keeps the pointer until the process ends.
        unsafe {
            libc::atexit(at_exit);
        }
    });
}
