//! Server-sent events: what keeps a page live. Each page following a feed
//! gets a task of its own that forwards what the feed publishes as
//! `event:`/`data:` frames; a page that reads slowly skips to the latest,
//! and one that went away ends its task. On every (re)connection the page
//! is first sent its live parts whole, so that a page left open across a
//! dropped connection or a restarted server is brought up to date.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame};
use tokio::sync::{broadcast, mpsc, watch};

use super::feed::{Batch, Held, output_of};
use super::views::{self, TRANSCRIPT_TAIL_BYTES};
use super::{AttemptRef, Feeds};

/// A comment now and then, so that a page whose run is quiet knows the
/// connection holds, and the server learns of pages that left.
const HEARTBEAT: Duration = Duration::from_secs(15);
/// Frames a page may have waiting before it is considered slow.
const QUEUE: usize = 8;
/// Output for an attempt page beyond this much at once goes as the
/// transcript's tail instead.
const LINES_AT_ONCE: usize = 256 << 10;

/// A response body fed by a task.
pub struct ChannelBody(mpsc::Receiver<Bytes>);

impl HttpBody for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes))))
    }
}

/// A channel and the body it feeds.
pub fn channel() -> (mpsc::Sender<Bytes>, ChannelBody) {
    let (sender, receiver) = mpsc::channel(QUEUE);
    (sender, ChannelBody(receiver))
}

/// One event: its name, and its data line by line.
pub fn frame(name: &str, data: &str) -> Bytes {
    let mut text = format!("event: {name}\n");
    for line in data.split('\n') {
        text.push_str("data: ");
        text.push_str(line.trim_end_matches('\r'));
        text.push('\n');
    }
    text.push('\n');
    Bytes::from(text)
}

/// How soon a page tries again after losing the connection.
fn retry() -> Bytes {
    Bytes::from_static(b"retry: 2000\n\n")
}

/// Render off the async threads; a render that failed says nothing.
async fn render<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(work).await.ok()
}

/// A page whose live part is `main`: first as it is now (`first`), then
/// each time its feed publishes another.
pub fn follow_page(first: String, mut page: watch::Receiver<Arc<str>>) -> ChannelBody {
    let (sender, body) = channel();
    tokio::spawn(async move {
        if sender.send(retry()).await.is_err() || sender.send(frame("main", &first)).await.is_err()
        {
            return;
        }
        let mut last = Arc::<str>::from(first);
        loop {
            tokio::select! {
                changed = page.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let html = page.borrow_and_update().clone();
                    if html.is_empty() || html == last {
                        continue;
                    }
                    if sender.send(frame("main", &html)).await.is_err() {
                        return;
                    }
                    last = html;
                }
                () = tokio::time::sleep(HEARTBEAT) => {
                    if sender.send(Bytes::from_static(b": still here\n\n")).await.is_err() {
                        return;
                    }
                }
                () = sender.closed() => return,
            }
        }
    });
    body
}

/// The run page's events.
pub async fn run_events(feed: Held) -> ChannelBody {
    let page = feed.page.subscribe();
    let feed = Arc::new(feed);
    let first = {
        let feed = feed.clone();
        render(move || views::run_main(&feed))
            .await
            .unwrap_or_default()
    };
    follow_page(first, page)
}

/// The list page's events.
pub async fn runs_events(feeds: Arc<Feeds>) -> ChannelBody {
    let page = feeds.list();
    let first = render(move || views::runs_main(feeds.site()))
        .await
        .unwrap_or_default();
    follow_page(first, page)
}

/// The attempt page's events: its head again whenever the run moves, the
/// agent's output as it comes, and the transcript's tail whole on
/// connecting and whenever the page fell behind.
pub fn attempt_events(feed: Held, at: AttemptRef) -> ChannelBody {
    let (sender, body) = channel();
    let feed = Arc::new(feed);
    tokio::spawn(async move {
        let mut page = feed.page.subscribe();
        let Some(mut follow) = Follow::start(&feed, &at, &sender).await else {
            return;
        };
        let mut head = Head::default();
        if !send_head(&feed, &at, &sender, &mut head).await {
            return;
        }
        loop {
            tokio::select! {
                batch = follow.batches.recv() => {
                    let sent = match batch {
                        Ok(batch) => follow.forward(&batch, &at, &sender).await,
                        Err(broadcast::error::RecvError::Lagged(_)) => {
                            match Follow::start(&feed, &at, &sender).await {
                                Some(again) => { follow = again; true }
                                None => false,
                            }
                        }
                        Err(broadcast::error::RecvError::Closed) => false,
                    };
                    if !sent {
                        return;
                    }
                }
                changed = page.changed() => {
                    if changed.is_err() || !send_head(&feed, &at, &sender, &mut head).await {
                        return;
                    }
                }
                () = tokio::time::sleep(HEARTBEAT) => {
                    if sender.send(Bytes::from_static(b": still here\n\n")).await.is_err() {
                        return;
                    }
                }
                () = sender.closed() => return,
            }
        }
    });
    body
}

/// The head an attempt page was last sent, and the record it was made of.
#[derive(Default)]
struct Head {
    html: String,
    record: Option<crate::state::AttemptRecord>,
}

/// Send the attempt's head if it changed since `last`.
async fn send_head(
    feed: &Arc<Held>,
    at: &AttemptRef,
    sender: &mpsc::Sender<Bytes>,
    last: &mut Head,
) -> bool {
    let (feed, at_, mut record) = (feed.clone(), at.clone(), last.record.take());
    let rendered = render(move || {
        let html = views::attempt_head(&feed, &at_, &mut record);
        (html, record)
    })
    .await;
    let Some((html, record)) = rendered else {
        return !sender.is_closed();
    };
    last.record = record;
    let Ok(Some(html)) = html else {
        return !sender.is_closed();
    };
    if html == last.html {
        return true;
    }
    let sent = sender.send(frame("head", &html)).await.is_ok();
    last.html = html;
    sent
}

/// An attempt page's place in the run's output.
struct Follow {
    batches: broadcast::Receiver<Arc<Batch>>,
    /// Output before this offset was sent with the transcript's tail.
    from: u64,
}

impl Follow {
    /// Send the transcript's tail, and follow what comes after it.
    async fn start(
        feed: &Arc<Held>,
        at: &AttemptRef,
        sender: &mpsc::Sender<Bytes>,
    ) -> Option<Follow> {
        let (feed, at_) = (feed.clone(), at.clone());
        let (batches, from, html) = render(move || {
            let (batches, from, events, skipped) =
                feed.follow_attempt(&at_.story, at_.attempt, TRANSCRIPT_TAIL_BYTES);
            let html = crate::ui::web::transcript_part(&at_, &events, skipped);
            (batches, from, html)
        })
        .await?;
        sender.send(retry()).await.ok()?;
        sender.send(frame("transcript", &html)).await.ok()?;
        Some(Follow { batches, from })
    }

    /// Send the attempt's lines in `batch`, unless the tail had them.
    async fn forward(&self, batch: &Batch, at: &AttemptRef, sender: &mpsc::Sender<Bytes>) -> bool {
        if batch.start < self.from {
            return true;
        }
        let events = output_of(batch, &at.story, at.attempt);
        if events.is_empty() {
            return true;
        }
        let mut html = crate::ui::web::transcript_lines(&events);
        if html.len() > LINES_AT_ONCE {
            let mut cut = html.len() - LINES_AT_ONCE;
            while !html.is_char_boundary(cut) {
                cut += 1;
            }
            let from = html[cut..].find('\n').map_or(html.len(), |i| cut + i + 1);
            html = format!(
                "<span class=\"line-summary\">… output left out; the whole transcript has it</span>\n{}",
                &html[from..]
            );
        }
        sender.send(frame("lines", &html)).await.is_ok()
    }
}
