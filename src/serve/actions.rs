//! What a page may do to a run, each an action the command line already
//! has: stop it, the way `q` on the loop screen, `s` in `watch` and `abort`
//! from another terminal reach the loop (SIGTERM to the process holding the
//! lock, which stops the agent and keeps what was done); answer the
//! question a story waits on, recorded by the very function `git ralph
//! answer` calls, refused as it refuses. An action is posted from its
//! confirmation page with the token, must not come from another site's page
//! (see [`from_elsewhere`]), must say which action it confirms, and its form
//! must arrive whole within the time and size a request's head is given;
//! anything else is refused before anything is done.

use std::sync::Arc;

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header;
use hyper::{Response, StatusCode};

use super::http::{self, Access, Body, Sender};
use super::routes::{Action, Route, form_field};
use super::views;
use super::{Shared, Site};
use crate::state::answers::{self, Refused};
use crate::state::{ask_to_stop, lock_holder};

/// The largest form an action takes.
const MAX_FORM_BYTES: usize = 4 << 10;

pub(super) async fn take(
    shared: &Arc<Shared>,
    parts: &hyper::http::request::Parts,
    body: Incoming,
    access: Access,
    run: &str,
    action: Action,
) -> Response<Body> {
    if let Some(refusal) = from_elsewhere(&access, http::sender(&parts.headers)) {
        return refusal;
    }
    let form = match read_form(parts, body).await {
        Ok(form) => form,
        Err(refusal) => return refusal,
    };
    let confirmed = form
        .split('&')
        .any(|pair| pair == format!("confirm={}", action.segment()));
    if !confirmed {
        return http::refused(
            StatusCode::BAD_REQUEST,
            "The action was not confirmed.",
            Some("Use the button on its confirmation page."),
        );
    }
    let site = shared.site.clone();
    let run_owned = run.to_owned();
    let done = tokio::task::spawn_blocking(move || match action {
        Action::Stop => stop(&site, &run_owned),
        Action::Answer => answer(&site, &run_owned, &form),
    })
    .await;
    match done {
        Ok(Ok(())) => http::see_other(&Route::Run(run.to_owned()).path(), None),
        Ok(Err((status, message))) => http::refused(status, &message, None),
        Err(_) => http::refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            "git-ralph failed to take the action; this is a bug.",
            None,
        ),
    }
}

/// The one rule for programs and pages alike: an action that says it
/// comes from another site's page is refused, whatever token it carries;
/// one sent with the cookie, which a browser adds by itself, must say it
/// comes from this server's own page. A program with the bearer token
/// that says nothing is taken: no page can make a browser send that header.
fn from_elsewhere(access: &Access, sender: Sender) -> Option<Response<Body>> {
    let message = match (sender, access) {
        (Sender::OtherSite, _) => "An action must not be sent from another site's page.",
        (Sender::Unsaid, Access::Cookie) => {
            "An action sent with the browser's cookie must say it comes from this server's own page."
        }
        _ => return None,
    };
    Some(http::refused(
        StatusCode::FORBIDDEN,
        message,
        Some(
            "Use the button on the run's page, or send the token as 'Authorization: Bearer' from a program.",
        ),
    ))
}

/// The posted form, within [`MAX_FORM_BYTES`].
async fn read_form(
    parts: &hyper::http::request::Parts,
    body: Incoming,
) -> Result<String, Response<Body>> {
    let too_large = || {
        http::closing(http::refused(
            StatusCode::PAYLOAD_TOO_LARGE,
            "The form is larger than any action takes.",
            None,
        ))
    };
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|len| len > MAX_FORM_BYTES as u64) {
        return Err(too_large());
    }
    // Bounded in time as the head is: a body announced and never sent (or
    // sent a byte at a time) is not waited for longer.
    let collected = tokio::time::timeout(
        super::BODY_TIMEOUT,
        Limited::new(body, MAX_FORM_BYTES).collect(),
    )
    .await;
    let bytes = match collected {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(_)) => return Err(too_large()),
        Err(_) => {
            return Err(http::closing(http::refused(
                StatusCode::REQUEST_TIMEOUT,
                "The form did not arrive in time.",
                None,
            )));
        }
    };
    String::from_utf8(bytes.to_vec())
        .map_err(|_| http::refused(StatusCode::BAD_REQUEST, "The form is not text.", None))
}

/// Ask the loop running `run` to stop.
fn stop(site: &Site, run: &str) -> Result<(), Refusal> {
    let (pid, change) = stoppable(site, run)?;
    if !ask_to_stop(pid) {
        return Err((
            StatusCode::CONFLICT,
            format!("The loop of '{change}' (pid {pid}) could not be asked to stop."),
        ));
    }
    Ok(())
}

/// The loop running `run` (its pid and change), or why there is nothing
/// to stop: what the Stop page says before it offers the button.
pub(super) fn stoppable(site: &Site, run: &str) -> Result<(u32, String), Refusal> {
    let found = views::find(site, run).map_err(|missing| (StatusCode::NOT_FOUND, missing.0))?;
    if found.history {
        return Err((
            StatusCode::CONFLICT,
            "This run is in the history: no loop runs it.".to_owned(),
        ));
    }
    let state = found
        .load()
        .map_err(|err| (StatusCode::NOT_FOUND, err.to_string()))?;
    let holder = lock_holder(&site.lock_path()).filter(|(_, change)| change == state.change());
    match holder {
        Some((pid, change)) => Ok((pid, change)),
        None if state.status().is_over() => Err((
            StatusCode::CONFLICT,
            format!(
                "The run '{}' has ended ({}): there is nothing to stop.",
                state.change(),
                state.status()
            ),
        )),
        None => Err((
            StatusCode::CONFLICT,
            format!(
                "No loop is running '{}' (it is {}): there is nothing to stop.",
                state.change(),
                state.status()
            ),
        )),
    }
}

/// Why an action or its page was refused: the status, and what to say.
type Refusal = (StatusCode, String);

/// Record the answer the form gives, as `git ralph answer` does.
fn answer(site: &Site, run: &str, form: &str) -> Result<(), Refusal> {
    let Some(story) = form_field(form, "story") else {
        return Err((
            StatusCode::BAD_REQUEST,
            "The form names no story to answer.".to_owned(),
        ));
    };
    let text = form_field(form, "text").unwrap_or_default();
    let found = answerable(site, run)?;
    answers::give(&found.dir, &story, &text)
        .map(drop)
        .map_err(refused)
}

/// The question story `story` of `run` waits on, for its answer page.
pub(super) fn question(site: &Site, run: &str, story: Option<&str>) -> Result<String, Refusal> {
    let Some(story) = story else {
        return Err((
            StatusCode::BAD_REQUEST,
            "The answer page names no story: add ?story=<id>.".to_owned(),
        ));
    };
    let found = answerable(site, run)?;
    let state = found
        .load()
        .map_err(|err| (StatusCode::NOT_FOUND, err.to_string()))?;
    if state.status().is_over() {
        return Err(refused(Refused::Over {
            change: state.change().clone(),
            status: state.status().to_string(),
        }));
    }
    let given = answers::read(&found.dir.answers_path()).map_err(|err| refused(err.into()))?;
    let record = state
        .stories()
        .iter()
        .find(|s| s.id == story)
        .ok_or_else(|| {
            refused(Refused::UnknownStory {
                change: state.change().clone(),
                story: story.to_owned(),
            })
        })?;
    answers::waiting(record, &given)
        .filter(|_| !record.done)
        .and_then(|asked| asked.asked.clone())
        .ok_or_else(|| {
            refused(Refused::NotWaiting {
                change: state.change().clone(),
                story: story.to_owned(),
            })
        })
}

/// A live run `run` names: a run in the history asks nothing any more.
fn answerable(site: &Site, run: &str) -> Result<crate::audit::FoundRun, Refusal> {
    let found = views::find(site, run).map_err(|missing| (StatusCode::NOT_FOUND, missing.0))?;
    if found.history {
        return Err((
            StatusCode::CONFLICT,
            "This run is in the history: its questions can no longer be answered.".to_owned(),
        ));
    }
    Ok(found)
}

/// A refused answer as the page says it: what is not there is a 404, what
/// cannot be answered now a 409, an empty answer a 400.
fn refused(refused: Refused) -> Refusal {
    let status = match &refused {
        Refused::Empty => StatusCode::BAD_REQUEST,
        Refused::UnknownStory { .. } => StatusCode::NOT_FOUND,
        Refused::Over { .. } | Refused::NotWaiting { .. } | Refused::Answers(_) => {
            StatusCode::CONFLICT
        }
        Refused::State(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (status, refused.to_string())
}
