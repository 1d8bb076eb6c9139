//! A tracker's web API as its modules ask it: an address, the headers that
//! carry the credentials, and each answer checked, so that a refused token,
//! a missing project, a rate limit and a network failure read the same
//! from every tracker.

use std::time::Duration;

use serde::de::DeserializeOwned;

use super::TrackerError;
use super::http::{self, Request, Response};

pub(super) struct Api {
    pub tracker: &'static str,
    /// The environment variable the token came from, for messages.
    pub var: &'static str,
    /// Without a trailing `/`.
    pub base: String,
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
}

impl Api {
    /// `method` on `path` (after the base), with `body`; an answer outside
    /// 2xx is the error it stands for, a 404 meaning `missing` is not there.
    pub fn call(
        &self,
        method: &'static str,
        path: &str,
        body: Option<String>,
        missing: &str,
    ) -> Result<Response, TrackerError> {
        let response = self.send(method, path, body)?;
        if response.is_success() {
            return Ok(response);
        }
        let what = format!("{method} {}", path.split('?').next().unwrap_or(path));
        Err(TrackerError::from_status(
            self.tracker,
            self.var,
            &what,
            missing,
            &response,
        ))
    }

    /// `method` on `path` with `body`, whatever the status of the answer.
    pub fn send(
        &self,
        method: &'static str,
        path: &str,
        body: Option<String>,
    ) -> Result<Response, TrackerError> {
        let request = Request {
            method,
            url: format!("{}{path}", self.base),
            headers: self.headers.clone(),
            body,
        };
        http::send(&request, self.timeout).map_err(|source| TrackerError::Unreachable {
            tracker: self.tracker,
            origin: http::origin(&self.base).to_owned(),
            source,
        })
    }

    /// The answer's body read as `T`.
    pub fn parse<T: DeserializeOwned>(&self, what: &str, body: &str) -> Result<T, TrackerError> {
        serde_json::from_str(body).map_err(|error| TrackerError::Malformed {
            tracker: self.tracker,
            what: what.to_owned(),
            message: error.to_string(),
        })
    }
}

/// The first of `vars` that is set and not empty, with its name.
pub(super) fn env_first(vars: &[&'static str]) -> Option<(&'static str, String)> {
    vars.iter().find_map(|var| {
        std::env::var(var)
            .ok()
            .filter(|value| !value.trim().is_empty())
            .map(|value| (*var, value.trim().to_owned()))
    })
}

/// `host` as an address: `https://` when it names no scheme, no trailing
/// `/`.
pub(super) fn address(host: &str) -> String {
    let host = host.trim().trim_end_matches('/');
    if host.contains("://") {
        host.to_owned()
    } else {
        format!("https://{host}")
    }
}
