//! How each agent CLI is started headless: its program, the arguments that
//! make it run unattended and print a machine-readable stream, how it takes
//! the prompt, and which parser reads its output. Nothing here runs anything.

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
    pub args: Vec<String>,
    pub format: StreamFormat,
    pub prompt: PromptPassing,
}

/// The presets `--agent` accepts.
pub const PRESETS: &[&str] = &["claude"];

#[derive(Debug, thiserror::Error)]
pub enum PresetError {
    #[error("unknown agent '{0}'")]
    Unknown(String),
}

impl PresetError {
    pub fn hint(&self) -> String {
        format!(
            "use one of: {}; or run any CLI with --agent-command '<command>'",
            PRESETS.join(", ")
        )
    }
}

/// The preset `name`, with `--model` and extra arguments (from git config
/// `ralph.<agent>.args`) appended.
pub fn preset(
    name: &str,
    model: Option<&str>,
    extra_args: &[String],
) -> Result<AgentSpec, PresetError> {
    let (program, mut args, format, prompt, model_flag): (&str, Vec<&str>, _, _, &str) = match name
    {
        "claude" => (
            "claude",
            vec![
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--dangerously-skip-permissions",
            ],
            StreamFormat::Claude,
            PromptPassing::Stdin,
            "--model",
        ),
        other => return Err(PresetError::Unknown(other.to_owned())),
    };
    let mut args: Vec<String> = args.drain(..).map(str::to_owned).collect();
    if let Some(model) = model {
        args.push(model_flag.to_owned());
        args.push(model.to_owned());
    }
    args.extend(extra_args.iter().cloned());
    Ok(AgentSpec {
        name: name.to_owned(),
        program: program.to_owned(),
        args,
        format,
        prompt,
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
    }
}

impl AgentSpec {
    /// The invocation for one attempt.
    pub fn invocation(
        &self,
        prompt: &str,
        prompt_file: &Path,
        cwd: &Path,
        env: Vec<(String, String)>,
        promise_token: &str,
    ) -> Invocation {
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
        Invocation {
            program: self.program.clone(),
            args,
            env,
            cwd: cwd.to_owned(),
            stdin,
            format: self.format,
            promise_token: promise_token.to_owned(),
        }
    }

    /// The command line as a person would type it (the prompt shown as
    /// `<prompt>`).
    pub fn command_line(&self) -> String {
        let mut words = vec![self.program.clone()];
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

    #[test]
    fn claude_runs_unattended_with_stream_json_and_the_model() {
        let spec = preset("claude", Some("opus"), &["--max-turns".into(), "40".into()]).unwrap();
        assert_eq!(
            spec.command_line(),
            "claude -p --output-format stream-json --verbose --dangerously-skip-permissions --model opus --max-turns 40 < <prompt>"
        );
    }

    #[test]
    fn unknown_presets_are_refused_with_the_list() {
        let err = preset("nope", None, &[]).unwrap_err();
        assert!(err.hint().contains("claude"));
    }

    #[test]
    fn commands_go_through_sh() {
        assert_eq!(
            command("my agent --x").command_line(),
            "sh -c 'my agent --x' < <prompt>"
        );
    }
}
