//! Child processes that cannot outlive the test or the CLI that made them.
//!
//! A command is done when every process it started is gone from the
//! process table: stopped, and waited for. Three rules make that so.
//!
//! - **Each child is stopped and waited for by its owner** ([`stop`]): a
//!   `redis-server`, an ensemble member or a holder process is killed with
//!   its whole process group (each child leads a group of its own, so a
//!   server's forked children, such as the one that streams a snapshot to
//!   a replica, go with it) and reaped.
//! - **Orphans come back to us.** This process is a *child subreaper*
//!   (`PR_SET_CHILD_SUBREAPER`): a grandchild whose parent died (that
//!   snapshot child, when its master is killed mid-sync) is handed to us,
//!   not to the system's init, and we reap it ([`reap_orphans`]). Without
//!   this, such a process sat in the process table as a zombie after the
//!   command had returned, until init got round to it.
//! - **At exit, whatever is left is stopped and waited for** ([`stop_all`],
//!   registered with `atexit`): a child whose owner never dropped it (a
//!   cell's task ended by `std::process::exit` after Ctrl-C, a server a
//!   test binary holds in a static) is killed and reaped before the
//!   process ends, and so is every orphan.
//!
//! `PR_SET_PDEATHSIG = SIGKILL` stays as the backstop for the one way out
//! no code runs on, `kill -9`: the kernel kills each child when we go. The
//! signal follows the *thread* that forked the child, not the process, so
//! all children are forked by one thread that lives as long as the
//! process: a test thread or a tokio worker that ends early cannot take its
//! servers with it.
#![allow(unsafe_code)]

use std::collections::HashSet;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

/// The children started here and not yet stopped by their owner, by
/// process id (each the leader of its own process group).
fn running() -> MutexGuard<'static, HashSet<u32>> {
    static RUNNING: OnceLock<Mutex<HashSet<u32>>> = OnceLock::new();
    RUNNING
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Set once the exit has begun: no child may start after [`stop_all`] has
/// looked.
static CLOSING: AtomicBool = AtomicBool::new(false);

/// Held while a child is forked, so that [`stop_all`] sees it registered.
fn forking() -> MutexGuard<'static, ()> {
    static FORKING: Mutex<()> = Mutex::new(());
    FORKING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn spawner() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        become_subreaper();
        stop_all_at_exit();
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("lockstages-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(spawn_here(&mut command));
                }
            })
            .expect("the OS refused to start the spawner thread");
        Mutex::new(tx)
    })
}

fn spawn_here(command: &mut Command) -> io::Result<Child> {
    let _forking = forking();
    if CLOSING.load(Ordering::SeqCst) {
        return Err(io::Error::other("the process is exiting; no new child"));
    }
    let parent = std::process::id();
    // A group of its own: stopping the child stops whatever it forked.
    // It also keeps a terminal's Ctrl-C, which goes to our group, from
    // reaching the servers before we stop them ourselves.
    command.process_group(0);
    // SAFETY: the closure runs in the forked child before exec and only
    // calls async-signal-safe functions (prctl, getppid, _exit).
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect.
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let child = command.spawn()?;
    running().insert(child.id());
    Ok(child)
}

/// Starts `command` as a child that dies with this process.
pub fn spawn(command: Command) -> io::Result<Child> {
    let (reply_tx, reply_rx) = mpsc::channel();
    spawner()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .send((command, reply_tx))
        .map_err(|_| io::Error::other("the spawner thread is gone"))?;
    reply_rx
        .recv()
        .map_err(|_| io::Error::other("the spawner thread is gone"))?
}

/// Runs `command` to its end, as [`Command::output`] does, as a child of
/// ours like any other: a question asked of a program (`java -version`)
/// when the process exits is stopped and waited for with the servers.
pub fn output(mut command: Command) -> io::Result<std::process::Output> {
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = spawn(command)?;
    let pid = child.id();
    let output = child.wait_with_output();
    running().remove(&pid);
    output
}

/// Kills `child` (started by [`spawn`]) with its process group, waits for
/// it, and reaps any orphan that came back to us meanwhile.
pub fn stop(child: &mut Child) {
    let pid = child.id();
    kill_group(pid);
    let _ = child.wait();
    running().remove(&pid);
    reap_orphans();
}

/// Notes that `child` has been waited for by its owner (it died of a
/// fault, `kill -9`, and was reaped there).
pub fn waited(child: &Child) {
    running().remove(&child.id());
    reap_orphans();
}

/// The signals the harness sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// `kill -9`: no goodbye, no cleanup, connections reset by the kernel.
    Kill,
    /// Freezes every thread, as a stop-the-world GC pause does.
    Stop,
    /// Thaws a stopped process.
    Continue,
}

/// Sends `signal` to process `pid`.
pub fn send(pid: u32, signal: Signal) -> io::Result<()> {
    let number = match signal {
        Signal::Kill => libc::SIGKILL,
        Signal::Stop => libc::SIGSTOP,
        Signal::Continue => libc::SIGCONT,
    };
    let pid = libc::pid_t::try_from(pid).map_err(io::Error::other)?;
    // SAFETY: kill(2) has no memory-safety preconditions.
    if unsafe { libc::kill(pid, number) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// SIGKILL to the process group `pid` leads (and to `pid` itself, should
/// it lead none).
fn kill_group(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        if libc::kill(-pid, libc::SIGKILL) != 0 {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// Asks the kernel to hand us the orphans among our descendants.
fn become_subreaper() {
    // SAFETY: prctl(2) with PR_SET_CHILD_SUBREAPER takes a plain integer.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
    }
}

/// A child of ours, as the process table shows it.
struct ChildEntry {
    pid: libc::pid_t,
    group: libc::pid_t,
}

/// Our children, read from `/proc/<pid>/stat`.
fn children() -> Vec<ChildEntry> {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: libc::pid_t = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // "pid (comm) state ppid pgrp …": comm may hold spaces and
            // parentheses, so the fields are counted from its last ')'.
            let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
            let parent = fields.nth(1)?;
            let group = fields.next()?.parse().ok()?;
            (parent == me).then_some(ChildEntry { pid, group })
        })
        .collect()
}

/// Whether `child` is an orphan that came back to us: a process of a
/// group one of our children started that is not that group's leader.
/// Our direct children are left alone: those [`spawn`] started lead their
/// groups and are waited for by their owners, and those that other code
/// started (a `Command::output`, the Docker reaper) are in our own group or
/// lead one of their own, and are waited for by that code.
fn is_orphan(child: &ChildEntry) -> bool {
    // SAFETY: getpgrp(2) has no preconditions.
    let our_group = unsafe { libc::getpgrp() };
    child.pid != child.group && child.group != our_group
}

/// Reaps the orphans that have already exited; leaves the rest running.
pub fn reap_orphans() {
    for orphan in children().iter().filter(|child| is_orphan(child)) {
        // SAFETY: waitpid(2) on one pid, with no status pointer.
        unsafe {
            libc::waitpid(orphan.pid, std::ptr::null_mut(), libc::WNOHANG);
        }
    }
}

/// Stops every child [`spawn`] started that is still running and every
/// orphan that came back to us, and waits until each is gone from the
/// process table (at most a few seconds: a process that SIGKILL cannot
/// end is the kernel's). No child starts after this.
pub fn stop_all() {
    let _forking = forking();
    CLOSING.store(true, Ordering::SeqCst);
    // Only those still our children: a pid whose owner reaped it without
    // telling us may since name another process.
    let ours: HashSet<u32> = children()
        .iter()
        .filter_map(|child| u32::try_from(child.pid).ok())
        .collect();
    let leaders: Vec<u32> = running().drain().filter(|pid| ours.contains(pid)).collect();
    for &pid in &leaders {
        kill_group(pid);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    for pid in leaders {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            continue;
        };
        // Its owner may be waiting for it on another thread at this very
        // moment; whichever of us reaps it, it is gone.
        wait_until_gone(pid, deadline);
    }
    loop {
        let orphans: Vec<ChildEntry> = children().into_iter().filter(is_orphan).collect();
        if orphans.is_empty() || Instant::now() > deadline {
            break;
        }
        for orphan in orphans {
            // SAFETY: kill(2) and waitpid(2) on one pid of ours.
            unsafe {
                libc::kill(orphan.pid, libc::SIGKILL);
            }
            wait_until_gone(orphan.pid, deadline);
        }
    }
}

/// Reaps `pid` once it has exited, polling until `deadline`; returns at
/// once if it is not (or no longer) our child.
fn wait_until_gone(pid: libc::pid_t, deadline: Instant) {
    loop {
        // SAFETY: waitpid(2) on one pid, with no status pointer.
        let reaped = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        if reaped != 0 || Instant::now() > deadline {
            // Reaped (pid), or not ours to wait for any more (-1, ECHILD).
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Registers [`stop_all`] to run when the process exits normally: main's
/// return, `std::process::exit` (the CLI's failure and Ctrl-C paths), a
/// test binary's end.
fn stop_all_at_exit() {
    extern "C" fn at_exit() {
        stop_all();
    }
    // SAFETY: `at_exit` takes and returns nothing and does not unwind
    // (it only signals, waits and reads /proc); `atexit` keeps the pointer
    // until the process ends.
    unsafe {
        libc::atexit(at_exit);
    }
}
