//! The words of a run taken up from a remote (`start --from`).

use crate::git::ChangeName;
use crate::remote::TakenUp;

/// What `start --from` tells before the loop goes on.
pub fn taken_up(change: &ChangeName, taken: &TakenUp) -> String {
    match taken {
        TakenUp::Taken {
            remote,
            record,
            tip,
            done,
            total,
        } => format!(
            "took '{change}' up from '{remote}': {} at {}, {done} of {total} stories done (record {})",
            change.branch_short(),
            tip.to_hex_with_len(12),
            record.to_hex_with_len(12)
        ),
        TakenUp::AlreadyHere { remote, record } => format!(
            "the run of '{change}' here is '{remote}''s record or goes on from it (record {}): going on from here",
            record.to_hex_with_len(12)
        ),
    }
}
