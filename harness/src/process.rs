//! Child processes that cannot outlive the test or the CLI that made them.
//!
//! Every child (a `redis-server`, a holder process) is started with
//! `PR_SET_PDEATHSIG = SIGKILL`: the kernel kills it when its parent goes,
//! even when the parent panics, is killed with `kill -9`, or gets Ctrl-C.
//! The signal follows the *thread* that forked the child, not the process,
//! so all children are forked by one thread that lives as long as the
//! process: a test thread or a tokio worker that ends early cannot take its
//! servers with it.
#![allow(unsafe_code)]

use std::io;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

fn spawner() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
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
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
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
    command.spawn()
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
