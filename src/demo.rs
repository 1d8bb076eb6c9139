//! The built-in demo: a throwaway repository with a three-story OpenSpec
//! change, and a scripted agent that works through it like a real one —
//! it edits files, ticks boxes and speaks Claude's stream-json — failing the
//! second story once so a retry and a revert can be seen. It needs no network
//! and no API key, and it runs the real loop.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::stories::checklist;

pub const CHANGE: &str = "hello-demo";

const PROPOSAL: &str = "# Proposal: say hello\n\nThe project greets its users and says goodbye politely.\n\n## What changes\n- a greeting in `hello.txt`\n- a farewell in `bye.txt`\n- usage notes in `docs/USAGE.md`\n";

const DESIGN: &str =
    "# Design\n\nThe farewell wording is \"Goodbye, and thanks for all the fish.\"\n";

const TASKS: &str = "## 1. Greeting\n\n- [ ] 1.1 Create hello.txt with a friendly greeting\n- [ ] 1.2 Mention hello.txt in README.md\n\n## 2. Farewell\n\n- [ ] 2.1 Create bye.txt with the farewell wording from design.md\n\n## 3. Docs\n\n- [ ] 3.1 Write docs/USAGE.md explaining both files\n";

const README: &str = "# demo project\n\nA tiny project for the git-ralph demo.\n";

/// Write the demo project into `dir` (already a git repository).
pub fn write_project(dir: &Path) -> std::io::Result<()> {
    let change = dir.join("openspec/changes").join(CHANGE);
    std::fs::create_dir_all(&change)?;
    std::fs::write(dir.join("README.md"), README)?;
    std::fs::write(dir.join(".gitignore"), "*.log\n")?;
    std::fs::write(change.join("proposal.md"), PROPOSAL)?;
    std::fs::write(change.join("design.md"), DESIGN)?;
    std::fs::write(change.join("tasks.md"), TASKS)?;
    Ok(())
}

/// A fresh directory for the demo under the system temp dir.
pub fn fresh_dir() -> std::io::Result<PathBuf> {
    let base = std::env::temp_dir();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let dir = base.join(format!("git-ralph-demo-{}-{stamp}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// One step of the scripted agent.
enum Step {
    Say(&'static str),
    Write(&'static str, &'static str),
    Tick(&'static str),
}

/// What the agent does for a story and attempt, and how it ends.
fn script(story: &str, attempt: u32) -> (Vec<Step>, String) {
    use Step::*;
    match (story, attempt) {
        ("1", _) => (
            vec![
                Say("I'll create hello.txt and mention it in the README."),
                Write("hello.txt", "Hello, and welcome!\n"),
                Tick("1.1"),
                Write("README.md", "# demo project\n\nA tiny project for the git-ralph demo.\n\n`hello.txt` greets you.\n"),
                Tick("1.2"),
            ],
            "Story 1 is done: hello.txt exists and the README mentions it.\n\n<promise>COMPLETE</promise>".into(),
        ),
        ("2", 1) => (
            vec![
                Say("Starting on bye.txt; let me draft something."),
                Write("bye.txt", "Bye?\n"),
                Write("scratch.log", "an ignored log file survives the revert\n"),
            ],
            "I could not find the farewell wording, so I should not guess.\n\n<promise>FAILED: the farewell wording is not where I looked; check design.md</promise>".into(),
        ),
        ("2", _) => (
            vec![
                Say("The retry note says to check design.md; the wording is there."),
                Write("bye.txt", "Goodbye, and thanks for all the fish.\n"),
                Tick("2.1"),
            ],
            "bye.txt now holds the farewell from design.md.\n\n<promise>COMPLETE</promise>".into(),
        ),
        ("3", _) => (
            vec![
                Say("Writing the usage notes."),
                Write(
                    "docs/USAGE.md",
                    "# Usage\n\n- `hello.txt`: the greeting\n- `bye.txt`: the farewell\n",
                ),
                Tick("3.1"),
            ],
            "The usage notes are written.\n\n<promise>COMPLETE</promise>".into(),
        ),
        _ => (Vec::new(), "I do not know this story.\n\n<promise>FAILED: unknown story</promise>".into()),
    }
}

/// Run the scripted agent in the current directory: read the prompt from
/// stdin, act on `RALPH_STORY` / `RALPH_ATTEMPT`, print Claude stream-json.
pub fn run_agent(pace: Duration) -> std::io::Result<()> {
    let mut prompt = String::new();
    std::io::stdin().read_to_string(&mut prompt)?;
    let story = std::env::var("RALPH_STORY").unwrap_or_default();
    let attempt: u32 = std::env::var("RALPH_ATTEMPT")
        .ok()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let change = std::env::var("RALPH_CHANGE").unwrap_or_else(|_| CHANGE.to_owned());
    let tasks = PathBuf::from("openspec/changes")
        .join(&change)
        .join("tasks.md");
    let mut out = std::io::stdout().lock();
    let mut emit = |value: serde_json::Value| -> std::io::Result<()> {
        writeln!(out, "{value}")?;
        out.flush()
    };
    emit(
        json!({"type": "system", "subtype": "init", "session_id": "demo", "model": "scripted-demo"}),
    )?;
    let (steps, final_text) = script(&story, attempt);
    let mut turns = 1;
    for (n, step) in steps.into_iter().enumerate() {
        std::thread::sleep(pace);
        match step {
            Step::Say(text) => emit(
                json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}),
            )?,
            Step::Write(path, content) => {
                let id = format!("tool_{n}");
                emit(
                    json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Write", "input": {"file_path": path}}]}}),
                )?;
                if let Some(dir) = Path::new(path).parent() {
                    std::fs::create_dir_all(dir)?;
                }
                std::fs::write(path, content)?;
                emit(
                    json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": format!("wrote {path}")}]}}),
                )?;
                turns += 1;
            }
            Step::Tick(task) => {
                let text = std::fs::read_to_string(&tasks)?;
                let line = text.lines().position(|line| {
                    checklist::task_line(line).is_some_and(|t| !t.done && t.text.starts_with(task))
                });
                if let Some(line) = line {
                    std::fs::write(&tasks, checklist::tick(&text, line + 1))?;
                }
                emit(
                    json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": format!("Ticked task {task} in tasks.md.")}]}}),
                )?;
            }
        }
    }
    std::thread::sleep(pace);
    emit(
        json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": final_text}]}}),
    )?;
    emit(json!({
        "type": "result", "subtype": "success", "is_error": false, "result": final_text,
        "num_turns": turns, "duration_ms": pace.as_millis() as u64 * 4, "total_cost_usd": 0.0,
        "usage": {"input_tokens": 1200 + prompt.len() / 4, "output_tokens": 180, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    }))
}
