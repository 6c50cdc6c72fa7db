//! The Rust child: serves the protocol ([`crate::holder::protocol`]) on stdin and
//! stdout with a client of one of this workspace's stages. A stage's test
//! binary runs it through [`holder_entry!`](crate::holder_entry), the CLI
//! through its hidden `holder` subcommand.

use std::io::Write;

use lockcore::{Acquired, Point, StageEntry};
use tokio::io::AsyncBufReadExt;

use crate::client::{Client, ClientFactory};
use crate::error::{HarnessError, Result};
use crate::guard::Released;
use crate::history::History;
use crate::holder::protocol::{self, HolderSpec, millis, number};
use crate::workload::{Fencing, RequestIds};

/// The child's side: serves requests from stdin with a client of the
/// stage the spec names, one of `stages` (the first when it names none).
/// Does nothing when not started as a holder.
pub fn serve_from_env(stages: &[StageEntry]) {
    let Ok(spec) = std::env::var(protocol::ENV_SPEC) else {
        eprintln!("holder_process: not started as a holder process; nothing to do");
        return;
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return answer(&format!("error cannot start a runtime: {e}")),
    };
    let served = HolderSpec::from_json(&spec).and_then(|spec| {
        let stage = pick_stage(stages, &spec.stage)?;
        runtime.block_on(serve(stage, spec))
    });
    if let Err(e) = served {
        answer(&format!("error {e}"));
    }
}

/// The stage of `stages` called `name`; the first when `name` is empty.
fn pick_stage(stages: &[StageEntry], name: &str) -> Result<StageEntry> {
    stages
        .iter()
        .find(|s| name.is_empty() || s.description.name == name)
        .copied()
        .ok_or_else(|| {
            let served: Vec<&str> = stages.iter().map(|s| s.description.name).collect();
            HarnessError::Holder(format!(
                "asked to hold a lock of {name}; this program serves {}",
                served.join(", ")
            ))
        })
}

fn answer(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}{text}", protocol::PREFIX);
    let _ = out.flush();
}

async fn serve(stage: StageEntry, spec: HolderSpec) -> Result<()> {
    let factory = ClientFactory {
        stage,
        holder_command: None,
        lock_urls: spec.lock_urls.clone(),
        db_url: spec.db_url.clone(),
        config: spec.config(),
        // The child's own history is thrown away: the parent keeps the
        // run's history from the answers it gets.
        history: History::new(),
        fencing: Fencing::from_label(&spec.fencing).ok_or_else(|| {
            HarnessError::Holder(format!("`{}` is not a fencing mode", spec.fencing))
        })?,
        request_ids: if spec.request_ids {
            RequestIds::Checked
        } else {
            RequestIds::Ignored
        },
    };
    let name = spec.name.as_str();
    let client = factory.client(name).await?;
    let mut held: Option<Acquired> = None;
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        let reply = match handle(&client, &mut held, &line).await {
            Ok(reply) => reply,
            Err(e) => format!("error {e}"),
        };
        answer(&reply);
    }
    Ok(())
}

/// Answers one request line; a malformed one is an error.
async fn handle(client: &Client, held: &mut Option<Acquired>, line: &str) -> Result<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    Ok(match (words.as_slice(), &*held) {
        (["ping"], _) => "pong".to_owned(),
        (["acquire", ms], _) => match client.acquire(millis(ms, line)?).await? {
            Some(acquired) => {
                let reply = protocol::acquired_answer(&acquired);
                *held = Some(acquired);
                reply
            }
            None => "not-acquired".to_owned(),
        },
        (["read"], Some(acquired)) => format!("stock {}", client.read_stock(acquired).await?),
        (["sell", read], Some(acquired)) => {
            protocol::sale_answer(client.sell(number(read, line)?, acquired).await?)
        }
        (["release"], Some(acquired)) => match client.release(acquired).await? {
            Released::Answered(release) => protocol::released_answer(Some(release)),
            Released::NotOwner => protocol::released_answer(None),
        },
        (["wait-lost", ms], Some(acquired)) => {
            let within = millis(ms, line)?;
            let lost = match acquired.lost.clone() {
                Some(mut signal) => tokio::time::timeout(within, signal.lost()).await.is_ok(),
                None => false,
            };
            format!("lost {}", if lost { "yes" } else { "no" })
        }
        (["stall", point, ms], _) => {
            let point = Point::ALL
                .into_iter()
                .find(|p| p.name() == *point)
                .ok_or_else(|| HarnessError::Holder(format!("unknown fault point `{point}`")))?;
            let stall = millis(ms, line)?;
            let gate = client.faults().pause_at(point);
            tokio::spawn(async move {
                tokio::time::sleep(stall).await;
                gate.open();
            });
            "stalling".to_owned()
        }
        (_, None) => {
            return Err(HarnessError::Holder(format!(
                "`{line}` needs the lock to be held first"
            )));
        }
        _ => return Err(HarnessError::Holder(format!("unknown request `{line}`"))),
    })
}
