//! The planning prompt: what to build, the format the plan is written in,
//! the rules a plan is held to, and, on a second try, what the reader or
//! the validator said of the first. Each try is a fresh agent, so all of
//! that is in the text every time.

use std::path::Path;

use super::brief::Brief;
use super::target::{Format, Target};

const PLAN: &str = include_str!("prompts/plan.md");
const OPENSPEC: &str = include_str!("prompts/openspec.md");
const PRD: &str = include_str!("prompts/prd.md");
const CHECKLIST: &str = include_str!("prompts/checklist.md");

/// What one try's prompt is made of.
pub struct PromptInput<'a> {
    pub target: &'a Target,
    pub brief: Option<&'a Brief>,
    pub attempt: u32,
    pub attempts: u32,
    pub max_tasks: usize,
    pub refine: bool,
    /// What the last try was sent back for.
    pub findings: &'a [String],
    /// The worktree, where the repository's OpenSpec specs are looked up.
    pub workdir: &'a Path,
}

/// The prompt of one try.
pub fn render(input: &PromptInput<'_>) -> String {
    let target = input.target;
    let format = match target.format {
        Format::OpenSpec => fill(
            OPENSPEC,
            &[
                ("folder", &target.shown()),
                ("capabilities", &capabilities(input.workdir)),
            ],
        ),
        Format::Prd => fill(PRD, &[("file", &target.shown())]),
        Format::Checklist => fill(CHECKLIST, &[("file", &target.shown())]),
    };
    let verify = match target.format {
        Format::Prd => {
            "acceptance criteria, the last of them starting with `Verify:` and naming the command or check that proves the story done."
        }
        _ => {
            "its last task starts with `Verify:` and names the command or check that proves the story done."
        }
    };
    let allowed = match target.format {
        Format::OpenSpec => format!("only inside `{}`", target.shown()),
        _ => format!("only `{}`", target.shown()),
    };
    let brief = match (input.brief, input.refine) {
        (Some(brief), _) => brief.text.clone(),
        (None, _) => format!(
            "What `{}` says already: refine it (see below).",
            target.shown()
        ),
    };
    fill(
        PLAN,
        &[
            ("change", target.change().as_str()),
            ("attempt", &input.attempt.to_string()),
            ("attempts", &input.attempts.to_string()),
            ("brief", &brief),
            ("format", format.trim_end()),
            ("max_tasks", &input.max_tasks.to_string()),
            ("verify", verify),
            ("allowed", &allowed),
            ("refine", &refine_section(input)),
            ("feedback", &feedback_section(input)),
        ],
    )
}

/// The section of a refinement, or nothing.
fn refine_section(input: &PromptInput<'_>) -> String {
    if !input.refine {
        return String::new();
    }
    format!(
        "\n## Refine it, do not start over\n\n`{}` exists already. Keep what it says, and keep every done mark (`[x]`, `\"passes\": true`) exactly as it is, on the same words. Split each story that is too big into smaller ones, give each story without one a way to verify it, and fill in what is missing.\n",
        input.target.shown()
    )
}

/// What the last try was sent back for, or nothing.
fn feedback_section(input: &PromptInput<'_>) -> String {
    if input.findings.is_empty() {
        return String::new();
    }
    let mut text = format!(
        "\n## Your last plan was sent back\n\ngit-ralph read `{}` with the reader that will run it, and it said:\n\n",
        input.target.shown()
    );
    for finding in input.findings {
        text.push_str(&format!("- {}\n", finding.replace('\n', "\n  ")));
    }
    text.push_str("\nFix that, and keep the rest.\n");
    text
}

/// What the prompt says of the repository's OpenSpec specs.
fn capabilities(workdir: &Path) -> String {
    let specs = workdir.join("openspec/specs");
    let mut names: Vec<String> = std::fs::read_dir(&specs)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|entry| entry.path().join("spec.md").is_file())
                .filter_map(|entry| entry.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    if names.is_empty() {
        return "Name each capability after what the change adds.".to_owned();
    }
    format!(
        "The repository's specs are in `openspec/specs/` ({}): a change to one of them is a MODIFIED delta under the same capability name (copy the whole requirement, then change it); a new capability gets ADDED requirements.",
        names
            .iter()
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `template` with each `{{name}}` replaced by its value, in one pass: a
/// value holding `{{` is left as it is.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() * 2);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}").and_then(|end| {
            let name = &after[..end];
            values
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (end, *value))
        }) {
            Some((end, value)) => {
                out.push_str(value);
                rest = &after[end + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::ChangeName;

    #[test]
    fn values_are_not_filled_again() {
        assert_eq!(
            fill("a {{x}} b {{y}} {{z}}", &[("x", "{{y}}"), ("y", "Y")]),
            "a {{y}} b Y {{z}}"
        );
    }

    #[test]
    fn a_second_try_hears_the_readers_words() {
        let dir = tempfile::tempdir().expect("a dir");
        let change = ChangeName::parse("add-x").expect("a name");
        let target = Target::openspec(&change);
        let findings = vec!["tasks.md has no checkbox".to_owned()];
        let prompt = render(&PromptInput {
            target: &target,
            brief: Some(&Brief {
                text: "a dark mode".into(),
                from: "the command line".into(),
            }),
            attempt: 2,
            attempts: 4,
            max_tasks: 12,
            refine: false,
            findings: &findings,
            workdir: dir.path(),
        });
        assert!(prompt.contains("a dark mode"), "{prompt}");
        assert!(prompt.contains("- tasks.md has no checkbox"), "{prompt}");
        assert!(prompt.contains("at most 12 tasks"), "{prompt}");
        assert!(
            prompt.contains("only inside `openspec/changes/add-x/`"),
            "{prompt}"
        );
        assert!(!prompt.contains("{{"), "{prompt}");
    }
}
