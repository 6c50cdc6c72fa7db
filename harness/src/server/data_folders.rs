//! The data folders of this process's servers (`lockstages-<pid>-…` for
//! a redis-server, `lockstages-<store>-<pid>-…` for an ensemble's member),
//! removed however the process ends normally.
//!
//! Each server removes its own folder when it is dropped. Some are never
//! dropped: a cell's task ended by `std::process::exit` after Ctrl-C or
//! SIGTERM, a server a test binary holds until it exits. So the first
//! folder made registers an `atexit` handler that removes what is left of
//! this process's folders; `kill -9` alone leaves them.

#![allow(unsafe_code)]

use std::path::PathBuf;
use std::sync::Once;

/// Removes the data folders this process made (its redis-servers', its
/// ensembles' members'), wherever they went: for a run cut short by a
/// signal, whose servers' own destructors will not run. Returns how many
/// were removed. Only folders named with this process's id are touched.
pub fn remove_data_folders_of_this_process() -> usize {
    let pid = std::process::id().to_string();
    let mut bases = vec![std::env::temp_dir(), PathBuf::from("/dev/shm")];
    for var in [super::zookeeper::DATA_DIR_VAR, super::etcd::DATA_DIR_VAR] {
        if let Ok(base) = std::env::var(var) {
            bases.push(PathBuf::from(base));
        }
    }
    bases.sort();
    bases.dedup();
    let mut removed = 0;
    for base in bases {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            // `lockstages-<pid>-<port>-<uuid>` (a redis-server) or
            // `lockstages-<store>-<pid>-<attempt>-<uuid>` (a cluster).
            let parts: Vec<&str> = name.split('-').collect();
            let ours = parts.first() == Some(&"lockstages")
                && (parts.get(1) == Some(&pid.as_str()) || parts.get(2) == Some(&pid.as_str()));
            if ours && std::fs::remove_dir_all(entry.path()).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

/// Registers, once per process, the removal of its data folders at exit.
pub(crate) fn remove_at_exit() {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        extern "C" fn at_exit() {
            remove_data_folders_of_this_process();
        }
        // SAFETY: `at_exit` is a plain function that takes and returns
        // nothing and does not unwind (it only reads directories and removes
        // folders); `atexit` keeps the pointer until the process ends.
        unsafe {
            libc::atexit(at_exit);
        }
    });
}
