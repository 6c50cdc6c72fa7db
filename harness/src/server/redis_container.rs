//! A Redis server in a Docker container, driven with the `docker` CLI.
//!
//! Containers use the host's network and listen on a free loopback port, so
//! a replica can reach its master at `127.0.0.1:<port>` exactly as with
//! processes, and a restarted node comes back at the same address. Node
//! faults are the engine's: `docker kill`, `docker pause`, `docker unpause`.
//!
//! Containers do not die with their parent the way child processes do, so
//! the first container also starts a *reaper*: a small shell that waits for
//! this process's end (its stdin pipe closes, however the process ends:
//! normally, on a panic, on Ctrl-C, on `kill -9`) and then removes every
//! container labelled with this process's id.

use std::io::Write as _;
use std::net::TcpListener;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio::time::{Instant, sleep};

use super::redis_process::ping;
use crate::error::{HarnessError, Result};

/// The label that marks this process's containers.
pub const OWNER_LABEL: &str = "lockstages.owner";

const READY_WITHIN: Duration = Duration::from_secs(20);
const PORT_ATTEMPTS: usize = 20;

/// Why a launch failed: a port to try again with, or for good.
enum Launch {
    PortTaken,
    Failed(HarnessError),
}

/// Whether a Docker engine answers here.
pub fn docker_answers() -> bool {
    Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// A `redis-server` container.
#[derive(Debug)]
pub struct RedisContainer {
    image: String,
    port: u16,
    extra_args: Vec<String>,
    id: Option<String>,
}

impl RedisContainer {
    /// Starts a container of `image` on a free loopback port and waits
    /// until it answers PING.
    pub async fn start(image: &str, extra_args: &[&str]) -> Result<Self> {
        start_reaper()?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut container = Self {
            image: image.to_owned(),
            port,
            extra_args: extra_args.iter().map(|s| (*s).to_owned()).collect(),
            id: None,
        };
        // Another process may take the free port before the container
        // binds it; the server then exits at once, and we try another port.
        for _ in 0..PORT_ATTEMPTS {
            match container.launch().await {
                Err(Launch::PortTaken) => {
                    container.port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
                }
                Err(Launch::Failed(e)) => return Err(e),
                Ok(()) => return Ok(container),
            }
        }
        Err(HarnessError::ServerStart(format!(
            "no free port after {PORT_ATTEMPTS} attempts"
        )))
    }

    async fn launch(&mut self) -> std::result::Result<(), Launch> {
        let owner = format!("{OWNER_LABEL}={}", std::process::id());
        let port = self.port.to_string();
        let output = Command::new("docker")
            .args([
                "run",
                "-d",
                "--network",
                "host",
                "--label",
                &owner,
                &self.image,
            ])
            .args([
                "--port",
                &port,
                "--bind",
                "127.0.0.1",
                "--protected-mode",
                "no",
            ])
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--notify-keyspace-events",
                "Ex",
            ])
            .args(&self.extra_args)
            .output()
            .map_err(|e| {
                Launch::Failed(HarnessError::NoRedis(format!("cannot run docker: {e}")))
            })?;
        if !output.status.success() {
            return Err(Launch::Failed(HarnessError::ServerStart(format!(
                "docker run {} failed: {}\n(no registry here? build a local image with docker/build-local-image.sh \
                 and set LOCKSTAGES_REDIS_IMAGE)",
                self.image,
                String::from_utf8_lossy(&output.stderr).trim()
            ))));
        }
        self.id = Some(String::from_utf8_lossy(&output.stdout).trim().to_owned());
        let deadline = Instant::now() + READY_WITHIN;
        let mut tries = 0u32;
        while !ping(self.port).await {
            tries += 1;
            // Now and then, see whether the server gave up (a taken port).
            if tries.is_multiple_of(20) && !self.running() {
                let log = self.logs();
                self.remove();
                return Err(if log.contains("Address already in use") {
                    Launch::PortTaken
                } else {
                    Launch::Failed(HarnessError::ServerStart(format!(
                        "the container of {} exited; its log ends with:\n{log}",
                        self.image
                    )))
                });
            }
            if Instant::now() > deadline {
                self.remove();
                return Err(Launch::Failed(HarnessError::ServerStart(format!(
                    "container of {} gave no PONG on port {} within {READY_WITHIN:?}",
                    self.image, self.port
                ))));
            }
            sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }

    fn running(&self) -> bool {
        let Some(id) = &self.id else { return false };
        Command::new("docker")
            .args(["inspect", "--format", "{{.State.Running}}", id])
            .output()
            .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "true")
    }

    fn logs(&self) -> String {
        let Some(id) = &self.id else {
            return String::new();
        };
        Command::new("docker")
            .args(["logs", "--tail", "10", id])
            .output()
            .map(|out| {
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                )
            })
            .unwrap_or_default()
    }

    /// The loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `docker kill`: the server vanishes with its memory.
    pub fn kill(&mut self) -> Result<()> {
        self.remove();
        Ok(())
    }

    /// `docker pause`: the cgroup freezer stops every process in it.
    pub fn pause(&self) -> Result<()> {
        self.docker("pause")
    }

    /// `docker unpause`.
    pub fn resume(&self) -> Result<()> {
        self.docker("unpause")
    }

    /// A new, empty container at the same address.
    pub async fn restart(&mut self) -> Result<()> {
        self.remove();
        match self.launch().await {
            Ok(()) => Ok(()),
            Err(Launch::PortTaken) => Err(HarnessError::ServerStart(format!(
                "port {} was taken while the container was down",
                self.port
            ))),
            Err(Launch::Failed(e)) => Err(e),
        }
    }

    fn docker(&self, verb: &str) -> Result<()> {
        let id = self
            .id
            .as_deref()
            .ok_or_else(|| HarnessError::ServerStart("the container is not running".into()))?;
        let status = Command::new("docker")
            .args([verb, id])
            .stdout(Stdio::null())
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(HarnessError::ServerStart(format!(
                "docker {verb} {id} failed"
            )))
        }
    }

    fn remove(&mut self) {
        if let Some(id) = self.id.take() {
            let _ = Command::new("docker")
                .args(["rm", "-f", &id])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

impl Drop for RedisContainer {
    fn drop(&mut self) {
        self.remove();
    }
}

fn start_reaper() -> Result<()> {
    static REAPER: OnceLock<Mutex<(Child, ChildStdin)>> = OnceLock::new();
    if REAPER.get().is_some() {
        return Ok(());
    }
    let script = format!(
        "cat >/dev/null; docker ps -aq --filter label={OWNER_LABEL}={pid} | xargs -r docker rm -f >/dev/null 2>&1",
        pid = std::process::id()
    );
    // Not started through `process::spawn`: the reaper must outlive us.
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| HarnessError::ServerStart("reaper without stdin".into()))?;
    let _ = stdin.flush();
    let _ = REAPER.set(Mutex::new((child, stdin)));
    Ok(())
}
