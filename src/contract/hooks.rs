//! Lifecycle hooks: shell commands the user asks to run when a run starts,
//! when an attempt at a story starts, when a story is done, when an attempt
//! fails, and when the run ends. They come from `[hooks]` in ralph.toml and
//! `ralph.hook.<event>` in git config, read when the run begins and kept in
//! the contract's snapshot with the rest of its rules: an agent that edits
//! ralph.toml cannot give itself a hook. Running them is the loop's
//! business (`run::hooks`); this module only says what they are.
//!
//! ```toml
//! [hooks]
//! on_run_start = "notify-me started"            # a command
//! on_attempt_failed = ["./log.sh", "./page.sh"]  # or several, in order
//! [hooks.on_story_done]                          # or a table
//! command = "./deploy-preview.sh"
//! on_error = "stop"                              # report (default) or stop
//! timeout = 120                                  # seconds; default --command-timeout
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

/// The moments of a run a hook can run at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    /// The loop starts or resumes.
    OnRunStart,
    /// An attempt at a story is about to start its agent.
    OnStoryStart,
    /// A story is done: its checkpoint is made.
    OnStoryDone,
    /// An attempt failed (rejected, no signal, an agent error, timed out).
    OnAttemptFailed,
    /// An attempt ended with a question for a person: the story waits
    /// for an answer while the rest of the run goes on.
    OnQuestion,
    /// The run ended, however it ended.
    OnRunEnd,
}

impl HookEvent {
    pub const ALL: [HookEvent; 6] = [
        HookEvent::OnRunStart,
        HookEvent::OnStoryStart,
        HookEvent::OnStoryDone,
        HookEvent::OnAttemptFailed,
        HookEvent::OnQuestion,
        HookEvent::OnRunEnd,
    ];

    /// As ralph.toml and `RALPH_HOOK` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::OnRunStart => "on_run_start",
            HookEvent::OnStoryStart => "on_story_start",
            HookEvent::OnStoryDone => "on_story_done",
            HookEvent::OnAttemptFailed => "on_attempt_failed",
            HookEvent::OnQuestion => "on_question",
            HookEvent::OnRunEnd => "on_run_end",
        }
    }

    /// As git config spells it (`ralph.hook.onStoryDone`): git allows no
    /// `_` in a key's name.
    pub fn config_name(self) -> &'static str {
        match self {
            HookEvent::OnRunStart => "onRunStart",
            HookEvent::OnStoryStart => "onStoryStart",
            HookEvent::OnStoryDone => "onStoryDone",
            HookEvent::OnAttemptFailed => "onAttemptFailed",
            HookEvent::OnQuestion => "onQuestion",
            HookEvent::OnRunEnd => "onRunEnd",
        }
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a failing hook does to the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// The failure is reported and the run goes on.
    #[default]
    Report,
    /// The run stops cleanly, resumable.
    Stop,
}

/// One hook: a command run through `sh -c` in the worktree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hook {
    pub command: String,
    #[serde(default, skip_serializing_if = "is_report")]
    pub on_error: OnError,
    /// Seconds; the run's command timeout when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

fn is_report(on_error: &OnError) -> bool {
    *on_error == OnError::Report
}

impl Hook {
    /// A hook that reports its failures, under the command timeout.
    pub fn command(command: &str) -> Hook {
        Hook {
            command: command.to_owned(),
            on_error: OnError::Report,
            timeout: None,
        }
    }
}

/// `[hooks]`: each event's hooks, in the order they run. An event not
/// named in [`HookEvent`] is refused by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Hooks(BTreeMap<HookEvent, HookList>);

/// One event's hooks, in order: in ralph.toml one hook (a command or a
/// table) or a list of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct HookList(Vec<Hook>);

impl<'de> Deserialize<'de> for HookList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<HookList, D::Error> {
        one_or_many(deserializer).map(HookList)
    }
}

impl Hooks {
    pub fn is_empty(&self) -> bool {
        HookEvent::ALL
            .iter()
            .all(|event| self.of(*event).is_empty())
    }

    /// The hooks of `event`, in order.
    pub fn of(&self, event: HookEvent) -> &[Hook] {
        self.0.get(&event).map_or(&[], |list| &list.0)
    }

    fn of_mut(&mut self, event: HookEvent) -> &mut Vec<Hook> {
        &mut self.0.entry(event).or_default().0
    }

    /// Add `hook` after the hooks `event` already has.
    pub fn push(&mut self, event: HookEvent, hook: Hook) {
        self.of_mut(event).push(hook);
    }

    /// These hooks, then `later`'s, event by event.
    pub fn then(mut self, later: Hooks) -> Hooks {
        for event in HookEvent::ALL {
            let hooks = later.of(event).to_vec();
            self.of_mut(event).extend(hooks);
        }
        self
    }
}

/// A hook's table form, keys checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HookTable {
    command: String,
    #[serde(default)]
    on_error: OnError,
    #[serde(default)]
    timeout: Option<u64>,
}

impl From<HookTable> for Hook {
    fn from(table: HookTable) -> Hook {
        Hook {
            command: table.command,
            on_error: table.on_error,
            timeout: table.timeout,
        }
    }
}

/// A hook is a command, or a table with one.
impl<'de> Deserialize<'de> for Hook {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Hook, D::Error> {
        deserializer.deserialize_any(HookVisitor)
    }
}

struct HookVisitor;

impl<'de> Visitor<'de> for HookVisitor {
    type Value = Hook;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a command, or a table with command, on_error and timeout")
    }

    fn visit_str<E: de::Error>(self, command: &str) -> Result<Hook, E> {
        Ok(Hook::command(command))
    }

    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<Hook, M::Error> {
        HookTable::deserialize(de::value::MapAccessDeserializer::new(map)).map(Hook::from)
    }
}

/// An event's hooks: one (a command or a table), or a list of them.
fn one_or_many<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Hook>, D::Error> {
    struct Hooks;

    impl<'de> Visitor<'de> for Hooks {
        type Value = Vec<Hook>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a command, a table with command and on_error, or a list of them")
        }

        fn visit_str<E: de::Error>(self, command: &str) -> Result<Vec<Hook>, E> {
            Ok(vec![Hook::command(command)])
        }

        fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<Vec<Hook>, M::Error> {
            HookVisitor.visit_map(map).map(|hook| vec![hook])
        }

        fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Vec<Hook>, S::Error> {
            let mut hooks = Vec::new();
            while let Some(hook) = seq.next_element::<Hook>()? {
                hooks.push(hook);
            }
            Ok(hooks)
        }
    }

    deserializer.deserialize_any(Hooks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Hooks, toml::de::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            hooks: Hooks,
        }
        toml::from_str::<File>(text).map(|file| file.hooks)
    }

    #[test]
    fn a_hook_is_a_command_a_table_or_a_list_of_them() {
        let hooks = parse(
            "[hooks]\non_run_start = \"a\"\non_attempt_failed = [\"b\", { command = \"c\", on_error = \"stop\" }]\n\
             [hooks.on_story_done]\ncommand = \"d\"\non_error = \"stop\"\ntimeout = 5\n",
        )
        .unwrap();
        assert_eq!(hooks.of(HookEvent::OnRunStart), [Hook::command("a")]);
        assert_eq!(
            hooks.of(HookEvent::OnAttemptFailed),
            [
                Hook::command("b"),
                Hook {
                    on_error: OnError::Stop,
                    ..Hook::command("c")
                }
            ]
        );
        assert_eq!(
            hooks.of(HookEvent::OnStoryDone),
            [Hook {
                command: "d".into(),
                on_error: OnError::Stop,
                timeout: Some(5),
            }]
        );
        assert!(hooks.of(HookEvent::OnRunEnd).is_empty());
    }

    #[test]
    fn a_misspelt_hook_or_key_is_refused_by_name() {
        let err = parse("[hooks]\non_story_finish = \"x\"\n").unwrap_err();
        assert!(err.to_string().contains("on_story_finish"), "{err}");
        let err = parse("[hooks.on_run_end]\ncommand = \"x\"\non_eror = \"stop\"\n").unwrap_err();
        assert!(err.to_string().contains("on_eror"), "{err}");
        let err = parse("[hooks.on_run_end]\ncommand = \"x\"\non_error = \"halt\"\n").unwrap_err();
        assert!(err.to_string().contains("halt"), "{err}");
        assert!(parse("[hooks]\non_run_end = 3\n").is_err());
    }

    #[test]
    fn hooks_round_trip_through_the_snapshot_and_join_in_order() {
        let hooks =
            parse("[hooks]\non_run_end = [\"a\", { command = \"b\", on_error = \"stop\" }]\n")
                .unwrap();
        let json = serde_json::to_string(&hooks).unwrap();
        let back: Hooks = serde_json::from_str(&json).unwrap();
        assert_eq!(back, hooks);
        let mut first = Hooks::default();
        first.push(HookEvent::OnRunEnd, Hook::command("config"));
        let joined = first.then(hooks);
        let commands: Vec<&str> = joined
            .of(HookEvent::OnRunEnd)
            .iter()
            .map(|hook| hook.command.as_str())
            .collect();
        assert_eq!(commands, ["config", "a", "b"]);
    }
}
