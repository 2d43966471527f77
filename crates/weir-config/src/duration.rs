//! Duration strings: an integer and a unit, `"250ms"`, `"5s"`, `"2m"`, `"1h"`.
//!
//! Deliberately small: one number, one unit, no fractions, no sums ("1m30s").
//! A config read by humans under pressure should have one way to say a time.

use std::time::Duration;

/// Durations longer than this are rejected: nothing in weir needs more, and it
/// keeps `Instant::now() + d` far from overflow in the data plane.
pub const MAX: Duration = Duration::from_secs(365 * 24 * 3600);

const UNITS: &str = "ms, s, m or h";

/// Parses `s`; zero is accepted here (callers that need a positive value check).
pub fn parse(s: &str) -> Result<Duration, String> {
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(digits);
    if s.is_empty() {
        return Err("empty duration; write e.g. \"5s\"".into());
    }
    if num.is_empty() {
        return Err(if s.starts_with('-') {
            format!("invalid duration \"{s}\": durations cannot be negative")
        } else {
            format!("invalid duration \"{s}\": expected a whole number and a unit ({UNITS}), e.g. \"5s\"")
        });
    }
    if unit.is_empty() {
        return Err(format!(
            "invalid duration \"{s}\": missing unit; write e.g. \"{num}s\" or \"{num}ms\" (units: {UNITS})"
        ));
    }
    if unit.starts_with('.') {
        return Err(format!(
            "invalid duration \"{s}\": fractions are not supported; use a smaller unit, e.g. \"1500ms\" instead of \"1.5s\""
        ));
    }
    let per_unit = match unit {
        "ms" => Duration::from_millis(1),
        "s" => Duration::from_secs(1),
        "m" => Duration::from_secs(60),
        "h" => Duration::from_secs(3600),
        _ => {
            return Err(format!(
                "invalid duration \"{s}\": unknown unit `{unit}`; use {UNITS}"
            ))
        }
    };
    let too_large = || format!("duration \"{s}\" is too large (at most 8760h)");
    let n: u32 = num.parse().map_err(|_| too_large())?;
    per_unit
        .checked_mul(n)
        .filter(|d| *d <= MAX)
        .ok_or_else(too_large)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_each_unit() {
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
        assert_eq!(parse("8760h"), Ok(MAX));
    }

    #[test]
    fn rejects_with_a_reason() {
        for (s, why) in [
            ("5", "missing unit"),
            ("-1s", "negative"),
            ("1.5s", "fractions"),
            ("5 s", "unknown unit"),
            ("5S", "unknown unit"),
            ("", "empty"),
            ("s", "whole number"),
            ("8761h", "too large"),
            ("99999999999999999999s", "too large"),
        ] {
            let err = parse(s).unwrap_err();
            assert!(err.contains(why), "{s:?}: {err}");
        }
    }
}
