//! The `/answer` replies on a Jira issue: its comments, read from the
//! comment endpoint a page at a time, `startAt` moving on by as many as
//! each page gave until `total` (a site may give fewer than the hundred
//! asked), with the time each was made (see
//! [`replies`](super::super::replies)).

use serde::Deserialize;

use super::super::TrackerError;
use super::super::http::encode;
use super::super::replies::{Comment, answers, unix_time};
use super::{Jira, MAX_PAGES};

#[derive(Deserialize)]
struct CommentPage {
    #[serde(default)]
    comments: Vec<JiraComment>,
    #[serde(default)]
    total: Option<usize>,
}

#[derive(Deserialize)]
struct JiraComment {
    #[serde(default)]
    body: String,
    #[serde(default)]
    created: String,
}

impl Jira {
    /// The answers on issue `key` made at `since` or later, oldest first.
    pub(super) fn answers(&self, key: &str, since: u64) -> Result<Vec<String>, TrackerError> {
        let missing = format!("issue {key}");
        let mut comments = Vec::new();
        let mut start = 0;
        for _ in 0..MAX_PAGES {
            let path = format!(
                "/issue/{}/comment?startAt={start}&maxResults=100&orderBy=created",
                encode(key)
            );
            let response = self.api.call("GET", &path, None, &missing)?;
            let page: CommentPage = self.api.parse("GET /issue/:key/comment", &response.body)?;
            let given = page.comments.len();
            start += given;
            comments.extend(page.comments.into_iter().map(|comment| Comment {
                at: unix_time(&comment.created),
                body: comment.body,
            }));
            if given == 0 || page.total.is_none_or(|total| start >= total) {
                break;
            }
        }
        Ok(answers(comments, since))
    }
}
