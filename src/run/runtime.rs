//! The loop's two ways of running work on the async runtime: blocking
//! work (gix, file parsing) moved off it, and a loop's future caught at the
//! panic that cuts it short. Every step uses them; they use nothing of the
//! engine.

/// Runs `future` to its end, or to the panic that cuts it short: the bug
/// the panic hook recorded. What the future held (an agent's process group
/// among it) is dropped before this returns.
pub(super) async fn catching<T>(
    future: impl std::future::Future<Output = T>,
) -> Result<T, crate::bug::Bug> {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::task::Poll;
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(
        |cx| match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(crate::bug::caught(payload.as_ref()))),
        },
    )
    .await
}

/// Blocking work (gix, file parsing) off the async runtime, so that stop
/// requests and event forwarding stay live.
pub(super) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(value) => value,
        Err(err) => std::panic::resume_unwind(err.into_panic()),
    }
}
