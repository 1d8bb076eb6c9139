//! OpenAI Chat Completions (`POST …/chat/completions`), the API most
//! OpenAI-compatible servers offer and the one Qwen Code, pi and Factory
//! Droid's generic provider call: chunks of `chat.completion.chunk` as
//! server-sent events closed by `data: [DONE]` when the request says
//! `"stream": true`, one `chat.completion` otherwise.
//!
//! A request that asks for JSON (`response_format`), as some CLIs do for
//! their own checks (who speaks next, a title), is a side request and gets
//! a value that follows the schema it gives.

use serde_json::{Value, json};

use super::tools::{Offered, each, shell_call, value_for_schema};
use super::{Reply, RequestRole, SIDE_TEXT, Script, Turn, openai_error};

const USAGE_IN: u64 = 1000;
const USAGE_OUT: u64 = 50;

pub(super) fn answer(script: &Script, body: &Value) -> (RequestRole, Reply) {
    let stream = body["stream"] == true;
    let model = body["model"].as_str().unwrap_or("standin").to_owned();
    let offered: Vec<Offered> = each(&body["tools"])
        .filter_map(|tool| {
            let function = &tool["function"];
            Some(Offered {
                name: function["name"].as_str()?,
                schema: &function["parameters"],
            })
        })
        .collect();
    let format = &body["response_format"];
    if matches!(format["type"].as_str(), Some("json_schema" | "json_object")) {
        let text = value_for_schema(&format["json_schema"]["schema"]).to_string();
        return (
            RequestRole::Side,
            completion(&model, Some(&text), None, stream),
        );
    }
    if script.tools && offered.is_empty() {
        return (
            RequestRole::Side,
            completion(&model, Some(SIDE_TEXT), None, stream),
        );
    }
    let index = each(&body["messages"])
        .filter(|message| message["role"] == "assistant")
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
            let words = (!text.is_empty()).then_some(text.as_str());
            let call = shell_call(&offered, command).map(|(name, arguments)| {
                json!({
                    "id": format!("call_standin_{index}"),
                    "type": "function",
                    "function": {"name": name, "arguments": arguments.to_string()},
                })
            });
            // Without a shell tool the words alone are the reply.
            completion(&model, words.or(Some("")), call, stream)
        }
        Some(Turn::Text { text }) => completion(&model, Some(text), None, stream),
        None => completion(&model, Some(SIDE_TEXT), None, stream),
    };
    (RequestRole::Turn { index }, reply)
}

/// One assistant message: its words, and at most one tool call.
fn completion(model: &str, text: Option<&str>, call: Option<Value>, stream: bool) -> Reply {
    let finish_reason = if call.is_some() { "tool_calls" } else { "stop" };
    let usage = json!({
        "prompt_tokens": USAGE_IN,
        "completion_tokens": USAGE_OUT,
        "total_tokens": USAGE_IN + USAGE_OUT,
    });
    let envelope = |object: &str| {
        json!({
            "id": "chatcmpl-standin",
            "object": object,
            "created": 1_700_000_000,
            "model": model,
        })
    };
    if !stream {
        let mut message = json!({"role": "assistant", "content": text});
        if let Some(call) = &call {
            message["tool_calls"] = json!([call]);
        }
        let mut body = envelope("chat.completion");
        body["choices"] = json!([{"index": 0, "message": message, "finish_reason": finish_reason}]);
        body["usage"] = usage;
        return Reply::json(200, &body);
    }
    let chunk = |delta: Value, finish: Option<&str>| {
        let mut body = envelope("chat.completion.chunk");
        body["choices"] = json!([{"index": 0, "delta": delta, "finish_reason": finish}]);
        body
    };
    let mut chunks = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    if let Some(text) = text.filter(|text| !text.is_empty()) {
        chunks.push(chunk(json!({"content": text}), None));
    }
    if let Some(call) = call {
        let mut call = call;
        call["index"] = json!(0);
        chunks.push(chunk(json!({"tool_calls": [call]}), None));
    }
    chunks.push(chunk(json!({}), Some(finish_reason)));
    let mut closing = envelope("chat.completion.chunk");
    closing["choices"] = json!([]);
    closing["usage"] = usage;
    chunks.push(closing);
    let mut reply = Reply::sse(
        &chunks
            .into_iter()
            .map(|data| (None, data))
            .collect::<Vec<_>>(),
    );
    reply.body.push_str("data: [DONE]\n\n");
    reply
}
