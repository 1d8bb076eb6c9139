//! Issue 47: every guide and man page says what the code does. Every
//! command and option of the clap tree is named in its man page and in
//! its guides under `docs/`; every `git ralph …` written in a guide or a
//! man page names a command that exists, with options that command has;
//! and every route of the web view is named in `docs/serve.md` and in
//! `man git-ralph-serve`, whose route table names no other.

use std::collections::BTreeSet;

use clap::{Command, CommandFactory};

use crate::harness::source_path;

/// The guides under `docs/` that explain each command: each of its
/// options is named in one of them at least.
const GUIDES: &[(&str, &[&str])] = &[
    (
        "start",
        &[
            "configuration.md",
            "contract.md",
            "agents.md",
            "task-files.md",
            "questions.md",
            "roles.md",
            "worktrees.md",
            "handoff.md",
            "how-it-works.md",
            "screens.md",
            "serve.md",
        ],
    ),
    ("plan", &["plan.md"]),
    ("status", &["screens.md"]),
    ("watch", &["screens.md"]),
    ("log", &["screens.md"]),
    ("show", &["screens.md"]),
    ("serve", &["serve.md"]),
    ("answer", &["questions.md"]),
    ("abort", &["how-it-works.md"]),
    ("finish", &["handoff.md"]),
    ("merge", &["handoff.md"]),
    ("demo", &["screens.md"]),
    ("agents", &["agents.md"]),
    ("hook", &["hooks.md"]),
];

/// Options every command has from clap itself.
const BUILT_IN: &[&str] = &["--help", "--version"];

fn cli() -> Command {
    let mut cmd = git_ralph::cli::Cli::command()
        .bin_name("git ralph")
        .disable_help_subcommand(true);
    cmd.build();
    cmd
}

fn visible(cmd: &Command) -> Vec<&Command> {
    cmd.get_subcommands().filter(|s| !s.is_hide_set()).collect()
}

/// `--name` of every visible long option of `cmd`.
fn long_options(cmd: &Command) -> BTreeSet<String> {
    cmd.get_arguments()
        .filter(|arg| !arg.is_hide_set())
        .filter_map(|arg| arg.get_long())
        .map(|long| format!("--{long}"))
        .filter(|long| !BUILT_IN.contains(&long.as_str()))
        .collect()
}

fn read(rel: &str) -> String {
    let path = source_path(rel);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

/// A man page's text as it reads: roff's escapes undone.
fn man_text(name: &str) -> String {
    read(&format!("man/man1/{name}.1"))
        .replace("\\-", "-")
        .replace("\\fB", "")
        .replace("\\fR", "")
        .replace("\\fI", "")
        .replace("\\*(Aq", "'")
        .replace("\\(aq", "'")
}

/// Whether `text` names `word` whole: not as part of a longer option or
/// word.
fn names(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let part = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-');
        !part(before) && !part(after)
    })
}

/// The code a markdown guide shows: each line of its fenced blocks and
/// each inline span.
fn code_of_markdown(text: &str) -> Vec<String> {
    let mut code = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            code.push(line.to_owned());
        } else {
            code.extend(line.split('`').skip(1).step_by(2).map(str::to_owned));
        }
    }
    code
}

/// Each `git ralph <command> …` in `snippet`: the command and the
/// options written after it, up to the end of the shell command.
fn invocations(snippet: &str) -> Vec<(String, Vec<String>)> {
    let snippet = without_quoted(snippet);
    let mut found = Vec::new();
    for (at, _) in snippet.match_indices("git ralph ") {
        let rest = &snippet[at + "git ralph ".len()..];
        let mut words = rest
            .split_whitespace()
            .take_while(|w| !matches!(*w, "|" | "||" | "&&" | ";" | "#" | ">" | "2>"));
        let Some(first) = words.next() else {
            continue;
        };
        let command: String = first
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        // The command ends where its sentence goes on.
        let mut ended = first.ends_with([',', '.', ';', ':', ')']);
        let mut options = Vec::new();
        for word in words {
            if ended {
                break;
            }
            ended = word.ends_with([',', '.', ';', ':', ')']);
            for part in word.split('|') {
                let part = part.trim_matches(|c: char| "[](),.`:;".contains(c));
                if part.starts_with("--") && part.len() > 2 {
                    options.push(part.split('=').next().unwrap_or(part).to_owned());
                }
            }
        }
        found.push((command, options));
    }
    found
}

/// `text` with what it quotes (`'…'`, `"…"`) left out: an argument, not
/// an option of the command.
fn without_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(open) if c == open => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None => out.push(c),
        }
    }
    out
}

/// What `git ralph <command> <options>` in `place` gets wrong, if anything.
fn wrong_invocation(
    cli: &Command,
    place: &str,
    command: &str,
    options: &[String],
    strict: bool,
) -> Vec<String> {
    let Some(sub) = visible(cli).into_iter().find(|s| s.get_name() == command) else {
        // Prose in a man page ("git ralph with no subcommand") is not a
        // command; what a guide shows as code is.
        return if strict && !command.is_empty() && !command.starts_with('-') {
            vec![format!(
                "{place}: `git ralph {command}`: there is no such command"
            )]
        } else {
            Vec::new()
        };
    };
    let mut known = long_options(sub);
    for nested in visible(sub) {
        known.extend(long_options(nested));
    }
    options
        .iter()
        .filter(|option| !known.contains(*option) && !BUILT_IN.contains(&option.as_str()))
        .map(|option| format!("{place}: `git ralph {command}` has no option {option}"))
        .collect()
}

#[test]
fn every_command_and_option_is_named_in_its_man_page_and_guide() {
    let cli = cli();
    let mut missing = Vec::new();
    let root = man_text("git-ralph");
    for sub in visible(&cli) {
        let name = sub.get_name();
        if !names(&root, name) && !root.contains(&format!("git-ralph-{name}(1)")) {
            missing.push(format!("man git-ralph does not name the command {name}"));
        }
        let page = man_text(&format!("git-ralph-{name}"));
        let guides = GUIDES
            .iter()
            .find(|(command, _)| *command == name)
            .map(|(_, guides)| *guides)
            .unwrap_or_else(|| panic!("`git ralph {name}` has no guide in GUIDES"));
        let guide_text: String = guides
            .iter()
            .map(|guide| read(&format!("docs/{guide}")))
            .collect::<Vec<_>>()
            .join("\n");
        if !names(&guide_text, &format!("git ralph {name}")) {
            missing.push(format!("{guides:?} never show `git ralph {name}`"));
        }
        let mut wanted: Vec<(String, BTreeSet<String>)> = vec![(String::new(), long_options(sub))];
        for nested in visible(sub) {
            let nested_name = nested.get_name().to_owned();
            if !names(&page, &nested_name)
                && !page.contains(&format!("git-ralph-{name}-{nested_name}(1)"))
            {
                missing.push(format!("man git-ralph-{name} does not name {nested_name}"));
            }
            if !names(&guide_text, &nested_name) {
                missing.push(format!(
                    "{guides:?} do not name `git ralph {name} {nested_name}`"
                ));
            }
            wanted.push((format!(" {nested_name}"), long_options(nested)));
        }
        for (nested, options) in wanted {
            for option in options {
                if !names(&page, &option) {
                    missing.push(format!(
                        "man git-ralph-{name} does not name {name}{nested} {option}"
                    ));
                }
                if !names(&guide_text, &option) {
                    missing.push(format!("{guides:?} do not name {name}{nested} {option}"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn every_git_ralph_command_a_guide_or_man_page_shows_exists() {
    let cli = cli();
    let mut wrong = Vec::new();
    let mut guides: Vec<String> = vec!["README.md".to_owned()];
    let docs = source_path("docs");
    let mut names: Vec<String> = std::fs::read_dir(&docs)
        .unwrap_or_else(|err| panic!("cannot list {}: {err}", docs.display()))
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    names.sort();
    guides.extend(names);
    for guide in &guides {
        for snippet in code_of_markdown(&read(guide)) {
            for (command, options) in invocations(&snippet) {
                wrong.extend(wrong_invocation(&cli, guide, &command, &options, true));
            }
        }
    }
    let man = source_path("man/man1");
    for entry in std::fs::read_dir(&man).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        let Some(page) = file.strip_suffix(".1") else {
            continue;
        };
        for line in man_text(page).lines() {
            for (command, options) in invocations(line) {
                wrong.extend(wrong_invocation(&cli, &file, &command, &options, false));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The paths of the route table of `docs/serve.md`: the first cell of
/// each row, its placeholders as they are.
fn route_table(guide: &str) -> BTreeSet<String> {
    guide
        .lines()
        .filter(|line| line.starts_with("| `/"))
        .flat_map(|line| {
            let cell = line.split('|').nth(1).unwrap_or_default();
            cell.split('`')
                .skip(1)
                .step_by(2)
                .filter(|path| path.starts_with('/'))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn every_route_of_the_web_view_is_named_in_its_guide_and_man_page() {
    let routes: BTreeSet<String> = git_ralph::reference::web_routes()
        .into_iter()
        .map(|route| route.path)
        .collect();
    assert!(
        routes.contains("/runs/<change>/attempts/<story>/<n>/diff"),
        "{routes:?}"
    );
    let guide = read("docs/serve.md");
    let table = route_table(&guide);
    let page = man_text("git-ralph-serve");
    let mut wrong = Vec::new();
    for route in &routes {
        if !table.contains(route) {
            wrong.push(format!("docs/serve.md's route table lacks {route}"));
        }
        if !page.contains(route) {
            wrong.push(format!("man git-ralph-serve does not name {route}"));
        }
    }
    for path in table.difference(&routes) {
        wrong.push(format!(
            "docs/serve.md names {path}, which the server does not answer"
        ));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
