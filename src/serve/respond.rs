//! How each request is answered: the host and the token first (a request
//! without the token learns nothing, not even whether its page exists),
//! then its route, then the page, read off the async threads. A request
//! that names nothing, or nothing there is, gets a 4xx page that says
//! what to do.

use std::sync::Arc;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};

use super::http::{self, Access, Body};
use super::routes::{Action, Asset, Refusal, Route, form_field};
use super::sse;
use super::views::{self, Missing};
use super::{Shared, actions};
use crate::ui::web;

pub(super) async fn answer(shared: &Arc<Shared>, request: Request<Incoming>) -> Response<Body> {
    let (parts, body) = request.into_parts();
    if !shared.hosts.allows(&parts.headers) {
        return http::refused(
            StatusCode::BAD_REQUEST,
            "This server answers requests made to its own address only.",
            Some("Open the URL 'git ralph serve' printed."),
        );
    }
    let token = shared.token.current();
    let access = http::access(&parts, &token, &shared.cookie);
    match access {
        Access::Denied => {
            return http::refused(
                StatusCode::UNAUTHORIZED,
                "This page needs the token of 'git ralph serve'.",
                Some(
                    "Open the URL 'git ralph serve' printed, with its ?token=, once: \
                     the browser keeps the token from then on.",
                ),
            );
        }
        Access::FromUrl { location } => {
            let cookie = http::token_cookie(&shared.cookie, &token);
            return http::see_other(&location, Some(cookie));
        }
        Access::Cookie | Access::Bearer => {}
    }
    let route = match Route::parse(&parts.method, parts.uri.path()) {
        Ok(route) => route,
        Err(Refusal::NotFound) => return not_found("There is no such page here."),
        Err(Refusal::Method) => {
            return http::refused(
                StatusCode::METHOD_NOT_ALLOWED,
                "This page is only read; an action (stopping a run, answering a question) is posted from its confirmation page.",
                None,
            );
        }
    };
    match route {
        Route::Act(run, action) => actions::take(shared, &parts, body, access, &run, action).await,
        Route::Confirm(run, Action::Answer) => {
            let story = parts.uri.query().and_then(|q| form_field(q, "story"));
            answer_page(shared, run, story).await
        }
        Route::Confirm(run, Action::Stop) => {
            let (site, run_) = (shared.site.clone(), run.clone());
            match blocking(move || actions::stoppable(&site, &run_)).await {
                Ok(Ok(_)) => page(shared, Route::Confirm(run, Action::Stop)).await,
                Ok(Err((status, message))) => http::refused(
                    status,
                    &message,
                    Some(&format!("The run's page is {}.", Route::Run(run).path())),
                ),
                Err(failed) => failed,
            }
        }
        route => page(shared, route).await,
    }
}

fn not_found(message: &str) -> Response<Body> {
    http::refused(
        StatusCode::NOT_FOUND,
        message,
        Some("The list of runs is at /."),
    )
}

/// `work` off the async threads; a failure of ours is a 500, not a panic.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response<Body>> {
    tokio::task::spawn_blocking(work).await.map_err(|_| {
        http::refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            "git-ralph failed to make this page; this is a bug.",
            None,
        )
    })
}

/// The page (or feed) of a route that only reads.
async fn page(shared: &Arc<Shared>, route: Route) -> Response<Body> {
    match route {
        Route::Runs => {
            let site = shared.site.clone();
            wrap(blocking(move || Ok(views::runs_page(&site))).await)
        }
        Route::RunsFeed => http::events(sse::runs_events(shared.feeds.clone()).await.boxed()),
        Route::Asset(Asset::Style) => http::asset("text/css; charset=utf-8", web::STYLE),
        Route::Asset(Asset::Script) => http::asset("text/javascript; charset=utf-8", web::SCRIPT),
        route => run_part(shared, route).await,
    }
}

/// The parts of a run's pages: its feeds, an attempt's page, diff and
/// transcript.
async fn run_part(shared: &Arc<Shared>, route: Route) -> Response<Body> {
    let run = match &route {
        Route::Run(run) | Route::RunFeed(run) | Route::Confirm(run, _) => run.clone(),
        Route::Attempt(at)
        | Route::AttemptFeed(at)
        | Route::AttemptDiff(at)
        | Route::Transcript(at) => at.run.clone(),
        _ => return not_found("There is no such page here."),
    };
    let feeds = shared.feeds.clone();
    let found = match blocking(move || views::find(feeds.site(), &run)).await {
        Ok(Ok(found)) => found,
        Ok(Err(Missing(message))) => return not_found(&message),
        Err(failed) => return failed,
    };
    let feed = shared.feeds.run(found);
    match route {
        Route::Run(_) => wrap(blocking(move || Ok(views::run_page(&feed))).await),
        Route::RunFeed(_) => http::events(sse::run_events(feed).await.boxed()),
        Route::AttemptFeed(at) => http::events(sse::attempt_events(feed, at).boxed()),
        Route::Confirm(run, action) => {
            let main = web::confirm_page(&run, action);
            run_form(shared, &run, &main)
        }
        Route::Attempt(at) => wrap(blocking(move || views::attempt_page(&feed, &at)).await),
        Route::AttemptDiff(at) => wrap(blocking(move || views::attempt_diff(&feed, &at)).await),
        Route::Transcript(at) => transcript(feed, at).await,
        _ => not_found("There is no such page here."),
    }
}

fn wrap(page: Result<Result<String, Missing>, Response<Body>>) -> Response<Body> {
    match page {
        Ok(Ok(page)) => http::html(StatusCode::OK, page),
        Ok(Err(Missing(message))) => not_found(&message),
        Err(failed) => failed,
    }
}

/// The page that answers the question `story` of `run` waits on.
async fn answer_page(shared: &Arc<Shared>, run: String, story: Option<String>) -> Response<Body> {
    let site = shared.site.clone();
    let (run_, story_) = (run.clone(), story.clone());
    let question = match blocking(move || actions::question(&site, &run_, story_.as_deref())).await
    {
        Ok(Ok(question)) => question,
        Ok(Err((status, message))) => return http::refused(status, &message, None),
        Err(failed) => return failed,
    };
    let main = web::answer_page(&run, story.as_deref().unwrap_or_default(), &question);
    run_form(shared, &run, &main)
}

/// A form about `run` (an action to confirm, a question to answer): the
/// run's page in the crumbs, no live feed.
fn run_form(shared: &Shared, run: &str, main: &str) -> Response<Body> {
    http::html(
        StatusCode::OK,
        web::document(&web::Document {
            title: run,
            repo: &shared.site.name,
            crumbs: &[(Route::Run(run.to_owned()).path(), run.to_owned())],
            feed: None,
            main,
        }),
    )
}

/// The whole transcript, streamed as it is read.
async fn transcript(feed: super::feed::Held, at: super::AttemptRef) -> Response<Body> {
    let feed = Arc::new(feed);
    let (checked, at_) = (feed.clone(), at.clone());
    match blocking(move || views::attempt_exists(&checked, &at_)).await {
        Ok(Ok(())) => {}
        Ok(Err(Missing(message))) => return not_found(&message),
        Err(failed) => return failed,
    }
    let (sender, body) = sse::channel();
    tokio::task::spawn_blocking(move || {
        let _ = views::transcript_text(&feed, &at, |chunk| {
            sender.blocking_send(bytes::Bytes::from(chunk)).is_ok()
        });
    });
    http::plain(body.boxed())
}
