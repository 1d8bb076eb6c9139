//! The `/answer` replies on a Linear issue: its comments, read a hundred a
//! page through GraphQL, following `pageInfo`, with the time each was
//! made (see [`replies`](super::super::replies)).

use serde::Deserialize;
use serde_json::json;

use super::super::TrackerError;
use super::super::replies::{Comment, answers, unix_time};
use super::{Linear, MAX_PAGES, PageInfo, TRACKER};

const COMMENTS: &str = "query Comments($id: String!, $after: String) { issue(id: $id) { comments(first: 100, after: $after) { nodes { body createdAt } pageInfo { hasNextPage endCursor } } } }";

#[derive(Deserialize)]
struct Page {
    nodes: Vec<LnComment>,
    #[serde(rename = "pageInfo")]
    page_info: PageInfo,
}

#[derive(Deserialize)]
struct LnComment {
    #[serde(default)]
    body: String,
    #[serde(default, rename = "createdAt")]
    created_at: String,
}

impl Linear {
    /// The answers on issue `id` made at `since` or later, oldest first.
    pub(super) fn answers(&self, id: &str, since: u64) -> Result<Vec<String>, TrackerError> {
        let missing = format!("issue {id}");
        let mut comments = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let variables = json!({ "id": id, "after": after });
            let data = self.graphql(COMMENTS, variables, &missing)?;
            let page: Page =
                serde_json::from_value(data["issue"]["comments"].clone()).map_err(|error| {
                    TrackerError::Malformed {
                        tracker: TRACKER,
                        what: "the comments query".to_owned(),
                        message: error.to_string(),
                    }
                })?;
            comments.extend(page.nodes.into_iter().map(|comment| Comment {
                at: unix_time(&comment.created_at),
                body: comment.body,
            }));
            match page.page_info.end_cursor {
                Some(cursor) if page.page_info.has_next_page => after = Some(cursor),
                _ => break,
            }
        }
        Ok(answers(comments, since))
    }
}
