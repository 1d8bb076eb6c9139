//! `git ralph start --serve`: the server started beside the run, as a
//! process of its own. It serves the run's page, warns when others can
//! reach it, and stays out of the run's way: a crash of the server leaves
//! the run alone, and the run never waits for it. Its loop screen says
//! where the run is served.

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::harness::story_run::*;
use crate::harness::tmux::Tmux;
use crate::harness::web::*;
use crate::harness::*;
use crate::serve::waiting_script;

/// `start --serve` in the background, and the URL it printed.
fn start_serving(repo: &TestRepo) -> (Background, String) {
    start_serving_on(repo, "127.0.0.1:0")
}

/// `start --serve=<bind>` in the background, and the URL it printed.
fn start_serving_on(repo: &TestRepo, bind: &str) -> (Background, String) {
    let agent = waiting_script(repo);
    let serve = format!("--serve={bind}");
    let run = Background::start(repo, &agent, &["--on-finish", "keep", &serve]);
    let mut url = String::new();
    wait_until(
        "start --serve prints the URL",
        Duration::from_secs(30),
        || {
            url = run
                .stderr_so_far()
                .lines()
                .find_map(|line| line.strip_prefix("serving the run at "))
                .unwrap_or_default()
                .to_owned();
            !url.is_empty()
        },
    );
    (run, url)
}

/// The server `start --serve` started.
fn server_of(run: &Background) -> u32 {
    let servers = children_with(run.pid(), "--companion");
    assert_eq!(servers.len(), 1, "one server beside the run: {servers:?}");
    servers[0]
}

fn signal(pid: u32, signal: Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).expect("signalled");
}

fn finish_both(repo: &TestRepo, run: Background) {
    release(&go_file(repo, "go-1"));
    release(&go_file(repo, "go-2"));
    let ended = run.wait(Duration::from_secs(90));
    assert!(ended.status.success(), "{}", ended.stderr);
    assert_on_branch(repo, &["2 Farewell", "1 Greeting"]);
    assert_eq!(status_json(repo)["reason"], "completed");
    repo.assert_fsck_clean();
}

#[test]
fn issue_40_start_serve_serves_the_run_and_a_crash_of_the_server_leaves_it_alone() {
    let repo = project(TWO_STORIES);
    let (run, url) = start_serving(&repo);
    assert!(url.contains("/runs/greet?token="), "{url}");
    let served = Client::of(&url);
    wait_until(
        "the run's page shows its stories",
        Duration::from_secs(30),
        || {
            let page = served.get("/runs/greet");
            assert_eq!(page.status, 200, "{page:?}");
            page.body.contains("Greeting")
        },
    );

    let server = server_of(&run);
    signal(server, Signal::SIGKILL);
    wait_until("the server is gone", Duration::from_secs(10), || {
        !alive(server)
    });
    finish_both(&repo, run);
}

#[test]
fn issue_40_a_run_never_waits_for_its_server() {
    let repo = project(TWO_STORIES);
    let (run, _) = start_serving(&repo);
    let server = server_of(&run);
    // A server that cannot run at all (stopped, as by a debugger or a full
    // machine) holds nothing up, and goes when the run does.
    signal(server, Signal::SIGSTOP);
    finish_both(&repo, run);
    wait_until(
        "the stopped server went with the run",
        Duration::from_secs(10),
        || !alive(server),
    );
}

#[test]
fn issue_40_start_serve_on_an_address_others_reach_says_so() {
    let repo = project(TWO_STORIES);
    let (run, url) = start_serving_on(&repo, "0.0.0.0:0");
    let said = run.stderr_so_far();
    assert!(
        said.contains("other machines can reach"),
        "no warning before the URL {url}:\n{said}"
    );
    assert!(!said.contains("0.0.0.0:0,"), "the port it took: {said}");
    finish_both(&repo, run);
}

#[test]
fn issue_40_the_loop_screen_says_where_start_serve_serves_the_run() {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, "[story=1]\nsay Story one at work.\nsleep 60\n");
    let _reaper = Reaper(repo.record_dir());
    let command = format!(
        "FAKE_AGENT_SCRIPT={} FAKE_AGENT_RECORD_DIR={} {} start {CHANGE} --agent-command {} \
         --on-finish keep --serve=127.0.0.1:0; echo start-exited-$?; sleep 30",
        shell_quote(&agent.to_string_lossy()),
        shell_quote(&repo.record_dir().to_string_lossy()),
        shell_quote(env!("CARGO_BIN_EXE_git-ralph")),
        shell_quote(&agent_command(&repo)),
    );
    let Some(tmux) = Tmux::start_sized(&repo, &command, (160, 30)) else {
        return;
    };
    let screen = tmux.wait_for("served at http://127.0.0.1:");
    assert!(screen.contains("/runs/greet?token="), "{screen}");
    tmux.wait_for("Story one at work.");
    tmux.keys(&["q"]);
    tmux.wait_for("start-exited-130");
}
