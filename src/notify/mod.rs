//! Notifications for a user who is elsewhere: when a run ends, done or
//! stopped for a person (a set-up error, a usage limit past the wait, a
//! story out of retries), or waits out a usage limit, a desktop notification where the platform has
//! one (`desktop`) and a POST to the user's webhook (`webhook`).
//!
//! Neither may hold a run up nor end it: each delivery is bounded by
//! [`DELIVERY_TIMEOUT`], runs beside the loop, and a failure comes back as
//! an [`Undelivered`] for the loop to report. A desktop without a notifier
//! is not a failure. The bell on the loop screen is the ui's; this module
//! knows neither clap nor the terminal.

mod desktop;
pub(crate) mod webhook;

use std::time::Duration;

use serde::Serialize;

use crate::state::{StopReason, Totals};

pub use webhook::{NotifyError, Payload, Webhook};

/// The most one delivery may take, from connecting to the answer.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// `[notify]` in ralph.toml.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NotifySettings {
    /// Where a JSON POST goes when a run ends: `http://` or `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// The body's shape: `json` (the default) or `slack`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Payload>,
}

impl NotifySettings {
    pub fn is_empty(&self) -> bool {
        self.webhook.is_none() && self.payload.is_none()
    }

    /// Later settings over earlier ones, key by key.
    pub fn then(self, later: NotifySettings) -> NotifySettings {
        NotifySettings {
            webhook: later.webhook.or(self.webhook),
            payload: later.payload.or(self.payload),
        }
    }

    /// The webhook these settings name, checked.
    pub fn webhook(&self) -> Result<Option<Webhook>, NotifyError> {
        self.webhook
            .as_deref()
            .map(|url| Webhook::parse(url, self.payload.unwrap_or_default()))
            .transpose()
    }
}

/// What a notification is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NewsKind {
    /// The run ended, done or stopped for a person.
    RunEnded,
    /// The run waits for an agent's usage limit to reset.
    Paused,
    /// A story waits for a person to answer its question; the message is
    /// the question.
    Question,
}

/// What a notification says: a run that ended and why, or one that waits
/// out a usage limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunNews {
    pub event: NewsKind,
    pub change: String,
    pub branch: String,
    /// How the run ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<StopReason>,
    /// Until when it waits (Unix seconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until_unix: Option<u64>,
    /// Whether a person must act: every ending but a completed run.
    pub needs_you: bool,
    pub message: String,
    pub stories_total: usize,
    pub stories_done: usize,
    pub totals: Totals,
}

impl RunNews {
    /// A one-line title: `git ralph: greet completed`.
    pub fn title(&self) -> String {
        match (self.event, self.reason) {
            (NewsKind::Paused, _) => {
                format!("git ralph: {} waits for a usage limit", self.change)
            }
            (NewsKind::RunEnded, Some(reason)) if self.needs_you => {
                format!("git ralph: {} needs you ({reason})", self.change)
            }
            (NewsKind::RunEnded, Some(reason)) => format!("git ralph: {} {reason}", self.change),
            (NewsKind::RunEnded, None) => format!("git ralph: {} ended", self.change),
            (NewsKind::Question, _) => {
                format!("git ralph: {} has a question for you", self.change)
            }
        }
    }

    /// The body: what happened, and how far the run got.
    pub fn text(&self) -> String {
        format!(
            "{}; {} of {} stories done, {} attempts",
            self.message, self.stories_done, self.stories_total, self.totals.attempts
        )
    }
}

/// How a run notifies its user.
#[derive(Debug, Clone, Default)]
pub struct Notifier {
    /// `--notify`: the desktop, where the platform has a notifier.
    pub desktop: bool,
    pub webhook: Option<Webhook>,
}

/// A notification that did not reach its user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undelivered {
    /// `the desktop notification`, `the webhook http://…`.
    pub channel: String,
    pub why: String,
}

impl Notifier {
    pub fn is_empty(&self) -> bool {
        !self.desktop && self.webhook.is_none()
    }

    /// Deliver `news` everywhere at once; what failed comes back.
    pub async fn send(&self, news: &RunNews) -> Vec<Undelivered> {
        let desktop = async {
            match self.desktop {
                true => desktop::show(&news.title(), &news.text()).await,
                false => Ok(()),
            }
        };
        let webhook = async {
            match &self.webhook {
                Some(webhook) => webhook.post(news).await.map_err(|why| Undelivered {
                    channel: format!("the webhook {}", webhook.url()),
                    why: why.to_string(),
                }),
                None => Ok(()),
            }
        };
        let (desktop, webhook) = tokio::join!(desktop, webhook);
        [desktop, webhook]
            .into_iter()
            .filter_map(Result::err)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_says_whether_a_person_is_needed() {
        let mut ended = RunNews {
            event: NewsKind::RunEnded,
            change: "greet".into(),
            branch: "ralph/greet".into(),
            reason: Some(StopReason::Completed),
            until_unix: None,
            needs_you: false,
            message: "every story is done".into(),
            stories_total: 2,
            stories_done: 2,
            totals: Totals::default(),
        };
        assert_eq!(ended.title(), "git ralph: greet completed");
        ended.reason = Some(StopReason::Setup);
        ended.needs_you = true;
        assert_eq!(ended.title(), "git ralph: greet needs you (setup)");
        ended.event = NewsKind::Paused;
        assert_eq!(ended.title(), "git ralph: greet waits for a usage limit");
        assert!(ended.text().starts_with("every story is done; 2 of 2"));
    }
}
