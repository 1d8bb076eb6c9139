//! Usage limits as each provider sends them, so that a real agent CLI meets
//! the very 429 or quota error its users meet, reset time and all.
//!
//! A [`Turn::Limit`](super::Turn::Limit) holds every conversation request
//! until its reset time, then is passed over: the script goes on as if the
//! limit had never been there. The stand-in keeps no count of requests, so
//! a CLI that retries inside one attempt meets the same limit, and the next
//! attempt after the reset meets the script's first turn.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;

use super::Reply;

/// The seconds from now until `reset_unix`, at least 1: a provider never
/// says "retry in 0 seconds" of a limit that still holds.
fn seconds_until(reset_unix: u64) -> u64 {
    reset_unix.saturating_sub(now_unix()).max(1)
}

pub(super) fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs()
}

/// `reset_unix` as RFC 3339 in UTC, the form of Anthropic's `…-reset`
/// headers (the civil date from the day count, by the proleptic Gregorian
/// calendar's 400-year eras).
fn rfc3339(reset_unix: u64) -> String {
    let days = reset_unix / 86_400;
    let seconds = reset_unix % 86_400;
    let shifted = days + 719_468;
    let era = shifted / 146_097;
    let day_of_era = shifted % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

/// Anthropic's 429: a `rate_limit_error` with `retry-after` in seconds, the
/// per-limit `anthropic-ratelimit-*-reset` times and, as subscriptions get
/// them, the unified status and its reset in Unix seconds.
pub(super) fn anthropic(message: &str, reset_unix: u64) -> Reply {
    let at = rfc3339(reset_unix);
    Reply::json(
        429,
        &json!({"type": "error", "error": {"type": "rate_limit_error", "message": message}}),
    )
    .header("retry-after", seconds_until(reset_unix).to_string())
    .header("anthropic-ratelimit-requests-reset", at.clone())
    .header("anthropic-ratelimit-tokens-reset", at)
    .header("anthropic-ratelimit-unified-status", "rejected")
    .header("anthropic-ratelimit-unified-reset", reset_unix.to_string())
}

/// OpenAI's 429 (Responses and Chat Completions alike): `code` is
/// `insufficient_quota` or `rate_limit_exceeded`, with `retry-after` and the
/// `x-ratelimit-reset-*` durations.
pub(super) fn openai(message: &str, code: &str, reset_unix: u64) -> Reply {
    let seconds = seconds_until(reset_unix);
    Reply::json(
        429,
        &json!({"error": {"message": message, "type": code, "code": code, "param": null}}),
    )
    .header("retry-after", seconds.to_string())
    .header("x-ratelimit-reset-requests", format!("{seconds}s"))
    .header("x-ratelimit-reset-tokens", format!("{seconds}s"))
}

/// Gemini's 429: `RESOURCE_EXHAUSTED` with the quota it ran out of and a
/// `RetryInfo` delay.
pub(super) fn gemini(message: &str, reset_unix: u64) -> Reply {
    let seconds = seconds_until(reset_unix);
    Reply::json(
        429,
        &json!({"error": {
            "code": 429,
            "message": message,
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [{
                        "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                        "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                    }],
                },
                {
                    "@type": "type.googleapis.com/google.rpc.RetryInfo",
                    "retryDelay": format!("{seconds}s"),
                },
            ],
        }}),
    )
}

#[cfg(test)]
mod tests {
    use super::rfc3339;

    #[test]
    fn reset_times_read_as_rfc3339_in_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_767_229_200), "2026-01-01T01:00:00Z");
    }
}
