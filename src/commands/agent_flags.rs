//! The flags that choose the agent, the same for `plan` and `start`: one
//! clap struct flattened into both, so that the two commands cannot come
//! to say them differently.

use crate::settings::Requested;

#[derive(clap::Args, Debug, Clone, Default)]
pub struct AgentFlags {
    /// Agent preset to run [default: claude; config: ralph.agent].
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Run this command through `sh -c` instead of a preset, with the prompt
    /// on stdin [config: ralph.agentCommand].
    #[arg(long, value_name = "CMD", conflicts_with = "agent")]
    pub agent_command: Option<String>,
    /// Model passed to the agent's --model flag.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
}

impl AgentFlags {
    /// The flags as plain values for [`crate::settings::resolve`], the rest
    /// left to the caller.
    pub fn requested(&self) -> Requested {
        Requested {
            agent: self.agent.clone(),
            agent_command: self.agent_command.clone(),
            model: self.model.clone(),
            ..Requested::default()
        }
    }

    /// The flags as they are typed, for a command shown to the user.
    pub fn words(&self) -> Vec<String> {
        let flags = [
            ("--agent", &self.agent),
            ("--agent-command", &self.agent_command),
            ("--model", &self.model),
        ];
        let mut words = Vec::new();
        for (flag, value) in flags {
            if let Some(value) = value {
                words.push(flag.to_owned());
                words.push(value.clone());
            }
        }
        words
    }
}
