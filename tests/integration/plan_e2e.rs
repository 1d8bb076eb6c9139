//! Issue 37, end to end through the binary with the fake agent: `git ralph
//! plan` has the agent write a change's stories and holds them to the
//! reader `start` will use. A good plan is accepted and shown as `start
//! --dry-run` shows it; a plan that reads as no story, as a 30-task story
//! or with a story that says nowhere how to verify it goes back to the
//! agent with the reader's words; one that never becomes valid stops with
//! what was written kept; whatever the agent changes outside the plan is
//! reverted and reported; an existing change is refused; `--refine` keeps
//! every done mark. Git is the oracle throughout.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::harness::*;

pub(crate) const CHANGE: &str = "greet";
pub(crate) const FOLDER: &str = "openspec/changes/greet";
pub(crate) const TASKS: &str = "openspec/changes/greet/tasks.md";

/// A proposal and a spec delta `openspec validate --strict` accepts.
pub(crate) fn proposal_and_spec() -> String {
    proposal_and_spec_in(FOLDER)
}

/// [`proposal_and_spec`] of the change in `folder`.
fn proposal_and_spec_in(folder: &str) -> String {
    format!(
        "write {folder}/proposal.md ## Why\\nVisitors are not greeted, and they leave without a word.\\n\\n## What Changes\\n- A greeting in hello.txt, a farewell in bye.txt.\\n\n\
         write {folder}/specs/greeting/spec.md ## ADDED Requirements\\n\\n### Requirement: Greeting\\nThe project SHALL greet its visitors in hello.txt.\\n\\n#### Scenario: Greeted\\n- **WHEN** hello.txt is read\\n- **THEN** it holds a greeting\\n\n"
    )
}

const GOOD_TASKS: &str = "## 1. Greeting\\n\\n- [ ] 1.1 Create hello.txt\\n- [ ] 1.2 Verify: test -s hello.txt\\n\\n## 2. Farewell\\n\\n- [ ] 2.1 Create bye.txt\\n- [ ] 2.2 Verify: test -s bye.txt\\n";

/// Script lines that write a good OpenSpec plan of two stories.
pub(crate) fn good_plan() -> String {
    good_plan_in(FOLDER)
}

/// Script lines that write a good OpenSpec plan of two stories in the
/// change's folder `folder`.
pub(crate) fn good_plan_in(folder: &str) -> String {
    format!(
        "{}write {folder}/tasks.md {GOOD_TASKS}\n",
        proposal_and_spec_in(folder)
    )
}

/// Script lines that write the plan with `tasks` (escaped) as tasks.md.
pub(crate) fn plan_with_tasks(tasks: &str) -> String {
    format!("{}write {TASKS} {tasks}\n", proposal_and_spec())
}

/// A project with a README and some code, committed.
pub(crate) fn project() -> TestRepo {
    TestRepo::with_files(&[
        ("src/lib.rs", "pub fn greet() {}\n"),
        ("docs/guide.md", "# Guide\n"),
    ])
}

/// `git ralph plan <args> --agent-command <fake agent>` following `script_path`.
pub(crate) fn plan_with(repo: &TestRepo, script_path: &Path, args: &[&str]) -> Output {
    run(ralph_with_fake(repo, script_path)
        .arg("plan")
        .args(args)
        .args(["--agent-command", fake_agent_path()]))
}

/// `git ralph plan greet "Greet the visitors"` with a new script.
pub(crate) fn plan(
    repo: &TestRepo,
    script_text: &str,
    extra: &[&str],
) -> (Output, std::path::PathBuf) {
    let script_path = script(repo, script_text);
    let mut args = vec![CHANGE, "Greet the visitors"];
    args.extend_from_slice(extra);
    (plan_with(repo, &script_path, &args), script_path)
}

fn refs(repo: &TestRepo) -> Vec<String> {
    repo.git(&["for-each-ref", "--format=%(refname)"])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The plan's record.
pub(crate) fn record(repo: &TestRepo, n: u32) -> Value {
    let path = repo.path(format!(".git/ralph/plans/{CHANGE}/{n}/plan.json"));
    let text = fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    serde_json::from_str(&text).expect("plan.json is JSON")
}

#[test]
fn a_good_plan_is_accepted_and_shown_as_the_dry_run_shows_it() {
    let repo = project();
    let head = repo.rev_parse("HEAD");
    let script_text = format!(
        "format claude\n[*]\n{}usage 1000 200 0.05\nsay The plan is written.\n",
        good_plan()
    );
    let (output, script_path) = plan(&repo, &script_text, &[]);
    assert_exit(&output, 0);
    assert_eq!(script_calls(&script_path), 1);
    let out = stdout(&output);

    // Only the change's folder is new; HEAD, refs and the index are as
    // they were.
    assert_eq!(
        repo.status_porcelain(),
        format!("?? {FOLDER}/proposal.md\n?? {FOLDER}/specs/greeting/spec.md\n?? {TASKS}\n")
    );
    assert_eq!(repo.rev_parse("HEAD"), head);
    assert_eq!(refs(&repo), ["refs/heads/main"]);

    // What `start --dry-run` would show, then the command that runs it.
    let dry = run(ralph(&repo)
        .args(["start", CHANGE, "--dry-run"])
        .args(["--agent-command", fake_agent_path()]));
    assert_exit(&dry, 0);
    assert!(
        out.contains(&stdout(&dry)),
        "the dry run's text is not in the plan's:\n{out}\n---\n{}",
        stdout(&dry)
    );
    let last = out.lines().rev().find(|line| !line.is_empty()).unwrap();
    assert_eq!(
        last,
        format!(
            "run it: git ralph start {CHANGE} --agent-command {}",
            fake_agent_path()
        )
    );
    assert!(
        out.contains("try 1 accepted: 2 stories, 4 tasks open"),
        "{out}"
    );

    // Usage and cost are recorded and shown like a run's.
    assert!(out.contains("1 try · 1200 tokens · $0.05"), "{out}");
    let record = record(&repo, 1);
    assert_eq!(record["status"], "accepted");
    assert_eq!(record["totals"]["attempts"], 1);
    assert_eq!(record["totals"]["input_tokens"], 1000);
    assert_eq!(record["totals"]["output_tokens"], 200);
    assert_eq!(record["totals"]["cost_usd"], 0.05);
    assert_eq!(record["attempts"][0]["cost_usd"], 0.05);
    let prompt =
        fs::read_to_string(repo.path(format!(".git/ralph/plans/{CHANGE}/1/attempts/1.prompt.md")))
            .expect("the prompt is kept");
    assert!(prompt.contains("Greet the visitors"), "{prompt}");
    assert!(
        prompt.contains(&format!("only inside `{FOLDER}/`")),
        "{prompt}"
    );
    assert_eq!(recorded_prompt(&repo, "none", 1), prompt);
    repo.assert_fsck_clean();
}

/// A first try of `first` (script lines), a second of a good plan: the
/// second is accepted, and its prompt holds `words`, the reader's.
pub(crate) fn sent_back_then_accepted(first: &str, words: &str) {
    let repo = project();
    let script_text = format!("[call=1]\n{first}[call=2]\n{}", good_plan());
    let (output, script_path) = plan(&repo, &script_text, &[]);
    assert_exit(&output, 0);
    assert_eq!(script_calls(&script_path), 2);
    let out = stdout(&output);
    assert!(out.contains("try 1 sent back"), "{out}");
    assert!(out.contains(words), "{words:?} is not shown:\n{out}");
    let second = recorded_prompt(&repo, "none", 2);
    assert!(second.contains("Your last plan was sent back"), "{second}");
    assert!(second.contains(words), "{words:?} is not in:\n{second}");
    assert!(
        !recorded_prompt(&repo, "none", 1).contains("sent back"),
        "the first try hears of no findings"
    );
    assert!(out.contains("try 2 accepted"), "{out}");
    let record = record(&repo, 1);
    assert_eq!(record["status"], "accepted");
    let findings = record["attempts"][0]["findings"].to_string();
    assert!(findings.contains(&words.replace('"', "\\\"")), "{findings}");
    assert_eq!(
        repo.read(TASKS),
        GOOD_TASKS.replace("\\n", "\n"),
        "the accepted plan is on disk"
    );
    repo.assert_fsck_clean();
}

#[test]
fn a_plan_that_reads_as_no_story_is_sent_back_with_the_readers_words() {
    sent_back_then_accepted(
        &plan_with_tasks("## 1. Greeting\\n\\nCreate hello.txt and say hello.\\n"),
        &format!("{TASKS} has no checkbox (`- [ ] task`) outside code fences"),
    );
}

#[test]
fn a_thirty_task_story_is_sent_back_to_be_split() {
    let mut tasks = String::from("## 1. Everything\\n\\n");
    for n in 1..=29 {
        tasks.push_str(&format!("- [ ] 1.{n} Do part {n}\\n"));
    }
    tasks.push_str("- [ ] 1.30 Verify: make check\\n");
    sent_back_then_accepted(
        &plan_with_tasks(&tasks),
        "story 1 (\"Everything\") has 30 tasks, more than one agent attempt should take on (at most 12): split it into smaller stories",
    );
}

#[test]
fn a_story_that_says_nowhere_how_to_verify_it_is_sent_back() {
    sent_back_then_accepted(
        &plan_with_tasks(
            "## 1. Greeting\\n\\n- [ ] 1.1 Create hello.txt\\n- [ ] 1.2 Verify: test -s hello.txt\\n\\n## 2. Farewell\\n\\n- [ ] 2.1 Create bye.txt\\n",
        ),
        "story 2 (\"Farewell\") does not say how to verify it",
    );
}

#[test]
fn a_plan_that_never_becomes_valid_stops_with_what_was_written_kept() {
    let repo = project();
    let tasks = "## 1. Greeting\\n\\nJust greet.\\n";
    let (output, script_path) = plan(
        &repo,
        &format!("[*]\n{}", plan_with_tasks(tasks)),
        &["--max-retries", "1"],
    );
    assert_exit(&output, 3);
    assert_eq!(script_calls(&script_path), 2, "one try and one retry");
    let out = stdout(&output);
    assert!(out.contains("the plan is still not accepted"), "{out}");
    assert!(out.contains(&format!("kept in {FOLDER}/")), "{out}");
    assert!(out.contains("has no checkbox"), "{out}");
    assert!(out.contains("--refine"), "{out}");
    assert!(!out.contains("run it:"), "{out}");
    assert_eq!(repo.read(TASKS), tasks.replace("\\n", "\n"));
    assert!(repo.path(format!("{FOLDER}/proposal.md")).is_file());
    assert_eq!(record(&repo, 1)["status"], "not_valid");
    assert_eq!(record(&repo, 1)["attempts"].as_array().unwrap().len(), 2);
    repo.assert_fsck_clean();
}

#[test]
fn what_the_agent_changes_outside_the_plan_is_reverted_and_reported() {
    let repo = project();
    // The user's own work: a change left unstaged, a new file staged.
    repo.write("docs/guide.md", "# Guide\n\nMy own words.\n");
    repo.write("notes.txt", "my notes\n");
    repo.git(&["add", "notes.txt"]);
    let status_before = repo.status_porcelain();
    let script_text = format!(
        "[*]\n{}write src/lib.rs pub fn greet() {{ println!(\"hacked\"); }}\\n\nwrite src/extra.rs // new\\n\nwrite docs/guide.md overwritten\\n\n",
        good_plan()
    );
    let (output, _) = plan(&repo, &script_text, &[]);
    assert_exit(&output, 0);
    let out = stdout(&output);
    let kept = format!("refs/ralph/{CHANGE}/plan/1/1");
    assert!(
        out.contains(&format!(
            "undone: the agent changed docs/guide.md, src/extra.rs, src/lib.rs outside {FOLDER}/; reverted (its work is kept at {kept})"
        )),
        "{out}"
    );
    // The code is as committed, the user's work as they left it, staged
    // and not, and the plan is there.
    assert_eq!(repo.read("src/lib.rs"), "pub fn greet() {}\n");
    assert!(!repo.path("src/extra.rs").exists());
    assert_eq!(repo.read("docs/guide.md"), "# Guide\n\nMy own words.\n");
    assert_eq!(
        repo.git(&["diff", "--cached", "--name-only"]),
        "notes.txt\n"
    );
    assert_eq!(
        repo.status_porcelain(),
        format!(
            "{status_before}?? {FOLDER}/proposal.md\n?? {FOLDER}/specs/greeting/spec.md\n?? {TASKS}\n"
        )
    );
    // Nothing is lost: the agent's whole work is kept under the ref.
    assert_eq!(
        repo.git(&["show", &format!("{kept}:src/lib.rs")]),
        "pub fn greet() { println!(\"hacked\"); }\n"
    );
    assert!(repo.git_ok(&["cat-file", "-e", &format!("{kept}:{TASKS}")]));
    let undone = record(&repo, 1)["attempts"][0]["undone"].to_string();
    assert!(undone.contains("src/lib.rs"), "{undone}");
    repo.assert_fsck_clean();
}

#[test]
fn the_git_directory_head_and_branches_are_contained_as_in_a_run() {
    let repo = project();
    let head = repo.rev_parse("HEAD");
    let script_text = format!(
        "[*]\n{}git config core.hooksPath /tmp/elsewhere\ngit branch side\ngit checkout -q -b detour\n",
        good_plan()
    );
    let (output, _) = plan(&repo, &script_text, &[]);
    assert_exit(&output, 0);
    let out = stdout(&output);
    assert!(out.contains("config (core.hooksPath)"), "{out}");
    assert!(
        out.contains("moved HEAD to branch 'detour'; it is back on branch 'main'"),
        "{out}"
    );
    assert!(out.contains("created refs/heads/side"), "{out}");
    assert!(out.contains("created refs/heads/detour"), "{out}");
    assert!(!repo.git_ok(&["config", "--get", "core.hooksPath"]));
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.rev_parse("HEAD"), head);
    assert_eq!(repo.git(&["branch", "--list", "side", "detour"]), "");
    assert!(repo.path(TASKS).is_file());
    repo.assert_fsck_clean();
}

#[test]
fn an_existing_change_is_refused_and_nothing_changes() {
    let repo = TestRepo::with_change(CHANGE, "## 1. Greeting\n\n- [ ] 1.1 Create hello.txt\n");
    let untouched = Untouched::take(&repo);
    let (output, script_path) = plan(&repo, &format!("[*]\n{}", good_plan()), &[]);
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(
        err.contains(&format!(
            "{FOLDER}/ exists already; a plan never overwrites it"
        )),
        "{err}"
    );
    assert!(err.contains("--refine"), "{err}");
    assert_eq!(script_calls(&script_path), 0, "no agent ran");
    untouched.assert_still(&repo, "a refused plan");

    // So is an existing --tasks file.
    repo.write("PLAN.md", "# mine\n");
    let untouched = Untouched::take(&repo);
    let script_path = script(&repo, "[*]\nwrite PLAN.md overwritten\n");
    let output = plan_with(&repo, &script_path, &[CHANGE, "x", "--tasks", "PLAN.md"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("PLAN.md exists already"),
        "{}",
        describe(&output)
    );
    untouched.assert_still(&repo, "a refused plan of a file");
}

#[test]
fn an_agent_that_cannot_run_stops_the_plan_as_a_setup_error() {
    let repo = project();
    let output = run(ralph(&repo)
        .args(["plan", CHANGE, "Greet the visitors"])
        .args(["--agent-command", "no-such-agent-here"]));
    assert_exit(&output, 8);
    let err = stderr(&output);
    assert!(err.contains("no-such-agent-here"), "{err}");
    assert!(err.contains("then plan again"), "{err}");
    assert_eq!(repo.status_porcelain(), "", "nothing was written");
    assert_eq!(record(&repo, 1)["status"], "error");
}

#[test]
fn ctrl_c_stops_the_plan_keeping_what_was_written() {
    let repo = project();
    let script_path = script(
        &repo,
        &format!("[*]\n{}write src/lib.rs hacked\nsleep 60\n", good_plan()),
    );
    let child = ralph_with_fake(&repo, &script_path)
        .args(["plan", CHANGE, "Greet the visitors"])
        .args(["--agent-command", fake_agent_path()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("git-ralph starts");
    wait_until(
        "the agent has written the plan",
        std::time::Duration::from_secs(30),
        || repo.read("src/lib.rs") == "hacked",
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT sent");
    // The agent is ended, not waited for: a plan whose agent ran its
    // minute out would be accepted (status 0).
    let output = child.wait_with_output().expect("git-ralph ends");
    assert_exit(&output, 130);
    let out = stdout(&output);
    assert!(
        out.contains(&format!("stopped; what was written is kept in {FOLDER}/")),
        "{out}"
    );
    assert!(
        out.contains("src/lib.rs"),
        "the stray edit is reported:\n{out}"
    );
    assert_eq!(repo.read("src/lib.rs"), "pub fn greet() {}\n");
    assert!(repo.path(TASKS).is_file());
    assert_eq!(record(&repo, 1)["status"], "stopped");
    repo.assert_fsck_clean();
}

#[test]
fn a_plan_without_a_brief_is_a_usage_error() {
    let repo = project();
    let untouched = Untouched::take(&repo);
    let script_path = script(&repo, "[*]\n");
    let output = plan_with(&repo, &script_path, &[CHANGE]);
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("nothing to plan"),
        "{}",
        describe(&output)
    );
    untouched.assert_still(&repo, "a plan without a brief");
}

#[test]
fn refine_splits_a_big_story_and_keeps_every_done_mark() {
    let mut tasks = String::from(
        "## 1. Everything\n\n- [x] 1.1 Pick the words\n- [x] 1.2 Write the README line\n",
    );
    for n in 3..=14 {
        tasks.push_str(&format!("- [ ] 1.{n} Do part {n}\n"));
    }
    let repo = TestRepo::with_change(CHANGE, &tasks);
    repo.write(format!("{FOLDER}/specs/greeting/spec.md"), "## ADDED Requirements\n\n### Requirement: Greeting\nThe project SHALL greet.\n\n#### Scenario: Greeted\n- **WHEN** read\n- **THEN** greeted\n");
    repo.commit_all("The spec");
    // The first refinement drops a done mark; the second keeps both.
    let split = |first: &str| {
        let mut text = format!(
            "## 1. Words\\n\\n- [x] 1.1 Pick the words\\n{first}- [ ] 1.3 Verify: grep -q hello README.md\\n\\n## 2. Parts\\n\\n"
        );
        for n in 3..=8 {
            text.push_str(&format!("- [ ] 2.{n} Do part {n}\\n"));
        }
        text.push_str("- [ ] 2.9 Verify: make check\\n\\n## 3. More parts\\n\\n");
        for n in 9..=14 {
            text.push_str(&format!("- [ ] 3.{n} Do part {n}\\n"));
        }
        text.push_str("- [ ] 3.15 Verify: make check\\n");
        text
    };
    let lost = split("- [ ] 1.2 Write the README line\\n");
    let kept = split("- [x] 1.2 Write the README line\\n");
    let script_path = script(
        &repo,
        &format!("[call=1]\nwrite {TASKS} {lost}\n[call=2]\nwrite {TASKS} {kept}\n"),
    );
    let output = plan_with(&repo, &script_path, &[CHANGE, "--refine"]);
    assert_exit(&output, 0);
    let out = stdout(&output);
    assert!(
        out.contains("task \"1.2 Write the README line\" was done before and is not now"),
        "{out}"
    );
    let first = recorded_prompt(&repo, "none", 1);
    assert!(first.contains("Refine it, do not start over"), "{first}");
    assert_eq!(repo.read(TASKS), kept.replace("\\n", "\n"));
    let ticked: Vec<String> = repo
        .read(TASKS)
        .lines()
        .filter(|line| line.starts_with("- [x]"))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        ticked,
        [
            "- [x] 1.1 Pick the words",
            "- [x] 1.2 Write the README line"
        ]
    );
    // The change as it was is kept beside the record, and in git.
    assert_eq!(
        fs::read_to_string(repo.path(format!(".git/ralph/plans/{CHANGE}/1/before/{TASKS}")))
            .unwrap(),
        tasks
    );
    assert_eq!(
        repo.status_porcelain(),
        format!(" M {TASKS}\n"),
        "only the change's tasks changed"
    );
    repo.assert_fsck_clean();
}

#[test]
fn a_prd_and_a_checklist_are_planned_into_their_files() {
    let repo = project();
    let prd = r#"{\n  "project": "greet",\n  "userStories": [\n    {"id": "US-001", "title": "Greeting", "description": "As a visitor I am greeted.", "acceptanceCriteria": ["hello.txt holds a greeting", "Verify: test -s hello.txt"], "priority": 1, "passes": false, "dependsOn": []}\n  ]\n}\n"#;
    let script_path = script(&repo, &format!("[*]\nwrite plans/prd.json {prd}\n"));
    let output = plan_with(
        &repo,
        &script_path,
        &[CHANGE, "greet", "--prd", "plans/prd.json"],
    );
    assert_exit(&output, 0);
    let out = stdout(&output);
    assert!(out.contains("stories from: plans/prd.json (prd)"), "{out}");
    // An agent that reports no usage did not plan for free.
    assert!(out.contains("1 try · usage unknown · recorded in"), "{out}");
    assert!(
        out.ends_with(&format!(
            "run it: git ralph start {CHANGE} --prd plans/prd.json --agent-command {}\n",
            fake_agent_path()
        )),
        "{out}"
    );
    assert_eq!(repo.status_porcelain(), "?? plans/prd.json\n");

    let script_path = script(
        &repo,
        &format!("[*]\nwrite TODO.md # Greet\\n\\n{GOOD_TASKS}\n"),
    );
    let output = plan_with(
        &repo,
        &script_path,
        &["tidy", "greet", "--tasks", "TODO.md"],
    );
    assert_exit(&output, 0);
    let out = stdout(&output);
    assert!(out.contains("stories from: TODO.md (markdown)"), "{out}");
    assert!(
        out.contains("run it: git ralph start tidy --tasks TODO.md"),
        "{out}"
    );
    assert_eq!(repo.status_porcelain(), "?? TODO.md\n?? plans/prd.json\n");
    repo.assert_fsck_clean();
}

#[test]
fn the_brief_comes_from_a_file_or_a_github_issue() {
    let repo = project();
    let brief = repo.dir.path().join("brief.md");
    fs::write(&brief, "Greet every visitor by name.\n").unwrap();
    let script_path = script(&repo, &format!("[*]\n{}", good_plan()));
    let output = plan_with(
        &repo,
        &script_path,
        &[CHANGE, "--from", &brief.to_string_lossy()],
    );
    assert_exit(&output, 0);
    assert!(recorded_prompt(&repo, "none", 1).contains("Greet every visitor by name."));

    let bin = bin_dir(&repo);
    fs::create_dir_all(&bin).unwrap();
    let gh = bin.join("gh");
    fs::write(
        &gh,
        "#!/bin/sh\n[ \"$1 $2 $3\" = \"issue view 12\" ] || exit 1\necho '{\"title\":\"Say goodbye\",\"body\":\"Visitors leave unseen.\"}'\n",
    )
    .unwrap();
    fs::set_permissions(&gh, fs::Permissions::from_mode(0o755)).unwrap();
    let script_path = script(
        &repo,
        &format!(
            "[*]\n{}",
            good_plan().replace(FOLDER, "openspec/changes/bye")
        ),
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let output = run(ralph_with_fake(&repo, &script_path)
        .args(["plan", "bye", "--issue", "12"])
        .args(["--agent-command", fake_agent_path()])
        .env("PATH", path));
    assert_exit(&output, 0);
    let prompt =
        fs::read_to_string(repo.path(".git/ralph/plans/bye/1/attempts/1.prompt.md")).unwrap();
    assert!(
        prompt.contains("# Say goodbye\n\nVisitors leave unseen."),
        "{prompt}"
    );
}

/// Where `.ci/run` installs the pinned OpenSpec CLI, off PATH.
fn pinned_openspec() -> std::path::PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("openspec-cli/node_modules/.bin/openspec")
}

/// Where the OpenSpec CLI may be: where `.ci/run` installs it, then PATH.
fn openspec_candidates() -> Vec<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::iter::once(pinned_openspec())
        .chain(std::env::split_paths(&path).map(|dir| dir.join("openspec")))
        .collect()
}

/// The OpenSpec CLI, if it is installed.
pub(crate) fn openspec_cli() -> Option<std::path::PathBuf> {
    openspec_candidates()
        .into_iter()
        .find(|candidate| candidate.is_file())
}

/// PATH with the directory of `program` first.
pub(crate) fn path_with(program: &Path) -> String {
    format!(
        "{}:{}",
        program.parent().unwrap_or(Path::new(".")).display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// With the OpenSpec CLI installed (CI installs it), a change without a
/// spec delta is sent back with `openspec validate`'s words, and what
/// `plan` accepts passes `openspec validate --strict`.
#[test]
fn openspec_validate_passes_on_what_plan_accepted() {
    let Some(openspec) = required("the OpenSpec CLI", &openspec_candidates()) else {
        return;
    };
    let repo = project();
    let no_delta = format!(
        "write {FOLDER}/proposal.md ## Why\\nVisitors are not greeted, and they leave without a word.\\n\\n## What Changes\\n- A greeting.\\n\nwrite {TASKS} {GOOD_TASKS}\n"
    );
    let script_text = format!("[call=1]\n{no_delta}[call=2]\n{}", good_plan());
    let script_path = script(&repo, &script_text);
    let output = run(ralph_with_fake(&repo, &script_path)
        .args(["plan", CHANGE, "Greet the visitors"])
        .args(["--agent-command", fake_agent_path()])
        .env("PATH", path_with(&openspec)));
    assert_exit(&output, 0);
    let out = stdout(&output);
    assert!(
        out.contains(&format!("`openspec validate {CHANGE} --strict` says")),
        "{out}"
    );
    assert!(out.contains("Change must have at least one delta"), "{out}");
    assert!(recorded_prompt(&repo, "none", 2).contains("Change must have at least one delta"));
    let validated = run(repo
        .command_here(&openspec)
        .args(["validate", CHANGE, "--strict", "--no-interactive"])
        .env("OPENSPEC_TELEMETRY", "0")
        .env("PATH", path_with(&openspec)));
    assert_exit(&validated, 0);
    assert!(
        stdout(&validated).contains(&format!("Change '{CHANGE}' is valid")),
        "{}",
        describe(&validated)
    );
}
