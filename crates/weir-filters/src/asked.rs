//! What a request's `Accept-Encoding` asked (RFC 9110 §12.5.3: q-values, `q=0` refuses, `*`
//! for any coding not named, `identity` weighed too) and whether it asked for a range: noted
//! in the request phase of a compress filter (kept in `Cx`), decided on in its response phase.

use http::header::{HeaderMap, ACCEPT_ENCODING, RANGE};
use weir_config::filter::Encoding;

/// A q-value in thousandths (`q=0.5` is 500).
type Q = u16;

/// What a request's `Accept-Encoding` said, and whether it asked for a range.
#[derive(Debug, Clone, Copy, Default)]
pub struct Asked {
    /// zstd, br, gzip (as `slot`), when named.
    named: [Option<Q>; 3],
    star: Option<Q>,
    identity: Option<Q>,
    pub(crate) range: bool,
}

fn slot(e: Encoding) -> usize {
    match e {
        Encoding::Zstd => 0,
        Encoding::Br => 1,
        Encoding::Gzip => 2,
    }
}

impl Asked {
    pub(crate) fn read(h: &HeaderMap) -> Asked {
        let mut a = Asked {
            range: h.contains_key(RANGE),
            ..Asked::default()
        };
        for v in h.get_all(ACCEPT_ENCODING) {
            let Ok(v) = v.to_str() else { continue };
            for item in v.split(',') {
                let mut parts = item.split(';');
                let coding = parts.next().unwrap_or("").trim();
                if coding.is_empty() {
                    continue;
                }
                let mut q = Some(1000);
                for p in parts {
                    if let Some((k, v)) = p.split_once('=') {
                        if k.trim().eq_ignore_ascii_case("q") {
                            q = qvalue(v.trim());
                        }
                    }
                }
                // An element whose weight does not parse is left out.
                let Some(q) = q else { continue };
                let at = match coding.to_ascii_lowercase().as_str() {
                    "zstd" => &mut a.named[0],
                    "br" => &mut a.named[1],
                    "gzip" | "x-gzip" => &mut a.named[2],
                    "*" => &mut a.star,
                    "identity" => &mut a.identity,
                    _ => continue,
                };
                // The first mention counts.
                at.get_or_insert(q);
            }
        }
        a
    }

    /// The coding to use from `prefs` (preference order), if any beats identity.
    pub(crate) fn choose(&self, prefs: &[Encoding]) -> Option<Encoding> {
        let mut best: Option<(Encoding, Q)> = None;
        for &e in prefs {
            let q = self.named[slot(e)].or(self.star).unwrap_or(0);
            if q > 0 && best.is_none_or(|(_, b)| q > b) {
                best = Some((e, q));
            }
        }
        let (e, q) = best?;
        // identity weighs in only when named: unnamed, it is the fallback, not a rival.
        match self.identity {
            Some(i) if i > q => None,
            _ => Some(e),
        }
    }
}

/// `0`, `0.5`, `1`, `1.000` (RFC 9110 §12.4.2) in thousandths.
pub(crate) fn qvalue(s: &str) -> Option<Q> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut f = 0;
    for (i, b) in frac.bytes().enumerate() {
        f += Q::from(b - b'0') * [100, 10, 1][i];
    }
    match int {
        "0" => Some(f),
        "1" if f == 0 => Some(1000),
        _ => None,
    }
}
