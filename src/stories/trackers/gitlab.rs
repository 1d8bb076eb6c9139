//! GitLab issues as stories (`--source gitlab`), through GitLab's REST API
//! (v4). The open issues of `--project` (its path, `group/name`, or its
//! id), with `--label` and `--milestone` when given, are read a hundred a
//! page, following `X-Next-Page`. Each issue's links (`…/links`) give its
//! dependencies: one it `is_blocked_by` among the run's issues is done
//! first; a blocker outside the run is taken as met. GitLab's REST API
//! gives no priority and no parent of a task, so issues are worked oldest
//! first (by `iid`) among those whose blockers are done, and a task is a
//! story of its own.
//!
//! The token is GITLAB_TOKEN (sent as `PRIVATE-TOKEN`), or CI_JOB_TOKEN in a
//! CI job (`JOB-TOKEN`); the instance is GITLAB_HOST, or CI_SERVER_URL in a
//! CI job, or gitlab.com. A finished issue gets a note (`--comment`) and is
//! closed (`--close`) only when asked; a note that starts with `/answer`
//! answers the question its story waits on.

use std::collections::HashSet;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::api::{Api, address, env_first};
use super::http::encode;
use super::replies::{Comment, answers, unix_time};
use super::{Reading, Tracker, TrackerError, summary};
use crate::stories::issues::{Issue, IssuesError, Snapshot};
use crate::stories::{SourceKind, StoriesError};

const TRACKER: &str = "GitLab";
/// Issues per page: the most GitLab gives.
const PER_PAGE: usize = 100;
/// The most pages read: a hundred thousand issues.
const MAX_PAGES: usize = 1000;

pub(super) struct Gitlab {
    api: Api,
    /// As the user gave it, for messages.
    project: String,
    label: Option<String>,
    milestone: Option<String>,
}

#[derive(Deserialize)]
struct GlIssue {
    iid: u64,
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    state: Option<String>,
}

#[derive(Deserialize)]
struct GlLink {
    iid: u64,
    #[serde(default)]
    link_type: String,
}

#[derive(Deserialize)]
struct GlNote {
    #[serde(default)]
    body: String,
    #[serde(default)]
    created_at: String,
    #[serde(default)]
    system: bool,
}

impl Gitlab {
    pub fn new(reading: &Reading) -> Result<Gitlab, TrackerError> {
        let project = reading.query.project.clone().ok_or(TrackerError::Needs {
            source_name: "gitlab",
            what: "--project <group/name> (or the project's id)",
        })?;
        let host = env_first(&["GITLAB_HOST", "CI_SERVER_URL"]).map_or_else(
            || "https://gitlab.com".to_owned(),
            |(_, host)| address(&host),
        );
        let (var, header, token) = match env_first(&["GITLAB_TOKEN"]) {
            Some((var, token)) => (var, "PRIVATE-TOKEN", token),
            None => match env_first(&["CI_JOB_TOKEN"]) {
                Some((var, token)) => (var, "JOB-TOKEN", token),
                None => {
                    return Err(TrackerError::NoCredentials {
                        tracker: TRACKER,
                        vars: "GITLAB_TOKEN (or CI_JOB_TOKEN in a GitLab CI job)",
                    });
                }
            },
        };
        Ok(Gitlab {
            api: Api {
                tracker: TRACKER,
                var,
                base: format!("{host}/api/v4/projects/{}", encode(&project)),
                headers: vec![(header.to_owned(), token)],
                timeout: reading.timeout,
            },
            project,
            label: reading.label.map(str::to_owned),
            milestone: reading.query.milestone.clone(),
        })
    }

    fn missing_project(&self) -> String {
        format!("project '{}'", self.project)
    }

    /// Every open issue the query names, page after page.
    fn open_issues(&self) -> Result<Vec<GlIssue>, TrackerError> {
        let mut query = format!("state=opened&per_page={PER_PAGE}");
        if let Some(label) = &self.label {
            query.push_str(&format!("&labels={}", encode(label)));
        }
        if let Some(milestone) = &self.milestone {
            query.push_str(&format!("&milestone={}", encode(milestone)));
        }
        let mut issues: Vec<GlIssue> =
            self.pages("/issues", &query, "GET /issues", &self.missing_project())?;
        issues.retain(|issue| issue.state.as_deref().is_none_or(|state| state == "opened"));
        issues.sort_by_key(|issue| issue.iid);
        issues.dedup_by_key(|issue| issue.iid);
        Ok(issues)
    }

    /// Every item `path` lists with `query`, a hundred a page, following
    /// `X-Next-Page` (or, where a proxy dropped it, full pages).
    fn pages<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &str,
        what: &str,
        missing: &str,
    ) -> Result<Vec<T>, TrackerError> {
        let mut items: Vec<T> = Vec::new();
        let mut page = 1;
        for _ in 0..MAX_PAGES {
            let path = format!("{path}?{query}&page={page}");
            let response = self.api.call("GET", &path, None, missing)?;
            let listed: Vec<T> = self.api.parse(what, &response.body)?;
            let full = listed.len() >= PER_PAGE;
            items.extend(listed);
            match response.header("X-Next-Page").map(str::trim) {
                Some(next) if !next.is_empty() => {
                    page = next.parse().unwrap_or(page + 1);
                }
                Some(_) => break,
                None if full => page += 1,
                None => break,
            }
        }
        Ok(items)
    }

    /// The issues of `open` that issue `iid` is blocked by.
    fn blockers(&self, iid: u64, open: &HashSet<u64>) -> Result<Vec<String>, TrackerError> {
        let path = format!("/issues/{iid}/links");
        let missing = format!("issue #{iid} in project '{}'", self.project);
        let response = self.api.call("GET", &path, None, &missing)?;
        let links: Vec<GlLink> = self.api.parse("GET /issues/:iid/links", &response.body)?;
        Ok(links
            .into_iter()
            .filter(|link| link.link_type == "is_blocked_by" && open.contains(&link.iid))
            .map(|link| link.iid.to_string())
            .collect())
    }
}

impl Tracker for Gitlab {
    fn list(&self) -> Result<Snapshot, StoriesError> {
        let listed = self.open_issues().map_err(IssuesError::from)?;
        let read_from = format!("GitLab project '{}'", self.project);
        if listed.is_empty() {
            return Err(IssuesError::NoIssues {
                from: read_from,
                label: self.label.clone(),
            }
            .into());
        }
        let open: HashSet<u64> = listed.iter().map(|issue| issue.iid).collect();
        let mut issues = Vec::with_capacity(listed.len());
        for issue in listed {
            let depends_on = self.blockers(issue.iid, &open).map_err(IssuesError::from)?;
            issues.push(Issue {
                id: issue.iid.to_string(),
                summary: summary(TRACKER, &format!("#{}", issue.iid), &issue.labels),
                title: issue.title,
                text: issue.description.unwrap_or_default(),
                priority: None,
                depends_on,
                acceptance_criteria: Vec::new(),
            });
        }
        Ok(Snapshot {
            tracker: SourceKind::Gitlab,
            read_from,
            issues,
            warnings: Vec::new(),
        })
    }

    fn comment(&self, id: &str, body: &str) -> Result<(), IssuesError> {
        let body = serde_json::json!({ "body": body }).to_string();
        let missing = format!("issue #{id} in project '{}'", self.project);
        self.api.call(
            "POST",
            &format!("/issues/{}/notes", encode(id)),
            Some(body),
            &missing,
        )?;
        Ok(())
    }

    /// Read from the issue's notes, oldest first; GitLab's own notes of
    /// what changed (`system`) are no replies.
    fn answers_since(&self, id: &str, since: u64) -> Result<Vec<String>, IssuesError> {
        let query = format!("sort=asc&order_by=created_at&per_page={PER_PAGE}");
        let missing = format!("issue #{id} in project '{}'", self.project);
        let path = format!("/issues/{}/notes", encode(id));
        let notes: Vec<GlNote> = self.pages(&path, &query, "GET /issues/:iid/notes", &missing)?;
        let comments = notes
            .into_iter()
            .filter(|note| !note.system)
            .map(|note| Comment {
                at: unix_time(&note.created_at),
                body: note.body,
            });
        Ok(answers(comments, since))
    }

    fn close(&self, id: &str) -> Result<(), IssuesError> {
        let body = serde_json::json!({ "state_event": "close" }).to_string();
        let missing = format!("issue #{id} in project '{}'", self.project);
        self.api.call(
            "PUT",
            &format!("/issues/{}", encode(id)),
            Some(body),
            &missing,
        )?;
        Ok(())
    }
}
