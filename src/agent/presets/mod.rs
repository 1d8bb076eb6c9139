//! The agent CLIs git-ralph knows how to drive, one module each, and the
//! registry that lists them.
//!
//! Everything that makes an agent lives in its module: a [`Preset`] that
//! says how its CLI is started headless (the program, the arguments and
//! environment that make it run unattended and print a machine-readable
//! stream, how it takes the prompt, the files it keeps for itself in the
//! worktree), which parser reads its output and how its first event is
//! recognised, and how `git ralph agents --verify` points it at the
//! stand-in (the API protocol it speaks, the environment and the config
//! files it needs). The parser and its usage-limit notices sit beside the
//! preset. What is per API protocol rather than per agent (the stand-in
//! servers) stays in [`crate::standin`].
//!
//! Adding an agent: one new file here with its `PRESET`, its transcripts
//! in `tests/fixtures/<name>/`, and its line in [`TABLE`] (with its `mod`
//! line above it). `git ralph agents`, `--agent`, auto-detection and
//! `--verify` all read the table. Nothing here runs anything.

pub mod aider;
pub mod amp;
pub mod claude;
pub mod codex;
pub mod copilot;
pub mod cursor;
pub mod droid;
pub mod gemini;
pub mod kilo;
pub mod opencode;
pub mod pi;
pub mod qwen;

use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{AgentSpec, StreamFormat, StreamParser};
use crate::standin::Protocol;

/// Every preset, in the order `git ralph agents` lists them.
pub const TABLE: &[Preset] = &[
    claude::PRESET,
    codex::PRESET,
    gemini::PRESET,
    opencode::PRESET,
    amp::PRESET,
    cursor::PRESET,
    copilot::PRESET,
    aider::PRESET,
    qwen::PRESET,
    pi::PRESET,
    kilo::PRESET,
    droid::PRESET,
];

/// The presets `--agent` accepts: the names of [`TABLE`], in its order.
pub const PRESETS: &[&str] = &{
    let mut names = [""; TABLE.len()];
    let mut at = 0;
    while at < TABLE.len() {
        names[at] = TABLE[at].name;
        at += 1;
    }
    names
};

/// How an agent receives its prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptPassing {
    /// On stdin.
    Stdin,
    /// As the last argument.
    Argument,
    /// As a file, after this flag.
    FileFlag(&'static str),
}

/// One agent CLI git-ralph knows how to drive.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    pub name: &'static str,
    /// What people call the tool.
    pub title: &'static str,
    pub program: &'static str,
    /// The release of the CLI this preset was verified on: its transcripts
    /// are in `tests/fixtures/<name>/`, and `.ci/install-agent-clis` pins
    /// it for the real-CLI tests. `None` for a CLI that cannot be verified
    /// here (it talks only to its vendor's service).
    pub verified: Option<&'static str>,
    /// The oldest release whose output the parser is tested on, when
    /// transcripts of an older release than `verified` are kept beside
    /// its own; `None` when `verified` is the only one.
    pub oldest: Option<&'static str>,
    /// Headless mode, machine-readable output and unattended permissions.
    lead: &'static [&'static str],
    /// The CLI's model option, if it has one.
    pub model_flag: Option<&'static str>,
    /// Arguments that must come after the user's own: `-` (read the prompt
    /// from stdin) or the flag whose value is the prompt.
    tail: &'static [&'static str],
    pub prompt: PromptPassing,
    /// Environment the CLI needs to behave under git-ralph.
    env: &'static [(&'static str, &'static str)],
    /// Files the CLI keeps for itself in the worktree: a history, a cache.
    /// They are not the story's work, so checkpoints leave them out and
    /// reverts leave them alone. Each is a name at the top of the worktree,
    /// a trailing `*` matching any ending; a directory counts with all it
    /// holds.
    pub scratch: &'static [&'static str],
    /// A fresh parser for what the CLI prints.
    pub parser: fn() -> Box<dyn StreamParser>,
    /// Whether a stream whose first event has this `type` (and these
    /// fields) is this CLI's, so that a command's output read as
    /// [`StreamFormat::Auto`] finds this parser; `None` for a CLI whose
    /// stream another preset's test already claims. The table is searched
    /// from its end, so a CLI added later that starts its stream the way an
    /// earlier one does (Qwen Code and Factory Droid open with Claude
    /// Code's `system` event) is told apart by its own, narrower test.
    pub first_event: Option<FirstEvent>,
    /// How `agents --verify` points the CLI at the stand-in; `None` for a
    /// CLI that talks only to its vendor's service.
    pub standin: Option<StandinSetup>,
}

/// Whether a stream's first event, of this `type` and with these fields,
/// is a CLI's.
pub type FirstEvent = fn(&str, &Map<String, Value>) -> bool;

/// Environment variables, in the order they are set.
pub type Env = Vec<(String, String)>;

impl Preset {
    /// The releases of the CLI git-ralph understands, as people read
    /// them: `0.15.10 to 0.24.4`, or the one release verified; `None` for
    /// a CLI that cannot be verified here.
    pub fn releases(&self) -> Option<String> {
        let newest = self.verified?;
        Some(match self.oldest {
            Some(oldest) => format!("{oldest} to {newest}"),
            None => newest.to_owned(),
        })
    }

    /// The format the CLI is run with.
    pub fn format(&'static self) -> StreamFormat {
        StreamFormat::Preset(self)
    }
}

/// How a CLI is pointed at the stand-in of its model API.
#[derive(Debug, Clone, Copy)]
pub struct StandinSetup {
    /// The API the CLI calls, one the stand-in answers.
    pub protocol: Protocol,
    /// Whether the CLI offers the model tools (all but Aider do); without
    /// them the scripted turns are told in edit blocks.
    pub offers_tools: bool,
    /// The environment, and the config files written under the throwaway
    /// home, that make the CLI use the stand-in rather than its provider.
    pub point: fn(&Pointing) -> io::Result<Env>,
}

impl StandinSetup {
    /// The setup of a CLI that offers the model tools, as all but Aider do.
    pub const fn with_tools(protocol: Protocol, point: fn(&Pointing) -> io::Result<Env>) -> Self {
        StandinSetup {
            protocol,
            offers_tools: true,
            point,
        }
    }
}

/// Where the stand-in listens and the throwaway home a CLI runs in, so the
/// user's own configuration is never read nor written.
#[derive(Debug, Clone, Copy)]
pub struct Pointing<'a> {
    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub base: &'a str,
    pub home: &'a Path,
}

impl Pointing<'_> {
    /// Writes `contents` to `relative` under the home, directories
    /// included; returns the file's path.
    pub fn config_file(&self, relative: &str, contents: &str) -> io::Result<PathBuf> {
        let path = self.home.join(relative);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, contents)?;
        Ok(path)
    }
}

/// The API key every CLI is given; the stand-in accepts any.
pub const STANDIN_KEY: &str = "sk-standin-0000";

/// `pairs` as owned environment variables.
pub fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum PresetError {
    #[error("unknown agent '{0}'")]
    Unknown(String),
    #[error("the agent '{agent}' has no model option, so --model {model} cannot be passed to it")]
    NoModelOption { agent: String, model: String },
}

impl PresetError {
    pub fn hint(&self) -> String {
        match self {
            PresetError::Unknown(_) => format!(
                "use one of: {}; or run any CLI with --agent-command '<command>'",
                PRESETS.join(", ")
            ),
            PresetError::NoModelOption { agent, .. } => format!(
                "drop --model, or pass {agent}'s own options with 'git config ralph.{agent}.args \"<args>\"'"
            ),
        }
    }
}

/// The row of [`TABLE`] named `name`.
pub fn lookup(name: &str) -> Option<&'static Preset> {
    TABLE.iter().find(|preset| preset.name == name)
}

/// The scratch files of the agent a run was started with (its preset's
/// name as recorded in the run's settings); none for a command.
pub fn scratch_of(agent: &str) -> &'static [&'static str] {
    lookup(agent).map_or(&[], |preset| preset.scratch)
}

/// The preset `name`, with `--model` and extra arguments (from git config
/// `ralph.<agent>.args`) appended.
pub fn preset(
    name: &str,
    model: Option<&str>,
    extra_args: &[String],
) -> Result<AgentSpec, PresetError> {
    let preset = lookup(name).ok_or_else(|| PresetError::Unknown(name.to_owned()))?;
    let mut args: Vec<String> = preset.lead.iter().map(|arg| (*arg).to_owned()).collect();
    if let Some(model) = model {
        let Some(flag) = preset.model_flag else {
            return Err(PresetError::NoModelOption {
                agent: name.to_owned(),
                model: model.to_owned(),
            });
        };
        args.push(flag.to_owned());
        args.push(model.to_owned());
    }
    args.extend(extra_args.iter().cloned());
    args.extend(preset.tail.iter().map(|arg| (*arg).to_owned()));
    Ok(AgentSpec {
        name: preset.name.to_owned(),
        program: preset.program.to_owned(),
        args,
        format: preset.format(),
        prompt: preset.prompt,
        env: vars(preset.env),
        scratch: preset
            .scratch
            .iter()
            .map(|path| (*path).to_owned())
            .collect(),
    })
}

/// `--agent-command <CMD>`: any command through `sh -c`, prompt on stdin,
/// output read as a preset's stream when it is one, else as plain text.
pub fn command(cmd: &str) -> AgentSpec {
    AgentSpec {
        name: "command".into(),
        program: "sh".into(),
        args: vec!["-c".into(), cmd.into()],
        format: StreamFormat::Auto,
        prompt: PromptPassing::Stdin,
        env: Vec::new(),
        scratch: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::StdinSource;

    fn line(name: &str, model: Option<&str>, extra: &[&str]) -> String {
        let extra: Vec<String> = extra.iter().map(|arg| (*arg).to_owned()).collect();
        preset(name, model, &extra)
            .unwrap_or_else(|err| panic!("{name}: {err}"))
            .command_line()
    }

    #[test]
    fn claude_runs_unattended_with_stream_json_and_the_model() {
        assert_eq!(
            line("claude", Some("opus"), &["--max-turns", "40"]),
            "claude -p --output-format stream-json --verbose --dangerously-skip-permissions --model opus --max-turns 40 < <prompt>"
        );
    }

    #[test]
    fn every_preset_builds_its_documented_command_line() {
        let cases = [
            (
                "codex",
                "codex exec --json --dangerously-bypass-approvals-and-sandbox --model gpt-5 -c x=1 - < <prompt>",
            ),
            (
                "gemini",
                "gemini --output-format stream-json --yolo --skip-trust -m gpt-5 -c x=1 -p <prompt>",
            ),
            (
                "opencode",
                "opencode run --auto --format json --model gpt-5 -c x=1 <prompt>",
            ),
            (
                "cursor",
                "cursor-agent -p --output-format stream-json --force --model gpt-5 -c x=1 < <prompt>",
            ),
            (
                "copilot",
                "copilot --allow-all-tools --allow-all-paths --allow-all-urls --output-format json --model gpt-5 -c x=1 -p <prompt>",
            ),
            (
                "aider",
                "COLUMNS=10000 aider --yes-always --no-auto-commits --no-gitignore --no-stream --no-pretty --model gpt-5 -c x=1 --message-file <prompt-file>",
            ),
            (
                "qwen",
                "qwen --output-format stream-json --yolo --model gpt-5 -c x=1 < <prompt>",
            ),
            (
                "pi",
                "pi -p --mode json --no-session --model gpt-5 -c x=1 < <prompt>",
            ),
            (
                "kilo",
                "kilo run --auto --format json --model gpt-5 -c x=1 <prompt>",
            ),
            (
                "droid",
                "droid exec --output-format stream-json --skip-permissions-unsafe --model gpt-5 -c x=1 < <prompt>",
            ),
        ];
        for (name, expected) in cases {
            assert_eq!(
                line(name, Some("gpt-5"), &["-c", "x=1"]),
                expected,
                "{name}"
            );
        }
        assert_eq!(
            line("amp", None, &["--mode", "rush"]),
            "amp -x --stream-json --dangerously-allow-all --mode rush < <prompt>"
        );
    }

    #[test]
    fn without_model_or_extra_arguments_only_the_preset_remains() {
        assert_eq!(
            line("codex", None, &[]),
            "codex exec --json --dangerously-bypass-approvals-and-sandbox - < <prompt>"
        );
        assert_eq!(
            line("gemini", None, &[]),
            "gemini --output-format stream-json --yolo --skip-trust -p <prompt>"
        );
    }

    #[test]
    fn a_model_for_an_agent_without_a_model_option_is_refused() {
        let err = preset("amp", Some("fast"), &[]).unwrap_err();
        assert!(matches!(err, PresetError::NoModelOption { .. }));
        assert!(err.to_string().contains("--model fast"), "{err}");
        assert!(err.hint().contains("ralph.amp.args"), "{}", err.hint());
    }

    #[test]
    fn the_prompt_goes_where_each_cli_expects_it() {
        let file = Path::new("/tmp/prompt.md");
        let cwd = Path::new("/tmp");
        for name in PRESETS {
            let spec = preset(name, None, &["--extra".into()]).expect("a preset");
            let inv = spec.invocation("do it", file, cwd, Vec::new(), "COMPLETE");
            let extra_at = inv
                .args
                .iter()
                .position(|arg| arg == "--extra")
                .expect("extra arguments are passed");
            match spec.prompt {
                PromptPassing::Stdin => {
                    assert_eq!(inv.stdin, StdinSource::Prompt("do it".into()), "{name}");
                    assert!(!inv.args.iter().any(|arg| arg == "do it"), "{name}");
                }
                PromptPassing::Argument => {
                    assert_eq!(inv.stdin, StdinSource::Null, "{name}");
                    assert_eq!(inv.args.last().map(String::as_str), Some("do it"), "{name}");
                    assert!(extra_at < inv.args.len() - 1, "{name}");
                }
                PromptPassing::FileFlag(flag) => {
                    assert_eq!(inv.stdin, StdinSource::Null, "{name}");
                    let n = inv.args.len();
                    assert_eq!(
                        inv.args[n - 2..],
                        [flag.to_owned(), file.display().to_string()]
                    );
                }
            }
            assert_eq!(inv.format, spec.format, "{name}");
            assert!(
                inv.env.contains(&("PWD".to_owned(), "/tmp".to_owned())),
                "{name}: PWD names the agent's directory"
            );
        }
    }

    /// Issue 14: Aider wraps at $COLUMNS without a terminal.
    #[test]
    fn the_agents_environment_comes_first_and_ralphs_after() {
        let spec = preset("aider", None, &[]).expect("a preset");
        let ralph = vec![("RALPH_STORY".to_owned(), "1".to_owned())];
        let inv = spec.invocation("x", Path::new("/p"), Path::new("/"), ralph, "COMPLETE");
        assert_eq!(
            inv.env,
            [
                ("PWD".to_owned(), "/".to_owned()),
                ("COLUMNS".to_owned(), "10000".to_owned()),
                ("RALPH_STORY".to_owned(), "1".to_owned())
            ]
        );
        let spec = preset("claude", None, &[]).expect("a preset");
        assert!(spec.env.is_empty());
        assert!(command("x").env.is_empty());
    }

    #[test]
    fn only_aider_keeps_files_of_its_own_in_the_worktree() {
        for name in PRESETS {
            let scratch = scratch_of(name);
            assert_eq!(!scratch.is_empty(), *name == "aider", "{name}");
            assert_eq!(preset(name, None, &[]).expect("a preset").scratch, scratch);
        }
        assert!(scratch_of("aider").contains(&".aider.chat.history.md"));
        assert!(scratch_of("command").is_empty());
        // Aider's configuration is the user's, and may be committed.
        for config in [
            ".aider.conf.yml",
            ".aiderignore",
            ".aider.model.settings.yml",
        ] {
            assert!(!scratch_of("aider").contains(&config), "{config}");
        }
    }

    #[test]
    fn codex_reads_stdin_through_a_trailing_dash() {
        let spec = preset("codex", Some("o3"), &["--foo".into()]).expect("a preset");
        assert_eq!(spec.args.last().map(String::as_str), Some("-"));
    }

    #[test]
    fn the_table_and_the_list_agree() {
        let names: Vec<&str> = TABLE.iter().map(|preset| preset.name).collect();
        assert_eq!(names, PRESETS);
        assert_eq!(
            PRESETS,
            [
                "claude", "codex", "gemini", "opencode", "amp", "cursor", "copilot", "aider",
                "qwen", "pi", "kilo", "droid"
            ],
            "the order `git ralph agents` lists them in"
        );
        for name in PRESETS {
            let spec = preset(name, None, &[]).expect("every listed preset resolves");
            assert_eq!(spec.name, *name);
            assert_eq!(Some(spec.program.as_str()), lookup(name).map(|p| p.program));
        }
    }

    /// A preset's format is spelled with its name and read back through
    /// the table; only the CLIs that talk to a local API can be verified,
    /// and each of those names the release it was verified on.
    #[test]
    fn formats_round_trip_through_the_table_and_amp_and_cursor_cannot_be_verified() {
        for preset in TABLE {
            let json = serde_json::to_value(preset.format()).expect("serialisable");
            assert_eq!(json, preset.name);
            let back: StreamFormat = serde_json::from_value(json).expect("a known name");
            assert_eq!(back, preset.format());
            let pointable = preset.standin.is_some();
            assert_eq!(
                pointable,
                !["amp", "cursor"].contains(&preset.name),
                "{}",
                preset.name
            );
            assert_eq!(preset.verified.is_some(), pointable, "{}", preset.name);
        }
        assert!(serde_json::from_str::<StreamFormat>("\"nope\"").is_err());
    }

    #[test]
    fn unknown_presets_are_refused_with_the_list() {
        let err = preset("nope", None, &[]).unwrap_err();
        for name in PRESETS {
            assert!(err.hint().contains(name), "{}", err.hint());
        }
    }

    #[test]
    fn commands_go_through_sh() {
        assert_eq!(
            command("my agent --x").command_line(),
            "sh -c 'my agent --x' < <prompt>"
        );
    }
}
