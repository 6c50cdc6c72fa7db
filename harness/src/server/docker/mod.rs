//! The Docker backend: one container per node, on testcontainers.
//!
//! - [`RunNetwork`]: each run gets a Docker network of its own, and each
//!   node its own address on it, as separate hosts would have. The harness
//!   and the clients reach the nodes at those addresses (on Linux the host
//!   routes to its bridge networks), so no host port is published and no
//!   two nodes ever compete for one. Faults between hosts are real network
//!   operations: a node is disconnected from the network, then connected
//!   again at the same address.
//! - [`RedisContainer`]: start, kill, pause, unpause, restart and remove a
//!   `redis-server` container. testcontainers does most of it; where it has
//!   no call (kill with SIGKILL, networks, a fixed address), the engine API
//!   is used through bollard, the client library testcontainers is built
//!   on. No `docker` process is run.
//! - [`Spares`]: a matrix's plain servers, and its Sentinel topologies'
//!   nodes with their network, wiped and used again by a later cell instead
//!   of removed and made anew (a container costs about half a CPU-second
//!   on an engine like this machine's).
//! - [`reaper`]: containers do not die with the process that made them, so
//!   a reaper process removes this process's containers and networks once
//!   it ends, however it ends (panic, Ctrl-C, `kill -9`).

mod container;
mod network;
pub mod reaper;
mod spares;

use std::future::Future;

use testcontainers::bollard::Docker;

use crate::error::{HarnessError, Result};

pub use container::RedisContainer;
pub use network::RunNetwork;
pub use spares::{Kind, RigLease, Spares};

/// The label that marks this process's containers and networks; its value
/// is the owner's process id.
pub const OWNER_LABEL: &str = "lockstages.owner";

/// The value of [`OWNER_LABEL`] on what this process makes.
pub fn owner() -> String {
    std::process::id().to_string()
}

/// What to do when no image can be had: said once, by [`check_image`].
pub const IMAGE_HINT: &str = "no registry here? build a local image from the host's redis-server \
    with docker/build-local-image.sh and set LOCKSTAGES_REDIS_IMAGE to the tag it prints";

/// Runs `work` against the engine on a thread and runtime of its own, so
/// it can be called from synchronous code and from destructors, inside a
/// tokio runtime or outside one.
pub(crate) fn blocking<T, F>(work: impl FnOnce(Docker) -> F + Send + 'static) -> Result<T>
where
    T: Send + 'static,
    F: Future<Output = Result<T>>,
{
    on_own_runtime(move || async move { work(engine()?).await })
}

/// Runs `work` to its end on a thread and runtime of its own, so it can be
/// awaited from synchronous code and from destructors, inside a tokio
/// runtime or outside one.
pub(crate) fn on_own_runtime<T, F>(work: impl FnOnce() -> F + Send) -> Result<T>
where
    T: Send,
    F: Future<Output = Result<T>>,
{
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?
                    .block_on(work())
            })
            .join()
            .unwrap_or_else(|_| Err(HarnessError::Docker("the engine thread panicked".into())))
    })
}

/// A client of the local engine (`DOCKER_HOST` or the default socket).
fn engine() -> Result<Docker> {
    Docker::connect_with_defaults()
        .map_err(|e| HarnessError::Docker(format!("cannot reach the Docker engine: {e}")))
}

/// Whether a Docker engine answers here.
pub fn docker_answers() -> bool {
    blocking(|docker| async move {
        docker
            .ping()
            .await
            .map_err(|e| HarnessError::Docker(e.to_string()))
    })
    .is_ok()
}

/// Makes sure `image` is here before any node needs it: present, or pulled
/// now. When it cannot be had, one clear error says how to build one, so a
/// matrix stops at once instead of failing the same way in every cell.
pub fn check_image(image: &str) -> Result<()> {
    let image = image.to_owned();
    blocking(move |docker| async move {
        if docker.inspect_image(&image).await.is_ok() {
            return Ok(());
        }
        pull(&docker, &image).await.map_err(|e| {
            HarnessError::NoRedis(format!(
                "the Docker image {image} is not here and cannot be pulled: {e}\n({IMAGE_HINT})"
            ))
        })
    })
}

async fn pull(docker: &Docker, image: &str) -> std::result::Result<(), String> {
    use futures_util::StreamExt as _;
    use testcontainers::bollard::query_parameters::CreateImageOptionsBuilder;
    let (name, tag) = split_image(image);
    let options = CreateImageOptionsBuilder::new()
        .from_image(name)
        .tag(tag)
        .build();
    let mut progress = docker.create_image(Some(options), None, None);
    while let Some(step) = progress.next().await {
        step.map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The ids of the containers labelled as `owner`'s, stopped ones included
/// (for checks that nothing was left behind).
pub fn containers_owned_by(owner: &str) -> Result<Vec<String>> {
    use std::collections::HashMap;
    use testcontainers::bollard::query_parameters::ListContainersOptionsBuilder;
    let filters = HashMap::from([("label", vec![format!("{OWNER_LABEL}={owner}")])]);
    blocking(move |docker| async move {
        let options = ListContainersOptionsBuilder::new()
            .all(true)
            .filters(&filters)
            .build();
        let containers = docker
            .list_containers(Some(options))
            .await
            .map_err(|e| HarnessError::Docker(format!("list containers: {e}")))?;
        Ok(containers.into_iter().filter_map(|c| c.id).collect())
    })
}

/// `redis:7-alpine` → (`redis`, `7-alpine`); `host:5000/redis` →
/// (`host:5000/redis`, `latest`).
pub(crate) fn split_image(image: &str) -> (&str, &str) {
    match image.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name, tag),
        _ => (image, "latest"),
    }
}

#[cfg(test)]
mod tests {
    use super::split_image;

    #[test]
    fn an_image_splits_into_name_and_tag() {
        assert_eq!(split_image("redis:7-alpine"), ("redis", "7-alpine"));
        assert_eq!(split_image("redis"), ("redis", "latest"));
        assert_eq!(
            split_image("host:5000/lockstages/redis:ci"),
            ("host:5000/lockstages/redis", "ci")
        );
        assert_eq!(
            split_image("host:5000/lockstages/redis"),
            ("host:5000/lockstages/redis", "latest")
        );
    }
}
