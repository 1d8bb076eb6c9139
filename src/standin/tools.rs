//! Calling a CLI's shell tool without knowing its name or schema in advance.
//!
//! Each CLI names its shell tool differently (`Bash`, `bash`, `shell`,
//! `run_shell_command`, `Execute`, …) and asks for different arguments, and both change
//! between releases. The stand-in reads the tools the request offers and
//! fills the chosen tool's required arguments from its JSON schema.

use serde_json::{Map, Value, json};

/// Shell tool names, most specific first.
const SHELL_NAMES: &[&str] = &[
    "Bash",
    "bash",
    "shell",
    "shell_command",
    "exec_command",
    "run_shell_command",
    "Execute",
    "powershell",
];

/// A tool offered to the model: its name and its parameters' JSON schema.
pub(super) struct Offered<'a> {
    pub name: &'a str,
    pub schema: &'a Value,
}

impl<'a> Offered<'a> {
    /// The tools a request offers: each of `tools` with a `"name"`, its
    /// schema under `schema_key`.
    pub(super) fn list(tools: &'a Value, schema_key: &str) -> Vec<Offered<'a>> {
        each(tools)
            .filter_map(|tool| {
                Some(Offered {
                    name: tool["name"].as_str()?,
                    schema: &tool[schema_key],
                })
            })
            .collect()
    }
}

/// The elements of `value` when it is an array; none otherwise.
pub(super) fn each(value: &Value) -> impl Iterator<Item = &Value> {
    value.as_array().into_iter().flatten()
}

/// The shell tool among `offered`, if any.
pub(super) fn shell_tool<'a>(offered: &[Offered<'a>]) -> Option<&'a str> {
    SHELL_NAMES
        .iter()
        .find_map(|wanted| offered.iter().find(|tool| tool.name == *wanted))
        .or_else(|| {
            offered.iter().find(|tool| {
                let name = tool.name.to_lowercase();
                name.contains("bash") || name.contains("shell")
            })
        })
        .map(|tool| tool.name)
}

/// The shell tool among `offered` and the arguments that make it run
/// `command`, if a shell tool is offered.
pub(super) fn shell_call<'a>(offered: &[Offered<'a>], command: &str) -> Option<(&'a str, Value)> {
    let name = shell_tool(offered)?;
    let schema = offered
        .iter()
        .find(|tool| tool.name == name)
        .map_or(&Value::Null, |tool| tool.schema);
    Some((name, shell_arguments(schema, command)))
}

/// Arguments for the shell tool with `schema` that run `command`.
pub(super) fn shell_arguments(schema: &Value, command: &str) -> Value {
    let properties = schema["properties"].as_object();
    let mut args = Map::new();
    let command_key = ["command", "cmd", "script"]
        .into_iter()
        .find(|key| properties.is_some_and(|props| props.contains_key(*key)))
        .unwrap_or("command");
    let command_value = match properties.and_then(|props| props.get(command_key)) {
        Some(prop) if type_of(prop) == Some("array") => json!(["bash", "-lc", command]),
        _ => json!(command),
    };
    args.insert(command_key.to_owned(), command_value);
    let required = schema["required"].as_array().into_iter().flatten();
    for key in required.filter_map(Value::as_str) {
        if args.contains_key(key) {
            continue;
        }
        let prop = properties.and_then(|props| props.get(key));
        args.insert(key.to_owned(), placeholder(key, prop));
    }
    Value::Object(args)
}

/// A plausible value for a required argument other than the command.
fn placeholder(key: &str, prop: Option<&Value>) -> Value {
    let Some(prop) = prop else {
        return json!("verify");
    };
    if let Some(first) = prop["enum"].as_array().and_then(|values| values.first()) {
        return first.clone();
    }
    match type_of(prop) {
        Some("boolean") => json!(false),
        Some("integer" | "number") if key.contains("timeout") => json!(60_000),
        Some("integer" | "number") => json!(1),
        Some("array") => json!([]),
        Some("object") => json!({}),
        // Factory Droid asks for a sentence-cased summary of 3 to 8 words.
        _ if key == "description" || key == "summary" => json!("Run a command"),
        _ => json!("verify"),
    }
}

/// A schema's `type`, upper-case Gemini names included.
fn type_of(prop: &Value) -> Option<&str> {
    let kind = match &prop["type"] {
        Value::String(kind) => kind.as_str(),
        Value::Array(kinds) => kinds.iter().find_map(Value::as_str)?,
        _ => return None,
    };
    Some(match kind {
        "STRING" => "string",
        "ARRAY" => "array",
        "BOOLEAN" => "boolean",
        "INTEGER" => "integer",
        "NUMBER" => "number",
        "OBJECT" => "object",
        other => other,
    })
}

/// An answer to a request for JSON that follows `schema` (Gemini's
/// next-speaker and routing checks): enums take their first value, except
/// that the user always speaks next, so the CLI stops when the script does.
pub(super) fn value_for_schema(schema: &Value) -> Value {
    match type_of(schema) {
        Some("object") | None => {
            let mut out = Map::new();
            if let Some(props) = schema["properties"].as_object() {
                for (key, prop) in props {
                    let value = if key == "next_speaker" {
                        json!("user")
                    } else {
                        value_for_schema(prop)
                    };
                    out.insert(key.clone(), value);
                }
            }
            Value::Object(out)
        }
        _ => placeholder("", Some(schema)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_tool_is_found_by_name_whatever_the_cli_calls_it() {
        let schema = json!({});
        let offered = [
            Offered {
                name: "Read",
                schema: &schema,
            },
            Offered {
                name: "run_shell_command",
                schema: &schema,
            },
        ];
        assert_eq!(shell_tool(&offered), Some("run_shell_command"));
        let offered = [
            Offered {
                name: "Read",
                schema: &schema,
            },
            Offered {
                name: "Execute",
                schema: &schema,
            },
        ];
        assert_eq!(shell_tool(&offered), Some("Execute"));
        let offered = [Offered {
            name: "my_shell_tool",
            schema: &schema,
        }];
        assert_eq!(shell_tool(&offered), Some("my_shell_tool"));
        assert_eq!(
            shell_tool(&[Offered {
                name: "Read",
                schema: &schema
            }]),
            None
        );
    }

    #[test]
    fn required_arguments_are_filled_from_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "description": {"type": "string"},
                "mode": {"type": "string", "enum": ["sync", "async"]},
                "timeout": {"type": "number"}
            },
            "required": ["command", "description", "mode"]
        });
        assert_eq!(
            shell_arguments(&schema, "ls"),
            json!({"command": "ls", "description": "Run a command", "mode": "sync"})
        );
        let argv = json!({"properties": {"command": {"type": "array"}}});
        assert_eq!(
            shell_arguments(&argv, "ls"),
            json!({"command": ["bash", "-lc", "ls"]})
        );
        let cmd = json!({"properties": {"cmd": {"type": "STRING"}}, "required": ["cmd"]});
        assert_eq!(shell_arguments(&cmd, "ls"), json!({"cmd": "ls"}));
        // Factory Droid's `Execute`.
        let execute = json!({"properties": {"summary": {"type": "string"},
            "command": {"type": "string"}}, "required": ["summary", "command"]});
        assert_eq!(
            shell_arguments(&execute, "ls"),
            json!({"command": "ls", "summary": "Run a command"})
        );
    }

    #[test]
    fn a_next_speaker_check_hands_the_turn_to_the_user() {
        let schema = json!({
            "type": "object",
            "properties": {
                "reasoning": {"type": "string"},
                "next_speaker": {"type": "string", "enum": ["model", "user"]}
            }
        });
        assert_eq!(
            value_for_schema(&schema),
            json!({"reasoning": "verify", "next_speaker": "user"})
        );
    }
}
