//! The one thing a page may do to a run, each an action the command line
//! already has: stop it, the way `q` on the loop screen, `s` in `watch`
//! and `abort` from another terminal reach the loop (SIGTERM to the process
//! holding the lock, which stops the agent and keeps what was done). An
//! action is posted from its confirmation page, with the token, from this
//! server's own origin, and must say which action it confirms; anything
//! else is refused before anything is done.
//!
//! Answering a parked question belongs here too, once the command line
//! has it: `Action::Answer`, posted to `/runs/<run>/answer` with the story
//! and the text, recording the answer as `git ralph answer` does.

use std::sync::Arc;

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header;
use hyper::{Response, StatusCode};

use super::http::{self, Access, Body};
use super::routes::{Action, Route};
use super::views;
use super::{Shared, Site};
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
    if access == Access::Cookie && !http::same_origin(&parts.headers) {
        return http::refused(
            StatusCode::FORBIDDEN,
            "An action must be sent from this server's own page.",
            Some("Use the button on the run's page."),
        );
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

/// The posted form, within [`MAX_FORM_BYTES`].
async fn read_form(
    parts: &hyper::http::request::Parts,
    body: Incoming,
) -> Result<String, Response<Body>> {
    let too_large = || {
        http::refused(
            StatusCode::PAYLOAD_TOO_LARGE,
            "The form is larger than any action takes.",
            None,
        )
    };
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|len| len > MAX_FORM_BYTES as u64) {
        return Err(too_large());
    }
    let bytes = match Limited::new(body, MAX_FORM_BYTES).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return Err(too_large()),
    };
    String::from_utf8(bytes.to_vec())
        .map_err(|_| http::refused(StatusCode::BAD_REQUEST, "The form is not text.", None))
}

/// Ask the loop running `run` to stop.
fn stop(site: &Site, run: &str) -> Result<(), (StatusCode, String)> {
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
    let holder = lock_holder(&site.lock_path()).filter(|(_, change)| *change == state.change);
    let Some((pid, _)) = holder else {
        return Err((
            StatusCode::CONFLICT,
            format!(
                "No loop is running '{}': there is nothing to stop.",
                state.change
            ),
        ));
    };
    if !ask_to_stop(pid) {
        return Err((
            StatusCode::CONFLICT,
            format!(
                "The loop of '{}' (pid {pid}) could not be asked to stop.",
                state.change
            ),
        ));
    }
    Ok(())
}
