//! Jira issues as stories (`--source jira`), through Jira's REST API (v2,
//! whose descriptions are plain text). The issues of `--jql` (or of
//! `--project`, with `--label` when given) that are not done are read a
//! hundred a page from the search endpoint, following `nextPageToken`. An
//! issue that "is blocked by" another of the run's waits for it; among the
//! ready ones, Jira's priority goes first (by its id: 1 is Highest in the
//! default scheme), then the older. An issue's subtasks are its tasks,
//! ticked when done, and no story of their own.
//!
//! The site is JIRA_BASE_URL; the token JIRA_API_TOKEN, with JIRA_EMAIL
//! for Jira Cloud (basic authentication) or alone as a personal access
//! token (Jira Data Center). A finished issue gets a comment (`--comment`)
//! and is moved through a transition to a done status (`--close`) only
//! when asked; a comment that starts with `/answer` answers the question
//! its story waits on (see [`answers`]).

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::json;

mod answers;

use super::api::{Api, address, env_first};
use super::http::encode;
use super::{Reading, Tracker, TrackerError, summary, with_sub_issues};
use crate::stories::issues::{Issue, IssuesError, Snapshot};
use crate::stories::{SourceKind, StoriesError};

const TRACKER: &str = "Jira";
const FIELDS: &str = "summary,description,priority,issuelinks,subtasks,parent,labels,status";
/// The most pages read: a hundred thousand issues.
const MAX_PAGES: usize = 1000;

pub(super) struct Jira {
    api: Api,
    jql: String,
    /// What a 400 or 404 to the search means is not there.
    missing: String,
}

#[derive(Deserialize)]
struct SearchPage {
    #[serde(default)]
    issues: Vec<JiraIssue>,
    #[serde(default, rename = "nextPageToken")]
    next_page_token: Option<String>,
    #[serde(default, rename = "isLast")]
    is_last: Option<bool>,
}

#[derive(Deserialize)]
struct JiraIssue {
    key: String,
    #[serde(default)]
    fields: Fields,
}

#[derive(Deserialize, Default)]
struct Fields {
    #[serde(default)]
    summary: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    priority: Option<Priority>,
    #[serde(default)]
    issuelinks: Vec<Link>,
    #[serde(default)]
    subtasks: Vec<Subtask>,
    #[serde(default)]
    parent: Option<KeyOnly>,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    status: Option<Status>,
}

#[derive(Deserialize)]
struct Priority {
    #[serde(default)]
    id: Option<String>,
}

#[derive(Deserialize)]
struct Link {
    #[serde(rename = "type")]
    kind: LinkType,
    #[serde(default, rename = "inwardIssue")]
    inward_issue: Option<KeyOnly>,
}

#[derive(Deserialize)]
struct LinkType {
    #[serde(default)]
    inward: String,
}

#[derive(Deserialize)]
struct KeyOnly {
    key: String,
}

#[derive(Deserialize)]
struct Subtask {
    key: String,
    #[serde(default)]
    fields: SubtaskFields,
}

#[derive(Deserialize, Default)]
struct SubtaskFields {
    #[serde(default)]
    summary: String,
    #[serde(default)]
    status: Option<Status>,
}

#[derive(Deserialize)]
struct Status {
    #[serde(default, rename = "statusCategory")]
    category: Option<Category>,
}

#[derive(Deserialize)]
struct Category {
    #[serde(default)]
    key: String,
}

fn is_done(status: Option<&Status>) -> bool {
    status
        .and_then(|status| status.category.as_ref())
        .is_some_and(|category| category.key == "done")
}

impl Jira {
    pub fn new(reading: &Reading) -> Result<Jira, TrackerError> {
        let (_, site) = env_first(&["JIRA_BASE_URL"]).ok_or(TrackerError::NoCredentials {
            tracker: TRACKER,
            vars: "JIRA_BASE_URL (the site, https://<name>.atlassian.net)",
        })?;
        let (var, token) = env_first(&["JIRA_API_TOKEN"]).ok_or(TrackerError::NoCredentials {
            tracker: TRACKER,
            vars: "JIRA_API_TOKEN (with JIRA_EMAIL on Jira Cloud)",
        })?;
        let authorization = match env_first(&["JIRA_EMAIL"]) {
            Some((_, email)) => format!("Basic {}", base64(&format!("{email}:{token}"))),
            None => format!("Bearer {token}"),
        };
        let (jql, missing) = jql_of(reading)?;
        Ok(Jira {
            api: Api {
                tracker: TRACKER,
                var,
                base: format!("{}/rest/api/2", address(&site)),
                headers: vec![("Authorization".to_owned(), authorization)],
                timeout: reading.timeout,
            },
            jql,
            missing,
        })
    }

    fn search(&self) -> Result<Vec<JiraIssue>, TrackerError> {
        let mut issues = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut path = format!(
                "/search/jql?jql={}&fields={FIELDS}&maxResults=100",
                encode(&self.jql)
            );
            if let Some(token) = &token {
                path.push_str(&format!("&nextPageToken={}", encode(token)));
            }
            let response = self.api.send("GET", &path, None)?;
            if response.status == 400 {
                return Err(TrackerError::Missing {
                    tracker: TRACKER,
                    what: self.missing.clone(),
                    var: self.api.var,
                    said: super::error::message_of(&response.body),
                });
            }
            if !response.is_success() {
                return Err(TrackerError::from_status(
                    TRACKER,
                    self.api.var,
                    "GET /search/jql",
                    &self.missing,
                    &response,
                ));
            }
            let page: SearchPage = self.api.parse("GET /search/jql", &response.body)?;
            issues.extend(page.issues);
            match page.next_page_token {
                Some(next) if page.is_last != Some(true) => token = Some(next),
                _ => break,
            }
        }
        Ok(issues)
    }
}

/// The query the run asks: the user's JQL (or one of `--project` and
/// `--label`), kept to the issues not done; and what it names, for a
/// message when it finds nothing there.
fn jql_of(reading: &Reading) -> Result<(String, String), TrackerError> {
    let (condition, order, missing) = match (&reading.query.jql, &reading.query.project) {
        (Some(jql), _) => {
            let upper = jql.to_ascii_uppercase();
            let (condition, order) = match upper.rfind("ORDER BY") {
                Some(at) => (&jql[..at], Some(jql[at..].to_owned())),
                None => (jql.as_str(), None),
            };
            (
                format!("({})", condition.trim()),
                order,
                format!("match for the query `{jql}`"),
            )
        }
        (None, Some(project)) => (
            format!("project = \"{}\"", quoted(project)),
            None,
            format!("project '{project}'"),
        ),
        (None, None) => {
            return Err(TrackerError::Needs {
                source_name: "jira",
                what: "--jql <query> or --project <KEY>",
            });
        }
    };
    let mut jql = format!("{condition} AND statusCategory != Done");
    if let Some(label) = reading.label {
        jql.push_str(&format!(" AND labels = \"{}\"", quoted(label)));
    }
    jql.push(' ');
    jql.push_str(order.as_deref().unwrap_or("ORDER BY created ASC"));
    Ok((jql, missing))
}

fn quoted(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// `PROJ-12` sorts by its project, then its number.
fn key_order(key: &str) -> (String, u64) {
    let (project, number) = key.rsplit_once('-').unwrap_or((key, ""));
    (project.to_owned(), number.parse().unwrap_or(u64::MAX))
}

impl Tracker for Jira {
    fn list(&self) -> Result<Snapshot, StoriesError> {
        let mut listed = self.search().map_err(IssuesError::from)?;
        listed.sort_by_key(|issue| key_order(&issue.key));
        listed.dedup_by(|a, b| a.key == b.key);
        let keys: HashSet<String> = listed.iter().map(|issue| issue.key.clone()).collect();
        let story_of: HashMap<String, String> = listed
            .iter()
            .map(|issue| {
                let parent = issue.fields.parent.as_ref().map(|parent| &parent.key);
                let story = parent.filter(|parent| keys.contains(*parent));
                (issue.key.clone(), story.unwrap_or(&issue.key).clone())
            })
            .collect();
        let mut issues = Vec::new();
        for issue in &listed {
            let own_story = story_of.get(&issue.key) == Some(&issue.key);
            if !own_story || is_done(issue.fields.status.as_ref()) {
                continue;
            }
            let fields = &issue.fields;
            let mut depends_on: Vec<String> = fields
                .issuelinks
                .iter()
                .filter(|link| link.kind.inward.eq_ignore_ascii_case("is blocked by"))
                .filter_map(|link| link.inward_issue.as_ref())
                .filter_map(|blocker| story_of.get(&blocker.key).cloned())
                .filter(|blocker| *blocker != issue.key)
                .collect();
            depends_on.dedup();
            let subs: Vec<(String, String, bool)> = fields
                .subtasks
                .iter()
                .map(|sub| {
                    let done = is_done(sub.fields.status.as_ref());
                    (sub.key.clone(), sub.fields.summary.clone(), done)
                })
                .collect();
            issues.push(Issue {
                id: issue.key.clone(),
                title: fields.summary.clone(),
                summary: summary(TRACKER, &issue.key, &fields.labels),
                text: with_sub_issues(fields.description.as_deref().unwrap_or_default(), &subs),
                priority: fields
                    .priority
                    .as_ref()
                    .and_then(|priority| priority.id.as_deref()?.parse().ok()),
                depends_on,
                acceptance_criteria: Vec::new(),
            });
        }
        let read_from = format!("Jira query `{}`", self.jql);
        if issues.is_empty() {
            return Err(IssuesError::NoIssues {
                from: read_from,
                label: None,
            }
            .into());
        }
        Ok(Snapshot {
            tracker: SourceKind::Jira,
            read_from,
            issues,
            warnings: Vec::new(),
        })
    }

    fn comment(&self, id: &str, body: &str) -> Result<(), IssuesError> {
        let body = json!({ "body": body }).to_string();
        let path = format!("/issue/{}/comment", encode(id));
        self.api
            .call("POST", &path, Some(body), &format!("issue {id}"))?;
        Ok(())
    }

    fn close(&self, id: &str) -> Result<(), IssuesError> {
        #[derive(Deserialize)]
        struct Transitions {
            #[serde(default)]
            transitions: Vec<Transition>,
        }
        #[derive(Deserialize)]
        struct Transition {
            id: String,
            #[serde(default)]
            to: Option<Status>,
        }
        let path = format!("/issue/{}/transitions", encode(id));
        let missing = format!("issue {id}");
        let response = self.api.call("GET", &path, None, &missing)?;
        let offered: Transitions = self
            .api
            .parse("GET /issue/:key/transitions", &response.body)?;
        let Some(done) = offered
            .transitions
            .into_iter()
            .find(|transition| is_done(transition.to.as_ref()))
        else {
            return Err(TrackerError::Missing {
                tracker: TRACKER,
                what: format!("transition of {id} to a done status"),
                var: self.api.var,
                said: String::new(),
            }
            .into());
        };
        let body = json!({ "transition": { "id": done.id } }).to_string();
        self.api.call("POST", &path, Some(body), &missing)?;
        Ok(())
    }

    fn answers_since(&self, id: &str, since: u64) -> Result<Vec<String>, IssuesError> {
        Ok(self.answers(id, since)?)
    }
}

/// Standard base64 with padding, for basic authentication.
fn base64(text: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, byte)| n | u32::from(*byte) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_as_the_rfc_gives_it() {
        assert_eq!(base64(""), "");
        assert_eq!(base64("f"), "Zg==");
        assert_eq!(base64("fo"), "Zm8=");
        assert_eq!(base64("foo"), "Zm9v");
        assert_eq!(base64("foobar"), "Zm9vYmFy");
    }
}
