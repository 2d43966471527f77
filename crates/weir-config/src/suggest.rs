//! "did you mean `x`?" — the closest candidate by edit distance, if close enough
//! to be a likely typo rather than a different word; and the message for a name that
//! refers to nothing (`missing`), which every cross-table rule gives.

/// The best candidate within a distance that scales with the word's length
/// (1 for short words, about a third of the length for long ones).
pub(crate) fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let word = word.to_lowercase();
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter_map(|c| {
            let lc = c.to_lowercase();
            let d = distance(&word, &lc);
            // A shortened or lengthened name (`drain` for `drain_grace`) is far
            // in edits but obviously meant; rank it just inside the limit.
            let affix = word.len() >= 4 && (lc.starts_with(&word) || word.starts_with(&lc));
            match (d <= limit, affix) {
                (true, _) => Some((d, c)),
                (false, true) => Some((limit, c)),
                _ => None,
            }
        })
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// ", did you mean `x`?" or nothing — ready to append to a message.
pub(crate) fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> String {
    closest(word, candidates).map_or_else(String::new, |c| format!(", did you mean `{c}`?"))
}

/// Levenshtein distance over chars, with adjacent transpositions counted as
/// one edit (optimal string alignment) because swapped letters are the
/// commonest typo.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    d[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// The most names listed when none is close to a missing one.
const LISTED_NAMES: usize = 10;

/// "no pool named `ap`, did you mean `app`?" with some existing names as fallback.
pub(crate) fn missing(kind: &str, plural: &str, name: &str, existing: Vec<&str>) -> String {
    let hint = match closest(name, existing.iter().copied()) {
        Some(s) => format!(", did you mean `{s}`?"),
        None if existing.is_empty() => format!(" (no {plural} are defined)"),
        None if existing.len() > LISTED_NAMES => format!(
            " (defined {plural}: {}, and {} more)",
            existing[..LISTED_NAMES].join(", "),
            existing.len() - LISTED_NAMES
        ),
        None => format!(" (defined {plural}: {})", existing.join(", ")),
    };
    format!("no {kind} named `{name}`{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_typos_not_strangers() {
        let keys = ["bind", "protocol", "pool", "idle_timeout"];
        assert_eq!(closest("bnd", keys), Some("bind"));
        assert_eq!(closest("protcol", keys), Some("protocol"));
        assert_eq!(closest("pooll", keys), Some("pool"));
        assert_eq!(closest("idel_timeout", keys), Some("idle_timeout"));
        assert_eq!(closest("BIND", keys), Some("bind"));
        assert_eq!(closest("idle", keys), Some("idle_timeout"));
        assert_eq!(closest("pools", keys), Some("pool"));
        assert_eq!(closest("weight", keys), None);
        assert_eq!(distance("abc", "acb"), 1);
    }
}
