//! What can go wrong asking a tracker's API, each case worded for the
//! user and with what to do about it. No message holds a credential: an
//! address is shown as its origin, a token by the variable it came from.

use super::http::{HttpError, Response};

/// Everything that can go wrong talking to GitLab, Linear or Jira.
#[derive(Debug, thiserror::Error)]
pub enum TrackerError {
    #[error("--source {source_name} needs {what}")]
    Needs {
        source_name: &'static str,
        what: &'static str,
    },

    #[error("no credentials for {tracker}: {vars} is not set")]
    NoCredentials {
        tracker: &'static str,
        vars: &'static str,
    },

    #[error("{tracker} refused the token in {var} ({status})")]
    BadToken {
        tracker: &'static str,
        var: &'static str,
        status: String,
    },

    #[error(
        "{tracker} has no {what}, or the token in {var} cannot see it{}",
        said_after(said)
    )]
    Missing {
        tracker: &'static str,
        what: String,
        var: &'static str,
        said: String,
    },

    #[error("{tracker} is limiting the rate of requests: try again {}", retry_in(*retry_after))]
    RateLimited {
        tracker: &'static str,
        retry_after: Option<u64>,
    },

    #[error("could not reach {tracker} at {origin}: {source}")]
    Unreachable {
        tracker: &'static str,
        origin: String,
        #[source]
        source: HttpError,
    },

    #[error("{tracker} answered {status} to {what}{}", said_after(said))]
    Refused {
        tracker: &'static str,
        what: String,
        status: u16,
        said: String,
    },

    #[error("{tracker}'s answer to {what} is not what its API documents: {message}")]
    Malformed {
        tracker: &'static str,
        what: String,
        message: String,
    },
}

fn said_after(said: &str) -> String {
    match said.trim() {
        "" => String::new(),
        said => format!(": {said}"),
    }
}

fn retry_in(secs: Option<u64>) -> String {
    match secs {
        Some(secs) => format!("in {secs}s"),
        None => "later".to_owned(),
    }
}

impl TrackerError {
    /// What the user can do about the error.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            TrackerError::Needs { source_name, .. } => {
                format!("see 'git ralph start --help' and the guide's section on --source {source_name}")
            }
            TrackerError::NoCredentials { vars, .. } => {
                format!("export {vars} in the shell that runs git-ralph")
            }
            TrackerError::BadToken { var, .. } => {
                format!("check that {var} holds a valid token that has not expired, with read access (and write access for --comment and --close)")
            }
            TrackerError::Missing { .. } => {
                "check the name given, and that the token's user is a member".to_owned()
            }
            TrackerError::RateLimited { .. } => {
                "wait, then start again; nothing was written".to_owned()
            }
            TrackerError::Unreachable { .. } => {
                "check the address and the network (a proxy is taken from the usual variables), then start again".to_owned()
            }
            TrackerError::Refused { .. } | TrackerError::Malformed { .. } => return None,
        })
    }

    /// The error an unsuccessful `response` to `what` stands for, `missing`
    /// naming what a 404 means.
    pub(super) fn from_status(
        tracker: &'static str,
        var: &'static str,
        what: &str,
        missing: &str,
        response: &Response,
    ) -> TrackerError {
        let said = message_of(&response.body);
        match response.status {
            401 => TrackerError::BadToken {
                tracker,
                var,
                status: "401 Unauthorized".to_owned(),
            },
            403 if said.to_ascii_lowercase().contains("token") => TrackerError::BadToken {
                tracker,
                var,
                status: "403 Forbidden".to_owned(),
            },
            404 => TrackerError::Missing {
                tracker,
                what: missing.to_owned(),
                var,
                said: String::new(),
            },
            429 => TrackerError::RateLimited {
                tracker,
                retry_after: response
                    .header("Retry-After")
                    .and_then(|secs| secs.trim().parse().ok()),
            },
            status => TrackerError::Refused {
                tracker,
                what: what.to_owned(),
                status,
                said,
            },
        }
    }
}

/// The message an API's error body carries, in one line and short: GitLab's
/// `message`, Jira's `errorMessages`, GraphQL's `errors[].message`.
pub(super) fn message_of(body: &str) -> String {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
        return String::new();
    };
    let mut said: Vec<String> = Vec::new();
    for key in ["message", "error", "error_description"] {
        if let Some(text) = value.get(key).and_then(|v| v.as_str()) {
            said.push(text.to_owned());
        }
    }
    for key in ["errorMessages", "errors"] {
        if let Some(items) = value.get(key).and_then(|v| v.as_array()) {
            said.extend(items.iter().filter_map(|item| {
                item.as_str()
                    .or_else(|| item.get("message").and_then(|m| m.as_str()))
                    .map(str::to_owned)
            }));
        }
    }
    let text = said
        .join("; ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    crate::stories::truncate(&text, 300)
}
