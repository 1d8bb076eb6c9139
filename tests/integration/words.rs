//! Issue 47, the words of the second hour: what `plan` and a run's
//! questions say must be true, name the real change and story, offer only
//! options that exist, and say each thing once. Through the real binary,
//! with git as the oracle.

use std::fs;

use crate::harness::*;
use crate::plan_e2e::{self, FOLDER, project as plan_project};

/// A directory holding `git` alone, to stand for a PATH without the
/// agent's CLI or `gh`.
fn git_only_path(repo: &TestRepo) -> String {
    let bin = repo.dir.path().join("git-only-bin");
    fs::create_dir_all(&bin).unwrap();
    let git = String::from_utf8(
        run(std::process::Command::new("sh").args(["-c", "command -v git"])).stdout,
    )
    .unwrap();
    let link = bin.join("git");
    if !link.exists() {
        std::os::unix::fs::symlink(git.trim(), &link).unwrap();
    }
    bin.display().to_string()
}

/// Every `--option` in `text`.
fn options_named(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("--") {
        let name: String = text[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if name.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
            found.push(format!("--{name}"));
        }
    }
    found
}

/// Asserts that every option `said` offers is one `git ralph plan` has.
fn offers_only_plan_options(repo: &TestRepo, said: &str) {
    let help = stdout(&ralph_cmd(repo, &["plan", "--help"]));
    for option in options_named(said) {
        assert!(
            help.contains(&format!("{option} ")) || help.contains(&format!("{option}\n")),
            "{option} is offered, but `git ralph plan` has no such option:\n{said}"
        );
    }
}

// ---------------------------------------------------------------------------
// Planning

#[test]
fn issue_47_a_missing_agent_cli_exits_8_and_says_its_cause_once() {
    let repo = plan_project();
    let output = run(ralph(&repo)
        .args(["plan", plan_e2e::CHANGE, "Greet the visitors"])
        .args(["--agent", "codex"])
        .env("PATH", git_only_path(&repo)));
    assert_exit(&output, 8);
    let err = stderr(&output);
    assert_eq!(
        err.matches("No such file or directory").count(),
        1,
        "the cause is said once:\n{err}"
    );
    assert_eq!(err.matches("`codex`").count(), 2, "{err}");
    assert!(err.contains("hint: install `codex`"), "{err}");
    assert_eq!(repo.status_porcelain(), "", "nothing was written");
    repo.assert_fsck_clean();
}

#[test]
fn issue_47_a_plan_the_agent_wrote_nothing_of_claims_nothing_kept() {
    let repo = plan_project();
    let (output, _) = plan_e2e::plan(
        &repo,
        "[*]\nsay I looked around.\n",
        &["--max-retries", "1"],
    );
    assert_exit(&output, 3);
    let said = stdout(&output);
    assert!(!said.contains("kept"), "nothing was kept:\n{said}");
    assert!(
        said.contains(&format!("nothing was written in {FOLDER}/")),
        "{said}"
    );
    assert!(!said.contains("--refine"), "refine would refuse:\n{said}");
    offers_only_plan_options(&repo, &said);
    assert!(!repo.path(FOLDER).exists());
    // What the suggestion would have led to: refine refuses.
    let refine = run(ralph(&repo).args([
        "plan",
        plan_e2e::CHANGE,
        "--refine",
        "--agent-command",
        "true",
    ]));
    assert_exit(&refine, 1);
    // The agent is told what it did, not the user's options.
    let prompt = fs::read_to_string(repo.path(format!(
        ".git/ralph/plans/{}/1/attempts/2.prompt.md",
        plan_e2e::CHANGE
    )))
    .unwrap();
    assert!(!prompt.contains("pass --"), "{prompt}");
    assert!(!prompt.contains("openspec new change"), "{prompt}");
    assert!(
        prompt.contains(&format!("nothing was written in {FOLDER}/")),
        "{prompt}"
    );
    assert_eq!(repo.status_porcelain(), "");
}

#[test]
fn issue_47_a_plan_written_but_not_accepted_is_kept_and_refine_takes_it() {
    let repo = plan_project();
    let tasks = "## 1. Greeting\\n\\nJust greet.\\n";
    let (output, _) = plan_e2e::plan(
        &repo,
        &format!("[*]\n{}", plan_e2e::plan_with_tasks(tasks)),
        &["--max-retries", "0"],
    );
    assert_exit(&output, 3);
    let said = stdout(&output);
    assert!(said.contains(&format!("kept in {FOLDER}/")), "{said}");
    assert!(said.contains("git ralph plan greet --refine"), "{said}");
    offers_only_plan_options(&repo, &said);
    let script_path = script(&repo, &format!("[*]\n{}", plan_e2e::good_plan()));
    let refined = plan_e2e::plan_with(&repo, &script_path, &[plan_e2e::CHANGE, "--refine"]);
    assert_exit(&refined, 0);
}

#[test]
fn issue_47_plan_from_an_issue_without_gh_offers_only_plans_options() {
    let repo = plan_project();
    let output = run(ralph(&repo)
        .args(["plan", "bye", "--issue", "12", "--agent-command", "true"])
        .env("PATH", git_only_path(&repo)));
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(err.contains("`gh` is not on PATH"), "{err}");
    assert!(err.contains("--from"), "{err}");
    offers_only_plan_options(&repo, &err);
    assert_eq!(repo.status_porcelain(), "");
}
