//! Linear issues as stories (`--source linear`), through Linear's GraphQL
//! API. The issues that are neither completed nor canceled, of `--team`
//! (its key), `--project` (its name), `--cycle` (its number) and `--label`
//! when given, are read a hundred a page, following `pageInfo`. An issue
//! another one "blocks" (Linear's "blocked by") waits for it; among the
//! ready ones, Linear's priority goes first (1 urgent … 4 low, none last),
//! then the older. An issue's sub-issues are its tasks, ticked when done,
//! and no story of their own.
//!
//! The key is LINEAR_API_KEY (a personal API key, sent as `Authorization`);
//! LINEAR_API_URL points at another endpoint. A finished issue gets a
//! comment (`--comment`) and is moved to its team's first completed state
//! (`--close`) only when asked; a comment that starts with `/answer`
//! answers the question its story waits on (see [`answers`]).

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::{Value, json};

mod answers;

use super::api::{Api, env_first};
use super::error::message_of;
use super::http::Response;
use super::{Reading, Tracker, TrackerError, summary, with_sub_issues};
use crate::stories::issues::{Issue, IssuesError, Snapshot};
use crate::stories::{SourceKind, StoriesError};

const TRACKER: &str = "Linear";
const DEFAULT_URL: &str = "https://api.linear.app/graphql";
/// The most pages read: a hundred thousand issues.
const MAX_PAGES: usize = 1000;

const ISSUES: &str = "query Issues($filter: IssueFilter, $after: String) { issues(filter: $filter, first: 100, after: $after) { nodes { identifier title description priority state { type } labels { nodes { name } } parent { identifier } children { nodes { identifier title state { type } } } inverseRelations { nodes { type issue { identifier } } } } pageInfo { hasNextPage endCursor } } }";
const TEAMS: &str =
    "query Teams($key: String!) { teams(filter: { key: { eq: $key } }) { nodes { id } } }";
const COMMENT: &str =
    "mutation Comment($input: CommentCreateInput!) { commentCreate(input: $input) { success } }";
const STATES: &str = "query States($id: String!) { issue(id: $id) { id team { states { nodes { id type position } } } } }";
const MOVE: &str = "mutation Move($id: String!, $input: IssueUpdateInput!) { issueUpdate(id: $id, input: $input) { success } }";

pub(super) struct Linear {
    api: Api,
    team: Option<String>,
    filter: Value,
    /// The query in words, for messages.
    shown: String,
}

#[derive(Deserialize)]
struct Page {
    nodes: Vec<LnIssue>,
    #[serde(rename = "pageInfo")]
    page_info: PageInfo,
}

#[derive(Deserialize)]
struct PageInfo {
    #[serde(rename = "hasNextPage")]
    has_next_page: bool,
    #[serde(rename = "endCursor")]
    end_cursor: Option<String>,
}

#[derive(Deserialize)]
struct LnIssue {
    identifier: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    priority: Option<f64>,
    #[serde(default)]
    labels: Nodes<Named>,
    #[serde(default)]
    parent: Option<Ref>,
    #[serde(default)]
    children: Nodes<Child>,
    #[serde(default, rename = "inverseRelations")]
    inverse_relations: Nodes<Relation>,
}

#[derive(Deserialize)]
struct Nodes<T> {
    nodes: Vec<T>,
}

impl<T> Default for Nodes<T> {
    fn default() -> Self {
        Nodes { nodes: Vec::new() }
    }
}

#[derive(Deserialize)]
struct Named {
    name: String,
}

#[derive(Deserialize)]
struct Ref {
    identifier: String,
}

#[derive(Deserialize)]
struct Child {
    identifier: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    state: Option<State>,
}

#[derive(Deserialize)]
struct State {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct Relation {
    #[serde(rename = "type")]
    kind: String,
    issue: Ref,
}

impl Linear {
    pub fn new(reading: &Reading) -> Result<Linear, TrackerError> {
        let (var, key) = env_first(&["LINEAR_API_KEY"]).ok_or(TrackerError::NoCredentials {
            tracker: TRACKER,
            vars: "LINEAR_API_KEY",
        })?;
        let url = env_first(&["LINEAR_API_URL"]).map_or(DEFAULT_URL.to_owned(), |(_, url)| url);
        let query = reading.query;
        let mut filter = json!({ "state": { "type": { "nin": ["completed", "canceled"] } } });
        let mut shown = Vec::new();
        if let Some(team) = &query.team {
            filter["team"] = json!({ "key": { "eq": team } });
            shown.push(format!("team {team}"));
        }
        if let Some(project) = &query.project {
            filter["project"] = json!({ "name": { "eq": project } });
            shown.push(format!("project '{project}'"));
        }
        if let Some(cycle) = &query.cycle {
            let number: f64 = cycle.trim().parse().map_err(|_| TrackerError::Needs {
                source_name: "linear",
                what: "a cycle's number with --cycle, such as 12",
            })?;
            filter["cycle"] = json!({ "number": { "eq": number } });
            shown.push(format!("cycle {cycle}"));
        }
        if let Some(label) = reading.label {
            filter["labels"] = json!({ "some": { "name": { "eq": label } } });
            shown.push(format!("label '{label}'"));
        }
        Ok(Linear {
            api: Api {
                tracker: TRACKER,
                var,
                base: url,
                headers: vec![("Authorization".to_owned(), key)],
                timeout: reading.timeout,
            },
            team: query.team.clone(),
            filter,
            shown: if shown.is_empty() {
                "Linear".to_owned()
            } else {
                format!("Linear {}", shown.join(", "))
            },
        })
    }

    /// The `data` of a GraphQL request; its `errors` are the error they
    /// stand for, `missing` naming what a missing entity is.
    fn graphql(&self, query: &str, variables: Value, missing: &str) -> Result<Value, TrackerError> {
        let body = json!({ "query": query, "variables": variables }).to_string();
        let response = self.api.send("POST", "", Some(body))?;
        let answer: Value = serde_json::from_str(&response.body).unwrap_or(Value::Null);
        if let Some(errors) = answer.get("errors").and_then(Value::as_array) {
            return Err(self.graphql_error(errors, &response, missing));
        }
        if !response.is_success() {
            return Err(TrackerError::from_status(
                TRACKER,
                self.api.var,
                "POST",
                missing,
                &response,
            ));
        }
        answer
            .get("data")
            .cloned()
            .filter(|data| !data.is_null())
            .ok_or_else(|| TrackerError::Malformed {
                tracker: TRACKER,
                what: "a GraphQL query".to_owned(),
                message: "no data".to_owned(),
            })
    }

    fn graphql_error(&self, errors: &[Value], response: &Response, missing: &str) -> TrackerError {
        let code = |error: &Value| {
            let extensions = &error["extensions"];
            extensions["code"]
                .as_str()
                .or_else(|| extensions["type"].as_str())
                .unwrap_or_default()
                .to_ascii_uppercase()
        };
        let codes: Vec<String> = errors.iter().map(code).collect();
        if codes.iter().any(|code| code.contains("AUTHENTICATION")) || response.status == 401 {
            return TrackerError::BadToken {
                tracker: TRACKER,
                var: self.api.var,
                status: message_of(&response.body),
            };
        }
        if codes.iter().any(|code| code.contains("RATELIMITED")) || response.status == 429 {
            return TrackerError::RateLimited {
                tracker: TRACKER,
                retry_after: response
                    .header("Retry-After")
                    .and_then(|secs| secs.trim().parse().ok()),
            };
        }
        if codes
            .iter()
            .any(|code| code.contains("NOT_FOUND") || code.contains("ENTITY"))
        {
            return TrackerError::Missing {
                tracker: TRACKER,
                what: missing.to_owned(),
                var: self.api.var,
                said: message_of(&response.body),
            };
        }
        TrackerError::Refused {
            tracker: TRACKER,
            what: "a GraphQL query".to_owned(),
            status: response.status,
            said: message_of(&response.body),
        }
    }

    /// Refuses a team that is not there, rather than finding no issues.
    fn check_team(&self) -> Result<(), TrackerError> {
        let Some(team) = &self.team else {
            return Ok(());
        };
        let missing = format!("team with the key '{team}'");
        let data = self.graphql(TEAMS, json!({ "key": team }), &missing)?;
        match data["teams"]["nodes"].as_array() {
            Some(nodes) if !nodes.is_empty() => Ok(()),
            _ => Err(TrackerError::Missing {
                tracker: TRACKER,
                what: missing,
                var: self.api.var,
                said: String::new(),
            }),
        }
    }

    fn all_issues(&self) -> Result<Vec<LnIssue>, TrackerError> {
        let mut issues = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let variables = json!({ "filter": self.filter, "after": after });
            let data = self.graphql(ISSUES, variables, &self.shown)?;
            let page: Page = serde_json::from_value(data["issues"].clone()).map_err(|error| {
                TrackerError::Malformed {
                    tracker: TRACKER,
                    what: "the issues query".to_owned(),
                    message: error.to_string(),
                }
            })?;
            issues.extend(page.nodes);
            match page.page_info.end_cursor {
                Some(cursor) if page.page_info.has_next_page => after = Some(cursor),
                _ => break,
            }
        }
        Ok(issues)
    }
}

/// `ENG-12` sorts by its team, then its number.
fn identifier_key(identifier: &str) -> (String, u64) {
    let (team, number) = identifier.rsplit_once('-').unwrap_or((identifier, ""));
    (team.to_owned(), number.parse().unwrap_or(u64::MAX))
}

impl Tracker for Linear {
    fn list(&self) -> Result<Snapshot, StoriesError> {
        self.check_team().map_err(IssuesError::from)?;
        let mut listed = self.all_issues().map_err(IssuesError::from)?;
        listed.sort_by_key(|issue| identifier_key(&issue.identifier));
        listed.dedup_by(|a, b| a.identifier == b.identifier);
        let ids: HashSet<String> = listed
            .iter()
            .map(|issue| issue.identifier.clone())
            .collect();
        // A listed sub-issue of a listed issue is its parent's task.
        let story_of: HashMap<String, String> = listed
            .iter()
            .map(|issue| {
                let parent = issue.parent.as_ref().map(|parent| &parent.identifier);
                let story = parent.filter(|parent| ids.contains(*parent));
                (
                    issue.identifier.clone(),
                    story.unwrap_or(&issue.identifier).clone(),
                )
            })
            .collect();
        let mut issues = Vec::new();
        for issue in &listed {
            if story_of.get(&issue.identifier) != Some(&issue.identifier) {
                continue;
            }
            let mut depends_on: Vec<String> = issue
                .inverse_relations
                .nodes
                .iter()
                .filter(|relation| relation.kind == "blocks")
                .filter_map(|relation| story_of.get(&relation.issue.identifier).cloned())
                .filter(|blocker| *blocker != issue.identifier)
                .collect();
            depends_on.dedup();
            let subs: Vec<(String, String, bool)> = issue
                .children
                .nodes
                .iter()
                .map(|child| {
                    let done = child
                        .state
                        .as_ref()
                        .is_some_and(|state| state.kind == "completed" || state.kind == "canceled");
                    (child.identifier.clone(), child.title.clone(), done)
                })
                .collect();
            let labels: Vec<String> = issue.labels.nodes.iter().map(|l| l.name.clone()).collect();
            issues.push(Issue {
                id: issue.identifier.clone(),
                title: issue.title.clone(),
                summary: summary(TRACKER, &issue.identifier, &labels),
                text: with_sub_issues(issue.description.as_deref().unwrap_or_default(), &subs),
                priority: issue.priority.map(|p| p as i64).filter(|p| *p > 0),
                depends_on,
                acceptance_criteria: Vec::new(),
            });
        }
        if issues.is_empty() {
            return Err(IssuesError::NoIssues {
                from: self.shown.clone(),
                label: None,
            }
            .into());
        }
        Ok(Snapshot {
            tracker: SourceKind::Linear,
            read_from: self.shown.clone(),
            issues,
            warnings: Vec::new(),
        })
    }

    fn comment(&self, id: &str, body: &str) -> Result<(), IssuesError> {
        let input = json!({ "input": { "issueId": id, "body": body } });
        self.graphql(COMMENT, input, &format!("issue {id}"))?;
        Ok(())
    }

    fn close(&self, id: &str) -> Result<(), IssuesError> {
        let missing = format!("issue {id}");
        let data = self.graphql(STATES, json!({ "id": id }), &missing)?;
        let mut done: Vec<(f64, String)> = data["issue"]["team"]["states"]["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|state| state["type"] == "completed")
            .filter_map(|state| {
                let position = state["position"].as_f64().unwrap_or(0.0);
                Some((position, state["id"].as_str()?.to_owned()))
            })
            .collect();
        done.sort_by(|a, b| a.0.total_cmp(&b.0));
        let Some((_, state)) = done.into_iter().next() else {
            return Err(TrackerError::Missing {
                tracker: TRACKER,
                what: format!("completed state for the team of {id}"),
                var: self.api.var,
                said: String::new(),
            }
            .into());
        };
        let input = json!({ "id": id, "input": { "stateId": state } });
        self.graphql(MOVE, input, &missing)?;
        Ok(())
    }

    fn answers_since(&self, id: &str, since: u64) -> Result<Vec<String>, IssuesError> {
        Ok(self.answers(id, since)?)
    }
}
