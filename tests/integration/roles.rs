//! Issue 22, end to end: a role pipeline per story. The coder does the
//! story; a reviewer, a tester and qa each loop until their own gate
//! passes, each with its own agent, promise and bound; findings go back to
//! the coder, reviewers cannot edit, and one checkpoint is made per story
//! once the whole pipeline passed.
//!
//! Each role other than the coder runs the fake agent with a script of its
//! own (`--role-agent-command ROLE=…`), so each role is a different agent
//! and its `[call=K]` sections count that role's iterations.

use std::time::Duration;

use crate::harness::story_run::*;
use crate::harness::*;

const ONE_STORY: &str = "# Tasks\n\n## 1. Greeting\n\n- [ ] 1.1 Create story-1.txt\n";

/// The coder's script line that does story `id` and promises the coder's
/// completion.
fn coder_does(id: &str) -> String {
    format!(
        "[story={id}]\nwrite story-{id}.txt work of story {id}\\n\ntick-story\npromise IMPLEMENTATION_COMPLETE\n"
    )
}

/// A command running the fake agent with its own script, for one role.
fn role_agent(repo: &TestRepo, text: &str) -> String {
    fake_agent_following(&script(repo, text))
}

/// A command running the fake agent with the script at `path`.
fn fake_agent_following(path: &std::path::Path) -> String {
    format!(
        "FAKE_AGENT_SCRIPT={} {}",
        shell_quote(&path.to_string_lossy()),
        shell_quote(fake_agent_path())
    )
}

/// The roles each agent run played, in order, from the calls the fake
/// agent recorded.
fn roles_run(repo: &TestRepo) -> Vec<String> {
    recorded_calls(repo)
        .iter()
        .map(|line| {
            line.split(' ')
                .find_map(|word| word.strip_prefix("role="))
                .unwrap_or("none")
                .to_owned()
        })
        .collect()
}

/// (role, outcome) of every attempt of `story` in state.json.
fn pipeline_of(repo: &TestRepo, story: &str) -> Vec<(String, String)> {
    let state = state(repo);
    state["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .find(|s| s["id"] == story)
        .expect("the story")["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| {
            (
                a["role"].as_str().unwrap_or("none").to_owned(),
                a["outcome"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The arguments of a `start` that keeps its branch, with the pipeline
/// `roles` (or the contract's) and one role's agent command.
fn pipeline_args(roles: Option<&str>, (role, agent): (&str, &str)) -> Vec<String> {
    let mut args = vec!["--on-finish".to_owned(), "keep".to_owned()];
    if let Some(roles) = roles {
        args.extend(["--roles".to_owned(), roles.to_owned()]);
    }
    args.extend(["--role-agent-command".to_owned(), format!("{role}={agent}")]);
    args
}

/// `start` with the coder's script and [`pipeline_args`].
fn run_pipeline(
    repo: &TestRepo,
    coder: &std::path::Path,
    roles: Option<&str>,
    role_agent: (&str, &str),
) -> std::process::Output {
    let args = pipeline_args(roles, role_agent);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    start(repo, coder, &args)
}

/// `start` with the coder's script and a coder-then-reviewer pipeline,
/// the reviewer running `reviewer_command`.
fn run_with_reviewer(
    repo: &TestRepo,
    coder: &std::path::Path,
    reviewer_command: &str,
) -> std::process::Output {
    run_pipeline(
        repo,
        coder,
        Some("coder,reviewer"),
        ("reviewer", reviewer_command),
    )
}

/// The story's pipeline went coder, `role` (which ended `outcome`), coder,
/// `role` (complete), and the coder's second prompt carried the role's
/// finding, with `finding` in it.
fn assert_finding_sent_back(repo: &TestRepo, role: &str, outcome: &str, finding: &str) {
    assert_eq!(
        pipeline_of(repo, "1"),
        pairs(&[
            ("coder", "passed"),
            (role, outcome),
            ("coder", "passed"),
            (role, "complete"),
        ])
    );
    let second = recorded_prompt(repo, "1", 3);
    assert!(
        second.contains(&format!("Findings from the {role}")),
        "{second}"
    );
    assert!(second.contains(finding), "{finding}: {second}");
}

fn story_checkpoints(repo: &TestRepo, id: &str) -> usize {
    subjects(repo, &format!("main..{BRANCH}"))
        .iter()
        .filter(|s| s.starts_with(&format!("ralph(greet): story {id} ")))
        .count()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[test]
fn issue_22_a_reviewer_that_rejects_once_sends_its_finding_to_the_coder() {
    let repo = project(ONE_STORY);
    let coder = script(&repo, &coder_does("1"));
    let reviewer = role_agent(
        &repo,
        "[call=1]\npromise FAILED: story-1.txt says nothing about greetings\n\
         [call=2]\npromise REVIEW_PASSED\n",
    );
    let output = run_with_reviewer(&repo, &coder, &reviewer);
    assert_exit(&output, 0);
    assert_eq!(roles_run(&repo), ["coder", "reviewer", "coder", "reviewer"]);
    // The finding, verbatim, under its own heading in the coder's next
    // prompt; the first coder prompt has none.
    assert_finding_sent_back(
        &repo,
        "reviewer",
        "failed",
        "story-1.txt says nothing about greetings",
    );
    assert!(!recorded_prompt(&repo, "1", 1).contains("Findings from"));
    // The reviewer's prompt asks for a review of the story's work.
    let review = recorded_prompt(&repo, "1", 2);
    assert!(review.contains("REVIEW_PASSED"), "{review}");
    // One checkpoint for the story, after the whole pipeline.
    assert_eq!(story_checkpoints(&repo, "1"), 1);
    let trailers = repo.git(&["log", "-1", "--format=%(trailers)", BRANCH]);
    assert!(
        trailers.contains("Ralph-Role: coder, 2 iterations"),
        "{trailers}"
    );
    assert!(
        trailers.contains("Ralph-Role: reviewer, 2 iterations"),
        "{trailers}"
    );
    // Everything shows the role.
    let events = events(&repo);
    let roles: Vec<&str> = of_type(&events, "story_progress")
        .iter()
        .filter_map(|e| e["role"].as_str())
        .collect();
    assert_eq!(roles, ["coder", "reviewer", "coder", "reviewer"]);
    let status = stdout(&ralph_cmd(&repo, &["status", CHANGE]));
    assert!(status.contains("#2 reviewer failed"), "{status}");
    let log = stdout(&ralph_cmd(&repo, &["log", CHANGE]));
    assert!(log.contains("reviewer"), "{log}");
    repo.assert_fsck_clean();
}

#[test]
fn issue_22_a_reviewer_that_edits_files_is_undone_and_reported() {
    let repo = project(ONE_STORY);
    let coder = script(&repo, &coder_does("1"));
    let reviewer = role_agent(
        &repo,
        "[*]\nwrite story-1.txt rewritten by the reviewer\\n\nwrite notes.txt my notes\npromise REVIEW_PASSED\n",
    );
    let output = run_with_reviewer(&repo, &coder, &reviewer);
    assert_exit(&output, 0);
    assert_eq!(show(&repo, BRANCH, "story-1.txt"), "work of story 1\n");
    assert!(!tree_files(&repo, BRANCH).contains(&"notes.txt".to_owned()));
    let events = events(&repo);
    let undone = of_type(&events, "role_edits_undone");
    assert_eq!(undone.len(), 1, "{undone:?}");
    assert_eq!(undone[0]["role"], "reviewer");
    let paths: Vec<&str> = undone[0]["paths"]
        .as_array()
        .expect("paths")
        .iter()
        .filter_map(|p| p.as_str())
        .collect();
    assert_eq!(paths, ["notes.txt", "story-1.txt"]);
    assert!(
        stdout(&output).contains("the reviewer changed notes.txt, story-1.txt; undone"),
        "{}",
        stdout(&output)
    );
    // What it wrote is kept under its attempt's ref.
    assert_eq!(
        show(&repo, &format!("{NS}/attempts/1/2"), "notes.txt"),
        "my notes"
    );
}

#[test]
fn issue_22_a_tester_whose_command_fails_sends_the_output_to_the_coder_then_passes() {
    let repo = project(ONE_STORY);
    repo.write(
        "ralph.toml",
        "[roles.tester.verification]\nmethod = \"external\"\ncommand = \"grep -q fixed story-1.txt && test -f greeting.test\"\n",
    );
    repo.commit_all("A tester's gate");
    let coder = script(
        &repo,
        "[story=1 attempt=1]\nwrite story-1.txt work\\n\ntick-story\npromise IMPLEMENTATION_COMPLETE\n\
         [story=1]\nwrite story-1.txt work, fixed\\n\ntick-story\npromise IMPLEMENTATION_COMPLETE\n",
    );
    let tester = role_agent(
        &repo,
        "[*]\nwrite greeting.test expects a greeting\npromise TESTS_PASSED\n",
    );
    let output = run_pipeline(&repo, &coder, Some("coder,tester"), ("tester", &tester));
    assert_exit(&output, 0);
    // The failing command goes back to the coder.
    assert_finding_sent_back(&repo, "tester", "rejected", "grep -q fixed");
    // The tester's first test went with its failure; the second stands.
    let files = tree_files(&repo, BRANCH);
    assert!(files.contains(&"greeting.test".to_owned()), "{files:?}");
    assert_eq!(show(&repo, BRANCH, "story-1.txt"), "work, fixed\n");
    assert_eq!(story_checkpoints(&repo, "1"), 1);
}

#[test]
fn issue_22_qa_checks_acceptance_with_stages() {
    let repo = project(ONE_STORY);
    repo.write(
        "ralph.toml",
        "[roles]\npipeline = [\"coder\", \"qa\"]\n\n[roles.qa]\nmax_iterations = 2\n\n[roles.qa.verification]\nmethod = \"multi_stage\"\n\n\
         [[roles.qa.verification.stages]]\nmethod = \"external\"\ncommand = \"test -f story-1.txt\"\n\n\
         [[roles.qa.verification.stages]]\nmethod = \"external\"\ncommand = \"false\"\nrequired = false\n",
    );
    repo.commit_all("qa with stages");
    let coder = script(&repo, &coder_does("1"));
    let qa = role_agent(&repo, "[*]\npromise QA_PASSED\n");
    let output = run_pipeline(&repo, &coder, None, ("qa", &qa));
    assert_exit(&output, 0);
    assert_eq!(
        pipeline_of(&repo, "1"),
        pairs(&[("coder", "passed"), ("qa", "complete")])
    );
    // The optional stage that failed is a warning, not a failure.
    assert!(stdout(&output).contains("stage 2"), "{}", stdout(&output));
}

#[test]
fn issue_22_a_role_that_never_passes_stops_the_story_within_its_bound() {
    let repo = project(ONE_STORY);
    repo.write("ralph.toml", "[roles.reviewer]\nmax_iterations = 2\n");
    repo.commit_all("A strict reviewer");
    let checkpoint = repo.rev_parse("HEAD");
    let coder = script(&repo, &coder_does("1"));
    let reviewer = role_agent(&repo, "[*]\npromise FAILED: never good enough\n");
    let output = run_with_reviewer(&repo, &coder, &reviewer);
    assert_exit(&output, 3);
    assert_eq!(roles_run(&repo), ["coder", "reviewer", "coder", "reviewer"]);
    let said = stdout(&output);
    assert!(
        said.contains("the reviewer did not pass story 1 within its 2 iterations"),
        "{said}"
    );
    // Nothing unverified was checkpointed; the work is kept under refs.
    assert_eq!(story_checkpoints(&repo, "1"), 0);
    assert!(has_ref(&repo, &format!("{NS}/attempts/1/3")));
    let _ = checkpoint;
    repo.assert_fsck_clean();
}

#[test]
fn issue_22_a_story_overrides_its_roles() {
    let repo = project(TWO_STORIES);
    repo.write(
        "ralph.toml",
        "roles = [\"coder\", \"reviewer\"]\n\n[story.\"1\".roles.reviewer]\npromise = \"LGTM\"\n\n\
         [story.\"2\".roles.reviewer]\nenabled = false\n",
    );
    repo.commit_all("Per-story roles");
    let coder = script(&repo, &format!("{}{}", coder_does("1"), coder_does("2")));
    let reviewer = role_agent(&repo, "[*]\npromise LGTM\n");
    let output = run_pipeline(&repo, &coder, None, ("reviewer", &reviewer));
    assert_exit(&output, 0);
    assert_eq!(
        pipeline_of(&repo, "1"),
        pairs(&[("coder", "passed"), ("reviewer", "complete")])
    );
    assert_eq!(pipeline_of(&repo, "2"), pairs(&[("coder", "complete")]));
    assert!(recorded_prompt(&repo, "1", 2).contains("LGTM"));
}

#[test]
fn issue_22_each_role_runs_its_own_agent_and_knows_its_role() {
    let repo = project(ONE_STORY);
    let coder = script(
        &repo,
        &format!("[*]\nprint-env RALPH_ROLE\n{}", coder_does("1")),
    );
    let reviewer_script = script(&repo, "[*]\nprint-env RALPH_ROLE\npromise REVIEW_PASSED\n");
    let output = run_with_reviewer(&repo, &coder, &fake_agent_following(&reviewer_script));
    assert_exit(&output, 0);
    assert_eq!(script_calls(&coder), 1);
    assert_eq!(script_calls(&reviewer_script), 1);
    let env = agent_record(&repo, "env", "1", 1);
    assert!(env.contains("RALPH_ROLE=coder"), "{env}");
}

#[test]
fn issue_22_killed_mid_pipeline_it_resumes_at_the_right_role() {
    let repo = project(ONE_STORY);
    let coder = script(&repo, &coder_does("1"));
    let reviewer = role_agent(
        &repo,
        "[call=1]\nsleep 30\npromise REVIEW_PASSED\n[*]\npromise REVIEW_PASSED\n",
    );
    let args = pipeline_args(Some("coder,reviewer"), ("reviewer", &reviewer));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let running = Background::start(&repo, &coder, &args);
    wait_until("the reviewer runs", Duration::from_secs(30), || {
        roles_run(&repo).last().map(String::as_str) == Some("reviewer")
    });
    running.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = running.wait(Duration::from_secs(10));
    let output = start(&repo, &coder, &args);
    assert_exit(&output, 0);
    // The coder ran once: the pipeline took up at the reviewer.
    assert_eq!(roles_run(&repo), ["coder", "reviewer", "reviewer"]);
    assert_eq!(show(&repo, BRANCH, "story-1.txt"), "work of story 1\n");
    assert_eq!(story_checkpoints(&repo, "1"), 1);
    repo.assert_fsck_clean();
}

#[test]
fn issue_22_dry_run_shows_each_storys_pipeline_with_its_settings() {
    let repo = project(TWO_STORIES);
    repo.write(
        "ralph.toml",
        "[roles]\npipeline = [\"coder\", \"reviewer\", \"tester\"]\n\n[roles.tester.verification]\nmethod = \"external\"\ncommand = \"cargo test\"\n\n\
         [story.\"2\".roles.tester]\nenabled = false\n",
    );
    repo.commit_all("Roles");
    let output = dry_run(&repo, &[CHANGE, "--json", "--role-agent", "reviewer=codex"]);
    assert_success(&output);
    let plan: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let pipeline = plan["stories"][0]["pipeline"]
        .as_array()
        .expect("a pipeline");
    let roles: Vec<&str> = pipeline.iter().filter_map(|r| r["role"].as_str()).collect();
    assert_eq!(roles, ["coder", "reviewer", "tester"]);
    assert_eq!(pipeline[0]["promise"], "IMPLEMENTATION_COMPLETE");
    assert_eq!(pipeline[0]["max_iterations"], 15);
    assert_eq!(pipeline[1]["agent"], "codex");
    assert!(
        pipeline[1]["verification"]
            .as_str()
            .is_some_and(|v| v.contains("falls back")),
        "{pipeline:?}"
    );
    assert!(
        pipeline[2]["verification"]
            .as_str()
            .is_some_and(|v| v.contains("cargo test")),
        "{pipeline:?}"
    );
    let second: Vec<&str> = plan["stories"][1]["pipeline"]
        .as_array()
        .expect("a pipeline")
        .iter()
        .filter_map(|r| r["role"].as_str())
        .collect();
    assert_eq!(second, ["coder", "reviewer"]);
    // And for people.
    let text = stdout(&dry_run(&repo, &[CHANGE]));
    assert!(text.contains("reviewer"), "{text}");
}

#[test]
fn issue_22_without_roles_nothing_changes() {
    let repo = project(ONE_STORY);
    let coder = script(&repo, &story_done("1"));
    let output = start(&repo, &coder, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert_eq!(pipeline_of(&repo, "1"), pairs(&[("none", "complete")]));
    assert_eq!(roles_run(&repo), ["none"]);
    let trailers = repo.git(&["log", "-1", "--format=%(trailers)", BRANCH]);
    assert!(!trailers.contains("Ralph-Role"), "{trailers}");
}

#[test]
fn issue_22_a_pipeline_that_cannot_run_is_refused_before_anything_is_written() {
    let repo = project(ONE_STORY);
    let untouched = Untouched::take(&repo);
    for args in [
        &["--roles", "coder,reviewer", "--once"][..],
        &[
            "--roles",
            "coder,reviewer",
            "--role-agent",
            "reviewer=no-such-preset",
        ][..],
        &["--roles", "coder,architect"][..],
    ] {
        let coder = script(&repo, &coder_does("1"));
        let output = start(&repo, &coder, args);
        assert_ne!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            describe(&output)
        );
        assert!(!stderr(&output).is_empty(), "{args:?}: says why");
        untouched.assert_still(&repo, &format!("a refused start with {args:?}"));
    }
    repo.write("ralph.toml", "[roles.reviewer]\nverification = \"vibes\"\n");
    repo.commit_all("A bad role");
    let untouched = Untouched::take(&repo);
    let coder = script(&repo, &coder_does("1"));
    let output = start(&repo, &coder, &["--roles", "coder,reviewer"]);
    assert_exit(&output, 1);
    assert!(stderr(&output).contains("vibes"), "{}", describe(&output));
    untouched.assert_still(&repo, "a refused start with a bad role");
}
