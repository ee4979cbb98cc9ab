//! Times: RFC 3339 in UTC everywhere, durations like `5m`, and relative times like `-2h`.

use chrono::{DateTime, SecondsFormat, Utc};

pub fn now() -> DateTime<Utc> {
    Utc::now()
}

/// Times in messages and reports: seconds precision, `Z` suffix (`2026-11-22T10:04:05Z`).
pub fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Log entries' and documents' timestamps (`created_at`, `updated_at`, `claimed_at`, …):
/// milliseconds (`2026-11-22T10:04:05.120Z`), so what happened within one second keeps
/// its order. Older documents hold seconds; [`cmp_stamps`] orders both.
pub fn stamp_millis(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Orders two timestamps as the times they name, whatever their precision or offset
/// (`…:05Z` is before `…:05.120Z`, which text comparison gets backwards: `.` sorts
/// before `Z`); one time written two ways is equal (callers break ties, by id). Text that
/// is no RFC 3339 time (a missing field: empty) comes before every time, and two such
/// compare as text.
pub fn cmp_stamps(a: &str, b: &str) -> std::cmp::Ordering {
    let t = |s: &str| {
        DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    };
    match (t(a), t(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (x, y) => x.is_some().cmp(&y.is_some()).then_with(|| a.cmp(b)),
    }
}

/// A sort key ordering stamps as [`cmp_stamps`] does (for sorting by a key computed once
/// per item): those that parse by their instant, after those that do not, which go by
/// their text.
pub fn stamp_key(s: &str) -> (bool, Option<DateTime<Utc>>, &str) {
    match DateTime::parse_from_rfc3339(s) {
        Ok(t) => (true, Some(t.with_timezone(&Utc)), ""),
        Err(_) => (false, None, s),
    }
}

/// Parses `500ms`, `30s`, `5m`, `2h`, `7d`, `1w` (a number and a unit).
pub fn parse_duration(s: &str) -> Option<chrono::Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = s.split_at(split);
    let n: i64 = n.parse().ok()?;
    if unit == "ms" {
        return chrono::Duration::try_milliseconds(n);
    }
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return None,
    };
    n.checked_mul(secs).and_then(chrono::Duration::try_seconds)
}

/// Parses an absolute RFC 3339 time, a date (`2026-11-22`, midnight UTC), or a time
/// relative to `now` (`-2h` = two hours ago, `+1d` = in a day).
pub fn parse_time(s: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    // A time too far away to represent (`-100000000d`) is not a time, rather than a panic.
    if let Some(rest) = s.strip_prefix('-') {
        return parse_duration(rest).and_then(|d| now.checked_sub_signed(d));
    }
    if let Some(rest) = s.strip_prefix('+') {
        return parse_duration(rest).and_then(|d| now.checked_add_signed(d));
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    let date = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
    Some(date.and_hms_opt(0, 0, 0)?.and_utc())
}

/// "2m ago", "3h ago", for humans.
pub fn ago(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let secs = (now - t).num_seconds().max(0);
    match secs {
        0..60 => format!("{secs}s ago"),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86_400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}

/// A duration as the shortest of `500ms`, `90s`, `5m`, `2h`, `3d`.
pub fn format_duration(d: chrono::Duration) -> String {
    let ms = d.num_milliseconds();
    if ms % 1000 != 0 {
        return format!("{ms}ms");
    }
    let s = d.num_seconds();
    match s {
        s if s % 86_400 == 0 && s > 0 => format!("{}d", s / 86_400),
        s if s % 3600 == 0 && s > 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 && s > 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// A measured time for humans: `12ms`, `1.5s`.
pub fn format_millis(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_of_mixed_precision_order_as_times() {
        use std::cmp::Ordering::*;
        let secs = "2026-11-27T10:00:05Z";
        let millis = "2026-11-27T10:00:05.120Z";
        assert!(millis < secs, "as text the later one sorts first");
        assert_eq!(cmp_stamps(secs, millis), Less);
        assert_eq!(cmp_stamps(millis, secs), Greater);
        assert_eq!(cmp_stamps("2026-11-27T10:00:04.999Z", secs), Less);
        assert_eq!(
            cmp_stamps("2026-11-27T11:00:05+01:00", secs),
            Equal,
            "the same time written two ways"
        );
        assert_eq!(cmp_stamps("2026-11-27T10:00:05.000Z", secs), Equal);
        assert_eq!(cmp_stamps("", secs), Less, "no time first");
        assert_eq!(cmp_stamps(secs, secs), Equal);
        let mut v = vec![millis, "", secs, "2026-11-27T10:00:05.119Z"];
        v.sort_by(|a, b| cmp_stamps(a, b));
        assert_eq!(v, ["", secs, "2026-11-27T10:00:05.119Z", millis]);
        assert_eq!(
            stamp_millis(parse_time(secs, Utc::now()).unwrap()),
            "2026-11-27T10:00:05.000Z"
        );
    }

    #[test]
    fn times_too_far_away_are_not_times() {
        let now = Utc::now();
        for s in ["-100000000d", "+100000000d", "-9223372036854775807ms"] {
            assert_eq!(parse_time(s, now), None, "{s}");
        }
        assert_eq!(
            parse_time("-2h", now),
            Some(now - chrono::Duration::hours(2))
        );
    }

    #[test]
    fn durations_and_relative_times() {
        assert_eq!(parse_duration("5m"), Some(chrono::Duration::minutes(5)));
        assert_eq!(parse_duration("2h").unwrap().num_seconds(), 7200);
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("m"), None);
        assert_eq!(parse_duration("500ms").unwrap().num_milliseconds(), 500);
        assert_eq!(format_duration(parse_duration("500ms").unwrap()), "500ms");
        assert_eq!(format_duration(parse_duration("2000ms").unwrap()), "2s");
        assert_eq!(format_millis(12), "12ms");
        assert_eq!(format_millis(1540), "1.5s");
        let now = DateTime::parse_from_rfc3339("2026-11-22T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            stamp(parse_time("-2h", now).unwrap()),
            "2026-11-22T08:00:00Z"
        );
        assert_eq!(
            stamp(parse_time("2026-11-20", now).unwrap()),
            "2026-11-20T00:00:00Z"
        );
        assert_eq!(
            stamp(parse_time("2026-11-20T01:02:03+01:00", now).unwrap()),
            "2026-11-20T00:02:03Z"
        );
        assert!(parse_time("yesterday", now).is_none());
    }
}
