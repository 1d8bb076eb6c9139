//! Issue 36: a person who knows git but not git-ralph, with the README
//! alone, installs it, runs the demo, writes a three-line agent and runs it
//! on a change of their own. This test is that person: it takes the
//! commands from the README itself (the shell blocks of Install and
//! Quickstart, and the ten-line agent of "Your own agent command") and runs
//! them as they stand, so the README breaks the build when it no longer
//! says what works. Git is the judge of where they leave the repository.
//!
//! Two things differ from a person's terminal, and only these: `cargo`
//! is a stand-in that reports the binary this test was built with (a
//! release build inside `cargo test` would wait on cargo's own lock, and CI
//! runs the real one), and there is no terminal, so the loop shows lines
//! and nothing waits for a key.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::harness::*;
use crate::install::{FAKE_CARGO, join_path, path_without_cargo};

/// The text of a README section, from its `## ` heading to the next one
/// outside a code block.
fn section(readme: &str, heading: &str) -> String {
    let mut lines = readme.lines().skip_while(|line| *line != heading);
    assert!(lines.next().is_some(), "the README has no {heading:?}");
    let mut fenced = false;
    let mut text = String::new();
    for line in lines {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if !fenced && line.starts_with("## ") {
            break;
        }
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// The ```sh blocks of `text`, in order.
fn shell_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "```sh" {
            let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
            blocks.push(block.join("\n") + "\n");
        }
    }
    blocks
}

fn readme() -> String {
    std::fs::read_to_string(source_path("README.md"))
        .unwrap_or_else(|err| panic!("cannot read README.md: {err}"))
}

/// A newcomer's machine: a home, a fake cargo, a prefix to install into.
struct Newcomer {
    env: TestEnv,
}

impl Newcomer {
    fn new() -> Newcomer {
        let newcomer = Newcomer {
            env: TestEnv::new(),
        };
        for dir in [newcomer.fake_bin(), newcomer.tmp(), newcomer.work()] {
            std::fs::create_dir_all(&dir).unwrap_or_else(|err| panic!("{err}"));
        }
        let cargo = newcomer.fake_bin().join("cargo");
        std::fs::write(&cargo, FAKE_CARGO).unwrap_or_else(|err| panic!("{err}"));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|err| panic!("{err}"));
        newcomer
    }

    fn dir(&self) -> &Path {
        self.env.dir.path()
    }
    fn fake_bin(&self) -> PathBuf {
        self.dir().join("fake-bin")
    }
    fn prefix(&self) -> PathBuf {
        self.dir().join("prefix")
    }
    fn tmp(&self) -> PathBuf {
        self.dir().join("tmp")
    }
    /// Where the newcomer's own repositories go.
    fn work(&self) -> PathBuf {
        self.dir().join("work")
    }

    /// `script` run by bash, stopping at the first failure, in `dir`, with
    /// what the README has installed first on PATH.
    fn run(&self, script: &str, dir: &Path) -> Output {
        let mut path = vec![self.prefix().join("bin"), self.fake_bin()];
        path.extend(path_without_cargo());
        let mut cmd = self.env.command("bash", dir);
        cmd.args(["-e", "-c", script])
            .env("PATH", join_path(&path))
            .env("PREFIX", self.prefix())
            .env("TMPDIR", self.tmp())
            .env("FAKE_CARGO_LOG", self.dir().join("cargo.log"))
            .env("FAKE_CARGO_BINARY", ralph_path())
            .env_remove("MANPATH");
        run(&mut cmd)
    }
}

#[test]
fn issue_36_the_readme_walks_a_newcomer_from_install_to_a_run_of_their_own() {
    if required_tool("perl").is_none() {
        return;
    }
    let readme = readme();
    let newcomer = Newcomer::new();

    // Install: the two commands, from the checkout.
    let install = shell_blocks(&section(&readme, "## Install"));
    assert_eq!(install.len(), 1, "Install is one block: {install:?}");
    let output = newcomer.run(&install[0], &source_path(""));
    assert_exit(&output, 0);
    assert!(
        newcomer.prefix().join("bin/git-ralph").exists(),
        "install.sh installed nothing: {}",
        describe(&output)
    );
    assert!(
        stdout(&output).contains("all 3 stories done"),
        "the demo ran to its end: {}",
        describe(&output)
    );

    // Quickstart: every block, one after the other, in one shell.
    let quickstart = shell_blocks(&section(&readme, "## Quickstart")).concat();
    let output = newcomer.run(&quickstart, &newcomer.work());
    assert_exit(&output, 0);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert!(said.contains("all 2 stories done"), "{said}");

    // Git says where it left the newcomer's repository: on ralph/todo,
    // one commit per story above the initial state, every box ticked,
    // nothing left uncommitted.
    let repo = newcomer.work().join("hello");
    let git = |args: &[&str]| newcomer.env.git_at(&repo, args);
    assert_eq!(
        git(&["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/ralph/todo"
    );
    let subjects = git(&["log", "--format=%s", "ralph/todo"]);
    assert!(subjects.contains("story 1 Greeting"), "{subjects}");
    assert!(subjects.contains("story 2 Farewell"), "{subjects}");
    let todo = git(&["show", "ralph/todo:TODO.md"]);
    assert!(!todo.contains("- [ ]"), "{todo}");
    assert_eq!(git(&["status", "--porcelain"]), "");
    for story in ["1", "2"] {
        assert!(repo.join(format!("story-{story}.txt")).exists());
    }
    let fsck = run(newcomer
        .env
        .command("git", &repo)
        .args(["fsck", "--strict"]));
    assert!(fsck.status.success(), "{}", describe(&fsck));
}

/// The agent script a block writes with `cat > PATH <<'EOF'`: its lines.
fn heredoc_lines(block: &str) -> Vec<&str> {
    block
        .lines()
        .skip_while(|line| !line.contains("<<'EOF'"))
        .skip(1)
        .take_while(|line| *line != "EOF")
        .collect()
}

#[test]
fn issue_36_the_readmes_agents_are_three_and_ten_lines_and_the_ten_line_one_works() {
    if required_tool("perl").is_none() {
        return;
    }
    let readme = readme();
    let quickstart = shell_blocks(&section(&readme, "## Quickstart"));
    let three = quickstart
        .iter()
        .find(|block| block.contains("RALPH_STORY"))
        .expect("the Quickstart writes an agent");
    let lines = heredoc_lines(three);
    assert_eq!(lines[0], "#!/bin/sh");
    assert_eq!(lines.len() - 1, 3, "a three-line agent: {lines:?}");

    let own = shell_blocks(&section(&readme, "## Your own agent command"));
    let ten = own.first().expect("an example agent");
    assert_eq!(ten.lines().count(), 10, "a ten-line agent:\n{ten}");
    for name in ["RALPH_STORY", "RALPH_ATTEMPT", "RALPH_PROMPT_FILE"] {
        assert!(ten.contains(name), "the example uses {name}");
    }

    // It works: the Quickstart's repository and change, the ten-line agent.
    let newcomer = Newcomer::new();
    let agent = newcomer.dir().join("my-agent");
    std::fs::write(&agent, ten).unwrap_or_else(|err| panic!("{err}"));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|err| panic!("{err}"));
    let setup: String = quickstart
        .iter()
        .take_while(|block| !block.contains("RALPH_STORY"))
        .cloned()
        .collect();
    let script = format!(
        "{setup}ralph_agent={}\ngit-ralph start todo --tasks TODO.md --agent-command \"$ralph_agent\" --on-finish keep\ngit-ralph show 1 --transcript\n",
        shell_quote(&agent.to_string_lossy())
    );
    let path = newcomer.prefix().join("bin");
    std::fs::create_dir_all(&path).unwrap_or_else(|err| panic!("{err}"));
    std::os::unix::fs::symlink(ralph_path(), path.join("git-ralph"))
        .unwrap_or_else(|err| panic!("{err}"));
    let output = newcomer.run(&script, &newcomer.work());
    assert_exit(&output, 0);
    let said = stdout(&output);
    assert!(said.contains("all 2 stories done"), "{}", describe(&output));
    assert!(
        said.contains("story 1, attempt 1 of change todo"),
        "the transcript holds what it printed: {said}"
    );
}
