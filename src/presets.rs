//! How each agent CLI is started headless: its program, the arguments and
//! environment that make it run unattended and print a machine-readable
//! stream, how it takes the prompt, which parser reads its output, and the
//! files it keeps for itself in the worktree. Nothing here runs anything.
//!
//! Every preset is one row of [`TABLE`], so that `git ralph agents`, the
//! `--agent` check and the runner all read the same facts.

use std::path::Path;

use crate::agent::{Invocation, StdinSource, StreamFormat};

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

/// A resolved agent: a preset, or a user's command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSpec {
    /// The preset name, or `command`.
    pub name: String,
    pub program: String,
    /// Every argument in order; the prompt (or its file) goes after them.
    pub args: Vec<String>,
    pub format: StreamFormat,
    pub prompt: PromptPassing,
    /// Set in the agent's environment on top of git-ralph's own.
    pub env: Vec<(String, String)>,
    /// The agent's own files in the worktree (see [`Preset::scratch`]).
    pub scratch: Vec<String>,
}

/// The presets `--agent` accepts, in the order `git ralph agents` lists them.
pub const PRESETS: &[&str] = &[
    "claude", "codex", "gemini", "opencode", "amp", "cursor", "copilot", "aider",
];

/// One agent CLI git-ralph knows how to drive.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    pub name: &'static str,
    /// What people call the tool.
    pub title: &'static str,
    pub program: &'static str,
    /// Headless mode, machine-readable output and unattended permissions.
    lead: &'static [&'static str],
    /// The CLI's model option, if it has one.
    pub model_flag: Option<&'static str>,
    /// Arguments that must come after the user's own: `-` (read the prompt
    /// from stdin) or the flag whose value is the prompt.
    tail: &'static [&'static str],
    pub format: StreamFormat,
    pub prompt: PromptPassing,
    /// Environment the CLI needs to behave under git-ralph.
    env: &'static [(&'static str, &'static str)],
    /// Files the CLI keeps for itself in the worktree: a history, a cache.
    /// They are not the story's work, so checkpoints leave them out and
    /// reverts leave them alone. Each is a name at the top of the worktree,
    /// a trailing `*` matching any ending; a directory counts with all it
    /// holds.
    pub scratch: &'static [&'static str],
}

/// Every preset, in the order of [`PRESETS`].
pub const TABLE: &[Preset] = &[
    Preset {
        name: "claude",
        title: "Claude Code",
        program: "claude",
        lead: &[
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--dangerously-skip-permissions",
        ],
        model_flag: Some("--model"),
        tail: &[],
        format: StreamFormat::Claude,
        prompt: PromptPassing::Stdin,
        env: &[],
        scratch: &[],
    },
    Preset {
        name: "codex",
        title: "OpenAI Codex CLI",
        program: "codex",
        lead: &[
            "exec",
            "--json",
            "--dangerously-bypass-approvals-and-sandbox",
        ],
        model_flag: Some("--model"),
        // `-` as the prompt makes `codex exec` read it from stdin.
        tail: &["-"],
        format: StreamFormat::Codex,
        prompt: PromptPassing::Stdin,
        env: &[],
        scratch: &[],
    },
    Preset {
        name: "gemini",
        title: "Gemini CLI",
        program: "gemini",
        // Headless Gemini refuses a directory the user never trusted in
        // its interactive mode (exit 55); `--skip-trust` runs it anyway.
        lead: &["--output-format", "stream-json", "--yolo", "--skip-trust"],
        model_flag: Some("-m"),
        tail: &["-p"],
        format: StreamFormat::Gemini,
        prompt: PromptPassing::Argument,
        env: &[],
        scratch: &[],
    },
    Preset {
        name: "opencode",
        title: "opencode",
        program: "opencode",
        // Without `--auto`, `opencode run` rejects every permission it would
        // have asked for, and the run ends there with exit 0 and no answer.
        lead: &["run", "--auto", "--format", "json"],
        // opencode names models `provider/model`.
        model_flag: Some("--model"),
        tail: &[],
        format: StreamFormat::Opencode,
        prompt: PromptPassing::Argument,
        env: &[],
        // Sessions and snapshots live under $XDG_DATA_HOME, not here.
        scratch: &[],
    },
    Preset {
        name: "amp",
        title: "Amp",
        program: "amp",
        lead: &["-x", "--stream-json", "--dangerously-allow-all"],
        model_flag: None,
        tail: &[],
        format: StreamFormat::Amp,
        prompt: PromptPassing::Stdin,
        env: &[],
        scratch: &[],
    },
    Preset {
        name: "cursor",
        title: "Cursor CLI",
        program: "cursor-agent",
        lead: &["-p", "--output-format", "stream-json", "--force"],
        model_flag: Some("--model"),
        tail: &[],
        format: StreamFormat::Cursor,
        prompt: PromptPassing::Stdin,
        env: &[],
        scratch: &[],
    },
    Preset {
        name: "copilot",
        title: "GitHub Copilot CLI",
        program: "copilot",
        // `--allow-all-tools` alone still denies, unattended, any path
        // outside the repository ("Permission denied because no interactive
        // user response was available"); paths and URLs are allowed too, as
        // every other preset runs unattended.
        lead: &[
            "--allow-all-tools",
            "--allow-all-paths",
            "--allow-all-urls",
            "--output-format",
            "json",
        ],
        model_flag: Some("--model"),
        tail: &["-p"],
        format: StreamFormat::Copilot,
        prompt: PromptPassing::Argument,
        env: &[],
        scratch: &[],
    },
    Preset {
        name: "aider",
        title: "Aider",
        program: "aider",
        // Aider commits every edit by default; the loop decides what is
        // committed, so auto-commits are off. It would also add `.aider*` to
        // .gitignore, a change of the user's files that no story asked for.
        // Pretty output renders the reply as markdown, which would swallow
        // the `<promise>` tags.
        lead: &[
            "--yes-always",
            "--no-auto-commits",
            "--no-gitignore",
            "--no-stream",
            "--no-pretty",
        ],
        model_flag: Some("--model"),
        tail: &[],
        format: StreamFormat::Aider,
        prompt: PromptPassing::FileFlag("--message-file"),
        // Without a terminal Aider wraps every line at $COLUMNS, 80 when
        // unset, splitting promises and error lines.
        env: &[("COLUMNS", "10000")],
        scratch: &[
            ".aider.chat.history.md",
            ".aider.input.history",
            ".aider.llm.history",
            ".aider.tags.cache.v*",
        ],
    },
];

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
        format: preset.format,
        prompt: preset.prompt,
        env: preset
            .env
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect(),
        scratch: preset
            .scratch
            .iter()
            .map(|path| (*path).to_owned())
            .collect(),
    })
}

/// `--agent-command <CMD>`: any command through `sh -c`, prompt on stdin,
/// output read as Claude stream-json when it is that, else as plain text.
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

impl AgentSpec {
    /// The invocation for one attempt; `env` (git-ralph's `RALPH_*`
    /// variables) comes after the agent's own.
    pub fn invocation(
        &self,
        prompt: &str,
        prompt_file: &Path,
        cwd: &Path,
        env: Vec<(String, String)>,
        promise_token: &str,
    ) -> Invocation {
        let env: Vec<(String, String)> = self.env.iter().cloned().chain(env).collect();
        let mut args = self.args.clone();
        let stdin = match self.prompt {
            PromptPassing::Stdin => StdinSource::Prompt(prompt.to_owned()),
            PromptPassing::Argument => {
                args.push(prompt.to_owned());
                StdinSource::Null
            }
            PromptPassing::FileFlag(flag) => {
                args.push(flag.to_owned());
                args.push(prompt_file.to_string_lossy().into_owned());
                StdinSource::Null
            }
        };
        // Some CLIs (opencode) take their working directory from an
        // inherited PWD rather than the real one: set it to the agent's.
        let mut env = env;
        if !env.iter().any(|(name, _)| name == "PWD") {
            env.insert(0, ("PWD".to_owned(), cwd.to_string_lossy().into_owned()));
        }
        Invocation {
            program: self.program.clone(),
            args,
            env,
            cwd: cwd.to_owned(),
            stdin,
            format: self.format,
            promise_token: promise_token.to_owned(),
            pid_file: None,
        }
    }

    /// The command line as a person would type it (the prompt shown as
    /// `<prompt>`).
    pub fn command_line(&self) -> String {
        let mut words: Vec<String> = self
            .env
            .iter()
            .map(|(key, value)| format!("{key}={}", shell_quote(value)))
            .collect();
        words.push(self.program.clone());
        words.extend(self.args.iter().map(|arg| shell_quote(arg)));
        match self.prompt {
            PromptPassing::Stdin => format!("{} < <prompt>", words.join(" ")),
            PromptPassing::Argument => format!("{} <prompt>", words.join(" ")),
            PromptPassing::FileFlag(flag) => format!("{} {flag} <prompt-file>", words.join(" ")),
        }
    }
}

fn shell_quote(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
    {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        for name in PRESETS {
            let spec = preset(name, None, &[]).expect("every listed preset resolves");
            assert_eq!(spec.name, *name);
            assert_eq!(Some(spec.program.as_str()), lookup(name).map(|p| p.program));
        }
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
