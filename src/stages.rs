//! Every stage the CLI knows, in course order.

use lockcore::StageEntry;

/// Stage 0 (no lock, the control) to stage 8 on Redis, with stage 6's fair
/// variant (`stage6-fair`) right after stage 6, stage 9 on a ZooKeeper
/// ensemble and stage 10 on an etcd cluster.
pub const STAGES: &[StageEntry] = &[
    harness::control::STAGE0,
    stage1::STAGE,
    stage2::STAGE,
    stage3::STAGE,
    stage4::STAGE,
    stage5::STAGE,
    stage6::STAGE,
    stage6::fair::STAGE,
    stage7::STAGE,
    stage8::STAGE,
    stage9::STAGE,
    stage10::STAGE,
];

/// Finds a stage by its name (`stage4`, `stage6-fair`) or number (`4`: the
/// first stage with it, so `6` is plain stage 6).
pub fn find(name: &str) -> Option<StageEntry> {
    let wanted = name.trim().to_ascii_lowercase();
    let number = wanted.strip_prefix("stage").unwrap_or(&wanted);
    STAGES
        .iter()
        .copied()
        .find(|s| s.description.name == wanted)
        .or_else(|| {
            STAGES
                .iter()
                .copied()
                .find(|s| s.description.stage.to_string() == number)
        })
}

/// `stage0, stage1, …` for error messages.
pub fn names() -> String {
    STAGES
        .iter()
        .map(|s| s.description.name)
        .collect::<Vec<_>>()
        .join(", ")
}
