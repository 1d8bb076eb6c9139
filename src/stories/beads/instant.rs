//! The moment a beads timestamp names, so that times written from
//! different zones (`Z`, `+02:00`, `-05:00`) compare as instants, not as
//! text.

/// Seconds since the Unix epoch and the nanoseconds past them, of an RFC
/// 3339 time such as `2025-11-03T09:02:11.529804-08:00`; `None` when the
/// text is not one.
pub(super) fn instant(text: &str) -> Option<(i64, u32)> {
    let text = text.trim();
    let (date, rest) = text.split_at_checked(10)?;
    let mut parts = date.split('-');
    let year: i64 = parts.next()?.parse().ok()?;
    let month: u32 = parts.next()?.parse().ok()?;
    let day: u32 = parts.next()?.parse().ok()?;
    let rest = rest.strip_prefix(['T', 't', ' '])?;
    let (clock, zone) = split_zone(rest)?;
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut hms = hms.split(':');
    let hour: i64 = hms.next()?.parse().ok()?;
    let minute: i64 = hms.next()?.parse().ok()?;
    let second: i64 = hms.next().unwrap_or("0").parse().ok()?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    let nanos = nanos(fraction)?;
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - zone;
    Some((seconds, nanos))
}

/// The clock and the zone's offset east of UTC in seconds.
fn split_zone(rest: &str) -> Option<(&str, i64)> {
    if let Some(clock) = rest.strip_suffix(['Z', 'z']) {
        return Some((clock, 0));
    }
    let at = rest.rfind(['+', '-'])?;
    let (clock, zone) = rest.split_at(at);
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let zone = &zone[1..];
    let (hours, minutes) = zone.split_once(':').unwrap_or(zone.split_at_checked(2)?);
    let offset = hours.parse::<i64>().ok()? * 3_600 + minutes.parse::<i64>().ok()? * 60;
    Some((clock, sign * offset))
}

fn nanos(fraction: &str) -> Option<u32> {
    if fraction.is_empty() {
        return Some(0);
    }
    if !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits: String = fraction
        .chars()
        .chain("000000000".chars())
        .take(9)
        .collect();
    digits.parse().ok()
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::instant;

    #[test]
    fn times_from_different_zones_compare_as_instants() {
        assert_eq!(instant("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(instant("2000-03-01T00:00:00Z"), Some((951_868_800, 0)));
        let early = instant("2025-01-01T10:00:00+02:00").expect("time");
        let late = instant("2025-01-01T09:00:00Z").expect("time");
        assert!(early < late);
        assert_eq!(
            instant("2025-11-03T09:02:11.529804-08:00"),
            instant("2025-11-03T17:02:11.529804Z")
        );
        assert_eq!(
            instant("2025-11-03T17:02:11.5Z").map(|t| t.1),
            Some(500_000_000)
        );
        assert_eq!(instant("yesterday"), None);
        assert_eq!(instant("2025-13-01T00:00:00Z"), None);
    }
}
