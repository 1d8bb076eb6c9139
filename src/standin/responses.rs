//! OpenAI Responses (`POST …/responses`), as Codex calls it: server-sent
//! events, each output item announced and then completed, closed by
//! `response.completed` with the usage.

use serde_json::{Value, json};

use super::tools::{Offered, each, shell_call};
use super::{Reply, RequestRole, SIDE_TEXT, Script, Turn, openai_error, typed_event};

/// Input items that are a model's tool call, one per scripted shell turn.
const CALL_ITEMS: &[&str] = &["function_call", "local_shell_call", "custom_tool_call"];

pub(super) fn answer(script: &Script, body: &Value) -> (RequestRole, Reply) {
    let offered = Offered::list(&body["tools"], "parameters");
    if script.tools && offered.is_empty() {
        return (RequestRole::Side, completed(vec![text_item(SIDE_TEXT, 0)]));
    }
    let index = each(&body["input"])
        .filter(|item| {
            item["type"]
                .as_str()
                .is_some_and(|kind| CALL_ITEMS.contains(&kind))
        })
        .count();
    let reply = match script.turn(index) {
        Some(Turn::Error { status, message }) => openai_error(*status, message),
        Some(Turn::Limit {
            message,
            code,
            reset_unix,
        }) => super::limits::openai(
            message,
            code.as_deref().unwrap_or("rate_limit_exceeded"),
            *reset_unix,
        ),
        Some(Turn::Shell { text, command }) => {
            let mut items = Vec::new();
            if !text.is_empty() {
                items.push(text_item(text, index));
            }
            if let Some((name, arguments)) = shell_call(&offered, command) {
                items.push(json!({
                    "type": "function_call",
                    "id": format!("fc_standin_{index}"),
                    "call_id": format!("call_standin_{index}"),
                    "name": name,
                    "arguments": arguments.to_string(),
                    "status": "completed",
                }));
            }
            completed(items)
        }
        Some(Turn::Text { text }) => completed(vec![text_item(text, index)]),
        None => completed(vec![text_item(SIDE_TEXT, index)]),
    };
    (RequestRole::Turn { index }, reply)
}

fn text_item(text: &str, index: usize) -> Value {
    json!({
        "type": "message",
        "id": format!("msg_standin_{index}"),
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    })
}

fn completed(items: Vec<Value>) -> Reply {
    let response = |status: &str, output: &[Value]| {
        json!({
            "id": "resp_standin",
            "object": "response",
            "status": status,
            "model": "standin",
            "output": output,
        })
    };
    let mut events = vec![typed_event(
        "response.created",
        json!({"response": response("in_progress", &[])}),
    )];
    for (index, item) in items.iter().enumerate() {
        events.push(typed_event(
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        ));
        events.push(typed_event(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
    }
    let mut done = response("completed", &items);
    done["usage"] = json!({
        "input_tokens": 1000,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 50,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 1050,
    });
    events.push(typed_event("response.completed", json!({"response": done})));
    Reply::sse(&events)
}
