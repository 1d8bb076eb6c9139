//! The prompt one agent process gets for one attempt at one story.
//!
//! Each attempt starts a fresh agent with no memory, so everything it needs
//! — the change's context files, the story, how to record progress, why the
//! last attempt failed, and how to say it is finished — has to be in this
//! text. Templates use `{{name}}` placeholders (see [`VARIABLES`]); the
//! default is [`DEFAULT_TEMPLATE`].
//!
//! Rules for templates:
//! - `{{` always opens a placeholder; an unknown name or a missing `}}` is
//!   an error, so a typo cannot silently reach the agent.
//! - Values are inserted as they are and never scanned again, so a context
//!   file containing `{{` is harmless.
//! - A line holding nothing but a placeholder whose value is empty is left
//!   out, so optional sections (`{{retry}}`, `{{acceptance_criteria}}`…) leave
//!   no gap. Section values carry their own heading and end with a newline.
//!
//! The completion signal is a promise tag in the agent's final message. An
//! agent that merely echoes its prompt must not look finished, so the
//! rendered prompt never has a line that is only a promise tag (such lines,
//! e.g. from a context file, are wrapped in backticks) and never ends with a
//! promise tag.

mod questions;

pub use questions::Exchange;

use crate::contract::Role;
use crate::state::Findings;
use crate::stories::{ContextFile, Story, StorySource};

/// The prompt used when the project configures none.
pub const DEFAULT_TEMPLATE: &str = include_str!("template.md");

/// The built-in prompt of a role that does not code: the coder's is the
/// story's prompt ([`DEFAULT_TEMPLATE`], or the project's).
pub fn role_template(role: Role) -> Option<&'static str> {
    match role {
        Role::Coder => None,
        Role::Reviewer => Some(include_str!("roles/reviewer.md")),
        Role::Tester => Some(include_str!("roles/tester.md")),
        Role::Qa => Some(include_str!("roles/qa.md")),
    }
}

/// The word that means completion: `<promise>COMPLETE</promise>`.
pub const DEFAULT_PROMISE_TOKEN: &str = "COMPLETE";

/// The tag every promise is written in.
const PROMISE_TAG: &str = "promise";

/// Every placeholder a template may use, with what it stands for.
pub const VARIABLES: &[(&str, &str)] = &[
    ("change", "name of the change being worked through"),
    (
        "source_kind",
        "where the stories come from: openspec, prd, markdown, github or beads",
    ),
    ("story_id", "id of the story, e.g. `2` or `US-003`"),
    ("story_title", "title of the story"),
    (
        "story_index",
        "1-based position of the story among all stories",
    ),
    ("story_total", "number of stories in the change"),
    ("attempt", "1-based number of this attempt at the story"),
    (
        "description",
        "the story's description and a blank line, or nothing",
    ),
    (
        "tasks",
        "the story's section as written (intro, nested bullets, code) and its checklist with done marks and line numbers, or nothing",
    ),
    (
        "acceptance_criteria",
        "the story's acceptance criteria as a list, or nothing",
    ),
    (
        "context",
        "a `## Context` section with each context file's path and content, or nothing",
    ),
    (
        "tracking_file",
        "repository-relative path of the file the agent updates (absolute for github and beads: the run's own record, outside the worktree)",
    ),
    (
        "done_instruction",
        "how to mark progress on this story, as an imperative clause",
    ),
    (
        "retry",
        "a `## Previous attempt` section saying why the last attempt failed, or nothing",
    ),
    (
        "answers",
        "a `## Questions and answers` section with every question earlier attempts at the story asked a person and the answer given, word for word, or nothing",
    ),
    (
        "asking",
        "how to ask a person a question (the story waits for the answer), or, with --no-questions, that nobody will answer one",
    ),
    (
        "learnings",
        "a `## Learnings` section: the learnings file's path, the request to append to it, and what earlier attempts recorded there, newest first, at most 8 KiB; nothing with --no-learnings",
    ),
    (
        "learnings_file",
        "absolute path of the learnings file (also `$RALPH_LEARNINGS_FILE`), or nothing with --no-learnings",
    ),
    (
        "role",
        "the role this attempt plays in the story's pipeline (coder, reviewer, tester, qa), or nothing without roles",
    ),
    (
        "role_description",
        "the role's description from ralph.toml, as a paragraph, or nothing",
    ),
    (
        "iteration",
        "1-based number of this iteration of the role, or nothing without roles",
    ),
    (
        "max_iterations",
        "how many iterations the role gets, or nothing without roles",
    ),
    (
        "findings",
        "a `## Findings from the <role>` section with what the role that sent the story back found, word for word, or nothing",
    ),
    (
        "work",
        "a `## The work` section: the story's change so far, file by file, for the roles that review it; or nothing",
    ),
    (
        "promise_complete",
        "the completion signal, `<promise>COMPLETE</promise>`",
    ),
    (
        "promise_failed",
        "the failure signal, `<promise>FAILED: <reason></promise>`",
    ),
];

/// Why the previous attempt at a story did not succeed, when the next
/// attempt should know. An attempt that ended without any signal needs no
/// explanation and has no variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryContext {
    /// The agent said `FAILED: <reason>`.
    FailedReason(String),
    TimedOut,
    /// Checks that failed after the agent claimed completion, as
    /// `(name, tail of their output)`.
    ChecksFailed(Vec<(String, String)>),
    /// The agent claimed completion, but git-ralph did not accept it (the
    /// story was not marked done, a verifier said no, a protected file was
    /// changed…), with the reason.
    Rejected(String),
    /// The agent ended with a question instead of the work; `learnings` is
    /// where it should record its decision, when there is such a file.
    Asked {
        question: String,
        learnings: Option<String>,
    },
}

/// The learnings file as a prompt shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Learnings {
    /// Absolute path, as the agent gets it in `RALPH_LEARNINGS_FILE`.
    pub path: String,
    pub excerpt: crate::state::learnings::Excerpt,
}

/// Everything one prompt is made from.
pub struct PromptInput<'a> {
    pub change: &'a str,
    pub story: &'a Story,
    /// 1-based.
    pub story_index: usize,
    pub story_total: usize,
    /// 1-based.
    pub attempt: u32,
    pub source: &'a dyn StorySource,
    pub context_files: &'a [ContextFile],
    pub retry: Option<RetryContext>,
    /// Tag name of the promise, normally [`DEFAULT_PROMISE_TOKEN`].
    pub promise_token: &'a str,
    /// `None` with `--no-learnings`.
    pub learnings: Option<&'a Learnings>,
    /// The role this attempt plays, in a role pipeline.
    pub role: Option<RolePrompt<'a>>,
    /// A question for a person parks the story until it is answered.
    pub questions: bool,
    /// The story's questions so far, each with its answer.
    pub answers: &'a [Exchange],
}

/// What a role's prompt says of the role.
pub struct RolePrompt<'a> {
    pub role: Role,
    pub description: Option<&'a str>,
    /// 1-based.
    pub iteration: u32,
    pub max_iterations: u32,
    /// What the role that sent the story back found, for the coder.
    pub findings: Option<&'a Findings>,
    /// The story's change so far, for the roles that look at it.
    pub work: Option<&'a str>,
}

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("line {line} of the prompt template uses unknown placeholder {{{{{name}}}}}")]
    UnknownPlaceholder { name: String, line: usize },

    #[error(
        "line {line} of the prompt template opens a placeholder with `{{{{` and never closes it"
    )]
    UnclosedPlaceholder { line: usize },

    #[error("promise token {token:?} must be letters, digits, - and _")]
    InvalidPromiseToken { token: String },
}

impl PromptError {
    pub fn hint(&self) -> Option<String> {
        match self {
            PromptError::UnknownPlaceholder { .. } => Some(format!(
                "known placeholders: {}",
                VARIABLES
                    .iter()
                    .map(|(name, _)| format!("{{{{{name}}}}}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            PromptError::UnclosedPlaceholder { .. } => {
                Some("close it with `}}`; `{{` cannot be written literally".to_owned())
            }
            PromptError::InvalidPromiseToken { .. } => {
                Some("use letters, digits, `-` or `_` only".to_owned())
            }
        }
    }
}

/// Fills `template` for one attempt.
pub fn render(template: &str, input: &PromptInput<'_>) -> Result<String, PromptError> {
    let token = input.promise_token;
    if token.is_empty()
        || !token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(PromptError::InvalidPromiseToken {
            token: token.to_owned(),
        });
    }
    let mut text = substitute(template, |name, line| value(name, line, input))?;
    // Findings reach the coder whatever its template says, and so do
    // the answers a person gave.
    let findings = findings_section(input);
    if !findings.is_empty() && !template.contains("{{findings}}") {
        text = format!("{findings}\n{text}");
    }
    let answers = questions::answers_section(input.answers);
    if !answers.is_empty() && !template.contains("{{answers}}") {
        text = format!("{answers}\n{text}");
    }
    Ok(guard_promises(text, PROMISE_TAG))
}

/// Prompt mode: the user's prompt as it is, then what the previous attempt
/// left to fix, then the promise protocol (`token` is `None` when string
/// matching is off).
pub fn render_classic(
    content: &str,
    retry_context: Option<&RetryContext>,
    answers: &[Exchange],
    token: Option<&str>,
) -> String {
    let mut out = content.trim_end().to_owned();
    out.push_str("\n\n");
    let answers = questions::answers_section(answers);
    if !answers.is_empty() {
        out.push_str(&answers);
        out.push('\n');
    }
    let previous = retry(retry_context);
    if !previous.is_empty() {
        out.push_str(&previous);
        out.push('\n');
    }
    out.push_str(
        "Do not commit, switch branches or rewrite history; git-ralph checkpoints for you. ",
    );
    match token {
        Some(token) => out.push_str(&format!(
            "When the work is done and checked, end your final message with <{PROMISE_TAG}>{token}</{PROMISE_TAG}>; \
if you cannot do it, end it with <{PROMISE_TAG}>FAILED: <reason></{PROMISE_TAG}> instead.\n"
        )),
        None => out.push_str(&format!(
            "If you cannot do the work, end your final message with <{PROMISE_TAG}>FAILED: <reason></{PROMISE_TAG}>.\n"
        )),
    }
    guard_promises(out, PROMISE_TAG)
}

/// Checks that `template` only uses known placeholders, without rendering
/// it, so a bad template is reported before any agent starts.
pub fn validate(template: &str) -> Result<(), PromptError> {
    substitute(template, |name, line| {
        known(name, line).map(|()| "x".to_owned())
    })
    .map(drop)
}

fn known(name: &str, line: usize) -> Result<(), PromptError> {
    if VARIABLES.iter().any(|(known, _)| *known == name) {
        Ok(())
    } else {
        Err(PromptError::UnknownPlaceholder {
            name: name.to_owned(),
            line,
        })
    }
}

/// The name of the placeholder if `line` holds nothing else.
fn standalone(line: &str) -> Option<&str> {
    let inner = line.trim().strip_prefix("{{")?.strip_suffix("}}")?;
    (!inner.contains("{{") && !inner.contains("}}")).then(|| inner.trim())
}

fn substitute(
    template: &str,
    mut lookup: impl FnMut(&str, usize) -> Result<String, PromptError>,
) -> Result<String, PromptError> {
    let mut out = String::with_capacity(template.len() * 2);
    for (index, line) in template.split_inclusive('\n').enumerate() {
        let number = index + 1;
        let body = line.trim_end_matches(['\n', '\r']);
        if let Some(name) = standalone(body) {
            let value = lookup(name, number)?;
            if !value.is_empty() {
                let start = body.find("{{").unwrap_or(0);
                let end = body.rfind("}}").map_or(body.len(), |end| end + 2);
                out.push_str(&body[..start]);
                out.push_str(&value);
                out.push_str(&line[end..]);
            }
            continue;
        }
        let mut rest = line;
        while let Some(open) = rest.find("{{") {
            out.push_str(&rest[..open]);
            let after = &rest[open + 2..];
            let close = after
                .find("}}")
                .ok_or(PromptError::UnclosedPlaceholder { line: number })?;
            out.push_str(&lookup(after[..close].trim(), number)?);
            rest = &after[close + 2..];
        }
        out.push_str(rest);
    }
    Ok(out)
}

fn value(name: &str, line: usize, input: &PromptInput<'_>) -> Result<String, PromptError> {
    known(name, line)?;
    let story = input.story;
    let token = input.promise_token;
    let role = input.role.as_ref();
    Ok(match name {
        "change" => input.change.to_owned(),
        "source_kind" => input.source.kind().to_string(),
        "story_id" => story.id.clone(),
        "story_title" => story.title.clone(),
        "story_index" => input.story_index.to_string(),
        "story_total" => input.story_total.to_string(),
        "attempt" => input.attempt.to_string(),
        "description" => section_text(story.description.as_deref()),
        "tasks" => tasks(story, &slash(input.source.tracking_file())),
        "acceptance_criteria" => acceptance_criteria(story),
        "context" => context(input.context_files),
        "tracking_file" => slash(input.source.tracking_file()),
        "done_instruction" => input.source.done_instruction(story),
        "retry" => retry(input.retry.as_ref()),
        "answers" => questions::answers_section(input.answers),
        "asking" => questions::asking(input.questions),
        "learnings" => input.learnings.map(learnings_section).unwrap_or_default(),
        "learnings_file" => input
            .learnings
            .map(|learnings| learnings.path.clone())
            .unwrap_or_default(),
        "role" => role.map(|r| r.role.to_string()).unwrap_or_default(),
        "role_description" => section_text(role.and_then(|r| r.description)),
        "iteration" => role.map(|r| r.iteration.to_string()).unwrap_or_default(),
        "max_iterations" => role
            .map(|r| r.max_iterations.to_string())
            .unwrap_or_default(),
        "findings" => findings_section(input),
        "work" => role
            .and_then(|r| r.work)
            .map(|work| format!("## The work\n\n{}\n", work.trim_end()))
            .unwrap_or_default(),
        "promise_complete" => format!("<{PROMISE_TAG}>{token}</{PROMISE_TAG}>"),
        "promise_failed" => format!("<{PROMISE_TAG}>FAILED: <reason></{PROMISE_TAG}>"),
        _ => {
            return Err(PromptError::UnknownPlaceholder {
                name: name.to_owned(),
                line,
            });
        }
    })
}

/// The `## Findings from the <role>` section, word for word, or nothing.
fn findings_section(input: &PromptInput<'_>) -> String {
    let Some(findings) = input.role.as_ref().and_then(|role| role.findings) else {
        return String::new();
    };
    format!(
        "## Findings from the {} (attempt {})\n\nThe {} sent this story back: fix what it found, then finish the story again.\n\n{}\n",
        findings.role,
        findings.attempt,
        findings.role,
        findings.text.trim_end()
    )
}

fn slash(path: &std::path::Path) -> String {
    crate::stories::slash_path(path)
}

fn section_text(text: Option<&str>) -> String {
    match text.map(str::trim) {
        Some(text) if !text.is_empty() => format!("{text}\n"),
        _ => String::new(),
    }
}

fn tasks(story: &Story, file: &str) -> String {
    let mut out = String::new();
    if let Some(section) = &story.section {
        let lines = if section.first_line == section.last_line {
            format!("line {}", section.first_line)
        } else {
            format!("lines {}-{}", section.first_line, section.last_line)
        };
        let mut text = String::new();
        if section.parents.is_empty() {
            out.push_str(&format!("The story as written in `{file}` ({lines}):\n\n"));
        } else {
            out.push_str(&format!(
                "The story as written in `{file}` ({lines}), after the start of the sections it belongs to:\n\n"
            ));
            for parent in &section.parents {
                text.push_str(parent.trim_end());
                text.push_str("\n\n[...]\n\n");
            }
        }
        text.push_str(&section.text);
        out.push_str(&fenced(&text));
        out.push('\n');
    }
    if !story.tasks.is_empty() {
        out.push_str("Tasks (`[x]` = already done):\n\n");
        for task in &story.tasks {
            let mark = if task.done { 'x' } else { ' ' };
            out.push_str(&format!("- [{mark}] {} (line {})\n", task.text, task.line));
        }
    }
    if !story.unreadable.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!(
            "These lines of `{file}` look like checkboxes but are not ones git-ralph can read, so the story cannot count as done while they remain. Rewrite each as `- [ ] …` (open) or `- [x] …` (done), whichever is true:\n\n"
        ));
        for line in &story.unreadable {
            out.push_str(&format!("- line {}: {}\n", line.line, line.text));
        }
    }
    out
}

fn acceptance_criteria(story: &Story) -> String {
    if story.acceptance_criteria.is_empty() {
        return String::new();
    }
    let mut out = String::from("Acceptance criteria:\n\n");
    for criterion in &story.acceptance_criteria {
        out.push_str(&format!("- {criterion}\n"));
    }
    out
}

fn context(files: &[ContextFile]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "## Context\n\nRead these files of the change first. Each is shown up to {} KiB and all of them together up to {} KiB; where a file is cut, the cut is marked and the rest is in the file.\n",
        crate::stories::CONTEXT_FILE_LIMIT / 1024,
        crate::stories::CONTEXT_TOTAL_LIMIT / 1024
    );
    for file in files {
        out.push_str(&format!("\n### {}\n\n{}", file.path, fenced(&file.content)));
    }
    out
}

/// Wraps `text` in a code fence longer than any backtick run inside it.
fn fenced(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    format!("{fence}\n{text}{newline}{fence}\n")
}

fn retry(retry: Option<&RetryContext>) -> String {
    let Some(retry) = retry else {
        return String::new();
    };
    let set_aside = "Its changes were set aside, so start from the files as they are now.";
    let mut out = String::from("## Previous attempt\n\n");
    match retry {
        RetryContext::FailedReason(reason) => {
            out.push_str("The previous attempt at this story gave up, saying:\n\n");
            for line in reason.trim().lines() {
                out.push_str(&format!("> {line}\n"));
            }
            out.push_str(&format!(
                "\n{set_aside} Deal with that reason if you can; if it still blocks you, say so again.\n"
            ));
        }
        RetryContext::TimedOut => {
            out.push_str(&format!(
                "The previous attempt at this story timed out before it finished. {set_aside} Work in smaller steps and record progress as you go.\n"
            ));
        }
        RetryContext::Rejected(reason) => {
            out.push_str(
                "The previous attempt at this story ended, but its result was not accepted:\n\n",
            );
            for line in reason.trim().lines() {
                out.push_str(&format!("> {line}\n"));
            }
            out.push_str(&format!(
                "\n{set_aside} Fix that before you say the story is done.\n"
            ));
        }
        RetryContext::Asked {
            question,
            learnings,
        } => {
            out.push_str(
                "The previous attempt at this story ended with a question instead of the work:\n\n",
            );
            for line in question.trim().lines() {
                out.push_str(&format!("> {line}\n"));
            }
            out.push_str("\nNobody will answer it: you run unattended. Make the decision yourself");
            match learnings {
                Some(path) => out.push_str(&format!(
                    ", record it and why in `{path}`, and do the work."
                )),
                None => {
                    out.push_str(", say in your final message what you chose, and do the work.")
                }
            }
            out.push_str(&format!(" {set_aside}\n"));
        }
        RetryContext::ChecksFailed(checks) => {
            out.push_str(&format!(
                "The previous attempt at this story said it was complete, but these checks failed on its result. {set_aside} Make them pass.\n"
            ));
            for (name, output) in checks {
                out.push_str(&format!("\n### {name}\n\n{}", fenced(output)));
            }
        }
    }
    out
}

/// The `## Learnings` section: where the file is, what to append, and what
/// is in it, newest first.
pub fn learnings_section(learnings: &Learnings) -> String {
    let cap = crate::state::learnings::CAP / 1024;
    let excerpt = &learnings.excerpt;
    let mut out = format!(
        "## Learnings\n\nBefore you stop, done or not, append to `{}` (the path is also in `$RALPH_LEARNINGS_FILE`) what the next attempt must know: commands that work, traps, the decisions you made and why. Append; do not rewrite what is there. The file lives outside the worktree, so it survives when an attempt's changes are set aside.\n\n",
        learnings.path
    );
    if excerpt.text.trim().is_empty() {
        out.push_str("Nothing has been recorded there yet.\n");
        return out;
    }
    out.push_str(&format!(
        "What earlier attempts recorded, newest first (at most {cap} KiB is shown{}):\n\n",
        if excerpt.truncated {
            format!(
                "; the file holds {} bytes, so the oldest part is left out",
                excerpt.total_bytes
            )
        } else {
            String::new()
        }
    ));
    out.push_str(&fenced(&excerpt.text));
    out
}

/// Keeps an echoed prompt from passing for a finished attempt: a line that
/// is only a promise tag gets wrapped in backticks, and a prompt that would
/// end in a promise tag gets a closing line.
fn guard_promises(text: String, tag: &str) -> String {
    let open = format!("<{}>", tag.to_ascii_lowercase());
    let close = format!("</{}>", tag.to_ascii_lowercase());
    let is_tag_only = |line: &str| {
        let lower = line.trim().to_ascii_lowercase();
        lower.starts_with(&open) && lower.ends_with(&close)
    };
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        if is_tag_only(body) {
            let indent = &body[..body.len() - body.trim_start().len()];
            out.push_str(&format!("{indent}`{}`{}", body.trim(), &line[body.len()..]));
        } else {
            out.push_str(line);
        }
    }
    if out.trim_end().to_ascii_lowercase().ends_with(&close) {
        out.push_str("\n\nEnd of instructions.\n");
    }
    out
}

#[cfg(test)]
mod tests;
