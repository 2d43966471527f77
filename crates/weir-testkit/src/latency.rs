//! Artificial service time of a fake upstream.

use std::str::FromStr;
use std::time::Duration;

use rand::Rng;

/// How long the fake backend "works" on a request (while holding its concurrency slot).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Latency {
    #[default]
    None,
    Fixed(Duration),
    /// Uniform between min and max (inclusive).
    Uniform(Duration, Duration),
    /// Exponential with the given mean: the long tail real services have.
    Exponential {
        mean: Duration,
    },
}

impl Latency {
    /// One draw.
    pub fn sample(&self) -> Duration {
        match *self {
            Latency::None => Duration::ZERO,
            Latency::Fixed(d) => d,
            Latency::Uniform(min, max) if max <= min => min,
            Latency::Uniform(min, max) => {
                let ns = rand::rng().random_range(nanos(min)..=nanos(max));
                Duration::from_nanos(ns)
            }
            Latency::Exponential { mean } => {
                // Inverse CDF; 1-u is in (0, 1] so ln is finite.
                let u: f64 = rand::random();
                mean.mul_f64(-(1.0 - u).ln())
            }
        }
    }
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

/// `none`, `fixed:5ms` (or just `5ms`), `uniform:1ms-5ms`, `exp:20ms`.
impl FromStr for Latency {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("none") || s == "0" {
            return Ok(Latency::None);
        }
        let (kind, arg) = s.split_once(':').unwrap_or(("fixed", s));
        match kind {
            "fixed" => Ok(Latency::Fixed(parse_duration(arg)?)),
            "exp" | "exponential" => Ok(Latency::Exponential {
                mean: parse_duration(arg)?,
            }),
            "uniform" => {
                let (a, b) = arg
                    .split_once('-')
                    .ok_or_else(|| format!("uniform latency needs MIN-MAX, got {arg:?}"))?;
                let (a, b) = (parse_duration(a)?, parse_duration(b)?);
                if b < a {
                    return Err(format!("uniform latency: {b:?} < {a:?}"));
                }
                Ok(Latency::Uniform(a, b))
            }
            other => Err(format!(
                "unknown latency kind {other:?} (none, fixed:D, uniform:A-B, exp:MEAN)"
            )),
        }
    }
}

/// `250ms`, `1.5s`, `300us`, `2m`, `10ns`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("duration {s:?} needs a unit (ns, us, ms, s, m)"))?;
    let (num, unit) = s.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("bad number in duration {s:?}"))?;
    let secs = match unit {
        "ns" => n / 1e9,
        "us" | "µs" => n / 1e6,
        "ms" => n / 1e3,
        "s" => n,
        "m" => n * 60.0,
        _ => return Err(format!("bad unit in duration {s:?} (ns, us, ms, s, m)")),
    };
    Duration::try_from_secs_f64(secs).map_err(|e| format!("duration {s:?}: {e}"))
}
