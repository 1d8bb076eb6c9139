//! Verification methods: `string_match` (the promise token), `external` (a
//! command), `semantic` (negative patterns on the attempt's diff, then a
//! verifier agent), and `multi_stage` (ordered stages, required or
//! optional). A verifier that itself fails falls back to string matching for
//! that attempt, with a warning.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::watch;

use super::{CheckSpec, Method, run_check};
use crate::agent::presets;
use crate::agent::{self, Conclusion, Signal};
use crate::git::{ObjectId, Repo};
use crate::stories::Story;

/// What verification needs to know about the attempt.
pub struct VerifyContext<'a> {
    pub workdir: &'a Path,
    /// The run's promise token (`None` when string matching is off).
    pub token: Option<&'a str>,
    /// The agent's final message.
    pub final_text: &'a str,
    /// Whether the run's own promise parsing found COMPLETE with `token`.
    pub promised: bool,
    pub story: &'a Story,
    pub criteria: &'a [String],
    pub outcome: Option<&'a str>,
    /// What the attempt changed (see [`describe_changes`]).
    pub diff: &'a str,
    pub command_timeout: Duration,
    /// Where a verifier agent's output goes.
    pub verifier_log: PathBuf,
    pub stop: watch::Receiver<bool>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Pass {
        warnings: Vec<String>,
    },
    Fail {
        /// The method or stage that failed, e.g. `stage 2 (semantic)`.
        stage: String,
        reason: String,
        /// Output worth showing the agent next time.
        output_tail: Option<String>,
        warnings: Vec<String>,
    },
}

impl Verdict {
    fn fail(stage: impl Into<String>, reason: impl Into<String>) -> Verdict {
        Verdict::Fail {
            stage: stage.into(),
            reason: reason.into(),
            output_tail: None,
            warnings: Vec::new(),
        }
    }

    fn with_warnings(mut self, extra: Vec<String>) -> Verdict {
        match &mut self {
            Verdict::Pass { warnings } | Verdict::Fail { warnings, .. } => {
                warnings.splice(0..0, extra)
            }
        };
        self
    }
}

/// Evaluate `method` for an attempt.
pub async fn verify(method: &Method, ctx: &VerifyContext<'_>) -> Verdict {
    match method {
        Method::StringMatch { token } => string_match(token.as_deref().or(ctx.token), ctx),
        Method::External {
            name,
            command,
            success_exit_code,
            output_contains,
            output_not_contains,
            timeout,
            working_dir,
        } => {
            let spec = CheckSpec {
                name: name.clone(),
                command: command.clone(),
                success_exit_code: *success_exit_code,
                output_contains: output_contains.clone(),
                output_not_contains: output_not_contains.clone(),
                timeout: *timeout,
                working_dir: working_dir.clone(),
            };
            let outcome = run_check(&spec, ctx.workdir, ctx.command_timeout).await;
            if outcome.passed {
                Verdict::Pass {
                    warnings: Vec::new(),
                }
            } else {
                Verdict::Fail {
                    stage: format!("external ({})", outcome.name),
                    reason: outcome.why.unwrap_or_else(|| "failed".into()),
                    output_tail: Some(outcome.output_tail),
                    warnings: Vec::new(),
                }
            }
        }
        Method::Semantic {
            criteria,
            negative_patterns,
            agent,
            command,
            model,
            timeout,
        } => {
            let verifier = Verifier {
                agent: agent.as_deref(),
                command: command.as_deref(),
                model: model.as_deref(),
                timeout: *timeout,
            };
            semantic(criteria, negative_patterns, verifier, ctx).await
        }
        Method::MultiStage {
            stages,
            require_all,
        } => multi_stage(stages, *require_all, ctx).await,
    }
}

/// Stages in order: with `require_all`, every required stage must pass;
/// otherwise the first that passes is enough. An optional stage that fails
/// is a warning.
async fn multi_stage(
    stages: &[super::Stage],
    require_all: bool,
    ctx: &VerifyContext<'_>,
) -> Verdict {
    let mut warnings = Vec::new();
    let mut last_failure = None;
    for (n, stage) in stages.iter().enumerate() {
        let label = format!("stage {} ({})", n + 1, stage.method.name());
        let verdict = Box::pin(verify(&stage.method, ctx)).await;
        match verdict {
            Verdict::Pass { warnings: more } => {
                warnings.extend(more);
                if !require_all {
                    return Verdict::Pass { warnings };
                }
            }
            Verdict::Fail {
                reason,
                output_tail,
                warnings: more,
                ..
            } => {
                warnings.extend(more);
                if !stage.required {
                    warnings.push(format!("optional {label} failed: {reason}"));
                    continue;
                }
                let failure = Verdict::Fail {
                    stage: label,
                    reason,
                    output_tail,
                    warnings: Vec::new(),
                };
                if require_all {
                    return failure.with_warnings(warnings);
                }
                last_failure = Some(failure);
            }
        }
    }
    match last_failure {
        Some(failure) => failure.with_warnings(warnings),
        None => Verdict::Pass { warnings },
    }
}

fn string_match(token: Option<&str>, ctx: &VerifyContext<'_>) -> Verdict {
    let Some(token) = token else {
        return Verdict::Pass {
            warnings: Vec::new(),
        };
    };
    let found = if Some(token) == ctx.token {
        ctx.promised
    } else {
        agent::parse_promise(ctx.final_text, token) == Signal::Complete
    };
    if found {
        Verdict::Pass {
            warnings: Vec::new(),
        }
    } else {
        Verdict::fail(
            "string_match",
            format!("the final message has no <promise>{token}</promise>"),
        )
    }
}

/// Who verifies: an agent preset (with its model) or any command.
struct Verifier<'a> {
    agent: Option<&'a str>,
    command: Option<&'a str>,
    model: Option<&'a str>,
    timeout: Option<u64>,
}

async fn semantic(
    criteria: &[String],
    negative_patterns: &[String],
    Verifier {
        agent,
        command,
        model,
        timeout,
    }: Verifier<'_>,
    ctx: &VerifyContext<'_>,
) -> Verdict {
    for pattern in negative_patterns {
        if let Some(line) = added_lines(ctx.diff).find(|line| line.contains(pattern.as_str())) {
            return Verdict::fail(
                "semantic",
                format!("the attempt adds '{pattern}': {}", line.trim()),
            );
        }
    }
    let spec = match (agent, command) {
        (_, Some(command)) => presets::command(command),
        (Some(agent), None) => match presets::preset(agent, model, &[]) {
            Ok(spec) => spec,
            Err(err) => return fallback(format!("the verifier agent is unusable ({err})"), ctx),
        },
        (None, None) => {
            return Verdict::Pass {
                warnings: Vec::new(),
            };
        }
    };
    let mut all_criteria: Vec<String> = ctx.criteria.to_vec();
    all_criteria.extend(criteria.iter().cloned());
    let prompt = verifier_prompt(ctx, &all_criteria);
    let invocation = spec.invocation(
        &prompt,
        &ctx.verifier_log.with_extension("prompt.md"),
        ctx.workdir,
        Vec::new(),
        crate::agent::DEFAULT_TOKEN,
    );
    let timeout = timeout
        .map(Duration::from_secs)
        .unwrap_or(ctx.command_timeout);
    let run = agent::run(
        &invocation,
        &ctx.verifier_log,
        timeout,
        ctx.stop.clone(),
        &mut |_| {},
    )
    .await;
    let run = match run {
        Ok(run) => run,
        Err(err) => return fallback(format!("the verifier could not run: {err}"), ctx),
    };
    if let Conclusion::AgentError { message } = &run.conclusion {
        return fallback(format!("the verifier failed: {message}"), ctx);
    }
    let text = run.done.map(|done| done.final_text).unwrap_or_default();
    match verdict_line(&text) {
        Some(Answer::Verified) => Verdict::Pass {
            warnings: Vec::new(),
        },
        Some(Answer::NotVerified(reason)) => Verdict::fail(
            "semantic",
            format!("the verifier says NOT_VERIFIED: {reason}"),
        ),
        None => fallback(
            "the verifier answered neither VERIFIED nor NOT_VERIFIED".into(),
            ctx,
        ),
    }
}

/// A verifier that cannot give a verdict does not decide: string matching
/// does, for this attempt, and the user is warned.
fn fallback(why: String, ctx: &VerifyContext<'_>) -> Verdict {
    let warning = format!("{why}; falling back to string_match for this attempt");
    let token = ctx.token.or(Some(crate::agent::DEFAULT_TOKEN));
    string_match(token, ctx).with_warnings(vec![warning])
}

fn verifier_prompt(ctx: &VerifyContext<'_>, criteria: &[String]) -> String {
    let mut prompt = format!(
        "You verify work another coding agent did on story {}: {}.\n\n",
        ctx.story.id, ctx.story.title
    );
    if let Some(description) = &ctx.story.description {
        prompt.push_str(&format!("Story description:\n{description}\n\n"));
    }
    if let Some(outcome) = ctx.outcome {
        prompt.push_str(&format!("Expected outcome:\n{outcome}\n\n"));
    }
    if !ctx.story.tasks.is_empty() {
        prompt.push_str("Tasks:\n");
        for task in &ctx.story.tasks {
            prompt.push_str(&format!("- {}\n", task.text));
        }
        prompt.push('\n');
    }
    prompt.push_str("Acceptance criteria:\n");
    if criteria.is_empty() {
        prompt.push_str("- the tasks above are really done\n");
    }
    for criterion in criteria {
        prompt.push_str(&format!("- {criterion}\n"));
    }
    prompt.push_str(&format!("\nWhat the attempt changed:\n{}\n\n", ctx.diff));
    prompt.push_str(
        "Do not change any file. Answer on the last line with exactly VERIFIED if every criterion is met, \
or NOT_VERIFIED: followed by the reason.\n",
    );
    prompt
}

/// What a verifier agent answered on its verdict line.
#[derive(Debug, PartialEq)]
enum Answer {
    /// `VERIFIED`.
    Verified,
    /// `NOT_VERIFIED: reason`.
    NotVerified(String),
}

/// The answer on the last line that holds either.
fn verdict_line(text: &str) -> Option<Answer> {
    text.lines().rev().find_map(|line| {
        let line = line.trim().trim_matches(|c| c == '*' || c == '`');
        if let Some(rest) = line.strip_prefix("NOT_VERIFIED") {
            let reason = rest.trim_start_matches(':').trim().to_owned();
            return Some(Answer::NotVerified(reason));
        }
        (line == "VERIFIED" || line.starts_with("VERIFIED")).then_some(Answer::Verified)
    })
}

fn added_lines(diff: &str) -> impl Iterator<Item = &str> {
    diff.lines()
        .filter(|line| line.starts_with('+') && !line.starts_with("+++"))
        .map(|line| &line[1..])
}

/// The attempt's changes as text: per file, `---`/`+++` headers, then the
/// lines it removed (`-`) and added (`+`). Binary and huge files are named
/// only. The whole text is capped.
pub fn describe_changes(repo: &Repo, old: ObjectId, new: ObjectId) -> String {
    const FILE_LIMIT: usize = 256 * 1024;
    const TOTAL_LIMIT: usize = 512 * 1024;
    let Ok(files) = repo.changed_files(old, new) else {
        return String::from("(the changes could not be listed)");
    };
    let mut out = String::new();
    for file in files {
        if out.len() > TOTAL_LIMIT {
            out.push_str("[… further changes left out]\n");
            break;
        }
        out.push_str(&format!("--- {}\n+++ {}\n", file.path, file.path));
        let old = file.old.map(|id| repo.blob_text(id, FILE_LIMIT));
        let new = file.new.map(|id| repo.blob_text(id, FILE_LIMIT));
        match (old, new) {
            (Some(None), _) | (_, Some(None)) => out.push_str("(binary or large file)\n"),
            (old, new) => {
                let old = old.flatten().unwrap_or_default();
                let new = new.flatten().unwrap_or_default();
                let mut counts: HashMap<&str, isize> = HashMap::new();
                for line in old.lines() {
                    *counts.entry(line).or_default() += 1;
                }
                for line in new.lines() {
                    *counts.entry(line).or_default() -= 1;
                }
                for line in old.lines() {
                    if counts.get(line).is_some_and(|n| *n > 0) {
                        out.push_str(&format!("-{line}\n"));
                    }
                }
                let mut added: HashMap<&str, isize> = HashMap::new();
                for line in new.lines() {
                    let surplus = -counts.get(line).copied().unwrap_or(0);
                    let seen = added.entry(line).or_default();
                    if *seen < surplus {
                        *seen += 1;
                        out.push_str(&format!("+{line}\n"));
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_read_from_the_last_verdict_line() {
        assert_eq!(
            verdict_line("thinking...\nVERIFIED"),
            Some(Answer::Verified)
        );
        assert_eq!(
            verdict_line("VERIFIED maybe\n**NOT_VERIFIED: bye.txt is empty**"),
            Some(Answer::NotVerified("bye.txt is empty".into()))
        );
        assert_eq!(verdict_line("no idea"), None);
    }

    #[test]
    fn only_added_lines_are_searched_for_negative_patterns() {
        let diff = "--- a\n+++ a\n-// TODO old\n+fn done() {}\n";
        assert!(added_lines(diff).all(|l| !l.contains("TODO")));
        let diff = "--- a\n+++ a\n+// TODO later\n";
        assert!(added_lines(diff).any(|l| l.contains("TODO")));
    }
}
