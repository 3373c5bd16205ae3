//! Numbers, counts, durations and paths for people: byte sizes in binary units, ratios, `1 session`
//! against `2 sessions`, `30m`, and paths under `$HOME` as `~/…`. JSON output keeps numbers and
//! full paths as they are.

use std::path::Path;
use std::time::Duration;

/// `1536` → `1.5 KiB`; below 1 KiB, plain bytes.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `a / b`, or 0 when `b` is 0.
pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// `  [2 generations]` after a session kept in earlier versions too; nothing when it has none.
pub fn generations(n: usize) -> String {
    match n {
        0 => String::new(),
        1 => "  [1 generation]".into(),
        n => format!("  [{n} generations]"),
    }
}

/// `1 session`, `2 sessions`, `0 sessions`: every noun ctxfold counts takes an `s`.
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    match n.into() {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

/// `path` as people read it: under `$HOME`, `~/…`, so that lines stay short; elsewhere as it is.
/// Every path in human output goes through this; `--json` output keeps full paths.
pub fn path(path: &Path) -> String {
    tilde(path, super::env_path("HOME").as_deref())
}

fn tilde(path: &Path, home: Option<&Path>) -> String {
    // A home of `/` would make every absolute path `~/…`: no shorter, only confusing.
    let home = home.filter(|h| h.is_absolute() && h.parent().is_some());
    match home.map(|home| path.strip_prefix(home)) {
        Some(Ok(rest)) if rest.as_os_str().is_empty() => "~".into(),
        Some(Ok(rest)) => format!("~/{}", rest.display()),
        _ => path.display().to_string(),
    }
}

/// A session's start (see `agents::place::started`) to the minute with its zone: in UTC
/// `2026-05-11T11:26:55Z` as `2026-05-11 11:26Z`, as ctxfold shows every time; one with no zone
/// (its agent's local time, zone unknown) as `2026-05-11 11:26 local`; an unknown one as `-`.
pub fn minute(time: Option<&str>) -> String {
    time.map_or("-".into(), |t| {
        let zone = if t.ends_with('Z') { "Z" } else { " local" };
        let minute: String = t.replacen('T', " ", 1).chars().take(16).collect();
        minute + zone
    })
}

/// The width of [`minute`]'s longest.
pub const MINUTE: usize = "2026-05-11 11:26 local".len();

/// A duration as people type one: `now`, or a whole number with `s`, `m`, `h`, `d` or `w` (`30m`,
/// `2d`). The value parser of every option that takes an age.
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    if text == "now" {
        return Ok(Duration::ZERO);
    }
    let (number, unit) = number_and_unit(text, "`now` or a number with a unit, like 2h")?;
    let seconds = UNITS
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|(_, seconds)| *seconds)
        .ok_or_else(|| format!("{text:?}: the unit must be s, m, h, d or w"))?;
    Ok(Duration::from_secs(number.saturating_mul(seconds)))
}

/// A size as people type one: a whole number of bytes, or with `K`, `M`, `G` or `T` (binary units,
/// either case, an optional `iB`/`B`: `512M`, `1GiB`). The value parser of every option that takes
/// a size.
pub fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let (number, unit) = number_and_unit(text, "a number of bytes, like 512M or 2G")?;
    let unit = unit.to_ascii_uppercase();
    let unit = unit
        .strip_suffix("IB")
        .or_else(|| unit.strip_suffix('B'))
        .unwrap_or(&unit);
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("{text:?}: the unit must be K, M, G or T")),
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{text:?}: too large"))
}

/// `text`'s leading whole number and what follows it; else an error saying `expected`.
fn number_and_unit<'t>(
    text: &'t str,
    expected: &str,
) -> std::result::Result<(u64, &'t str), String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number = number
        .parse()
        .map_err(|_| format!("{text:?}: expected {expected}"))?;
    Ok((number, unit))
}

/// A duration in the largest unit that divides it (`7d`, `90m`): how [`parse_duration`] reads it.
pub fn duration(d: Duration) -> String {
    let secs = d.as_secs();
    match UNITS
        .iter()
        .rev()
        .find(|(_, unit)| secs.is_multiple_of(*unit) && secs > 0)
    {
        Some((name, unit)) => format!("{}{name}", secs / unit),
        None => format!("{secs}s"),
    }
}

const UNITS: [(&str, u64); 5] = [
    ("s", 1),
    ("m", 60),
    ("h", 3600),
    ("d", 86_400),
    ("w", 604_800),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_units_and_nonsense_is_refused() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("3KB"), Ok(3 << 10));
        assert!(parse_size("").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("1X").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn counts_paths_and_durations_read_well() {
        assert_eq!(count(1u64, "session"), "1 session");
        assert_eq!(count(0u64, "session"), "0 sessions");
        let home = Path::new("/home/a");
        assert_eq!(
            tilde(Path::new("/home/a/.codex/x"), Some(home)),
            "~/.codex/x"
        );
        assert_eq!(tilde(Path::new("/home/a"), Some(home)), "~");
        assert_eq!(tilde(Path::new("/home/ab/x"), Some(home)), "/home/ab/x");
        assert_eq!(tilde(Path::new("/x"), Some(Path::new("/"))), "/x");
        assert_eq!(tilde(Path::new("/x"), None), "/x");
        assert_eq!(parse_duration("now"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2w"), Ok(Duration::from_secs(2 * 604_800)));
        assert!(parse_duration("2 weeks").is_err() && parse_duration("h").is_err());
        assert_eq!(duration(Duration::from_secs(7 * 86_400)), "1w");
        assert_eq!(duration(Duration::from_secs(2 * 86_400)), "2d");
        assert_eq!(duration(Duration::from_secs(5400)), "90m");
        assert_eq!(duration(Duration::ZERO), "0s");
        assert_eq!(
            minute(Some("2026-05-11T11:26:55")),
            "2026-05-11 11:26 local"
        );
        assert_eq!(minute(Some("2026-05-11T11:26:55Z")), "2026-05-11 11:26Z");
        assert_eq!(minute(None), "-");
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(super::bytes(0), "0 B");
        assert_eq!(super::bytes(1536), "1.5 KiB");
        assert_eq!(super::bytes(3 << 30), "3.0 GiB");
        assert_eq!(super::ratio(1, 0), 0.0);
    }
}
