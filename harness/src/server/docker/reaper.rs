//! The reaper: removes this process's containers and networks once it ends.
//!
//! A container does not die with the process that started it, and a
//! process killed with `kill -9` runs no destructor. So the first container
//! also starts a reaper: this very program again (`/proc/self/exe`), with
//! [`REAPER_VAR`] set to our process id and its stdin a pipe from us. The
//! pipe closes when we end, however we end (normally, on a panic, on
//! Ctrl-C, on `kill -9`); the reaper then removes everything labelled with
//! our id, through the engine API, and exits.
//!
//! The reaper never reaches `main`: [`reap_if_asked`] runs before `main` in
//! every program that links the harness (a test binary, the CLI), from the
//! ELF constructor list, and exits there when [`REAPER_VAR`] is set. The
//! reaper is in a process group of its own, so the Ctrl-C a terminal sends
//! to our group does not stop it before it has done its work.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use testcontainers::bollard::Docker;
use testcontainers::bollard::query_parameters::{
    ListContainersOptionsBuilder, ListNetworksOptionsBuilder, RemoveContainerOptionsBuilder,
};

use super::{OWNER_LABEL, owner};
use crate::error::Result;

/// Set in the reaper's environment: whose containers to remove.
pub const REAPER_VAR: &str = "LOCKSTAGES_DOCKER_REAPER_FOR";

/// The reaper and the write end of its pipe, kept until we exit.
struct Reaper {
    child: Child,
    pipe: Option<ChildStdin>,
}

/// Starts the reaper, once per process.
pub(crate) fn ensure() -> Result<()> {
    static REAPER: OnceLock<Mutex<Reaper>> = OnceLock::new();
    if REAPER.get().is_some() {
        return Ok(());
    }
    let program = std::env::current_exe()?;
    // Not started through `process::spawn`: the reaper must outlive us.
    let mut child = Command::new(program)
        .env(REAPER_VAR, owner())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    let pipe = child.stdin.take();
    if REAPER.set(Mutex::new(Reaper { child, pipe })).is_ok() {
        // On a normal exit (main's return, `std::process::exit` after
        // Ctrl-C) we close the pipe ourselves and wait until the reaper has
        // removed what is left and exited: the command returns with no
        // process of its own behind it. Only after `kill -9` does the
        // reaper outlive us, as it is there for.
        extern "C" fn at_exit() {
            let Some(reaper) = REAPER.get() else { return };
            let mut reaper = reaper.lock().unwrap_or_else(|p| p.into_inner());
            drop(reaper.pipe.take());
            // A minute at most: an engine that does not answer must not
            // hold the exit for ever (the reaper then goes on alone).
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while matches!(reaper.child.try_wait(), Ok(None))
                && std::time::Instant::now() < deadline
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        // SAFETY: `at_exit` takes and returns nothing and does not unwind
        // (a lock, a close and a wait); `atexit` keeps the pointer until
        // the process ends.
        unsafe {
            libc::atexit(at_exit);
        }
    }
    Ok(())
}

// The ELF constructor list: the loader calls these before `main`.
#[used]
#[unsafe(link_section = ".init_array")]
static REAP_IF_ASKED: extern "C" fn() = reap_if_asked;

/// In a reaper process: waits for its parent's end, removes what the
/// parent made, and exits. Anywhere else: returns at once.
extern "C" fn reap_if_asked() {
    let Ok(parent) = std::env::var(REAPER_VAR) else {
        return;
    };
    // Until the parent ends, nothing arrives and the pipe stays open.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    if let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        runtime.block_on(remove_owned_by(&parent));
    }
    std::process::exit(0);
}

/// Removes every container, then every network, labelled as `parent`'s.
pub async fn remove_owned_by(parent: &str) {
    let Ok(docker) = Docker::connect_with_defaults() else {
        return;
    };
    let filters = HashMap::from([("label", vec![format!("{OWNER_LABEL}={parent}")])]);
    let containers = docker
        .list_containers(Some(
            ListContainersOptionsBuilder::new()
                .all(true)
                .filters(&filters)
                .build(),
        ))
        .await
        .unwrap_or_default();
    // Their names, for the networks' sake: an endpoint a removed container
    // leaves behind answers to its container's name only.
    let mut names = Vec::new();
    for container in containers {
        names.extend(
            container
                .names
                .unwrap_or_default()
                .into_iter()
                .map(|name| name.trim_start_matches('/').to_owned()),
        );
        let Some(id) = container.id else { continue };
        let force = RemoveContainerOptionsBuilder::new().force(true).v(true);
        let _ = docker.remove_container(&id, Some(force.build())).await;
    }
    let networks = docker
        .list_networks(Some(
            ListNetworksOptionsBuilder::new().filters(&filters).build(),
        ))
        .await
        .unwrap_or_default();
    for name in networks.into_iter().filter_map(|n| n.name) {
        let _ = super::network::remove(&docker, &name, &names).await;
    }
}
