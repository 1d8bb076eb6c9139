//! One HTTP request to a tracker's API, made by `curl` under the one
//! supervisor of child processes: curl speaks TLS, follows the user's proxy
//! settings and is installed nearly everywhere, so git-ralph carries no
//! HTTP client of its own. The address, the headers (the token among them)
//! and the body go to curl in a config on its standard input, never on its
//! command line, which any user of the machine can read.

use std::time::Duration;

use crate::notify::webhook::curl_quoted;
use crate::process::{self, ExitStatusKind, Limits, Spec};

/// The most of an answer that is kept: a page of a hundred issues with
/// long descriptions fits many times over.
const ANSWER_LIMIT: usize = 64 * 1024 * 1024;

/// A request, with the headers that carry the credentials.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: &'static str,
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// JSON, sent as `application/json`.
    pub body: Option<String>,
}

/// What the API answered.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Why no answer came.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("curl, which git-ralph talks to trackers through, is not on PATH")]
    NoCurl,
    #[error("could not run curl: {0}")]
    Spawn(#[from] process::ProcessError),
    #[error("no answer within {0}s")]
    TimedOut(u64),
    #[error("{0}")]
    Failed(String),
    #[error("the answer is not HTTP")]
    NotHttp,
}

/// Sends `request` and waits at most `timeout` for the whole answer.
pub fn send(request: &Request, timeout: Duration) -> Result<Response, HttpError> {
    if !process::is_runnable("curl") {
        return Err(HttpError::NoCurl);
    }
    let secs = timeout.as_secs().max(1);
    let spec = Spec {
        program: "curl".into(),
        args: [
            "--config",
            "-",
            "--silent",
            "--show-error",
            "--include",
            "--max-time",
            &secs.to_string(),
        ]
        .map(str::to_owned)
        .to_vec(),
        stdin: Some(config(request)),
        cwd: std::env::temp_dir(),
        ..Spec::default()
    };
    let limits = Limits::timeout(Duration::from_secs(secs * 2 + 5));
    let (exit, stdout, stderr) = process::run_split_blocking(&spec, limits, ANSWER_LIMIT)?;
    match exit {
        ExitStatusKind::Exited(0) => parse(&stdout.text()),
        ExitStatusKind::Exited(28) | ExitStatusKind::TimedOut => Err(HttpError::TimedOut(secs)),
        exit => {
            let said = stderr.text();
            let said = said
                .lines()
                .map(|line| line.trim().trim_start_matches("curl: "))
                .rfind(|line| !line.is_empty())
                .map(str::to_owned)
                .unwrap_or_else(|| format!("curl {exit}"));
            Err(HttpError::Failed(said))
        }
    }
}

/// curl's config for `request`: each value quoted, so that no byte of it
/// can be read as another option.
fn config(request: &Request) -> String {
    let mut config = format!(
        "url = {}\nrequest = {}\nproto = \"=http,https\"\nheader = \"Expect:\"\nheader = \"Accept: application/json\"\n",
        curl_quoted(&request.url),
        curl_quoted(request.method)
    );
    for (name, value) in &request.headers {
        config.push_str(&format!(
            "header = {}\n",
            curl_quoted(&format!("{name}: {value}"))
        ));
    }
    if let Some(body) = &request.body {
        config.push_str("header = \"Content-Type: application/json\"\n");
        config.push_str(&format!("data-raw = {}\n", curl_quoted(body)));
    }
    config
}

/// The status, headers and body of curl's `--include` output; an interim
/// `100 Continue` head is passed over.
fn parse(output: &str) -> Result<Response, HttpError> {
    let mut rest = output;
    loop {
        let (head, body) = rest
            .split_once("\r\n\r\n")
            .or_else(|| rest.split_once("\n\n"))
            .unwrap_or((rest, ""));
        let mut lines = head.lines();
        let status: u16 = lines
            .next()
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|code| code.parse().ok())
            .ok_or(HttpError::NotHttp)?;
        if (100..200).contains(&status) {
            rest = body;
            continue;
        }
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
            .collect();
        return Ok(Response {
            status,
            headers,
            body: body.to_owned(),
        });
    }
}

/// `text` percent-encoded as one segment of a path or a query value.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            byte => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// The scheme, host and port of `url`: what a message may show of it.
pub fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |at| at + 3);
    let end = url[after_scheme..]
        .find('/')
        .map_or(url.len(), |at| after_scheme + at);
    &url[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interim_head_is_passed_over_and_headers_are_read() {
        let answer = parse(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many\r\nRetry-After: 30\r\n\r\n{\"a\":1}",
        )
        .unwrap();
        assert_eq!(answer.status, 429);
        assert_eq!(answer.header("retry-after"), Some("30"));
        assert_eq!(answer.body, "{\"a\":1}");
    }

    #[test]
    fn the_token_goes_in_the_config_and_nowhere_else() {
        let request = Request {
            method: "GET",
            url: "https://example.com/x".into(),
            headers: vec![("PRIVATE-TOKEN".into(), "s\"ecret".into())],
            body: None,
        };
        assert!(config(&request).contains("header = \"PRIVATE-TOKEN: s\\\"ecret\"\n"));
    }

    #[test]
    fn paths_and_origins() {
        assert_eq!(encode("group/app x"), "group%2Fapp%20x");
        assert_eq!(origin("http://127.0.0.1:9/api/v4/x"), "http://127.0.0.1:9");
        assert_eq!(origin("https://gitlab.com"), "https://gitlab.com");
    }
}
