//! Telling the user how the run goes (`--notify`, `[notify] webhook`):
//! when it waits out a usage limit, and when it ends. Each delivery starts
//! as the news is announced and runs beside the loop, which never waits
//! for it; the end's runs beside the end hooks, so a slow or unreachable
//! webhook costs the run at most its delivery timeout, once. What did not
//! arrive is reported as a warning once per channel; the run's ending
//! stays what it was.

use super::context::Run;
use tokio::task::JoinHandle;

use crate::notify::{NewsKind, RunNews, Undelivered};
use crate::state::StopReason;

/// Start telling the user the run ended for `reason`.
pub(super) fn notify_end(run: &mut Run, reason: StopReason, message: String) {
    let news = news(run, NewsKind::RunEnded, message);
    notify(
        run,
        RunNews {
            reason: Some(reason),
            needs_you: reason != StopReason::Completed,
            ..news
        },
    );
}

/// Start telling the user the run waits for a usage limit until
/// `until_unix`.
pub(super) fn notify_pause(run: &mut Run, until_unix: u64, message: String) {
    let news = news(run, NewsKind::Paused, message);
    notify(
        run,
        RunNews {
            until_unix: Some(until_unix),
            ..news
        },
    );
}

/// Start telling the user that story `story` waits for an answer to
/// `question`.
pub(super) fn notify_question(run: &mut Run, story: &str, question: &str) {
    let message = format!(
        "story {story} asks: {question} (answer with: git ralph answer {} {story} \"...\")",
        run.settings.change_shown()
    );
    let news = news(run, NewsKind::Question, message);
    notify(run, news);
}

fn news(run: &Run, event: NewsKind, message: String) -> RunNews {
    RunNews {
        event,
        change: run.settings.change().to_string(),
        branch: run.state.branch().clone(),
        reason: None,
        until_unix: None,
        needs_you: true,
        message,
        stories_total: run.state.stories().len(),
        stories_done: run.state.stories().iter().filter(|s| s.done).count(),
        totals: run.state.totals().clone(),
    }
}

fn notify(run: &mut Run, news: RunNews) {
    let notifier = run.settings.notifier().clone();
    if notifier.is_empty() {
        return;
    }
    run.deliveries
        .under_way
        .push(tokio::spawn(async move { notifier.send(&news).await }));
}

/// Report the deliveries that have failed so far, without waiting for
/// those still under way.
pub(super) async fn report_deliveries(run: &mut Run) {
    let (done, under_way) = std::mem::take(&mut run.deliveries.under_way)
        .into_iter()
        .partition(|delivery| delivery.is_finished());
    run.deliveries.under_way = under_way;
    report(run, done).await;
}

/// Wait for every delivery (each bounded by its own timeouts) and
/// report what did not arrive.
pub(super) async fn settle_deliveries(run: &mut Run) {
    let all = std::mem::take(&mut run.deliveries.under_way);
    report(run, all).await;
}

async fn report(run: &mut Run, deliveries: Vec<JoinHandle<Vec<Undelivered>>>) {
    for delivery in deliveries {
        for Undelivered { channel, why } in delivery.await.unwrap_or_default() {
            if run.deliveries.reported.contains(&channel) {
                continue;
            }
            run.deliveries.reported.push(channel.clone());
            run.warn(format!(
                "{channel} could not be told how the run goes: {why}; later failures to deliver are not reported"
            ));
        }
    }
}
