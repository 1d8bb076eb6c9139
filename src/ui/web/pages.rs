//! The frame every page shares (header, style, script, the feed it follows),
//! the page a refused request gets, and the confirmation page an action
//! asks for before it is taken (for an answer, the form that gives it).

use super::escape;
use crate::serve::{Action, Asset, Route};

/// A whole page: its frame around `main`.
pub struct Document<'a> {
    pub title: &'a str,
    /// The repository's name, shown at the top.
    pub repo: &'a str,
    /// Where the page sits, after the list of runs: (path, text).
    pub crumbs: &'a [(String, String)],
    /// The events the page follows, if it has live parts.
    pub feed: Option<String>,
    /// The inner HTML of `<main id="main">`.
    pub main: &'a str,
}

pub fn document(doc: &Document) -> String {
    let mut crumbs = String::new();
    for (path, text) in doc.crumbs {
        crumbs.push_str(&format!(
            "<a class=\"crumb\" href=\"{}\">{}</a>",
            escape(path),
            escape(text)
        ));
    }
    let feed = doc
        .feed
        .as_deref()
        .map(|path| format!(" data-feed=\"{}\"", escape(path)))
        .unwrap_or_default();
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · git ralph</title>\
         <link rel=\"stylesheet\" href=\"{style}\">\
         <script src=\"{script}\" defer></script></head>\
         <body{feed}><header class=\"top\"><a href=\"/\">git ralph · {repo}</a>{crumbs}\
         <span id=\"live\" class=\"live\"></span></header>\
         <main id=\"main\">{main}</main></body></html>\n",
        title = escape(doc.title),
        style = Route::Asset(Asset::Style).path(),
        script = Route::Asset(Asset::Script).path(),
        repo = escape(doc.repo),
        main = doc.main,
    )
}

/// The page of a refused request: what went wrong, and what to do. It
/// names nothing of the repository, since whoever gets it may not see it.
pub fn refusal(status: u16, title: &str, message: &str, hint: Option<&str>) -> String {
    let hint = hint
        .map(|hint| format!("<p class=\"muted\">{}</p>", escape(hint)))
        .unwrap_or_default();
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{status} {title} · git ralph</title>\
         <style>body{{font:16px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:40rem;padding:0 1rem}}</style>\
         </head><body><main id=\"main\"><h1>{status} {title}</h1><p>{message}</p>{hint}</main></body></html>\n",
        title = escape(title),
        message = escape(message),
    )
}

/// What an action does, in the words its confirmation uses.
fn explain(action: Action) -> (&'static str, &'static str, &'static str) {
    match action {
        Action::Stop => (
            "Stop the run?",
            "The loop is asked to stop, as q on its screen does: the agent at work is stopped \
             and its attempt kept under the run's refs, completed stories stay on the run's \
             branch. 'git ralph start' resumes the run later.",
            "Stop the run",
        ),
        Action::Answer => (
            "Answer the question?",
            "The answer is recorded as 'git ralph answer' records it: a running loop gives it \
             to the story's next attempt at its next turn, a stopped run when 'git ralph start' \
             resumes it. A story is answered once.",
            "Answer",
        ),
    }
}

/// The inner HTML of the page that asks before `action` is taken on `run`.
pub fn confirm_page(run: &str, action: Action) -> String {
    let (question, what, button) = explain(action);
    format!(
        "<h1>{question}</h1><p class=\"muted\">{run}</p><p>{what}</p>\
         <form class=\"action\" method=\"post\" action=\"{act}\">\
         <input type=\"hidden\" name=\"confirm\" value=\"{segment}\">\
         <button class=\"danger\" type=\"submit\">{button}</button></form> \
         <a class=\"button\" href=\"{back}\">Back to the run</a>",
        run = escape(run),
        act = escape(&Route::Act(run.to_owned(), action).path()),
        segment = action.segment(),
        back = escape(&Route::Run(run.to_owned()).path()),
    )
}

/// The inner HTML of the page that answers `question`, which story `story`
/// of `run` waits on: the story, the text, the button.
pub fn answer_page(run: &str, story: &str, question: &str) -> String {
    let (_, what, button) = explain(Action::Answer);
    format!(
        "<h1>Answer story {story}?</h1><p class=\"muted\">{run}</p>\
         <blockquote class=\"question\">{question}</blockquote><p>{what}</p>\
         <form class=\"action\" method=\"post\" action=\"{act}\">\
         <input type=\"hidden\" name=\"confirm\" value=\"{segment}\">\
         <input type=\"hidden\" name=\"story\" value=\"{story}\">\
         <p><label for=\"answer-text\">Your answer</label><br>\
         <textarea id=\"answer-text\" name=\"text\" rows=\"6\" cols=\"60\" required></textarea></p>\
         <button type=\"submit\">{button}</button></form> \
         <a class=\"button\" href=\"{back}\">Back to the run</a>",
        story = escape(story),
        run = escape(run),
        question = escape(question),
        act = escape(&Route::Act(run.to_owned(), Action::Answer).path()),
        segment = Action::Answer.segment(),
        back = escape(&Route::Run(run.to_owned()).path()),
    )
}
