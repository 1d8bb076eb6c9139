//! Telling the user a run ended (`--notify`, `[notify] webhook`): the
//! delivery starts as the end is announced and runs beside the end hooks,
//! so a slow or unreachable webhook costs the run at most its delivery
//! timeout, once. What did not arrive is reported once per channel, as a
//! warning; the run's ending stays what it was.

use tokio::task::JoinHandle;

use super::story_loop::StoryLoop;
use crate::notify::{RunEnded, Undelivered};
use crate::state::StopReason;

impl StoryLoop {
    /// Start telling the user the run ended for `reason`.
    pub(super) fn notify_end(
        &self,
        reason: StopReason,
        message: String,
    ) -> Option<JoinHandle<Vec<Undelivered>>> {
        let notifier = self.settings.notifier.clone();
        if notifier.is_empty() {
            return None;
        }
        let ended = RunEnded {
            change: self.settings.change.to_string(),
            branch: self.state.branch.clone(),
            reason,
            needs_you: reason != StopReason::Completed,
            message,
            stories_total: self.state.stories.len(),
            stories_done: self.state.stories.iter().filter(|s| s.done).count(),
            totals: self.state.totals.clone(),
        };
        Some(tokio::spawn(async move { notifier.send(&ended).await }))
    }

    /// Wait for the delivery (bounded by its own timeouts) and report what
    /// did not arrive.
    pub(super) async fn settle_notifications(
        &mut self,
        notifying: Option<JoinHandle<Vec<Undelivered>>>,
    ) {
        let Some(notifying) = notifying else {
            return;
        };
        let undelivered = notifying.await.unwrap_or_default();
        for Undelivered { channel, why } in undelivered {
            self.warn(format!("{channel} was not told that the run ended: {why}"));
        }
    }
}
