//! The judge's gates that guard the repository: a change in `.git` that
//! runs code, a changed submodule, a task list the agent broke.

use super::*;

fn git_change(what: &str, key: Option<&str>, risk: Risk) -> GitDirChange {
    GitDirChange {
        path: what.into(),
        key: key.map(Into::into),
        change: crate::git::FileChange::Modified,
        risk,
    }
}

/// A claim on an unmarked story whose attempt also removed story 3 (Docs)
/// from the list.
fn unmarked_with_a_story_removed() -> Evidence {
    let mut evidence = claim();
    evidence.marked = Marked::NotDone;
    evidence
        .changes
        .list
        .broken
        .push(crate::stories::changes::Breakage::RemovedStory {
            id: "3".into(),
            title: "Docs".into(),
        });
    evidence
}

fn rejected_reason(evidence: &Evidence) -> String {
    match verdict(evidence, &loop_rules()) {
        Verdict::Failed(failure) => {
            assert_eq!(failure.outcome, AttemptOutcome::Rejected);
            failure.reason
        }
        other => panic!("not a failure: {other:?}"),
    }
}

#[test]
fn a_git_dir_change_that_runs_code_fails_before_every_later_gate() {
    let mut evidence = unmarked_with_a_story_removed();
    evidence.changes.git_dir = vec![
        git_change(".git/info/exclude", None, Risk::Changes),
        git_change(".git/config", Some("core.hooksPath"), Risk::RunsCode),
    ];
    assert_eq!(
        rejected_reason(&evidence),
        "the agent changed .git/config (core.hooksPath), which could run code as you; it is undone"
    );
    // The ending still comes first: a stop is a stop.
    let mut stopped = evidence;
    stopped.agent.exit = ExitStatusKind::Stopped;
    assert!(matches!(
        verdict(&stopped, &loop_rules()),
        Verdict::Failed(Failure {
            outcome: AttemptOutcome::Interrupted,
            ..
        })
    ));
}

#[test]
fn a_harmless_git_dir_change_is_no_failure_and_the_runs_rules_are() {
    let mut evidence = claim();
    evidence.changes.git_dir = vec![git_change(".git/info/exclude", None, Risk::Changes)];
    assert_eq!(
        verdict(&evidence, &loop_rules()),
        Verdict::Accepted { flag: None }
    );
    evidence.changes.git_dir = vec![git_change(
        ".git/ralph/greet/contract.json",
        None,
        Risk::RunRules,
    )];
    assert_eq!(
        rejected_reason(&evidence),
        "the agent changed the run's own rules (.git/ralph/greet/contract.json); they are put back"
    );
}

#[test]
fn a_changed_submodule_fails_a_claim_and_is_named_even_in_a_single_pass() {
    let mut evidence = unmarked_with_a_story_removed();
    evidence.changes.submodules = vec!["submodule lib (its work is kept there at r)".into()];
    assert_eq!(
        rejected_reason(&evidence),
        "the agent changed submodule lib (its work is kept there at r); a run changes no submodule"
    );
    // A single pass keeps the superproject's work, and says why it failed.
    let mut claimed = claim();
    claimed.changes.submodules = evidence.changes.submodules.clone();
    assert!(matches!(
        verdict(&claimed, &single_pass()),
        Verdict::KeptDespite(Failure { reason, .. }) if reason.contains("submodule lib")
    ));
}

#[test]
fn a_broken_list_fails_before_the_story_mark_is_looked_at() {
    let evidence = unmarked_with_a_story_removed();
    assert_eq!(
        rejected_reason(&evidence),
        "the attempt removed story 3 (Docs) in tasks.md; only ticking the story's own boxes and adding tasks are allowed"
    );
    // Ticks elsewhere and added tasks are no failure.
    let mut evidence = claim();
    evidence
        .changes
        .list
        .ticked_elsewhere
        .push(crate::stories::changes::TickedElsewhere {
            story: "2".into(),
            boxes: 1,
            lines: vec![7],
        });
    assert_eq!(
        verdict(&evidence, &loop_rules()),
        Verdict::Accepted { flag: None }
    );
}
