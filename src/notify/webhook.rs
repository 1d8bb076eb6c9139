//! The user's webhook: a JSON POST when a run ends or waits. `http://` is spoken
//! here, a minimal HTTP/1.1 request over a TCP stream, so a run needs no
//! HTTP stack of its own; `https://` goes through `curl`, run by the one
//! supervisor, when it is installed. The body is git-ralph's own JSON, or
//! `{"text": …}` for Slack and the services that take its incoming
//! webhooks (`payload = "slack"`).
//!
//! A webhook's address often holds a secret (Slack's do), so it is shown
//! as its origin alone.

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{DELIVERY_TIMEOUT, RunNews};
use crate::process::{self, ExitStatusKind, Limits, Spec};

/// How much of an answer is read: its status line is all that matters.
const ANSWER_BYTES: usize = 1024;

/// A webhook address that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error(
        "the webhook '{url}' cannot be used: {why}; give an http:// or https:// address in [notify] webhook"
    )]
    BadWebhook { url: String, why: &'static str },
}

/// Why a webhook's POST did not arrive.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    #[error("could not connect: {0}")]
    Connect(std::io::Error),
    #[error("could not send: {0}")]
    Send(std::io::Error),
    #[error("no answer: {0}")]
    Read(std::io::Error),
    #[error("no answer: the connection closed")]
    Closed,
    #[error("no answer within {}s", DELIVERY_TIMEOUT.as_secs())]
    TimedOut,
    #[error("it answered {0}")]
    Answered(String),
    #[error("an https:// webhook needs curl, which is not installed")]
    NoCurl,
    #[error("could not run curl: {0}")]
    CurlNotRun(#[from] process::ProcessError),
    #[error("curl {exit}{}", said.as_ref().map(|said| format!(" ({said})")).unwrap_or_default())]
    Curl {
        exit: ExitStatusKind,
        said: Option<String>,
    },
}

/// The body's shape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Payload {
    /// git-ralph's own: the run's end, field by field.
    #[default]
    Json,
    /// `{"text": "…"}`, as Slack's incoming webhooks take it.
    Slack,
}

/// A checked webhook address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    url: String,
    payload: Payload,
    target: Target,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Http {
        /// `host:port`, for the connection and the Host header.
        authority: String,
        /// `/path?query`.
        path: String,
    },
    /// Through curl.
    Https,
}

impl Webhook {
    pub fn parse(url: &str, payload: Payload) -> Result<Webhook, NotifyError> {
        let bad = |why| NotifyError::BadWebhook {
            url: url.to_owned(),
            why,
        };
        let (target, rest) = if let Some(rest) = url.strip_prefix("http://") {
            (None, rest)
        } else if let Some(rest) = url.strip_prefix("https://") {
            (Some(Target::Https), rest)
        } else {
            return Err(bad("it is neither http:// nor https://"));
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        if authority.is_empty()
            || authority.contains('@')
            || authority.contains(char::is_whitespace)
        {
            return Err(bad("it names no host"));
        }
        let target = target.unwrap_or_else(|| Target::Http {
            authority: if has_port(authority) {
                authority.to_owned()
            } else {
                format!("{authority}:80")
            },
            path: if path.starts_with('?') {
                format!("/{path}")
            } else {
                path.to_owned()
            },
        });
        Ok(Webhook {
            url: url.to_owned(),
            payload,
            target,
        })
    }

    /// The address as it may be shown: its origin alone.
    pub fn url(&self) -> String {
        let rest = self.url.split_once("://").map_or("", |(_, rest)| rest);
        let origin_len = self.url.len() - rest.len() + rest.find(['/', '?']).unwrap_or(rest.len());
        let origin = &self.url[..origin_len];
        if origin_len < self.url.len() {
            format!("{origin}/…")
        } else {
            origin.to_owned()
        }
    }

    /// The body for `news`.
    pub fn body(&self, news: &RunNews) -> String {
        let value = match self.payload {
            Payload::Json => {
                let mut value = serde_json::to_value(news).unwrap_or_default();
                if let Some(object) = value.as_object_mut() {
                    object.insert("title".into(), news.title().into());
                    object.insert("text".into(), news.text().into());
                }
                value
            }
            Payload::Slack => {
                serde_json::json!({ "text": format!("*{}*\n{}", news.title(), news.text()) })
            }
        };
        value.to_string()
    }

    /// POST `news`; why it did not arrive, if it did not.
    pub async fn post(&self, news: &RunNews) -> Result<(), DeliveryError> {
        let body = self.body(news);
        match &self.target {
            Target::Http { authority, path } => {
                match tokio::time::timeout(DELIVERY_TIMEOUT, post_http(authority, path, &body))
                    .await
                {
                    Ok(answer) => answer,
                    Err(_) => Err(DeliveryError::TimedOut),
                }
            }
            Target::Https => post_with_curl(&self.url, body).await,
        }
    }
}

/// Whether `authority` ends in `:port` (an IPv6 literal is bracketed).
fn has_port(authority: &str) -> bool {
    authority
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.ends_with(':') && port.parse::<u16>().is_ok())
}

async fn post_http(authority: &str, path: &str, body: &str) -> Result<(), DeliveryError> {
    let mut stream = tokio::net::TcpStream::connect(authority)
        .await
        .map_err(DeliveryError::Connect)?;
    let host = authority.strip_suffix(":80").unwrap_or(authority);
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: git-ralph/{}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(DeliveryError::Send)?;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 256];
    while !answer.windows(2).any(|w| w == b"\r\n") && answer.len() < ANSWER_BYTES {
        let read = stream.read(&mut chunk).await.map_err(DeliveryError::Read)?;
        if read == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..read]);
    }
    let answer = String::from_utf8_lossy(&answer);
    let status_line = answer.lines().next().unwrap_or_default();
    match status_line.split_whitespace().nth(1) {
        Some(code) if code.starts_with('2') => Ok(()),
        Some(_) => Err(DeliveryError::Answered(status_line.trim().to_owned())),
        None => Err(DeliveryError::Closed),
    }
}

/// POSTs `body` to `url` with curl. Both go in a config on curl's standard
/// input, never on its command line: a webhook's address often holds a
/// secret, and a command line is there for any user of the machine to read.
async fn post_with_curl(url: &str, body: String) -> Result<(), DeliveryError> {
    if !process::is_runnable("curl") {
        return Err(DeliveryError::NoCurl);
    }
    let config = format!(
        "url = {}\ndata-binary = {}\n",
        curl_quoted(url),
        curl_quoted(&body)
    );
    let spec = Spec {
        program: "curl".into(),
        args: [
            "--config",
            "-",
            "--silent",
            "--show-error",
            "--max-time",
            &DELIVERY_TIMEOUT.as_secs().to_string(),
            "--output",
            "/dev/null",
            "--write-out",
            "%{http_code}",
            "--header",
            "Content-Type: application/json",
        ]
        .map(str::to_owned)
        .to_vec(),
        stdin: Some(config),
        cwd: std::env::temp_dir(),
        ..Spec::default()
    };
    // curl keeps its own time; this one only catches a curl that hangs.
    let limits = Limits::timeout(DELIVERY_TIMEOUT * 2);
    let (exit, stdout, stderr) = process::run_split(&spec, limits, ANSWER_BYTES).await?;
    let code = stdout.text();
    match exit {
        ExitStatusKind::Exited(0) if code.trim().starts_with('2') => Ok(()),
        ExitStatusKind::Exited(0) => Err(DeliveryError::Answered(format!("HTTP {}", code.trim()))),
        exit => {
            let said = stderr.text();
            let said = said.lines().map(str::trim).rfind(|l| !l.is_empty());
            Err(DeliveryError::Curl {
                exit,
                said: said.map(str::to_owned),
            })
        }
    }
}

/// `text` as a double-quoted string of a curl config file, in which a
/// backslash escapes the character after it.
pub(crate) fn curl_quoted(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                quoted.push('\\');
                quoted.push(c);
            }
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The config curl is given on its standard input carries the address
    /// and the body byte for byte, whatever they hold: the real curl posts
    /// them to a listener here (curl reads the config alike whether the
    /// address is http or https).
    #[tokio::test]
    async fn curl_posts_the_body_its_config_quotes() {
        if !process::is_runnable("curl") {
            eprintln!("curl is not installed: nothing to check it against");
            return;
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            use std::io::{Read, Write};
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                let read = stream.read(&mut chunk).unwrap();
                request.extend_from_slice(&chunk[..read]);
                let text = String::from_utf8_lossy(&request);
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let length: usize = head
                        .lines()
                        .find_map(|line| {
                            line.to_ascii_lowercase()
                                .strip_prefix("content-length: ")
                                .map(str::to_owned)
                        })
                        .and_then(|value| value.trim().parse().ok())
                        .unwrap_or(0);
                    if body.len() >= length || read == 0 {
                        break;
                    }
                }
            }
            stream
                .write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
                .unwrap();
            String::from_utf8(request).unwrap()
        });
        let body = r#"{"text":"a \"quoted\" word, a back\\slash, ünïcode, a tab\t"}"#;
        let url = format!("http://127.0.0.1:{port}/hook?secret=a%20b");
        post_with_curl(&url, body.to_owned()).await.unwrap();
        let request = server.join().unwrap();
        assert!(
            request.starts_with("POST /hook?secret=a%20b HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(request.ends_with(&format!("\r\n\r\n{body}")), "{request}");
        assert_eq!(curl_quoted("a\"b\\c\nd"), r#""a\"b\\c\nd""#);
    }

    #[test]
    fn addresses_are_checked_and_shown_without_their_secrets() {
        let hook = Webhook::parse("http://127.0.0.1:8080/hooks?t=1", Payload::Json).unwrap();
        assert_eq!(
            hook.target,
            Target::Http {
                authority: "127.0.0.1:8080".into(),
                path: "/hooks?t=1".into()
            }
        );
        assert_eq!(hook.url(), "http://127.0.0.1:8080/…");
        let bare = Webhook::parse("http://example.com", Payload::Json).unwrap();
        assert_eq!(
            bare.target,
            Target::Http {
                authority: "example.com:80".into(),
                path: "/".into()
            }
        );
        assert_eq!(bare.url(), "http://example.com");
        let slack = Webhook::parse("https://hooks.slack.com/services/T/B/x", Payload::Slack);
        assert_eq!(slack.unwrap().url(), "https://hooks.slack.com/…");
        for bad in ["ftp://x/y", "http:///path", "example.com", "http://a b/"] {
            assert!(Webhook::parse(bad, Payload::Json).is_err(), "{bad}");
        }
        assert!(has_port("[::1]:9000"));
        assert!(!has_port("[::1]"));
    }
}
