//! A scripted stand-in for the model APIs that agent CLIs call.
//!
//! `git ralph agents --verify` proves that git-ralph understands the agent
//! CLI a user has installed by running it for real against this server on
//! loopback: the CLI's own events, tool runs and exit codes, with the model's
//! words and tool calls taken from a [`Script`]. It speaks the four wire
//! formats the presets use: Anthropic Messages (streaming and not), OpenAI
//! Responses (streaming), OpenAI Chat Completions (streaming and not) and
//! Gemini `generateContent` (streaming and not).
//!
//! Each conversation request is answered with the scripted turn whose index
//! is the number of model turns already in the request's history, so the
//! server keeps no conversation state and a CLI's retries and side requests
//! (titles, quota checks, routing) never shift the script. It binds
//! 127.0.0.1 on an ephemeral port and nothing else; it reads no files and
//! knows nothing of git-ralph's runs.

mod anthropic;
mod chat_completions;
mod gemini;
mod limits;
mod responses;
mod tools;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A model API the stand-in answers. Each preset names the one its CLI
/// calls (see [`crate::agent::presets::StandinSetup`]); the stand-in serves
/// them all at once and tells them apart by path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Anthropic Messages, `POST …/v1/messages`, streaming or not.
    AnthropicMessages,
    /// OpenAI Responses, `POST …/v1/responses`, streaming.
    OpenAiResponses,
    /// OpenAI Chat Completions, `POST …/chat/completions`, streaming or not:
    /// what OpenAI-compatible servers offer.
    OpenAiChatCompletions,
    /// Gemini `…:generateContent` and `…:streamGenerateContent`.
    GeminiGenerateContent,
}

/// The model's side of a conversation, one entry per model turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Script {
    pub turns: Vec<Turn>,
    /// When false, the CLI sends no tools (Aider), so every request is part
    /// of the conversation. When true, a request without tools is a side
    /// request (a title, a quota check) and gets a short neutral answer.
    #[serde(default = "default_true")]
    pub tools: bool,
}

fn default_true() -> bool {
    true
}

/// One model turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Turn {
    /// A reply with no tool call: the CLI's run ends here.
    Text { text: String },
    /// Optional words, then a call of the CLI's shell tool with `command`.
    Shell {
        #[serde(default)]
        text: String,
        command: String,
    },
    /// An HTTP error for this request and every later one: 400 (a bad
    /// request) or 429 (a rate limit).
    Error { status: u16, message: String },
    /// The provider's own usage-limit or quota error (see [`limits`]) for
    /// every conversation request until `reset_unix`; from then on it is
    /// passed over, and the turns after it answer as if it were not there.
    /// `code` is OpenAI's error code (`insufficient_quota` or
    /// `rate_limit_exceeded`); the other providers have one kind of 429.
    Limit {
        message: String,
        #[serde(default)]
        code: Option<String>,
        reset_unix: u64,
    },
}

impl Script {
    /// The turn for a request whose history holds `index` model turns. Past
    /// the end, the last turn repeats, so a CLI that asks again gets the
    /// same ending. A limit that still holds answers every request.
    fn turn(&self, index: usize) -> Option<&Turn> {
        let now = limits::now_unix();
        if let Some(limit) = self
            .turns
            .iter()
            .find(|turn| matches!(turn, Turn::Limit { reset_unix, .. } if *reset_unix > now))
        {
            return Some(limit);
        }
        let turns: Vec<&Turn> = self
            .turns
            .iter()
            .filter(|turn| !matches!(turn, Turn::Limit { .. }))
            .collect();
        turns
            .iter()
            .take(index + 1)
            .find(|turn| matches!(turn, Turn::Error { .. }))
            .or_else(|| turns.get(index))
            .or_else(|| turns.last())
            .copied()
    }
}

/// What the stand-in made of one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub role: RequestRole,
}

/// How a request was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestRole {
    /// A conversation request, answered with scripted turn `index`.
    Turn { index: usize },
    /// A title, quota or routing request, answered neutrally.
    Side,
    /// Model listings, token counts and the like.
    Other,
    /// A path the stand-in does not serve.
    Unknown,
}

#[derive(Debug, thiserror::Error)]
pub enum StandinError {
    #[error("could not listen on 127.0.0.1: {0}")]
    Bind(#[source] std::io::Error),
}

/// A running stand-in; it stops when dropped or [`stop`](Self::stop)ped.
pub struct Standin {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

struct Shared {
    script: Script,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Standin {
    /// Listens on 127.0.0.1, on a port the system picks, and serves `script`.
    pub async fn start(script: Script) -> Result<Standin, StandinError> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(StandinError::Bind)?;
        let addr = listener.local_addr().map_err(StandinError::Bind)?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::new(Shared {
            script,
            seen: Arc::clone(&seen),
        });
        let (shutdown, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            loop {
                let stream = tokio::select! {
                    _ = &mut stopped => break,
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => stream,
                        Err(_) => continue,
                    },
                };
                let shared = Arc::clone(&shared);
                tokio::spawn(async move {
                    let service = service_fn(move |request| {
                        let shared = Arc::clone(&shared);
                        async move { Ok::<_, Infallible>(answer(&shared, request).await) }
                    });
                    // A client that hangs up mid-answer is not our concern.
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Standin {
            addr,
            seen,
            shutdown: Some(shutdown),
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    #[cfg(test)]
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every request so far, in the order they arrived.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .map(|seen| seen.clone())
            .unwrap_or_default()
    }

    /// How many conversation requests arrived.
    pub fn turn_requests(&self) -> usize {
        self.seen()
            .iter()
            .filter(|seen| matches!(seen.role, RequestRole::Turn { .. }))
            .count()
    }

    /// Stops listening and waits for the accept loop to end.
    pub async fn stop(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Standin {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// A reply the dialect modules build: status, extra headers, content type
/// and body.
pub(crate) struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    content_type: &'static str,
    body: String,
}

impl Reply {
    fn json(status: u16, body: &Value) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            content_type: "application/json",
            body: body.to_string(),
        }
    }

    /// Server-sent events, each `(name, data)`; a name of `None` sends data only.
    fn sse(events: &[(Option<&str>, Value)]) -> Reply {
        let mut body = String::new();
        for (name, data) in events {
            if let Some(name) = name {
                body.push_str("event: ");
                body.push_str(name);
                body.push('\n');
            }
            body.push_str("data: ");
            body.push_str(&data.to_string());
            body.push_str("\n\n");
        }
        Reply {
            status: 200,
            headers: Vec::new(),
            content_type: "text/event-stream",
            body,
        }
    }

    fn header(mut self, name: &'static str, value: impl Into<String>) -> Reply {
        self.headers.push((name, value.into()));
        self
    }
}

/// A server-sent event named `name` whose data is `fields` with
/// `"type": name`, as both Anthropic and OpenAI stream them.
fn typed_event(name: &'static str, mut fields: Value) -> (Option<&'static str>, Value) {
    fields["type"] = Value::from(name);
    (Some(name), fields)
}

/// Headers that tell any client to retry a 429 at once rather than after a
/// long back-off, so a rate-limit check costs seconds, not minutes. The
/// delay in milliseconds is 1, not 0: clients that test it for being
/// positive (Qwen Code, opencode) fall back to their own back-off on 0.
fn retry_now(reply: Reply) -> Reply {
    reply
        .header("retry-after", "0")
        .header("retry-after-ms", "1")
}

/// An error as OpenAI's APIs (Chat Completions and Responses alike) send
/// it: its kind named in both `type` and `code`.
fn openai_error(status: u16, message: &str) -> Reply {
    let kind = match status {
        429 => "rate_limit_exceeded",
        401 => "invalid_api_key",
        500..=599 => "server_error",
        _ => "invalid_request_error",
    };
    let reply = Reply::json(
        status,
        &serde_json::json!({"error": {"message": message, "type": kind, "code": kind, "param": null}}),
    );
    if status == 429 {
        retry_now(reply)
    } else {
        reply
    }
}

async fn answer(shared: &Shared, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (role, reply) = route(&shared.script, &method, &path, &body);
    if let Ok(mut seen) = shared.seen.lock() {
        seen.push(Seen {
            method: method.to_string(),
            path,
            role,
        });
    }
    let mut response = Response::builder()
        .status(StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", reply.content_type)
        .header("request-id", "req_standin");
    for (name, value) in reply.headers {
        response = response.header(name, value);
    }
    response
        .body(Full::new(Bytes::from(reply.body)))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

/// Which dialect a request speaks and what to answer it with.
fn route(script: &Script, method: &Method, path: &str, body: &Value) -> (RequestRole, Reply) {
    if method == Method::GET && path.ends_with("/models") {
        return (RequestRole::Other, model_list());
    }
    if method == Method::POST {
        if path.ends_with("/messages/count_tokens") {
            return (
                RequestRole::Other,
                Reply::json(200, &serde_json::json!({"input_tokens": 100})),
            );
        }
        if path.ends_with("/messages") {
            return anthropic::answer(script, body);
        }
        if path.ends_with("/responses") {
            return responses::answer(script, body);
        }
        if path.ends_with("/chat/completions") {
            return chat_completions::answer(script, body);
        }
        if let Some((_, action)) = path.rsplit_once(':') {
            match action {
                "streamGenerateContent" => return gemini::answer(script, body, true),
                "generateContent" => return gemini::answer(script, body, false),
                "countTokens" => {
                    return (
                        RequestRole::Other,
                        Reply::json(200, &serde_json::json!({"totalTokens": 100})),
                    );
                }
                _ => {}
            }
        }
    }
    (
        RequestRole::Unknown,
        Reply::json(
            404,
            &serde_json::json!({"error": {"message": format!("the stand-in does not serve {path}")}}),
        ),
    )
}

/// A listing that satisfies Anthropic-, OpenAI- and Codex-style clients.
fn model_list() -> Reply {
    Reply::json(
        200,
        &serde_json::json!({
            "object": "list",
            "data": [{"id": "standin", "object": "model", "type": "model", "display_name": "standin"}],
            "models": [],
            "has_more": false,
        }),
    )
}

/// The neutral answer to a side request.
const SIDE_TEXT: &str = "Verification run";

#[cfg(test)]
mod tests;
