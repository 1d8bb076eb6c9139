//! A resolved agent, preset or user command, and the invocation of one
//! attempt built from it: the arguments, the environment, where the prompt
//! goes and how the output is read. Nothing here runs anything.

use std::path::Path;

use super::presets::PromptPassing;
use super::{Invocation, StdinSource, StreamFormat};
use crate::process::shell_quote;

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
    /// The agent's own files in the worktree (see [`Preset::scratch`](super::Preset::scratch)).
    pub scratch: Vec<String>,
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
            idle: None,
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
