//! `git ralph start --dry-run` for people: the stories as read, the
//! warnings, the agent, contract and guardrails, and the first prompt
//! exactly as the agent would receive it.

use console::Term;

use super::{Styles, out};
use crate::preview::StoryStatus;
use crate::run::parallel::Schedule;
use crate::run::plan::Plan;

pub fn print(plan: &Plan) {
    let s = Styles::for_term(&Term::stdout());
    let preview = &plan.preview;
    out(&s.field(
        "stories from:",
        format_args!("{} ({})", preview.tracking_file, preview.source),
    ));
    for story in &preview.stories {
        let mark = match story.status {
            StoryStatus::Done => s.good.apply_to("✓").to_string(),
            StoryStatus::Next => s.bold.apply_to("▶").to_string(),
            StoryStatus::Open => " ".to_owned(),
            StoryStatus::Unreadable => s.bad.apply_to("?").to_string(),
        };
        let tasks = if story.tasks > 0 {
            format!(" [{}/{} tasks]", story.done, story.tasks)
        } else {
            String::new()
        };
        out(&format!("  {mark} {}. {}{tasks}", story.id, story.title));
        for role in &story.pipeline {
            out(&format!(
                "      {} {}: {}, <promise>{}</promise>, at most {} iterations; {}",
                s.dim.apply_to("→"),
                role.role,
                role.agent,
                role.promise,
                role.max_iterations,
                role.verification
            ));
        }
    }
    for warning in &preview.warnings {
        out(&format!("{} {warning}", s.warn.apply_to("warning:")));
    }
    let missing = if plan.agent.installed {
        String::new()
    } else {
        format!(" {}", s.warn.apply_to("(not on PATH)"))
    };
    out(&s.field("agent:", format_args!("{}{missing}", plan.agent.command)));
    out(&s.field("contract:", plan.contract.join("; ")));
    out(&s.field("guardrails:", plan.guardrails.join("; ")));
    if let Some(path) = &plan.worktree {
        out(&s.field(
            "worktree:",
            format_args!("{path} (a worktree of its own; yours is left as it is)"),
        ));
    }
    if let Some(schedule) = &plan.schedule {
        print_schedule(schedule, &s);
    }
    if plan.resumes {
        out("a stopped run of this change exists: start resumes it");
    }
    match &preview.prompt {
        Some(prompt) => {
            out(&format!("\n{}", s.bold.apply_to("first prompt:")));
            out(prompt.trim_end());
        }
        None if preview.all_done => out("every story is done: no agent would start"),
        None => out("no story can be worked on: see the warnings above"),
    }
}

/// What a parallel run starts with, and what waits for what.
fn print_schedule(schedule: &Schedule, s: &Styles) {
    out(&s.field(
        "schedule:",
        format_args!("up to {} stories at once", schedule.width),
    ));
    if !schedule.at_once.is_empty() {
        out(&format!("  at once: {}", schedule.at_once.join(", ")));
    }
    for story in &schedule.queued {
        out(&format!("  {story} waits for a free place"));
    }
    for waiting in &schedule.waits {
        out(&format!(
            "  {} waits for {}",
            waiting.story,
            waiting.waits_for.join(", ")
        ));
    }
    if schedule.in_order && !schedule.waits.is_empty() {
        out(&format!(
            "  {}",
            s.dim.apply_to(
                "a checklist's stories run in order; `[stories] independent = true` in ralph.toml, \
                 or `after = [...]` in a story's section, lets them run at once"
            )
        ));
    }
}
