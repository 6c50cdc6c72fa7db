//! Pinning: servers on one CPU, the bench's clients on another.
//!
//! On a 2-core machine a loopback round trip costs about 15 µs when client
//! and server share a CPU and several times that across CPUs, and the
//! scheduler flips between the two. Pinning makes a run say which case it
//! measured. It uses `taskset` (util-linux) rather than `sched_setaffinity`
//! through `libc`, so the bench needs no `unsafe`.

use std::process::Command;

use harness::server::Backend;
use lockcore::Connection;

/// Pins every thread of process `pid` to `cpu`.
pub fn pin(pid: u32, cpu: usize) -> Result<(), String> {
    let status = Command::new("taskset")
        .args(["--all-tasks", "--pid", "--cpu-list"])
        .arg(cpu.to_string())
        .arg(pid.to_string())
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run taskset (util-linux): {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("taskset could not pin process {pid} to CPU {cpu}"))
    }
}

/// Pins this process to `cpu`. Called before the runtime starts, so every
/// thread it starts inherits the pinning.
pub fn pin_self(cpu: usize) -> Result<(), String> {
    pin(std::process::id(), cpu)
}

/// Pins the server behind `conn` to `cpu`, found by the `process_id` it
/// reports in `INFO server`. A container's pid is its own namespace's, so
/// the Docker backend is left unpinned, and the caller says so.
pub async fn pin_server(backend: &Backend, conn: &Connection, cpu: usize) -> Result<(), String> {
    if !matches!(backend, Backend::Process) {
        return Err(format!(
            "servers run on the {} backend: only redis-server processes are pinned",
            backend.label()
        ));
    }
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut conn.clone())
        .await
        .map_err(|e| e.to_string())?;
    let pid = info
        .lines()
        .find_map(|line| line.strip_prefix("process_id:"))
        .and_then(|pid| pid.trim().parse().ok())
        .ok_or("INFO server names no process_id")?;
    pin(pid, cpu)
}
