//! The server's addresses, both ways: a request's method and path become a
//! [`Route`], and a [`Route`] gives back the path a page links to. Keeping
//! the two together is what makes every link a page renders one the server
//! answers. A run is named as `log` and `show` name it (`<change>` or
//! `history/<dir>`), each segment checked here so that no request names a
//! file outside the runs; stories are matched against the run's record
//! only, never turned into paths.

use hyper::Method;

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// The repository's runs, live and in the history.
    Runs,
    /// The list's live part, as server-sent events.
    RunsFeed,
    /// One run: its stories, attempts, flags and totals.
    Run(String),
    /// The run page's live part, as server-sent events.
    RunFeed(String),
    /// One attempt: prompt, transcript, diff, checks.
    Attempt(AttemptRef),
    /// The attempt page's live parts, as server-sent events.
    AttemptFeed(AttemptRef),
    /// The attempt's diff alone, for the page to refresh while it runs.
    AttemptDiff(AttemptRef),
    /// The attempt's whole transcript, as plain text.
    Transcript(AttemptRef),
    /// The confirmation page of an action on a run.
    Confirm(String, Action),
    /// The action itself, confirmed.
    Act(String, Action),
    /// The page's style sheet or script.
    Asset(Asset),
}

/// One attempt of a run, as its pages name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRef {
    /// The run's label: `<change>` or `history/<dir>`.
    pub run: String,
    pub story: String,
    pub attempt: u32,
}

/// What the browser may do to a run, each an action the command line
/// already has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Ask the running loop to stop, as `q` on its screen or `s` in
    /// `watch` does.
    Stop,
    /// Answer the question a story waits on, as `git ralph answer` does:
    /// the story and the text come in the form (the story, on its page,
    /// in the query).
    Answer,
}

impl Action {
    pub const ALL: [Action; 2] = [Action::Stop, Action::Answer];

    /// The last segment of its path.
    pub fn segment(self) -> &'static str {
        match self {
            Action::Stop => "stop",
            Action::Answer => "answer",
        }
    }
}

/// The page that answers the question `story` of `run` waits on.
pub fn answer_path(run: &str, story: &str) -> String {
    format!(
        "{}?story={}",
        Route::Confirm(run.to_owned(), Action::Answer).path(),
        encode(story)
    )
}

/// The value of `name` in a form or a query (`a=1&b=x+y`), `+` read as a
/// space and `%XX` undone; `None` when it is not there or not text.
pub fn form_field(form: &str, name: &str) -> Option<String> {
    form.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then(|| decode(&value.replace('+', " ")))?
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asset {
    Style,
    Script,
}

impl Asset {
    fn name(self) -> &'static str {
        match self {
            Asset::Style => "style.css",
            Asset::Script => "app.js",
        }
    }
}

/// Why a request names no page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No page lives there (or a segment could not name one).
    NotFound,
    /// A page lives there, but not for this method.
    Method,
}

impl Route {
    /// The route of `method` on `path` (without its query).
    pub fn parse(method: &Method, path: &str) -> Result<Route, Refusal> {
        let segments: Vec<&str> = match path.strip_prefix('/') {
            Some("") => Vec::new(),
            Some(rest) => rest.split('/').collect(),
            None => return Err(Refusal::NotFound),
        };
        let route = match segments.as_slice() {
            [] => Route::Runs,
            ["events"] => Route::RunsFeed,
            ["assets", name] => Route::Asset(
                [Asset::Style, Asset::Script]
                    .into_iter()
                    .find(|asset| asset.name() == *name)
                    .ok_or(Refusal::NotFound)?,
            ),
            ["runs", rest @ ..] => run_route(rest)?,
            _ => return Err(Refusal::NotFound),
        };
        let wanted = match route {
            Route::Act(..) => Method::POST,
            _ => Method::GET,
        };
        if *method == wanted || (wanted == Method::GET && *method == Method::HEAD) {
            return Ok(route);
        }
        // The confirmation page and its action share a path.
        if let (Route::Confirm(run, action), true) = (&route, *method == Method::POST) {
            return Ok(Route::Act(run.clone(), *action));
        }
        Err(Refusal::Method)
    }

    /// The path of this page, every segment escaped.
    pub fn path(&self) -> String {
        match self {
            Route::Runs => "/".to_owned(),
            Route::RunsFeed => "/events".to_owned(),
            Route::Run(run) => run_path(run),
            Route::RunFeed(run) => format!("{}/events", run_path(run)),
            Route::Attempt(at) => attempt_path(at),
            Route::AttemptFeed(at) => format!("{}/events", attempt_path(at)),
            Route::AttemptDiff(at) => format!("{}/diff", attempt_path(at)),
            Route::Transcript(at) => format!("{}/transcript", attempt_path(at)),
            Route::Confirm(run, action) | Route::Act(run, action) => {
                format!("{}/{}", run_path(run), action.segment())
            }
            Route::Asset(asset) => format!("/assets/{}", asset.name()),
        }
    }
}

/// What follows `/runs/`: the run's label, then what of it.
fn run_route(segments: &[&str]) -> Result<Route, Refusal> {
    let (run, rest) = match segments {
        ["history", dir, rest @ ..] => (format!("history/{}", run_segment(dir)?), rest),
        [change, rest @ ..] => (run_segment(change)?, rest),
        [] => return Err(Refusal::NotFound),
    };
    let attempt = |story: &str, n: &str| -> Result<AttemptRef, Refusal> {
        Ok(AttemptRef {
            run: run.clone(),
            story: story_segment(story)?,
            attempt: attempt_number(n)?,
        })
    };
    Ok(match rest {
        [] => Route::Run(run),
        ["events"] => Route::RunFeed(run),
        ["attempts", story, n] => Route::Attempt(attempt(story, n)?),
        ["attempts", story, n, "events"] => Route::AttemptFeed(attempt(story, n)?),
        ["attempts", story, n, "diff"] => Route::AttemptDiff(attempt(story, n)?),
        ["attempts", story, n, "transcript"] => Route::Transcript(attempt(story, n)?),
        [action] => {
            let action = Action::ALL
                .into_iter()
                .find(|a| a.segment() == *action)
                .ok_or(Refusal::NotFound)?;
            Route::Confirm(run, action)
        }
        _ => return Err(Refusal::NotFound),
    })
}

/// A segment naming a run's directory: a change name as git-ralph takes
/// it, or a history directory, which is one too. Anything that could
/// reach another directory (`..`, a slash, a leading dot) names nothing.
fn run_segment(raw: &str) -> Result<String, Refusal> {
    let name = decode(raw).ok_or(Refusal::NotFound)?;
    crate::git::ChangeName::parse(&name).map_err(|_| Refusal::NotFound)?;
    Ok(name)
}

/// A story id: any text, matched against the run's record.
fn story_segment(raw: &str) -> Result<String, Refusal> {
    let story = decode(raw).ok_or(Refusal::NotFound)?;
    if story.is_empty() || story.chars().any(char::is_control) {
        return Err(Refusal::NotFound);
    }
    Ok(story)
}

fn attempt_number(raw: &str) -> Result<u32, Refusal> {
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Refusal::NotFound);
    }
    raw.parse().map_err(|_| Refusal::NotFound)
}

fn run_path(run: &str) -> String {
    match run.strip_prefix("history/") {
        Some(dir) => format!("/runs/history/{}", encode(dir)),
        None => format!("/runs/{}", encode(run)),
    }
}

fn attempt_path(at: &AttemptRef) -> String {
    format!(
        "{}/attempts/{}/{}",
        run_path(&at.run),
        encode(&at.story),
        at.attempt
    )
}

/// `%XX` escapes undone; `None` for a bad escape or text that is not UTF-8.
pub fn decode(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Every byte but the unreserved ones escaped, so that a segment stays one.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(path: &str) -> Result<Route, Refusal> {
        Route::parse(&Method::GET, path)
    }

    #[test]
    fn every_route_parses_back_from_its_own_path() {
        let at = AttemptRef {
            run: "history/greet-1767225600".into(),
            story: "1.3 a/b%".into(),
            attempt: 2,
        };
        for route in [
            Route::Runs,
            Route::RunsFeed,
            Route::Run("greet".into()),
            Route::RunFeed("greet".into()),
            Route::Attempt(at.clone()),
            Route::AttemptFeed(at.clone()),
            Route::AttemptDiff(at.clone()),
            Route::Transcript(at),
            Route::Confirm("greet".into(), Action::Stop),
            Route::Confirm("greet".into(), Action::Answer),
            Route::Asset(Asset::Script),
        ] {
            assert_eq!(get(&route.path()), Ok(route.clone()), "{}", route.path());
        }
        let act = Route::Act("greet".into(), Action::Stop);
        assert_eq!(Route::parse(&Method::POST, &act.path()), Ok(act));
    }

    #[test]
    fn no_run_segment_reaches_outside_the_runs() {
        for path in [
            "/runs/..",
            "/runs/%2e%2e",
            "/runs/.hidden",
            "/runs/a%2Fb",
            "/runs/history/..",
            "/runs/history/%2E%2E/greet",
            "/runs/history/a%2f..",
            "/runs/greet%00",
            "/runs/%ff",
            "/runs/%zz",
            "/runs/",
            "/runs/greet/attempts/1/x",
            "/runs/greet/attempts/1/-1",
            "/runs/greet/attempts/1/99999999999",
            "/runs/greet/attempts/%0a/1",
            "/runs/greet/nothing",
            "//runs/greet",
            "runs",
        ] {
            assert_eq!(get(path), Err(Refusal::NotFound), "{path}");
        }
    }

    #[test]
    fn a_form_field_is_read_as_a_browser_sends_it() {
        let form = "confirm=answer&story=1.2%20a&text=Casual%3A+a+%22bye%22+%26+no+more";
        assert_eq!(form_field(form, "story").as_deref(), Some("1.2 a"));
        assert_eq!(
            form_field(form, "text").as_deref(),
            Some("Casual: a \"bye\" & no more")
        );
        assert_eq!(form_field(form, "missing"), None);
        assert_eq!(form_field("text=%ff", "text"), None);
        assert_eq!(
            Route::parse(&Method::GET, "/runs/greet/answer"),
            Ok(Route::Confirm("greet".into(), Action::Answer))
        );
        assert_eq!(
            answer_path("greet", "1.2 a"),
            "/runs/greet/answer?story=1.2%20a"
        );
    }

    #[test]
    fn only_the_action_is_posted_and_pages_are_read() {
        assert_eq!(
            Route::parse(&Method::POST, "/runs/greet"),
            Err(Refusal::Method)
        );
        assert_eq!(
            Route::parse(&Method::DELETE, "/runs/greet/stop"),
            Err(Refusal::Method)
        );
        assert_eq!(
            Route::parse(&Method::HEAD, "/"),
            Ok(Route::Runs),
            "HEAD reads as GET"
        );
    }
}
