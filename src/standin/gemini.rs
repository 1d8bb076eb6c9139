//! Gemini `generateContent` and `streamGenerateContent?alt=sse`, as the
//! Gemini CLI calls them. The CLI also asks side questions without tools
//! (which model to route to, who speaks next), some of them for JSON that
//! follows a schema; those get a neutral answer that lets the run end.

use serde_json::{Value, json};

use super::tools::{Offered, each, shell_call, value_for_schema};
use super::{Reply, RequestRole, SIDE_TEXT, Script, Turn};

pub(super) fn answer(script: &Script, body: &Value, stream: bool) -> (RequestRole, Reply) {
    let offered: Vec<Offered> = each(&body["tools"])
        .flat_map(|tool| each(&tool["functionDeclarations"]))
        .filter_map(|decl| {
            let schema = if decl["parametersJsonSchema"].is_object() {
                &decl["parametersJsonSchema"]
            } else {
                &decl["parameters"]
            };
            Some(Offered {
                name: decl["name"].as_str()?,
                schema,
            })
        })
        .collect();
    let config = &body["generationConfig"];
    if config["responseMimeType"] == "application/json" {
        let schema = if config["responseJsonSchema"].is_object() {
            &config["responseJsonSchema"]
        } else {
            &config["responseSchema"]
        };
        let text = value_for_schema(schema).to_string();
        return (
            RequestRole::Side,
            candidate(vec![json!({"text": text})], stream),
        );
    }
    if script.tools && offered.is_empty() {
        return (
            RequestRole::Side,
            candidate(vec![json!({"text": SIDE_TEXT})], stream),
        );
    }
    let index = each(&body["contents"])
        .filter(|content| content["role"] == "model")
        .filter(|content| each(&content["parts"]).any(|part| part["functionCall"].is_object()))
        .count();
    let reply = match script.turn(index) {
        Some(Turn::Error { status, message }) => error(*status, message),
        Some(Turn::Limit {
            message,
            reset_unix,
            ..
        }) => super::limits::gemini(message, *reset_unix),
        Some(Turn::Shell { text, command }) => {
            let mut parts = Vec::new();
            if !text.is_empty() {
                parts.push(json!({"text": text}));
            }
            if let Some((name, args)) = shell_call(&offered, command) {
                parts.push(json!({"functionCall": {"name": name, "args": args}}));
            }
            candidate(parts, stream)
        }
        Some(Turn::Text { text }) => candidate(vec![json!({"text": text})], stream),
        None => candidate(vec![json!({"text": SIDE_TEXT})], stream),
    };
    (RequestRole::Turn { index }, reply)
}

fn candidate(parts: Vec<Value>, stream: bool) -> Reply {
    let body = json!({
        "candidates": [{
            "content": {"role": "model", "parts": parts},
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": {
            "promptTokenCount": 1000,
            "candidatesTokenCount": 50,
            "totalTokenCount": 1050,
        },
        "modelVersion": "standin",
    });
    if stream {
        Reply::sse(&[(None, body)])
    } else {
        Reply::json(200, &body)
    }
}

/// Google's error body. A 429 carries a per-day quota failure, which the
/// Gemini CLI treats as final rather than retrying for minutes.
fn error(status: u16, message: &str) -> Reply {
    let (code_name, details) = match status {
        429 => (
            "RESOURCE_EXHAUSTED",
            json!([{
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [{
                    "quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                    "quotaId": "GenerateRequestsPerDayPerProjectPerModel",
                }],
            }]),
        ),
        401 | 403 => ("PERMISSION_DENIED", json!([])),
        500..=599 => ("INTERNAL", json!([])),
        _ => ("INVALID_ARGUMENT", json!([])),
    };
    Reply::json(
        status,
        &json!({"error": {"code": status, "message": message, "status": code_name, "details": details}}),
    )
}
