//! Anthropic Messages (`POST …/v1/messages`), as Claude Code, opencode,
//! Aider (through litellm) and Copilot's anthropic provider call it: server-
//! sent events when the request says `"stream": true`, one JSON message
//! otherwise.

use serde_json::{Value, json};

use super::tools::{Offered, each, shell_call};
use super::{Reply, RequestRole, SIDE_TEXT, Script, Turn, retry_now, typed_event};

const USAGE_IN: u64 = 1000;
const USAGE_OUT: u64 = 50;

pub(super) fn answer(script: &Script, body: &Value) -> (RequestRole, Reply) {
    let stream = body["stream"] == true;
    let model = body["model"].as_str().unwrap_or("standin").to_owned();
    let offered = Offered::list(&body["tools"], "input_schema");
    if script.tools && offered.is_empty() {
        let blocks = vec![json!({"type": "text", "text": SIDE_TEXT})];
        return (
            RequestRole::Side,
            message(&model, blocks, "end_turn", stream),
        );
    }
    let index = each(&body["messages"])
        .filter(|message| message["role"] == "assistant")
        .count();
    let role = RequestRole::Turn { index };
    let reply = match script.turn(index) {
        Some(Turn::Error { status, message }) => error(*status, message),
        Some(Turn::Limit {
            message,
            reset_unix,
            ..
        }) => super::limits::anthropic(message, *reset_unix),
        Some(Turn::Shell { text, command }) => match shell_call(&offered, command) {
            Some((name, input)) => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                blocks.push(json!({
                    "type": "tool_use",
                    "id": format!("toolu_standin_{index}"),
                    "name": name,
                    "input": input,
                }));
                message(&model, blocks, "tool_use", stream)
            }
            // Without a shell tool the words alone are the reply.
            None => message(
                &model,
                vec![json!({"type": "text", "text": text})],
                "end_turn",
                stream,
            ),
        },
        Some(Turn::Text { text }) => message(
            &model,
            vec![json!({"type": "text", "text": text})],
            "end_turn",
            stream,
        ),
        None => message(
            &model,
            vec![json!({"type": "text", "text": SIDE_TEXT})],
            "end_turn",
            stream,
        ),
    };
    (role, reply)
}

fn message(model: &str, blocks: Vec<Value>, stop_reason: &str, stream: bool) -> Reply {
    let usage = json!({
        "input_tokens": USAGE_IN,
        "output_tokens": USAGE_OUT,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    });
    if !stream {
        return Reply::json(
            200,
            &json!({
                "id": "msg_standin",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": blocks,
                "stop_reason": stop_reason,
                "stop_sequence": null,
                "usage": usage,
            }),
        );
    }
    let mut events = vec![typed_event(
        "message_start",
        json!({
            "message": {
                "id": "msg_standin",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {"input_tokens": USAGE_IN, "output_tokens": 1,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
            }
        }),
    )];
    for (index, block) in blocks.iter().enumerate() {
        let (start, delta) = if block["type"] == "tool_use" {
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        } else {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        };
        events.push(typed_event(
            "content_block_start",
            json!({"index": index, "content_block": start}),
        ));
        events.push(typed_event(
            "content_block_delta",
            json!({"index": index, "delta": delta}),
        ));
        events.push(typed_event("content_block_stop", json!({"index": index})));
    }
    events.push(typed_event(
        "message_delta",
        json!({
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": USAGE_OUT},
        }),
    ));
    events.push(typed_event("message_stop", json!({})));
    Reply::sse(&events)
}

fn error(status: u16, message: &str) -> Reply {
    let kind = match status {
        429 => "rate_limit_error",
        401 => "authentication_error",
        529 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    };
    let reply = Reply::json(
        status,
        &json!({"type": "error", "error": {"type": kind, "message": message}}),
    );
    if status == 429 {
        retry_now(reply)
    } else {
        reply
    }
}
