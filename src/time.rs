//! Times as sessions write them and as people read them: RFC 3339 timestamps (`2026-05-11T10:29:40.150Z`,
//! or with an offset) read into milliseconds since the epoch, shown in UTC (`2026-05-11 10:29Z`),
//! and the `--since` forms people type (`2026-05-01`, `2026-05-01T12:00`, `3d`, `2w`); file times
//! to the nanosecond, as manifests keep their sources' mtimes.
//!
//! UTC throughout, as the rest of ctxfold shows times (`kept 2026-05-12 10:11:12Z`): no time zone
//! database is read.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// An instant, in milliseconds since 1970-01-01T00:00:00Z.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(pub i64);

const DAY_MS: i64 = 86_400_000;

impl Instant {
    pub fn now() -> Self {
        Self::of(SystemTime::now())
    }

    pub fn of(at: SystemTime) -> Self {
        match at.duration_since(UNIX_EPOCH) {
            Ok(since) => Self(since.as_millis() as i64),
            Err(before) => Self(-(before.duration().as_millis() as i64)),
        }
    }

    /// A timestamp as a session writes it: RFC 3339 (`T` or a space between date and time, `Z` or
    /// an offset, any fraction), or milliseconds since the epoch written as a number.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if !text.is_empty() && text.len() >= 12 && text.bytes().all(|b| b.is_ascii_digit()) {
            return text.parse().ok().map(Self);
        }
        let b = text.as_bytes();
        if b.len() < 16 || !matches!(b[10], b'T' | b't' | b' ') {
            return None;
        }
        let (days, rest) = (date(&text[..10])?, &text[11..]);
        let number = |s: &str| {
            s.parse::<i64>()
                .ok()
                .filter(|_| s.bytes().all(|c| c.is_ascii_digit()))
        };
        let (hour, minute) = (number(rest.get(..2)?)?, number(rest.get(3..5)?)?);
        if rest.as_bytes()[2] != b':' || hour > 23 || minute > 59 {
            return None;
        }
        let mut rest = &rest[5..];
        let mut ms = (hour * 60 + minute) * 60_000;
        if let Some(after) = rest.strip_prefix(':') {
            let second = number(after.get(..2)?)?;
            if second > 60 {
                return None;
            }
            ms += second * 1000;
            rest = &after[2..];
            if let Some(fraction) = rest.strip_prefix(['.', ',']) {
                let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
                let millis = format!("{:0<3}", &fraction[..digits.min(3)]);
                ms += number(&millis)?;
                rest = &fraction[digits..];
            }
        }
        let offset = match rest {
            "" | "Z" | "z" => 0,
            _ => {
                let sign = match rest.as_bytes()[0] {
                    b'+' => 1,
                    b'-' => -1,
                    _ => return None,
                };
                let zone = rest[1..].replace(':', "");
                if zone.len() != 4 {
                    return None;
                }
                sign * (number(&zone[..2])? * 60 + number(&zone[2..])?) * 60_000
            }
        };
        Some(Self(days * DAY_MS + ms - offset))
    }

    /// `2026-05-11 10:29Z`, for people.
    pub fn minutes(self) -> String {
        let (date, h, m, _, _) = self.split();
        format!("{date} {h:02}:{m:02}Z")
    }

    /// `2026-05-11 10:29:40Z`, for people.
    pub fn seconds(self) -> String {
        let (date, h, m, s, _) = self.split();
        format!("{date} {h:02}:{m:02}:{s:02}Z")
    }

    /// `2026-05-11T10:29:40.150Z`, for scripts.
    pub fn rfc3339(self) -> String {
        let (date, h, m, s, ms) = self.split();
        format!("{date}T{h:02}:{m:02}:{s:02}.{ms:03}Z")
    }

    fn split(self) -> (String, i64, i64, i64, i64) {
        let days = self.0.div_euclid(DAY_MS);
        let ms = self.0.rem_euclid(DAY_MS);
        let (year, month, day) = civil_from_days(days);
        (
            format!("{year:04}-{month:02}-{day:02}"),
            ms / 3_600_000,
            ms / 60_000 % 60,
            ms / 1000 % 60,
            ms % 1000,
        )
    }
}

impl serde::Serialize for Instant {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.rfc3339())
    }
}

/// A file time as RFC 3339 UTC to the nanosecond (`2026-11-30T23:21:07.123456789Z`): how a
/// manifest keeps its source's mtime, which restore sets again exactly.
pub fn nanos(at: SystemTime) -> String {
    let (secs, nanos) = match at.duration_since(UNIX_EPOCH) {
        Ok(after) => (after.as_secs() as i64, after.subsec_nanos()),
        Err(before) => {
            let before = before.duration();
            match before.subsec_nanos() {
                0 => (-(before.as_secs() as i64), 0),
                n => (-(before.as_secs() as i64) - 1, 1_000_000_000 - n),
            }
        }
    };
    let (date, h, m, s, _) = Instant(secs * 1000).split();
    format!("{date}T{h:02}:{m:02}:{s:02}.{nanos:09}Z")
}

/// A time [`nanos`] wrote (any fraction up to nanoseconds, or none; UTC only), or `None`.
pub fn parse_nanos(text: &str) -> Option<SystemTime> {
    let body = text.strip_suffix('Z')?;
    let (whole, fraction) = body.split_once('.').unwrap_or((body, ""));
    if fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) || whole.len() != 19 {
        return None;
    }
    let secs = Instant::parse(&format!("{whole}Z"))?.0.div_euclid(1000);
    let nanos: u64 = format!("{fraction:0<9}").parse().ok()?;
    let at = std::time::Duration::from_secs(secs.unsigned_abs());
    let at = match secs < 0 {
        true => UNIX_EPOCH.checked_sub(at)?,
        false => UNIX_EPOCH.checked_add(at)?,
    };
    at.checked_add(std::time::Duration::from_nanos(nanos))
}

/// What `--since` takes: a date (`2026-05-01`, midnight UTC), a date and time (RFC 3339, the
/// zone optional), or how long ago (`30m`, `12h`, `3d`, `2w`).
pub fn since(text: &str, now: Instant) -> Result<Instant> {
    let text = text.trim();
    let ago = text
        .find(|c: char| !c.is_ascii_digit())
        .filter(|&at| at > 0)
        .and_then(|at| {
            let unit = match &text[at..] {
                "s" => 1000,
                "m" | "min" => 60_000,
                "h" => 3_600_000,
                "d" => DAY_MS,
                "w" => 7 * DAY_MS,
                _ => return None,
            };
            text[..at].parse::<i64>().ok()?.checked_mul(unit)
        });
    let at = match ago {
        Some(ms) => Some(Instant(now.0 - ms)),
        None if text.len() == 10 => date(text).map(|days| Instant(days * DAY_MS)),
        None => {
            let zoned = text.ends_with(['Z', 'z'])
                || text.get(16..).is_some_and(|t| t.contains(['+', '-']));
            let full = if zoned {
                text.to_string()
            } else {
                format!("{text}Z")
            };
            Instant::parse(&full)
        }
    };
    at.ok_or_else(|| {
        Error::usage(format!(
            "bad DATE {text:?}: give 2026-05-01, 2026-05-01T12:00 or how long ago (30m, 12h, 3d, 2w)"
        ))
    })
}

/// Days since 1970-01-01 of `YYYY-MM-DD`.
fn date(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let part = |s: &str| {
        s.parse::<i64>()
            .ok()
            .filter(|_| s.bytes().all(|c| c.is_ascii_digit()))
    };
    let (year, month, day) = (part(&text[..4])?, part(&text[5..7])?, part(&text[8..])?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    Some(days_from_civil(year, month as u32, day as u32))
}

/// Days since 1970-01-01 of a date (Howard Hinnant's `days_from_civil`).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = (i64::from(month) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Year, month, day of a count of days since 1970-01-01 (Howard Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_timestamps_read_as_instants() {
        let at = Instant::parse("2026-05-11T10:29:40.150Z").unwrap();
        assert_eq!(at.rfc3339(), "2026-05-11T10:29:40.150Z");
        assert_eq!(at.minutes(), "2026-05-11 10:29Z");
        assert_eq!(
            Instant::parse("2026-05-11T12:29:40.15+02:00"),
            Some(at),
            "offsets and short fractions"
        );
        assert_eq!(
            Instant::parse("2026-05-11T10:29:40.150123456Z"),
            Some(at),
            "long fractions"
        );
        assert_eq!(
            Instant::parse("1786622042861"),
            Some(Instant(1_786_622_042_861))
        );
        assert_eq!(
            Instant::parse("1970-01-01T00:00Z"),
            Some(Instant(0)),
            "no seconds"
        );
        for bad in [
            "",
            "2026-05-11",
            "2026-13-01T00:00Z",
            "yesterday",
            "2026-05-11T25:00Z",
        ] {
            assert_eq!(Instant::parse(bad), None, "{bad}");
        }
        assert_eq!(Instant(-1).rfc3339(), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn file_times_round_trip_to_the_nanosecond() {
        use std::time::Duration;
        let at = UNIX_EPOCH + Duration::new(1_796_080_867, 123_456_789);
        assert_eq!(nanos(at), "2026-11-30T23:21:07.123456789Z");
        assert_eq!(parse_nanos("2026-11-30T23:21:07.123456789Z"), Some(at));
        assert_eq!(
            parse_nanos("2026-11-30T23:21:07Z"),
            Some(at - Duration::from_nanos(123_456_789))
        );
        let before = UNIX_EPOCH - Duration::new(1, 250_000_000);
        assert_eq!(nanos(before), "1969-12-31T23:59:58.750000000Z");
        assert_eq!(parse_nanos(&nanos(before)), Some(before));
        for bad in [
            "",
            "2026-11-30T23:21:07.1234567890Z",
            "2026-11-30T23:21:07+01:00",
            "2026-11-30T23:21Z",
            "2026-11-30T23:21:07.12a Z",
            "yesterday",
        ] {
            assert_eq!(parse_nanos(bad), None, "{bad}");
        }
    }

    #[test]
    fn since_takes_dates_times_and_ages() {
        let now = Instant::parse("2026-05-11T10:00:00Z").unwrap();
        assert_eq!(
            since("2026-05-01", now).unwrap().rfc3339(),
            "2026-05-01T00:00:00.000Z"
        );
        assert_eq!(
            since("2026-05-01T12:30", now).unwrap().rfc3339(),
            "2026-05-01T12:30:00.000Z"
        );
        assert_eq!(
            since("2026-05-01T12:30:00+02:00", now).unwrap().rfc3339(),
            "2026-05-01T10:30:00.000Z"
        );
        assert_eq!(
            since("3d", now).unwrap().rfc3339(),
            "2026-05-08T10:00:00.000Z"
        );
        assert_eq!(
            since("2w", now).unwrap().rfc3339(),
            "2026-04-27T10:00:00.000Z"
        );
        assert_eq!(
            since("90m", now).unwrap().rfc3339(),
            "2026-05-11T08:30:00.000Z"
        );
        for bad in ["soon", "3 days", "d", "2026-5-1"] {
            assert!(since(bad, now).is_err(), "{bad}");
        }
    }

    #[test]
    fn civil_days_round_trip() {
        for days in [-719_468, -1, 0, 11_016, 20_586, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
