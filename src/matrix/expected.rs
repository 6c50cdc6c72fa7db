//! The expected matrix, written once: what the articles predict, corrected
//! where a real run showed otherwise (the book's matrix chapter says why):
//!
//! - network-delay on one node: redis-rs gives up on a reply after 500 ms,
//!   so a client whose `SETNX` reply is held longer believes it failed
//!   although the key was written. Stage 1's key never expires and stage 2
//!   never sends its `EXPIRE`: both deadlock. Later stages recover at the TTL.
//! - stage 8 after a restart without persistence: the fencing counter lived
//!   on the node that restarted empty, so the same token is handed out twice
//!   and the resource cannot tell the writers apart: oversold.
//! - reentrant on the stages whose key has a TTL (2–5, 7, 8) was DEADLOCK
//!   while the scenario judged it; measured, it is SELF-BLOCKED: the holder
//!   did get the lock again, after waiting for its own key to expire (the
//!   lock node records the expiry and the new write). Stage 1's key never
//!   expires: DEADLOCK stays.
//! - stale-write-first (new): the same cells as slow-business, except stage
//!   8, which stays OVERLAP only because its resource registers the token on
//!   the read; against the write-only resource it oversells
//!   (`stage8/tests/stale_writer.rs`).
//! - business-error (new): stage 1's key never expires, so a skipped release
//!   is a DEADLOCK; stages with a TTL make the next client wait for the key
//!   to expire, then carry on (ok); stage 6's watchdog keeps renewing for
//!   the living client that skipped its release, so it is a DEADLOCK too.
//!
//! - dead-waiter (new): every stage gets the lock to the next waiter; the
//!   fair variant of stage 6 (`stage6-fair`) only after the dead waiter's
//!   place in line has timed out (its `handover_ms`), which no observer
//!   calls a fault: the wait is bounded by the waiter timeout.
//! - stage6-fair (new row): the cells of stage 6, whose watchdog and
//!   reentrant hash it shares.
//!
//! - the Sentinel columns run with a 30 s TTL (see `harness/src/topology/sentinel.rs`),
//!   so every lock lost there is lost to the failover, not to its expiry.
//!   `min-replicas-to-write` closes the split brain once the cut-off master
//!   has noticed (about a second after the cut; the story waits for it).
//!   `WAIT 1` closes the failover when no replica acknowledged, and not
//!   when the one that did is lost with the master.
//!
//! - stage 9 (ZooKeeper) runs every story that does not need a Redis
//!   topology; the TTL is its session timeout (at least 2 s). A living
//!   holder keeps its session, so slow business and a stale write find the
//!   lock still held (ok); a frozen holder's session expires, client-B gets
//!   in, and the resource refuses the stale token (OVERLAP, as stage 8).
//!   Its leader killed keeps one holder (the leader-killed column).
//! - stage 10 (etcd) runs the same stories, with the lease's TTL (at least
//!   2 s, whole seconds) in the TTL's place, and gives the same cells: the
//!   lease kept alive stands in for the session, the key's create revision
//!   for the czxid.
//! - leader-killed (new): the consensus stores' own failure. Stages 9 and
//!   10 keep one holder through the election (ok); Redis elects no leader,
//!   its master's death is the failover columns' story (n/a).
//! - minority-partition (new): client-A holds through the leader alone, and
//!   a partition (modelled: the leader frozen) leaves them a minority. The
//!   majority hands the lock to client-B once A's lease (session) expired.
//!   Both clients give the lock up by their own clock first, so a careful
//!   holder stops before B enters (ok): stage 10's lease keeper when its
//!   lease runs out unrenewed, stage 9's ZooKeeper client when its session
//!   times out with no answer (it expires the session itself, at a
//!   fraction past the timeout after the last answer; in this story the
//!   session is 2 s, and client-A is told at about 2.8 s while the
//!   majority lets client-B in at 4.3-4.6 s).
//!
//! - the Redis Cluster columns (new) run with the same 30 s TTL
//!   (`harness/src/topology/cluster.rs`). They give the Sentinel columns'
//!   cells but one difference: after a cluster failover, client-A's
//!   release follows the lock key's slot to the promoted replica (a
//!   cluster client asks the cluster again after an error), where the lock
//!   is client-B's; stages 1–3 delete it unchecked (FOREIGN-DELETE), where
//!   a Sentinel client's release stays with the dead master. In the
//!   partition story client-B has given the lock back before client-A's
//!   release, so nothing foreign is left to delete.
//!
//! - duplicate-request (new): the gateway's retry of a request the first
//!   instance was slow to charge. No lock expires in it (a 3 s TTL), and
//!   every stage serialises the two instances: the retry waits for the
//!   lock, then charges the same request again (DUPLICATE), stage 6's
//!   watchdog and stage 8's token included (the retry's token is the newer
//!   one). Stage 0 has no lock to wait for: the retry charges while the
//!   first instance is inside (OVERLAP too), both from the same reading
//!   of the stock, so one write overwrites the other: two orders, the
//!   stock 10 -> 9 (OVERSOLD too: a lost update, though not more orders
//!   than the ten items; issue 42 gave OVERSOLD the one definition that
//!   covers both, `run stage0 duplicate-request` shows it). The column
//!   runs without request ids, the matrix's default; with `--request-ids`
//!   the resource refuses the second charge and the cells are ok (stage 0:
//!   OVERLAP), which `tests/` in stages 5 and 8 assert. What request ids
//!   do not fix: two *different* requests under stage 5's gc-pause still
//!   oversell (`stage5/tests/idempotency.rs`).
//!
//! One row per stage, one column per scenario, in `harness::SCENARIOS`
//! order. A cell is `ok`, `n/a`, or the findings that must fire, separated
//! by spaces.

use harness::check::{Finding, Verdict};

/// The columns, in order; checked against `harness::SCENARIOS` by a test.
pub const COLUMNS: [&str; 28] = [
    "contention",
    "killed-holder",
    "crash-before-expire",
    "slow-business",
    "get-del-race",
    "gc-pause",
    "failover",
    "restart-without-persistence",
    "clock-jump",
    "reentrant",
    "network-delay",
    "stale-write-first",
    "business-error",
    "sentinel-failover",
    "split-brain",
    "split-brain-min-replicas",
    "sentinel-failover-wait",
    "sentinel-failover-wait-other-replica",
    "dead-waiter",
    "leader-killed",
    "minority-partition",
    "cluster-failover",
    "cluster-failover-wait",
    "cluster-partition",
    "duplicate-request",
    "arrival-order",
    "release-before-commit",
    "eviction",
];

#[rustfmt::skip]
const ROWS: [(&str, [&str; 28]); 12] = [
    //          contention          killed-holder crash-before slow-business                      get-del-race      gc-pause            failover            restart-w/o-pers.   clock-jump          reentrant       network-delay stale-write-first                  business-error  sentinel-failover   split-brain         split-brain-min-r.  sentinel-f.-wait    sentinel-f.-wait-other-replica  dead-waiter  leader-killed  minority-partition  cluster-failover  cluster-failover-wait  cluster-partition  duplicate-request  arrival-order  release-before-commit  eviction
    ("stage0", ["OVERSOLD OVERLAP", "ok",         "n/a",       "OVERSOLD OVERLAP",                "n/a",            "OVERSOLD OVERLAP", "n/a",              "n/a",              "n/a",              "n/a",          "n/a",        "OVERSOLD OVERLAP",                "n/a", "n/a"              , "n/a"              , "n/a"              , "n/a"              , "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "OVERSOLD DUPLICATE OVERLAP", "n/a", "n/a", "n/a"]),
    ("stage1", ["ok",               "DEADLOCK",   "DEADLOCK",  "ok",                              "ok",             "ok",               "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "ok",               "DEADLOCK",     "DEADLOCK",   "ok",                              "DEADLOCK", "OVERSOLD OVERLAP" , "OVERSOLD OVERLAP" , "ok"               , "ok"               , "OVERSOLD OVERLAP", "ok", "n/a", "n/a", "OVERSOLD OVERLAP FOREIGN-DELETE", "ok", "OVERSOLD OVERLAP", "DUPLICATE", "OUT-OF-ORDER", "OVERSOLD", "ok"]),
    ("stage2", ["ok",               "ok",         "DEADLOCK",  "OVERSOLD OVERLAP FOREIGN-DELETE", "FOREIGN-DELETE", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "SELF-BLOCKED", "DEADLOCK",   "OVERSOLD OVERLAP FOREIGN-DELETE", "ok", "OVERSOLD OVERLAP" , "OVERSOLD OVERLAP" , "ok"               , "ok"               , "OVERSOLD OVERLAP", "ok", "n/a", "n/a", "OVERSOLD OVERLAP FOREIGN-DELETE", "ok", "OVERSOLD OVERLAP", "DUPLICATE", "OUT-OF-ORDER", "OVERSOLD", "OVERSOLD OVERLAP"]),
    ("stage3", ["ok",               "ok",         "ok",        "OVERSOLD OVERLAP FOREIGN-DELETE", "FOREIGN-DELETE", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "SELF-BLOCKED", "ok",         "OVERSOLD OVERLAP FOREIGN-DELETE", "ok", "OVERSOLD OVERLAP" , "OVERSOLD OVERLAP" , "ok"               , "ok"               , "OVERSOLD OVERLAP", "ok", "n/a", "n/a", "OVERSOLD OVERLAP FOREIGN-DELETE", "ok", "OVERSOLD OVERLAP", "DUPLICATE", "OUT-OF-ORDER", "OVERSOLD", "OVERSOLD OVERLAP"]),
    ("stage4", ["ok",               "ok",         "ok",        "OVERSOLD OVERLAP",                "FOREIGN-DELETE", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "SELF-BLOCKED", "ok",         "OVERSOLD OVERLAP",                "ok", "OVERSOLD OVERLAP" , "OVERSOLD OVERLAP" , "ok"               , "ok"               , "OVERSOLD OVERLAP", "ok", "n/a", "n/a", "OVERSOLD OVERLAP", "ok", "OVERSOLD OVERLAP", "DUPLICATE", "OUT-OF-ORDER", "OVERSOLD", "OVERSOLD OVERLAP"]),
    ("stage5", ["ok",               "ok",         "ok",        "OVERSOLD OVERLAP",                "ok",             "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "SELF-BLOCKED", "ok",         "OVERSOLD OVERLAP",                "ok", "OVERSOLD OVERLAP" , "OVERSOLD OVERLAP" , "ok"               , "ok"               , "OVERSOLD OVERLAP", "ok", "n/a", "n/a", "OVERSOLD OVERLAP", "ok", "OVERSOLD OVERLAP", "DUPLICATE", "OUT-OF-ORDER", "OVERSOLD", "OVERSOLD OVERLAP"]),
    ("stage6", ["ok",               "ok",         "ok",        "ok",                              "ok",             "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "ok",           "ok",         "ok",                              "DEADLOCK", "OVERSOLD OVERLAP" , "OVERSOLD OVERLAP" , "ok"               , "ok"               , "OVERSOLD OVERLAP", "ok", "n/a", "n/a", "OVERSOLD OVERLAP", "ok", "OVERSOLD OVERLAP", "DUPLICATE", "OUT-OF-ORDER", "OVERSOLD", "OVERSOLD OVERLAP"]),
    ("stage6-fair", ["ok",               "ok",         "ok",        "ok",                              "ok",             "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "ok",           "ok",         "ok",                              "DEADLOCK", "OVERSOLD OVERLAP" , "OVERSOLD OVERLAP" , "ok"               , "ok"               , "OVERSOLD OVERLAP", "ok", "n/a", "n/a", "OVERSOLD OVERLAP", "ok", "OVERSOLD OVERLAP", "DUPLICATE", "ok", "OVERSOLD", "OVERSOLD OVERLAP"]),
    ("stage7", ["ok",               "ok",         "ok",        "OVERSOLD OVERLAP",                "ok",             "OVERSOLD OVERLAP", "n/a",              "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "SELF-BLOCKED", "REFUSED",    "OVERSOLD OVERLAP",                "ok", "n/a"              , "n/a"              , "n/a"              , "n/a"              , "n/a", "ok", "n/a", "n/a", "n/a", "n/a", "n/a", "DUPLICATE", "OUT-OF-ORDER", "OVERSOLD", "ok"]),
    ("stage8", ["ok",               "ok",         "ok",        "OVERLAP",                         "ok",             "OVERLAP",          "OVERSOLD OVERLAP", "OVERSOLD OVERLAP", "OVERLAP",          "SELF-BLOCKED", "ok",         "OVERLAP",                         "ok", "OVERSOLD OVERLAP" , "OVERSOLD OVERLAP" , "ok"               , "ok"               , "OVERSOLD OVERLAP", "ok", "n/a", "n/a", "OVERSOLD OVERLAP", "ok", "OVERSOLD OVERLAP", "DUPLICATE", "OUT-OF-ORDER", "ok", "OVERLAP"]),
    ("stage9", ["ok",               "ok",         "ok",        "ok",                              "n/a",            "OVERLAP",          "n/a",              "n/a",              "n/a",              "ok",           "n/a",        "ok",                              "n/a", "n/a"              , "n/a"              , "n/a"              , "n/a"              , "n/a", "n/a", "ok", "ok", "n/a", "n/a", "n/a", "DUPLICATE", "n/a", "ok", "n/a"]),
    ("stage10",["ok",               "ok",         "ok",        "ok",                              "n/a",            "OVERLAP",          "n/a",              "n/a",              "n/a",              "ok",           "n/a",        "ok",                              "n/a", "n/a"              , "n/a"              , "n/a"              , "n/a"              , "n/a", "n/a", "ok", "ok", "n/a", "n/a", "n/a", "DUPLICATE", "n/a", "ok", "n/a"]),
];

/// What a cell should show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// The scenario must run and give exactly this verdict.
    Verdict(Verdict),
    /// The scenario must decline to run on this stage.
    NotApplicable,
    /// A row without an expected row (`--holder-cmd`): whatever the story
    /// gives is shown, not compared; only a cell that could not run fails.
    Unrecorded,
    /// A library's cell whose verdict is decided by a race between two of
    /// its processes that the story cannot order (`ok|OUT-OF-ORDER`): any
    /// of these, and the library's file says which race.
    Race(Vec<Verdict>),
}

impl Expected {
    /// Whether a run that gave `verdict` is what this cell expects.
    pub fn allows(&self, verdict: &Verdict) -> bool {
        match self {
            Expected::Verdict(want) => want == verdict,
            Expected::Race(any) => any.contains(verdict),
            Expected::Unrecorded => true,
            Expected::NotApplicable => false,
        }
    }
}

/// The expectation for `stage` × `scenario`, if the table has that cell.
pub fn expected(stage: &str, scenario: &str) -> Option<Expected> {
    let column = COLUMNS.iter().position(|c| *c == scenario)?;
    let (_, cells) = ROWS
        .iter()
        .chain(super::library_rows::ROWS)
        .find(|(name, _)| *name == stage)?;
    Some(parse(cells[column]))
}

fn parse(cell: &str) -> Expected {
    if cell.contains('|') {
        return Expected::Race(
            cell.split('|')
                .filter_map(|one| match parse(one) {
                    Expected::Verdict(verdict) => Some(verdict),
                    _ => None,
                })
                .collect(),
        );
    }
    match cell {
        "n/a" => Expected::NotApplicable,
        "ok" => Expected::Verdict(Verdict::ok()),
        labels => {
            let findings: Vec<Finding> = labels
                .split_whitespace()
                .filter_map(|label| Finding::ALL.into_iter().find(|f| f.label() == label))
                .collect();
            Expected::Verdict(Verdict::of(&findings))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_columns_are_the_harness_scenarios_in_order() {
        let names: Vec<&str> = harness::SCENARIOS.iter().map(|s| s.name).collect();
        assert_eq!(names, COLUMNS);
    }

    /// The book shows a table from a real run (`matrix --out
    /// book/src/generated`); it must say what the expected matrix says, so a
    /// change to the expectations without a new run for the book fails here.
    #[test]
    fn the_books_matrix_is_the_expected_matrix() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/book/src/generated/matrix.md");
        the_book_says_what_the_rows_say(path, &ROWS);
    }

    /// The library chapter's table (`matrix --library all --out
    /// book/src/generated/libraries`) is the library rows' expectation.
    #[test]
    fn the_books_library_matrix_is_the_expected_library_rows() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/book/src/generated/libraries/matrix.md"
        );
        the_book_says_what_the_rows_say(path, super::super::library_rows::ROWS);
    }

    fn the_book_says_what_the_rows_say(path: &str, rows: &[(&str, [&str; 28])]) {
        let book = std::fs::read_to_string(path).expect("the book's matrix exists");
        let header: Vec<&str> = book
            .lines()
            .next()
            .unwrap_or_default()
            .split('|')
            .map(str::trim)
            .collect();
        let stages: Vec<&str> = rows.iter().map(|(stage, _)| *stage).collect();
        assert_eq!(header[2..2 + stages.len()], stages, "the book's stages");
        let mut scenarios = Vec::new();
        for line in book.lines().skip(2).take_while(|l| l.starts_with('|')) {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let scenario = cells[1];
            for (stage, cell) in stages.iter().zip(&cells[2..]) {
                let said = match (parse(cell), expected(stage, scenario)) {
                    // One run's verdict: one the cell allows (a race's side).
                    (Expected::Verdict(got), Some(want)) => want.allows(&got),
                    (got, want) => Some(got) == want,
                };
                assert!(said, "the book says {stage} x {scenario} is `{cell}`");
            }
            scenarios.push(scenario);
        }
        assert_eq!(
            scenarios, COLUMNS,
            "one row per scenario in the book, in order"
        );
    }

    #[test]
    fn every_cell_parses_to_known_findings() {
        for (stage, cells) in ROWS {
            for cell in cells {
                let words = cell.split_whitespace().count();
                if let Expected::Verdict(verdict) = parse(cell) {
                    let parsed = verdict.findings().count();
                    assert!(
                        cell == "ok" || parsed == words,
                        "{stage}: bad cell `{cell}`"
                    );
                }
            }
        }
    }
}
