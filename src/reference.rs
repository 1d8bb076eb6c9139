//! What the man pages and guides must name that the clap definitions do
//! not hold: the web view's routes, as a person reads them
//! (`/runs/<change>/attempts/<story>/<n>`). The generated man page of
//! `serve` lists them, and a test holds `docs/serve.md` to them, so that a
//! route added to the server without a word in the guide fails the build.
//! It only reads [`crate::serve`]'s routes; it decides nothing.

use crate::serve::{Action, Asset, AttemptRef, Route};

/// One route of the web view: its method and its path, placeholders in
/// angle brackets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebRoute {
    pub method: &'static str,
    pub path: String,
}

/// Every route the web view answers, one of each kind.
pub fn web_routes() -> Vec<WebRoute> {
    const CHANGE: &str = "CHANGE";
    let at = AttemptRef {
        run: CHANGE.to_owned(),
        story: "STORY".to_owned(),
        attempt: 7,
    };
    let mut routes = vec![
        Route::Runs,
        Route::RunsFeed,
        Route::Run(CHANGE.to_owned()),
        Route::Run("history/DIR".to_owned()),
        Route::RunFeed(CHANGE.to_owned()),
        Route::Attempt(at.clone()),
        Route::AttemptFeed(at.clone()),
        Route::AttemptDiff(at.clone()),
        Route::Transcript(at),
    ];
    for action in Action::ALL {
        routes.push(Route::Confirm(CHANGE.to_owned(), action));
        routes.push(Route::Act(CHANGE.to_owned(), action));
    }
    for asset in [Asset::Style, Asset::Script] {
        routes.push(Route::Asset(every_asset(asset)));
    }
    routes
        .into_iter()
        .map(|route| WebRoute {
            method: method(&route),
            path: route
                .path()
                .replace(CHANGE, "<change>")
                .replace("DIR", "<dir>")
                .replace("STORY/7", "<story>/<n>"),
        })
        .collect()
}

/// The method of `route`; the match names every kind of route, so that a
/// new one cannot be left out of [`web_routes`] unnoticed.
fn method(route: &Route) -> &'static str {
    match route {
        Route::Act(..) => "POST",
        Route::Runs
        | Route::RunsFeed
        | Route::Run(_)
        | Route::RunFeed(_)
        | Route::Attempt(_)
        | Route::AttemptFeed(_)
        | Route::AttemptDiff(_)
        | Route::Transcript(_)
        | Route::Confirm(..)
        | Route::Asset(_) => "GET",
    }
}

/// Every asset; the match names each, for the same reason.
fn every_asset(asset: Asset) -> Asset {
    match asset {
        Asset::Style | Asset::Script => asset,
    }
}
