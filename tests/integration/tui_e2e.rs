//! Seeing a run: `log` and `show` read back a real run with a failed and a
//! retried attempt, judged against git and the run's own files, and change
//! nothing; `watch` drives the loop screen in a real terminal (tmux).

use std::fs;
use std::path::Path;

use crate::harness::story_run::*;
use crate::harness::tmux::Tmux;
use crate::harness::*;
use serde_json::Value;

/// Story 1 fails once (with a tool call and usage), then passes its check;
/// story 2 passes at once.
fn failed_then_retried() -> (TestRepo, std::path::PathBuf) {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\n\
             format claude\n\
             write hello.txt half a greeting\\n\n\
             say Looking at the tests first.\n\
             tool ran the test suite: database unavailable\n\
             usage 120 30 0.25\n\
             final The database is down.\n\
             promise FAILED: the tests need a database\n\
             [story=1 attempt=2]\n\
             format claude\n\
             usage 200 50 0.5\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--check", "test -f story-1.txt"],
    );
    assert_exit(&output, 0);
    (repo, agent)
}

/// Everything a read-only command could disturb: refs, HEAD, index and
/// worktree, and every file of the run.
fn snapshot(repo: &TestRepo) -> String {
    let mut text = repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]);
    text.push_str(&repo.git(&["rev-parse", "HEAD"]));
    text.push_str(&repo.status_porcelain());
    text.push_str(&repo.git(&["ls-files", "-s"]));
    let mut files = Vec::new();
    collect(&git_dir(repo).join("ralph"), &mut files);
    files.sort();
    for (path, bytes) in files {
        text.push_str(&format!("{path} {}\n", bytes.len()));
        text.push_str(&String::from_utf8_lossy(&bytes));
    }
    text
}

fn collect(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else {
            let bytes = fs::read(&path).unwrap_or_default();
            out.push((path.display().to_string(), bytes));
        }
    }
}

fn json(output: &std::process::Output) -> Value {
    assert_exit(output, 0);
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("not JSON: {err}\n{}", stdout(output)))
}

#[test]
fn log_json_lists_every_attempt_with_its_outcome_and_where_the_work_is() {
    let (repo, _agent) = failed_then_retried();
    let before = snapshot(&repo);
    let trail = json(&ralph_cmd(&repo, &["log", "--json"]));
    assert_eq!(trail["change"], CHANGE);
    assert_eq!(trail["branch"], BRANCH);
    let stories = trail["stories"].as_array().unwrap();
    assert_eq!(stories.len(), 2);
    let first = stories[0]["attempts"].as_array().unwrap();
    assert_eq!(first.len(), 2, "{trail:#}");
    assert_eq!(first[0]["outcome"], "failed");
    assert!(
        first[0]["reason"]
            .as_str()
            .unwrap()
            .contains("the tests need a database"),
        "{trail:#}"
    );
    let attempt_ref = first[0]["attempt_ref"].as_str().unwrap();
    assert_eq!(attempt_ref, format!("{NS}/attempts/1/1"));
    assert!(repo.git_ok(&["rev-parse", "--verify", attempt_ref]));
    assert_eq!(first[0]["checkpoint"], Value::Null);
    assert_eq!(first[0]["input_tokens"], 120);
    assert_eq!(first[0]["output_tokens"], 30);
    assert_eq!(first[0]["cost_usd"], 0.25);

    assert_eq!(first[1]["outcome"], "complete");
    let checkpoint = first[1]["checkpoint"].as_str().unwrap();
    // The checkpoint of story 1 is the commit below story 2's, on the branch.
    assert_eq!(checkpoint, repo.rev_parse(&format!("{BRANCH}~1")));
    assert_eq!(first[1]["attempt_ref"], Value::Null);
    let second = stories[1]["attempts"].as_array().unwrap();
    assert_eq!(second.len(), 1);
    assert_eq!(
        second[0]["checkpoint"].as_str().unwrap(),
        repo.rev_parse(BRANCH)
    );
    assert_eq!(trail["totals"]["attempts"], 3);

    let text = ralph_cmd(&repo, &["log", CHANGE]);
    assert_exit(&text, 0);
    let text = stdout(&text);
    assert!(text.contains("#1 failed"), "{text}");
    assert!(text.contains(&format!("{NS}/attempts/1/1")), "{text}");
    assert!(
        text.contains(&format!("checkpoint {}", &checkpoint[..10])),
        "{text}"
    );
    assert_eq!(snapshot(&repo), before, "log changed nothing");
}

#[test]
fn show_prints_prompt_transcript_diff_and_checks_of_one_attempt() {
    let (repo, _agent) = failed_then_retried();
    let before = snapshot(&repo);

    let failed = json(&ralph_cmd(&repo, &["show", "1/1", "--json"]));
    assert_eq!(failed["outcome"], "failed");
    let prompt_file = run_dir(&repo).join("attempts/1-1.prompt.md");
    assert_eq!(
        failed["prompt"].as_str().unwrap(),
        fs::read_to_string(&prompt_file).unwrap(),
        "the prompt is the one the agent was given"
    );
    let transcript = failed["transcript"].to_string();
    assert!(
        transcript.contains("Looking at the tests first."),
        "{transcript}"
    );
    assert!(transcript.contains("database unavailable"), "{transcript}");
    // The diff is the attempt ref against its parent, file for file.
    let diff = failed["diff"].as_str().unwrap();
    let attempt_ref = format!("{NS}/attempts/1/1");
    let files: Vec<String> = repo
        .git(&[
            "diff",
            "--name-only",
            &format!("{attempt_ref}^"),
            &attempt_ref,
        ])
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(!files.is_empty());
    for file in &files {
        assert!(
            diff.contains(&format!("diff --git a/{file} b/{file}")),
            "{diff}"
        );
    }
    assert!(diff.contains("+half a greeting"), "{diff}");

    let retried = json(&ralph_cmd(&repo, &["show", "1", "--json", "--checks"]));
    assert_eq!(retried["attempt"], 2, "the last attempt by default");
    assert!(retried.get("prompt").is_none(), "only the part asked for");
    let checks = retried["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 1, "{retried:#}");
    assert_eq!(checks[0]["name"], "test -f story-1.txt");
    assert_eq!(checks[0]["passed"], true);

    let text = ralph_cmd(&repo, &["show", "1/1", CHANGE, "--transcript"]);
    assert_exit(&text, 0);
    let text = stdout(&text);
    assert!(text.contains("Looking at the tests first."), "{text}");
    assert!(!text.contains("── prompt"), "{text}");

    let all = ralph_cmd(&repo, &["show", "1/2"]);
    assert_exit(&all, 0);
    let all = stdout(&all);
    for part in ["── prompt", "── transcript", "── diff", "── checks"] {
        assert!(all.contains(part), "{part} missing:\n{all}");
    }
    assert!(all.contains("+work of story 1"), "{all}");

    let missing = ralph_cmd(&repo, &["show", "1/9"]);
    assert_exit(&missing, 1);
    assert!(
        stderr(&missing).contains("no attempt 9"),
        "{}",
        stderr(&missing)
    );
    assert_eq!(snapshot(&repo), before, "show changed nothing");
}

/// The background loop, killed if the test fails before it ends.
struct Background(std::process::Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[test]
fn watch_follows_a_running_loop_in_a_terminal_browses_it_and_s_stops_it() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "[story=1]\nsay Story one: greeting written.\n{}\
             [story=2]\nsay Story two is thinking.\nsleep 60\n",
            finish_story("1")
        ),
    );
    let mut loop_process = Background(
        start_command(&repo, &agent, &["--on-finish", "keep"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("git ralph start runs"),
    );
    story_two_under_way(&repo, "Story two is thinking");

    let binary = env!("CARGO_BIN_EXE_git-ralph");
    let Some(tmux) = Tmux::start(
        &repo,
        &format!(
            "{} watch {CHANGE}; echo watch-exited-$?; sleep 30",
            shell_quote(binary)
        ),
    ) else {
        return;
    };
    let screen = tmux.wait_for("Story two is thinking");
    assert!(screen.contains("running"), "{screen}");
    assert!(screen.contains("2. Farewell"), "{screen}");
    assert!(
        screen.contains("s stop"),
        "a live run can be stopped:\n{screen}"
    );

    // Story 1's output, after it is done.
    tmux.keys(&["k"]);
    let screen = tmux.wait_for("Story one: greeting written.");
    assert!(screen.contains("complete"), "{screen}");
    // Its prompt, one tab on.
    tmux.keys(&["Tab"]);
    tmux.wait_for("## Learnings");
    tmux.keys(&["?"]);
    tmux.wait_for("pick an attempt of the story");
    tmux.keys(&["Escape"]);
    // An Escape directly followed by a key would read as Alt and that key.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while tmux.screen().contains("pick an attempt of the story") {
        assert!(std::time::Instant::now() < deadline, "the help stayed open");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    // s asks the loop to stop; it stops gracefully and the run is resumable.
    tmux.keys(&["s"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = loop_process.0.try_wait().expect("wait") {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the loop did not stop"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(130), "stopped by the user");
    let run = state(&repo);
    assert_eq!(run["status"], "stopped");
    assert_eq!(run["reason"], "stopped");

    // q leaves, and the terminal is given back.
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("watch-exited-0");
    assert!(
        !screen.contains("Stories"),
        "the alternate screen is gone:\n{screen}"
    );
    repo.assert_fsck_clean();
}

/// `git ralph start` on a terminal, in tmux: the loop screen, the way a
/// person uses it.
/// Waits until the run's events hold `said`, which story 2's agent says.
fn story_two_under_way(repo: &TestRepo, said: &str) {
    let events = run_dir(repo).join("events.jsonl");
    wait_until(
        "story 2 is under way",
        std::time::Duration::from_secs(20),
        || {
            fs::read_to_string(&events)
                .unwrap_or_default()
                .contains(said)
        },
    );
}

/// Waits for `marker`, printed when the program exited, and checks that the
/// screen it drew (`drawn`, a word only it shows) is gone: the terminal is
/// given back. Returns the screen.
fn exits_giving_the_terminal_back(tmux: &Tmux, marker: &str, drawn: &str) -> String {
    let screen = tmux.wait_for(marker);
    assert!(
        !screen.contains(drawn),
        "the terminal is given back:\n{screen}"
    );
    screen
}

/// The run's `key` in `state.json` is `value`, the user is on the run's
/// branch, and the repository is sound.
fn assert_ended_on_the_branch(repo: &TestRepo, key: &str, value: &str) {
    assert_eq!(state(repo)[key], value);
    assert_eq!(repo.rev_parse("HEAD"), repo.rev_parse(BRANCH));
    repo.assert_fsck_clean();
}

fn start_in_tmux(repo: &TestRepo, agent: &Path) -> Option<Tmux> {
    start_in_tmux_sized(repo, agent, (100, 30))
}

fn start_in_tmux_sized(repo: &TestRepo, agent: &Path, size: (u16, u16)) -> Option<Tmux> {
    start_in_tmux_with(repo, agent, size, "")
}

fn start_in_tmux_with(
    repo: &TestRepo,
    agent: &Path,
    size: (u16, u16),
    extra: &str,
) -> Option<Tmux> {
    let binary = env!("CARGO_BIN_EXE_git-ralph");
    Tmux::start_sized(
        repo,
        &format!(
            "FAKE_AGENT_SCRIPT={} FAKE_AGENT_RECORD_DIR={} {} start {CHANGE} --agent-command {} --on-finish keep {extra}; echo start-exited-$?; sleep 30",
            shell_quote(&agent.to_string_lossy()),
            shell_quote(&repo.record_dir().to_string_lossy()),
            shell_quote(binary),
            shell_quote(&agent_command(repo)),
        ),
        size,
    )
}

fn thinking_in_story_two(repo: &TestRepo) -> std::path::PathBuf {
    script(
        repo,
        &format!(
            "[story=1]\nsay Story one: greeting written.\n{}\
             [story=2]\nsay Story two is thinking.\nsleep 60\n",
            finish_story("1")
        ),
    )
}

/// As [`thinking_in_story_two`], story 2's agent having half written a
/// file first, for the Diff tab to show.
fn writing_in_story_two(repo: &TestRepo) -> std::path::PathBuf {
    script(
        repo,
        &format!(
            "[story=1]\nsay Story one: greeting written.\n{}\
             [story=2]\nwrite farewell.txt half a farewell\\n\n\
             say Story two is writing.\nsleep 60\n",
            finish_story("1")
        ),
    )
}

#[test]
fn start_opens_the_loop_screen_story_one_can_be_read_and_q_stops_the_run() {
    let repo = project(TWO_STORIES);
    let agent = thinking_in_story_two(&repo);
    let Some(tmux) = start_in_tmux(&repo, &agent) else {
        return;
    };
    let screen = tmux.wait_for("Story two is thinking");
    assert!(screen.contains("2. Farewell"), "{screen}");
    assert!(screen.contains("q stop"), "the keys are shown:\n{screen}");
    // Story 1's output, after it is done.
    tmux.keys(&["k"]);
    let screen = tmux.wait_for("Story one: greeting written.");
    assert!(screen.contains("complete"), "{screen}");
    // q stops the run gracefully: the agent is stopped, the work kept.
    tmux.keys(&["q"]);
    exits_giving_the_terminal_back(&tmux, "start-exited-130", "Stories");
    assert_eq!(state(&repo)["status"], "stopped");
    assert_ended_on_the_branch(&repo, "reason", "stopped");
}

#[test]
fn three_q_presses_force_quit_the_loop_screen_and_the_run_resumes() {
    let repo = project(TWO_STORIES);
    let agent = thinking_in_story_two(&repo);
    let Some(tmux) = start_in_tmux(&repo, &agent) else {
        return;
    };
    tmux.wait_for("Story two is thinking");
    tmux.keys(&["q", "q", "q"]);
    let screen = exits_giving_the_terminal_back(&tmux, "start-exited-130", "Stories");
    assert!(screen.contains("force-quit"), "{screen}");
    // The run resumes, the cut attempt preserved first.
    let finish = script(&repo, &story_done("2"));
    let resumed = start(&repo, &finish, &["--on-finish", "keep"]);
    assert_exit(&resumed, 0);
    repo.assert_fsck_clean();
}

#[test]
fn the_loop_screen_of_a_parallel_run_shows_every_story_at_work_and_a_forced_quit_resumes() {
    let repo = project(TWO_STORIES);
    repo.write(
        "openspec/changes/greet/ralph.toml",
        "[stories]\nindependent = true\n",
    );
    repo.commit_all("The stories of greet are independent");
    let agent = script(
        &repo,
        "[story=1]\nsay Story one is thinking.\nsleep 60\n\
         [story=2]\nsay Story two is thinking.\nsleep 60\n",
    );
    let Some(tmux) = start_in_tmux_with(&repo, &agent, (100, 30), "--parallel 2") else {
        return;
    };
    let screen = tmux.wait_for("at work: story 1 (attempt 1), 2 (attempt 1)");
    assert!(screen.contains("▶ 1. Greeting"), "{screen}");
    assert!(screen.contains("▶ 2. Farewell"), "{screen}");
    // A forced quit leaves both stories' worktrees; a resume retires them,
    // keeping what they left, and does both stories.
    tmux.keys(&["q", "q", "q"]);
    exits_giving_the_terminal_back(&tmux, "start-exited-130", "Stories");
    kill_agents(&repo.record_dir());
    let finish = script(&repo, &stories_done(&["1", "2"]));
    let resumed = start(&repo, &finish, &["--on-finish", "keep"]);
    assert_exit(&resumed, 0);
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["2 Farewell", "1 Greeting"])
    );
    let worktrees = repo.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
    repo.assert_fsck_clean();
}

/// Every loose object and the index, as bytes: what a read-only look at
/// the worktree must leave as it is.
fn objects_and_index(repo: &TestRepo) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    collect(&git_dir(repo).join("objects"), &mut files);
    files.push((
        "index".into(),
        fs::read(git_dir(repo).join("index")).unwrap(),
    ));
    files.sort();
    files
}

#[test]
fn the_diff_tab_follows_a_running_attempt_in_the_loop_and_in_a_second_pane() {
    let repo = project(TWO_STORIES);
    let agent = writing_in_story_two(&repo);
    let Some(tmux) = start_in_tmux_sized(&repo, &agent, (120, 50)) else {
        return;
    };
    tmux.wait_for("Story two is writing.");
    let before = objects_and_index(&repo);
    // Output → Prompt → Diff: the attempt's work so far, while it runs.
    tmux.keys(&["Tab", "Tab"]);
    let screen = tmux.wait_for("+half a farewell");
    assert!(screen.contains("live: the worktree"), "{screen}");
    assert!(screen.contains("farewell.txt"), "{screen}");

    // A second pane watches the same run and sees the same live diff.
    let binary = env!("CARGO_BIN_EXE_git-ralph");
    let watcher = tmux.split(
        &repo,
        &format!(
            "{} watch {CHANGE}; echo watch-exited-$?; sleep 30",
            shell_quote(binary)
        ),
    );
    tmux.wait_in(&watcher, "Story two is writing.");
    tmux.keys_in(&watcher, &["Tab", "Tab"]);
    let screen = tmux.wait_in(&watcher, "+half a farewell");
    assert!(screen.contains("live: the worktree"), "{screen}");
    // The agent writes more; the diff follows within its refresh.
    fs::write(
        repo.root.join("farewell.txt"),
        "half a farewell\nand the other half\n",
    )
    .unwrap();
    tmux.wait_in(&watcher, "+and the other half");
    tmux.wait_for("+and the other half");
    assert_eq!(
        objects_and_index(&repo),
        before,
        "looking at the worktree wrote no object and left the index alone"
    );

    // The watcher leaves; the loop goes on until q stops it.
    tmux.keys_in(&watcher, &["q"]);
    tmux.wait_in(&watcher, "watch-exited-0");
    assert_eq!(state(&repo)["status"], "running");
    tmux.keys(&["q"]);
    tmux.wait_for("start-exited-130");
    let run = state(&repo);
    assert_eq!(run["status"], "stopped");
    repo.assert_fsck_clean();
}

/// A bare `git ralph` in tmux, with the agent and the ending configured as
/// a user would (`ralph.agentCommand`, `ralph.onFinish`).
fn home_in_tmux(repo: &TestRepo, agent: &Path) -> Option<Tmux> {
    repo.git(&["config", "ralph.agentCommand", &agent_command(repo)]);
    repo.git(&["config", "ralph.onFinish", "keep"]);
    let binary = env!("CARGO_BIN_EXE_git-ralph");
    Tmux::start_sized(
        repo,
        &format!(
            "FAKE_AGENT_SCRIPT={} FAKE_AGENT_RECORD_DIR={} {}; echo home-exited-$?; sleep 30",
            shell_quote(&agent.to_string_lossy()),
            shell_quote(&repo.record_dir().to_string_lossy()),
            shell_quote(binary),
        ),
        (120, 40),
    )
}

#[test]
fn bare_git_ralph_selects_previews_starts_stops_back_to_the_list_and_resumes() {
    let repo = project(TWO_STORIES);
    let agent = thinking_in_story_two(&repo);
    let planned = start(&repo, &agent, &["--dry-run", "--json"]);
    let planned: Value = serde_json::from_slice(&planned.stdout).expect("--dry-run --json");
    let head = repo.git(&["symbolic-ref", "HEAD"]);
    let Some(tmux) = home_in_tmux(&repo, &agent) else {
        return;
    };
    let screen = tmux.wait_for("OpenSpec changes");
    assert!(
        screen.contains(&format!("{CHANGE}  0/2 stories done")),
        "{screen}"
    );
    assert!(screen.contains("(none yet)"), "no run yet:\n{screen}");

    // Enter: the preview, exactly what the run would do; nothing written.
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("first prompt");
    let prompt = planned["prompt"].as_str().unwrap();
    let first_line = prompt.lines().find(|line| !line.trim().is_empty()).unwrap();
    let shown: String = first_line.chars().take(60).collect();
    assert!(screen.contains(&shown), "{shown:?} missing:\n{screen}");
    assert!(screen.contains("1. Greeting"), "{screen}");
    assert!(screen.contains("[ ] 1.1 Create hello.txt"), "{screen}");
    assert!(screen.contains("R start the run"), "{screen}");
    // The contract and guardrails at a glance, however long this
    // machine's paths make the agent's command line below them; the
    // command is there for a scroll of the rules pane.
    assert!(screen.contains("ticking boxes alone"), "{screen}");
    assert!(screen.contains("attempts per story: 4"), "{screen}");
    tmux.keys(&["Tab", "Tab"]);
    tmux.scroll_to("j", "exec");
    assert!(
        !git_dir(&repo).join("ralph").exists(),
        "a preview writes nothing"
    );
    assert_eq!(repo.git(&["symbolic-ref", "HEAD"]), head);

    // R starts the run on its loop screen; q stops it and returns here.
    tmux.keys(&["R"]);
    tmux.wait_for("Story two is thinking");
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("Enter on it resumes");
    assert!(screen.contains("OpenSpec changes"), "{screen}");
    assert!(screen.contains(&format!("{CHANGE}: stopped")), "{screen}");
    let run = state(&repo);
    assert_eq!(run["status"], "stopped");
    assert_eq!(repo.rev_parse("HEAD"), repo.rev_parse(BRANCH));

    // w on the run opens it in the loop screen; q comes back.
    tmux.keys(&["j", "w"]);
    tmux.wait_for("Story two is thinking");
    tmux.wait_for("q leave");
    tmux.keys(&["q"]);
    tmux.wait_for("Enter preview the resume");

    // Enter on the stopped run previews the resume; R resumes it to the end.
    fs::write(&agent, story_done("2")).unwrap();
    tmux.keys(&["Enter"]);
    tmux.wait_for("R resume the run");
    tmux.keys(&["R"]);
    tmux.wait_for("done (completed)");
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("2/2 stories done");
    assert!(screen.contains("OpenSpec changes"), "{screen}");
    tmux.keys(&["q"]);
    exits_giving_the_terminal_back(&tmux, "home-exited-0", "OpenSpec changes");
    assert_ended_on_the_branch(&repo, "reason", "completed");
}

#[test]
fn bare_git_ralph_without_a_terminal_says_what_to_run() {
    let repo = project(TWO_STORIES);
    let output = ralph_cmd(&repo, &[]);
    assert_exit(&output, 2);
    let err = stderr(&output);
    assert!(err.contains("needs a subcommand"), "{err}");
    assert!(err.contains("git ralph --help"), "{err}");
}

#[test]
fn r_on_a_change_with_nothing_to_do_is_refused_on_the_list_and_changes_nothing() {
    let repo = project(&TWO_STORIES.replace("- [ ]", "- [x]"));
    let agent = thinking_in_story_two(&repo);
    let before = (
        repo.git(&["symbolic-ref", "HEAD"]),
        repo.status_porcelain(),
        repo.git(&["for-each-ref"]),
    );
    let Some(tmux) = home_in_tmux(&repo, &agent) else {
        return;
    };
    tmux.wait_for(&format!("{CHANGE}  2/2 stories done"));
    tmux.keys(&["Enter"]);
    tmux.wait_for("every story is done: no agent would start");
    tmux.keys(&["R"]);
    let screen = tmux.wait_for(&format!("could not start {CHANGE}"));
    assert!(
        screen.contains("give the agent work"),
        "the hint is shown:\n{screen}"
    );
    assert!(screen.contains("OpenSpec changes"), "{screen}");
    tmux.keys(&["q"]);
    tmux.wait_for("home-exited-0");
    assert!(
        !git_dir(&repo).join("ralph").exists(),
        "a refused start leaves no trace"
    );
    assert_eq!(
        (
            repo.git(&["symbolic-ref", "HEAD"]),
            repo.status_porcelain(),
            repo.git(&["for-each-ref"]),
        ),
        before
    );
    assert_eq!(script_calls(&agent), 0, "no agent ran");
}

#[test]
fn the_loop_screen_lists_the_pending_stories_from_the_first_frame() {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, "[story=1]\nsay Story one is thinking.\nsleep 60\n");
    let Some(tmux) = start_in_tmux(&repo, &agent) else {
        return;
    };
    let screen = tmux.wait_for("Story one is thinking.");
    assert!(screen.contains("story 1/2"), "{screen}");
    assert!(
        screen.contains("2. Farewell"),
        "the pending story is listed:\n{screen}"
    );
    tmux.keys(&["q"]);
    tmux.wait_for("start-exited-130");
}

#[test]
fn a_run_stopped_on_its_retries_resumes_from_the_list_with_more_of_them() {
    let repo = project(TWO_STORIES);
    repo.git(&["config", "ralph.maxRetries", "0"]);
    let agent = script(&repo, "[story=1]\npromise FAILED: not yet\n");
    let Some(tmux) = home_in_tmux(&repo, &agent) else {
        return;
    };
    // Asked at the end, as by default.
    repo.git(&["config", "--unset", "ralph.onFinish"]);
    tmux.wait_for("OpenSpec changes");
    tmux.keys(&["Enter"]);
    tmux.wait_for("R start the run");
    tmux.keys(&["R"]);
    tmux.wait_for("stopped (max_retries)");
    tmux.keys(&["q"]);
    // A failed run's end: the menu on the plain screen; leave it stopped.
    tmux.wait_for("leave it stopped");
    tmux.keys(&["Down", "Down"]);
    tmux.wait_for("> leave it stopped");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Enter on it resumes");
    assert!(screen.contains("stopped (max_retries)"), "{screen}");
    assert_eq!(state(&repo)["reason"], "max_retries");

    fs::write(&agent, format!("{}{}", story_done("1"), story_done("2"))).unwrap();
    tmux.keys(&["j", "Enter"]);
    let screen = tmux.wait_for("R resume the run");
    assert!(screen.contains("--max-retries 2"), "{screen}");
    assert!(screen.contains("attempts per story: 3"), "{screen}");
    tmux.keys(&["R"]);
    tmux.wait_for("done (completed)");
    tmux.keys(&["q"]);
    tmux.wait_for("keep: stay on");
    tmux.keys(&["Down"]);
    tmux.wait_for("> keep: stay on");
    tmux.keys(&["Enter"]);
    tmux.wait_for("2/2 stories done");
    let run = state(&repo);
    assert_eq!(run["reason"], "completed");
    assert_eq!(run["settings"]["max_retries"], 2);
    assert_eq!(repo.rev_parse("HEAD"), repo.rev_parse(BRANCH));
    tmux.keys(&["q"]);
    tmux.wait_for("home-exited-0");
    repo.assert_fsck_clean();
}

#[test]
fn the_loop_screen_redraws_on_resize_says_when_too_small_and_honours_no_color() {
    let repo = project(TWO_STORIES);
    let agent = thinking_in_story_two(&repo);
    let binary = env!("CARGO_BIN_EXE_git-ralph");
    let Some(tmux) = Tmux::start(
        &repo,
        &format!(
            "NO_COLOR=1 FAKE_AGENT_SCRIPT={} FAKE_AGENT_RECORD_DIR={} {} start {CHANGE} --agent-command {} --on-finish keep; echo start-exited-$?; sleep 30",
            shell_quote(&agent.to_string_lossy()),
            shell_quote(&repo.record_dir().to_string_lossy()),
            shell_quote(binary),
            shell_quote(&agent_command(&repo)),
        ),
    ) else {
        return;
    };
    tmux.wait_for("Story two is thinking");
    // No colour: capture with the escape sequences, and find no colour
    // among them (bold and reverse video stay).
    let output = tmux
        .command()
        .args(["capture-pane", "-e", "-p", "-t", &tmux.first])
        .output()
        .expect("tmux capture-pane -e");
    let styled = String::from_utf8_lossy(&output.stdout);
    for sgr in styled.split("\u{1b}[").skip(1) {
        let Some((params, _)) = sgr.split_once('m') else {
            continue;
        };
        for param in params.split(';') {
            // Reset, bold, dim, italic, underline, reverse, and back to the
            // default colours: anything else is a colour.
            assert!(
                [
                    "", "0", "1", "2", "3", "4", "7", "22", "23", "24", "27", "39", "49"
                ]
                .contains(&param),
                "colour {params:?} despite NO_COLOR:\n{styled:?}"
            );
        }
    }

    let resize = |width: &str, height: &str| {
        let status = tmux
            .command()
            .args([
                "resize-window",
                "-t",
                &tmux.first,
                "-x",
                width,
                "-y",
                height,
            ])
            .status()
            .expect("tmux resize-window");
        assert!(status.success());
    };
    resize("30", "8");
    let screen = tmux.wait_for("terminal too small");
    assert!(screen.contains("30x8 here"), "{screen}");
    resize("120", "40");
    let screen = tmux.wait_for("Story two is thinking");
    assert!(screen.contains("2. Farewell"), "{screen}");
    assert!(!screen.contains("too small"), "{screen}");
    tmux.keys(&["q"]);
    tmux.wait_for("start-exited-130");
}

#[test]
fn ctrl_c_on_the_loop_screen_stops_the_run_like_q_and_gives_the_terminal_back() {
    let repo = project(TWO_STORIES);
    let agent = thinking_in_story_two(&repo);
    let Some(tmux) = start_in_tmux(&repo, &agent) else {
        return;
    };
    tmux.wait_for("Story two is thinking");
    tmux.keys(&["C-c"]);
    let screen = exits_giving_the_terminal_back(&tmux, "start-exited-130", "Stories");
    assert!(
        screen.contains("stopped; completed stories are kept"),
        "{screen}"
    );
    assert_ended_on_the_branch(&repo, "status", "stopped");
}

#[test]
fn issue_23_watch_follows_a_worktree_run_from_either_worktree_and_diffs_the_runs() {
    let repo = project(TWO_STORIES);
    let agent = writing_in_story_two(&repo);
    let _reaper = Reaper(repo.record_dir());
    let run = crate::harness::story_run::Background::start(
        &repo,
        &agent,
        &["--worktree", "--on-finish", "keep"],
    );
    story_two_under_way(&repo, "Story two is writing.");
    let beside = fs::canonicalize(repo.root.parent().unwrap())
        .unwrap()
        .join("repo.ralph")
        .join(CHANGE);
    // The user has work of their own, which is not the attempt's.
    repo.write("README.md", "# The user's own line\n");

    let binary = env!("CARGO_BIN_EXE_git-ralph");
    let Some(tmux) = Tmux::start_sized(
        &repo,
        &format!(
            "{} watch {CHANGE}; echo watch-exited-$?; sleep 30",
            shell_quote(binary)
        ),
        (120, 40),
    ) else {
        return;
    };
    let inside = tmux.split(
        &repo,
        &format!(
            "cd {} && {} watch {CHANGE}; echo watch-exited-$?; sleep 30",
            shell_quote(&beside.to_string_lossy()),
            shell_quote(binary)
        ),
    );
    for pane in [tmux.first.clone(), inside.clone()] {
        tmux.wait_in(&pane, "Story two is writing.");
        // Output → Prompt → Diff: the run's worktree, not the user's.
        tmux.keys_in(&pane, &["Tab", "Tab"]);
        let screen = tmux.wait_in(&pane, "+half a farewell");
        assert!(
            !screen.contains("The user's own line"),
            "the user's work shown as the attempt's:\n{screen}"
        );
        tmux.keys_in(&pane, &["q"]);
        tmux.wait_in(&pane, "watch-exited-0");
    }
    run.signal(nix::sys::signal::Signal::SIGTERM);
    let done = run.wait(std::time::Duration::from_secs(30));
    assert_eq!(done.status.code(), Some(130), "{}", done.stderr);
    assert_eq!(state(&repo)["status"], "stopped");
    assert_eq!(repo.read("README.md"), "# The user's own line\n");
    repo.assert_fsck_clean();
}

/// Issue 37: `n` on the home screen plans a new change from a one-line
/// brief, and the preview opens on what the agent wrote.
#[test]
fn n_on_the_home_screen_plans_a_change_and_opens_its_preview() {
    let repo = TestRepo::new();
    let folder = "openspec/changes/say-hello-to-every";
    let agent = script(
        &repo,
        &format!("[*]\n{}", crate::plan_e2e::good_plan_in(folder)),
    );
    let head = repo.git(&["symbolic-ref", "HEAD"]);
    let Some(tmux) = home_in_tmux(&repo, &agent) else {
        return;
    };
    tmux.wait_for("n new");
    tmux.keys(&["n"]);
    tmux.wait_for("plan a new change");
    tmux.keys(&["-l", "Say hello to every visitor"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("say-hello-to-every");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("first prompt");
    assert!(screen.contains("say-hello-to-every · stories"), "{screen}");
    assert!(screen.contains("1. Greeting"), "{screen}");
    assert!(screen.contains("[ ] 1.1 Create hello.txt"), "{screen}");
    assert!(screen.contains("R start the run"), "{screen}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("say-hello-to-every  0/2 stories done");
    tmux.keys(&["q"]);
    tmux.wait_for("home-exited-0");
    let prompt = std::fs::read_to_string(
        git_dir(&repo).join("ralph/plans/say-hello-to-every/1/attempts/1.prompt.md"),
    )
    .expect("the plan's prompt is recorded");
    assert!(prompt.contains("Say hello to every visitor"), "{prompt}");
    assert_eq!(
        repo.status_porcelain(),
        format!(
            "?? {folder}/proposal.md\n?? {folder}/specs/greeting/spec.md\n?? {folder}/tasks.md\n"
        )
    );
    assert_eq!(repo.git(&["symbolic-ref", "HEAD"]), head);
    repo.assert_fsck_clean();
}
