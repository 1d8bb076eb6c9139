//! `/answer` replies on an issue, the same on every tracker: a story
//! parked on a question is answered by a comment on its issue that starts
//! with `/answer` and a space, made once the question was asked. Each
//! tracker lists its comments (GitHub's, GitLab's notes, Linear's and
//! Jira's comments) with the time each was made; this module picks the
//! answers out of them, oldest first, so that the first one given wins
//! whatever order the tracker lists them in. The run's own comments start
//! with "git-ralph", never with `/answer`: a question it posts that quotes
//! `/answer` is no answer to itself.

/// A comment on an issue, as a tracker lists it.
pub(crate) struct Comment {
    pub body: String,
    /// When it was made, in seconds since the epoch; a comment whose time
    /// cannot be read is taken as made before any question.
    pub at: Option<u64>,
}

/// The text of each `/answer` among `comments` made at `since` or later,
/// oldest first (comments made in the same second keep their order).
pub(crate) fn answers(comments: impl IntoIterator<Item = Comment>, since: u64) -> Vec<String> {
    let mut given: Vec<(u64, String)> = comments
        .into_iter()
        .filter_map(|comment| {
            let at = comment.at.filter(|at| *at >= since)?;
            Some((at, answer_text(&comment.body)?))
        })
        .collect();
    given.sort_by_key(|(at, _)| *at);
    given.into_iter().map(|(_, text)| text).collect()
}

/// The answer a comment gives: its text after a leading `/answer` and a
/// space; none for any other comment, or an empty answer.
fn answer_text(body: &str) -> Option<String> {
    let rest = body.trim_start().strip_prefix("/answer")?;
    let text = rest.trim();
    (rest.starts_with(char::is_whitespace) && !text.is_empty()).then(|| text.to_owned())
}

/// Seconds since the epoch of a time as trackers write it: an ISO 8601
/// date and time, with or without fractions of a second, in UTC (`Z`) or
/// at an offset (`+01:00`, or `+0100` as Jira writes it).
pub(crate) fn unix_time(iso: &str) -> Option<u64> {
    let (date, time) = iso.trim().split_once('T')?;
    let mut date = date.splitn(3, '-').map(|part| part.parse::<i64>().ok());
    let (year, month, day) = (date.next()??, date.next()??, date.next()??);
    let (clock, offset) = split_offset(time)?;
    let mut clock = clock
        .splitn(3, ':')
        .map(|part| part.get(..2)?.parse::<i64>().ok());
    let (hour, minute, second) = (clock.next()??, clock.next()??, clock.next()??);
    // Days from the civil date (proleptic Gregorian), March-based years.
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let of_era = year - era * 400;
    let of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let days = era * 146_097 + of_era * 365 + of_era / 4 - of_era / 100 + of_year - 719_468;
    u64::try_from(days * 86_400 + hour * 3_600 + minute * 60 + second - offset).ok()
}

/// A time of day and its offset from UTC in seconds: `12:00:00.000+0100`
/// is `12:00:00.000` and 3600.
fn split_offset(time: &str) -> Option<(&str, i64)> {
    if let Some(clock) = time.strip_suffix(['Z', 'z']) {
        return Some((clock, 0));
    }
    let Some(at) = time.rfind(['+', '-']) else {
        return Some((time, 0));
    };
    let (clock, offset) = time.split_at(at);
    let sign = if offset.starts_with('-') { -1 } else { 1 };
    let digits: String = offset[1..].chars().filter(|c| *c != ':').collect();
    if digits.len() != 4 {
        return None;
    }
    let hours: i64 = digits[..2].parse().ok()?;
    let minutes: i64 = digits[2..].parse().ok()?;
    Some((clock, sign * (hours * 3_600 + minutes * 60)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comment(body: &str, at: &str) -> Comment {
        Comment {
            body: body.to_owned(),
            at: unix_time(at),
        }
    }

    #[test]
    fn times_are_read_in_utc_and_at_an_offset() {
        assert_eq!(unix_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(unix_time("2026-01-01T00:00:00Z"), Some(1_767_225_600));
        assert_eq!(unix_time("2026-03-01T12:30:05Z"), Some(1_772_368_205));
        assert_eq!(unix_time("2026-01-01T00:00:00.123Z"), Some(1_767_225_600));
        assert_eq!(
            unix_time("2026-01-01T01:00:00.000+0100"),
            Some(1_767_225_600)
        );
        assert_eq!(
            unix_time("2025-12-31T19:00:00.000-05:00"),
            Some(1_767_225_600)
        );
        assert_eq!(unix_time("yesterday"), None);
        assert_eq!(unix_time("2026-01-01T00:00:00+1"), None);
    }

    #[test]
    fn answers_since_the_question_are_read_oldest_first() {
        let given = answers(
            [
                comment("/answer too early", "2025-12-31T23:59:59Z"),
                comment("/answer Later.", "2026-01-03T00:00:00Z"),
                comment("Thanks!", "2026-01-02T00:00:00Z"),
                comment("/answers are not this", "2026-01-02T00:00:00Z"),
                comment(
                    "  /answer CSV, with a header line.\n",
                    "2026-01-02T00:00:00Z",
                ),
                comment("/answer", "2026-01-03T00:00:00Z"),
                comment("/answer Undated.", "whenever"),
                comment("/answer Offset.", "2026-01-01T09:00:00+09:00"),
            ],
            1_767_225_600,
        );
        assert_eq!(given, ["Offset.", "CSV, with a header line.", "Later."]);
    }
}
