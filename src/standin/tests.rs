use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

/// Sends `request` over a fresh connection and reads the whole answer.
async fn exchange(standin: &Standin, request: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", standin.port()))
        .await
        .expect("the stand-in accepts connections");
    stream.write_all(request.as_bytes()).await.expect("sent");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("read");
    answer
}

/// One HTTP/1.1 request over a fresh connection: the status and the body.
async fn post(standin: &Standin, path: &str, body: &Value) -> (u16, String) {
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let answer = exchange(standin, &request).await;
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status line");
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

fn script() -> Script {
    Script {
        turns: vec![
            Turn::Shell {
                text: "Listing.".into(),
                command: "ls".into(),
            },
            Turn::Text {
                text: "Done.\n\n<promise>COMPLETE</promise>".into(),
            },
        ],
        tools: true,
    }
}

/// A script whose only turn is a rate limit.
fn rate_limited() -> Script {
    Script {
        turns: vec![Turn::Error {
            status: 429,
            message: "slow down".into(),
        }],
        tools: true,
    }
}

/// The stand-in saw two requests, the script's first turn then its second.
fn assert_two_turns_seen(standin: &Standin) {
    assert_eq!(
        standin
            .seen()
            .iter()
            .map(|seen| seen.role)
            .collect::<Vec<_>>(),
        [
            RequestRole::Turn { index: 0 },
            RequestRole::Turn { index: 1 }
        ]
    );
}

fn bash_tool() -> Value {
    json!({"name": "Bash", "input_schema": {"type": "object",
        "properties": {"command": {"type": "string"}}, "required": ["command"]}})
}

#[tokio::test]
async fn anthropic_turns_follow_the_history_and_stream_as_events() {
    let standin = Standin::start(script()).await.expect("started");
    let first = json!({"model": "m", "stream": true, "tools": [bash_tool()],
        "messages": [{"role": "user", "content": "go"}]});
    let (status, body) = post(&standin, "/v1/messages?beta=true", &first).await;
    assert_eq!(status, 200);
    assert!(body.contains("event: message_start"), "{body}");
    assert!(body.contains(r#""name":"Bash""#), "{body}");
    assert!(body.contains(r#"\"command\":\"ls\""#), "{body}");
    assert!(body.contains(r#""stop_reason":"tool_use""#), "{body}");

    let second = json!({"model": "m", "stream": false, "tools": [bash_tool()],
        "messages": [{"role": "user", "content": "go"},
                     {"role": "assistant", "content": [{"type": "tool_use"}]},
                     {"role": "user", "content": [{"type": "tool_result"}]}]});
    let (status, body) = post(&standin, "/v1/messages", &second).await;
    assert_eq!(status, 200);
    let message: Value = serde_json::from_str(&body).expect("one JSON message");
    assert_eq!(
        message["content"][0]["text"],
        "Done.\n\n<promise>COMPLETE</promise>"
    );
    assert_two_turns_seen(&standin);
    standin.stop().await;
}

#[tokio::test]
async fn a_request_without_tools_is_a_side_request_that_leaves_the_script_alone() {
    let standin = Standin::start(script()).await.expect("started");
    let title = json!({"model": "m", "messages": [{"role": "user", "content": "title?"}]});
    let (status, body) = post(&standin, "/v1/messages", &title).await;
    assert_eq!(status, 200);
    assert!(body.contains(SIDE_TEXT), "{body}");
    assert_eq!(standin.turn_requests(), 0);
    standin.stop().await;
}

#[tokio::test]
async fn without_tools_every_request_is_a_turn() {
    let mut plain = script();
    plain.tools = false;
    plain.turns[0] = Turn::Text {
        text: "first".into(),
    };
    let standin = Standin::start(plain).await.expect("started");
    let (_, body) = post(
        &standin,
        "/v1/messages",
        &json!({"messages": [{"role": "user", "content": "go"}]}),
    )
    .await;
    assert!(body.contains("first"), "{body}");
    assert_eq!(standin.turn_requests(), 1);
    standin.stop().await;
}

#[tokio::test]
async fn errors_answer_every_later_request_with_their_status() {
    let standin = Standin::start(rate_limited()).await.expect("started");
    let request = json!({"tools": [bash_tool()], "messages": []});
    for _ in 0..2 {
        let (status, body) = post(&standin, "/v1/messages", &request).await;
        assert_eq!(status, 429);
        assert!(body.contains("rate_limit_error"), "{body}");
    }
    let (status, body) = post(
        &standin,
        "/v1/responses",
        &json!({"tools": [{"type": "function", "name": "shell", "parameters": {}}], "input": []}),
    )
    .await;
    assert_eq!(status, 429);
    assert!(body.contains("rate_limit_exceeded"), "{body}");
    let (status, body) = post(
        &standin,
        "/v1beta/models/m:streamGenerateContent?alt=sse",
        &json!({"tools": [{"functionDeclarations": [{"name": "run_shell_command"}]}], "contents": []}),
    )
    .await;
    assert_eq!(status, 429);
    assert!(body.contains("RESOURCE_EXHAUSTED"), "{body}");
    standin.stop().await;
}

#[tokio::test]
async fn responses_stream_items_and_count_turns_by_tool_calls() {
    let standin = Standin::start(script()).await.expect("started");
    let tools = json!([{"type": "function", "name": "shell",
        "parameters": {"properties": {"command": {"type": "array"}}, "required": ["command"]}}]);
    let (status, body) = post(
        &standin,
        "/v1/responses",
        &json!({"tools": tools, "input": [{"type": "message", "role": "user"}]}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(body.contains("event: response.output_item.done"), "{body}");
    assert!(
        body.contains(r#"\"command\":[\"bash\",\"-lc\",\"ls\"]"#),
        "{body}"
    );
    assert!(body.contains("event: response.completed"), "{body}");
    let (_, body) = post(
        &standin,
        "/v1/responses",
        &json!({"tools": tools, "input": [{"type": "message", "role": "user"},
            {"type": "function_call"}, {"type": "function_call_output"}]}),
    )
    .await;
    assert!(body.contains("<promise>COMPLETE</promise>"), "{body}");
    standin.stop().await;
}

fn chat_tools() -> Value {
    json!([{"type": "function", "function": {"name": "run_shell_command",
        "parameters": {"properties": {"command": {"type": "string"}}, "required": ["command"]}}}])
}

#[tokio::test]
async fn chat_completions_stream_chunks_and_count_turns_by_assistant_messages() {
    let standin = Standin::start(script()).await.expect("started");
    let (status, body) = post(
        &standin,
        "/v1/chat/completions",
        &json!({"model": "m", "stream": true, "tools": chat_tools(),
            "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "go"}]}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        body.contains(r#""object":"chat.completion.chunk""#),
        "{body}"
    );
    assert!(body.contains(r#""name":"run_shell_command""#), "{body}");
    assert!(body.contains(r#"\"command\":\"ls\""#), "{body}");
    assert!(body.contains(r#""finish_reason":"tool_calls""#), "{body}");
    assert!(body.contains(r#""prompt_tokens":1000"#), "{body}");
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
    let (_, body) = post(
        &standin,
        "/chat/completions",
        &json!({"model": "m", "tools": chat_tools(), "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function"}]},
            {"role": "tool", "tool_call_id": "c", "content": "README.md"}]}),
    )
    .await;
    let completion: Value = serde_json::from_str(&body).expect("one JSON completion");
    assert_eq!(completion["object"], "chat.completion");
    assert_eq!(
        completion["choices"][0]["message"]["content"],
        "Done.\n\n<promise>COMPLETE</promise>"
    );
    assert_eq!(completion["choices"][0]["finish_reason"], "stop");
    assert_two_turns_seen(&standin);
    standin.stop().await;
}

#[tokio::test]
async fn chat_completions_side_requests_get_neutral_or_schema_answers() {
    let standin = Standin::start(script()).await.expect("started");
    let (_, body) = post(
        &standin,
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "a title?"}]}),
    )
    .await;
    assert!(body.contains(SIDE_TEXT), "{body}");
    let (_, body) = post(
        &standin,
        "/v1/chat/completions",
        &json!({"tools": chat_tools(), "messages": [], "response_format": {"type": "json_schema",
            "json_schema": {"name": "x", "schema": {"type": "object", "properties": {
                "next_speaker": {"type": "string", "enum": ["model", "user"]}}}}}}),
    )
    .await;
    assert!(body.contains(r#"\"next_speaker\":\"user\""#), "{body}");
    assert_eq!(standin.turn_requests(), 0);
    standin.stop().await;
}

#[tokio::test]
async fn a_rate_limit_asks_for_a_retry_after_one_millisecond() {
    let standin = Standin::start(rate_limited()).await.expect("started");
    let body = json!({"tools": chat_tools(), "messages": []}).to_string();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let answer = exchange(&standin, &request).await;
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
    assert!(answer.contains("retry-after-ms: 1\r\n"), "{answer}");
    assert!(answer.contains("retry-after: 0\r\n"), "{answer}");
    assert!(answer.contains("rate_limit_exceeded"), "{answer}");
    standin.stop().await;
}

#[tokio::test]
async fn gemini_calls_its_shell_tool_and_answers_json_side_questions() {
    let standin = Standin::start(script()).await.expect("started");
    let tools = json!([{"functionDeclarations": [{"name": "run_shell_command",
        "parametersJsonSchema": {"properties": {"command": {"type": "string"}}, "required": ["command"]}}]}]);
    let (status, body) = post(
        &standin,
        "/v1beta/models/m:streamGenerateContent?alt=sse",
        &json!({"tools": tools, "contents": [{"role": "user", "parts": [{"text": "go"}]}]}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(body.starts_with("data: "), "{body}");
    assert!(body.contains(r#""functionCall""#), "{body}");
    let (_, body) = post(
        &standin,
        "/v1beta/models/m:generateContent",
        &json!({"contents": [], "generationConfig": {"responseMimeType": "application/json",
            "responseJsonSchema": {"type": "object", "properties": {"next_speaker": {"type": "string", "enum": ["model", "user"]}}}}}),
    )
    .await;
    assert!(body.contains(r#"\"next_speaker\":\"user\""#), "{body}");
    standin.stop().await;
}

#[tokio::test]
async fn unknown_paths_are_refused_and_recorded() {
    let standin = Standin::start(script()).await.expect("started");
    let (status, _) = post(&standin, "/v1/unheard-of", &json!({})).await;
    assert_eq!(status, 404);
    assert_eq!(standin.seen()[0].role, RequestRole::Unknown);
    assert!(standin.base_url().starts_with("http://127.0.0.1:"));
    standin.stop().await;
}

/// A first conversation request in `protocol`, offering a shell tool: its
/// path and body.
fn first_request(protocol: Protocol) -> (&'static str, Value) {
    match protocol {
        Protocol::AnthropicMessages => (
            "/v1/messages",
            json!({"model": "m", "tools": [bash_tool()],
                "messages": [{"role": "user", "content": "go"}]}),
        ),
        Protocol::OpenAiResponses => (
            "/v1/responses",
            json!({"tools": [{"type": "function", "name": "shell", "parameters": {}}],
                "input": [{"type": "message", "role": "user"}]}),
        ),
        Protocol::OpenAiChatCompletions => (
            "/v1/chat/completions",
            json!({"tools": chat_tools(), "messages": [{"role": "user", "content": "go"}]}),
        ),
        Protocol::GeminiGenerateContent => (
            "/v1beta/models/m:generateContent",
            json!({"tools": [{"functionDeclarations": [{"name": "run_shell_command"}]}],
                "contents": [{"role": "user", "parts": [{"text": "go"}]}]}),
        ),
    }
}

#[tokio::test]
async fn every_preset_that_can_be_pointed_here_speaks_a_protocol_answered_here() {
    let mut pointed = 0;
    for preset in crate::agent::presets::TABLE {
        let Some(setup) = preset.standin else {
            continue;
        };
        pointed += 1;
        let standin = Standin::start(script()).await.expect("started");
        let (path, body) = first_request(setup.protocol);
        let (status, answer) = post(&standin, path, &body).await;
        assert_eq!(status, 200, "{}: {answer}", preset.name);
        assert_eq!(
            standin.seen()[0].role,
            RequestRole::Turn { index: 0 },
            "{}",
            preset.name
        );
        standin.stop().await;
    }
    assert_eq!(
        pointed, 10,
        "every preset but Amp and Cursor can be verified"
    );
}

/// A script whose first turn is a limit that lifts at `reset_unix`.
fn limited_until(reset_unix: u64, code: Option<&str>) -> Script {
    let mut script = script();
    script.turns.insert(
        0,
        Turn::Limit {
            message: "You have reached your usage limit.".into(),
            code: code.map(str::to_owned),
            reset_unix,
        },
    );
    script
}

fn request(path: &str, body: &Value) -> String {
    let body = body.to_string();
    format!(
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn a_limit_answers_in_each_providers_own_shape_with_its_reset() {
    let reset = limits::now_unix() + 3600;
    let standin = Standin::start(limited_until(reset, Some("insufficient_quota")))
        .await
        .expect("started");
    let anthropic = exchange(
        &standin,
        &request(
            "/v1/messages",
            &json!({"messages": [{"role": "user", "content": "hi"}], "tools": [bash_tool()]}),
        ),
    )
    .await;
    assert!(anthropic.starts_with("HTTP/1.1 429"), "{anthropic}");
    assert!(
        anthropic.contains("\"type\":\"rate_limit_error\""),
        "{anthropic}"
    );
    assert!(anthropic.contains(&format!("anthropic-ratelimit-unified-reset: {reset}")));
    assert!(anthropic.contains("anthropic-ratelimit-requests-reset: 20"));
    let retry_after: u64 = anthropic
        .lines()
        .find_map(|line| line.strip_prefix("retry-after: "))
        .and_then(|secs| secs.trim().parse().ok())
        .expect("a retry-after");
    assert!((3590..=3600).contains(&retry_after), "{retry_after}");
    let openai = exchange(
        &standin,
        &request(
            "/v1/chat/completions",
            &json!({"messages": [{"role": "user", "content": "hi"}], "tools": [
                {"type": "function", "function": {"name": "shell", "parameters": {}}}]}),
        ),
    )
    .await;
    assert!(openai.starts_with("HTTP/1.1 429"), "{openai}");
    assert!(
        openai.contains("\"code\":\"insufficient_quota\""),
        "{openai}"
    );
    assert!(openai.contains("x-ratelimit-reset-requests: "), "{openai}");
    let (status, gemini) = post(
        &standin,
        "/v1beta/models/gemini-2.5-pro:generateContent",
        &json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": [
            {"functionDeclarations": [{"name": "run_shell_command", "parameters": {}}]}]}),
    )
    .await;
    assert_eq!(status, 429);
    assert!(gemini.contains("RESOURCE_EXHAUSTED"), "{gemini}");
    assert!(gemini.contains("google.rpc.RetryInfo"), "{gemini}");
    standin.stop().await;
}

#[tokio::test]
async fn a_limit_past_its_reset_is_passed_over() {
    let standin = Standin::start(limited_until(limits::now_unix() - 1, None))
        .await
        .expect("started");
    let (status, body) = post(
        &standin,
        "/v1/messages",
        &json!({"messages": [{"role": "user", "content": "hi"}], "tools": [bash_tool()]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("tool_use"), "the script's first turn: {body}");
    standin.stop().await;
}
