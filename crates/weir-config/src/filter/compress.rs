//! `kind = "compress"`: responses encoded with gzip, brotli or zstd, chosen by the request's
//! `Accept-Encoding` (q-values; the filter's `encodings` order breaks ties), for the listed
//! media types and at least `min_bytes` long. The rules of when not to compress (already
//! encoded, `no-transform`, ranges, HEAD, bodiless statuses) are the data plane's.

use super::fields;
use crate::read::{self, Fields, Sink};

const KEYS: &[&str] = &[
    "encodings",
    "gzip_level",
    "brotli_level",
    "zstd_level",
    "content_types",
    "min_bytes",
];

/// One content coding weir can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    Zstd,
    Br,
    Gzip,
}

impl Encoding {
    /// The coding's token in `Accept-Encoding` and `Content-Encoding`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Encoding::Zstd => "zstd",
            Encoding::Br => "br",
            Encoding::Gzip => "gzip",
        }
    }
}

const ENCODINGS: &[(&str, Encoding)] = &[
    ("zstd", Encoding::Zstd),
    ("br", Encoding::Br),
    ("gzip", Encoding::Gzip),
];

/// zstd first: at its default level it is about as fast as gzip's level 1 and smaller than
/// gzip's 6; brotli next (smaller than gzip for text); gzip, which every client takes, last.
pub const DEFAULT_ENCODINGS: &[Encoding] = &[Encoding::Zstd, Encoding::Br, Encoding::Gzip];
/// zlib's own default: most of level 9's ratio at a third of its CPU.
pub const DEFAULT_GZIP_LEVEL: u32 = 6;
/// Brotli's levels above 4 cost several times the CPU for a few percent: 4 is about
/// gzip 6's CPU with a smaller result (levels 10 and 11 are for precompressed files).
pub const DEFAULT_BROTLI_LEVEL: u32 = 4;
/// zstd's own default.
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;
/// Below about 1 KiB the coding's framing and the CPU outweigh what is saved.
pub const DEFAULT_MIN_BYTES: u64 = 1024;
/// Textual types that compress well; images other than SVG, audio, video and archives are
/// compressed already.
pub const DEFAULT_CONTENT_TYPES: &[&str] = &[
    "text/*",
    "application/json",
    "application/javascript",
    "application/x-javascript",
    "application/ecmascript",
    "application/xml",
    "application/xhtml+xml",
    "application/rss+xml",
    "application/atom+xml",
    "application/ld+json",
    "application/manifest+json",
    "application/problem+json",
    "application/graphql-response+json",
    "application/wasm",
    "application/x-ndjson",
    "image/svg+xml",
    "image/x-icon",
    "image/vnd.microsoft.icon",
    "font/ttf",
    "font/otf",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compress {
    /// The codings offered, the preferred first (for codings the client weighs equally).
    pub encodings: Vec<Encoding>,
    /// 1..=9.
    pub gzip_level: u32,
    /// 0..=11.
    pub brotli_level: u32,
    /// 1..=19.
    pub zstd_level: i32,
    /// Lower-cased `type/subtype`, or `type/*` for every subtype.
    pub content_types: Vec<String>,
    /// A response whose Content-Length is under this is sent as it is.
    pub min_bytes: u64,
}

impl Default for Compress {
    fn default() -> Self {
        Compress {
            encodings: DEFAULT_ENCODINGS.to_vec(),
            gzip_level: DEFAULT_GZIP_LEVEL,
            brotli_level: DEFAULT_BROTLI_LEVEL,
            zstd_level: DEFAULT_ZSTD_LEVEL,
            content_types: DEFAULT_CONTENT_TYPES
                .iter()
                .map(|s| s.to_string())
                .collect(),
            min_bytes: DEFAULT_MIN_BYTES,
        }
    }
}

pub(super) fn read(sink: &mut Sink<'_>, t: &Fields<'_, '_>) -> Compress {
    t.check_keys(sink, &fields::keys(KEYS));
    let mut c = Compress::default();
    if let Some(n) = t.int(sink, "gzip_level", 1..=9) {
        c.gzip_level = n;
    }
    if let Some(n) = t.int(sink, "brotli_level", 0..=11) {
        c.brotli_level = n;
    }
    if let Some(n) = t.int(sink, "zstd_level", 1..=19) {
        c.zstd_level = n;
    }
    if let Some(v) = t.get("min_bytes") {
        match read::size(v) {
            Ok(n) => c.min_bytes = n,
            Err(e) => sink.error(v.span(), format!("invalid min_bytes: {e}")),
        }
    }
    if let Some(v) = t.get("encodings") {
        let items = fields::strings(sink, v);
        if items.is_empty() && read::array_len(v) == Some(0) {
            sink.error(
                v.span(),
                "encodings is empty; list at least one of: zstd, br, gzip",
            );
        }
        c.encodings.clear();
        for (s, span) in items {
            let Some(&(_, e)) = ENCODINGS.iter().find(|(n, _)| *n == s) else {
                let names = ENCODINGS.iter().map(|(n, _)| *n);
                let hint = match s.to_ascii_lowercase().as_str() {
                    "brotli" => ", did you mean \"br\"?".to_string(),
                    "x-gzip" => ", did you mean \"gzip\"?".to_string(),
                    _ => crate::suggest::did_you_mean(&s, names),
                };
                sink.error(
                    span,
                    format!("unknown encoding \"{s}\"{hint} (expected one of: zstd, br, gzip)"),
                );
                continue;
            };
            if c.encodings.contains(&e) {
                sink.error(span, format!("encoding \"{s}\" is listed twice"));
                continue;
            }
            c.encodings.push(e);
        }
    }
    if let Some(v) = t.get("content_types") {
        let items = fields::strings(sink, v);
        if items.is_empty() && read::array_len(v) == Some(0) {
            sink.error(
                v.span(),
                "content_types is empty; list the media types to compress, e.g. \"text/*\"",
            );
        }
        c.content_types.clear();
        for (s, span) in items {
            match media_type(&s) {
                Ok(m) if c.content_types.contains(&m) => {
                    sink.error(span, format!("content type \"{s}\" is listed twice"))
                }
                Ok(m) => c.content_types.push(m),
                Err(e) => sink.error(span, format!("invalid content type \"{s}\": {e}")),
            }
        }
    }
    c
}

/// `type/subtype` or `type/*`, lower-cased; both parts RFC 9110 tokens.
fn media_type(s: &str) -> Result<String, &'static str> {
    if s.contains(';') {
        return Err("give the media type without parameters (it is matched without them)");
    }
    let Some((ty, sub)) = s.split_once('/') else {
        return Err("expected type/subtype, such as \"text/html\" or \"text/*\"");
    };
    let token = |p: &str| {
        !p.is_empty()
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    if ty == "*" {
        return Err("a wildcard type would compress images, video and archives too; list the types (\"text/*\" is allowed)");
    }
    if !token(ty) || !token(sub) || ty.contains('*') || (sub.contains('*') && sub != "*") {
        return Err("expected type/subtype, such as \"text/html\" or \"text/*\"");
    }
    Ok(s.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types() {
        assert_eq!(media_type("Text/HTML").unwrap(), "text/html");
        assert_eq!(media_type("text/*").unwrap(), "text/*");
        assert_eq!(
            media_type("image/svg+xml").unwrap(),
            "image/svg+xml".to_string()
        );
        assert!(media_type("text/html; charset=utf-8").is_err());
        assert!(media_type("*/*").is_err());
        assert!(media_type("text").is_err());
        assert!(media_type("text/").is_err());
        assert!(media_type("te xt/html").is_err());
        assert!(media_type("text/ht*").is_err());
    }
}
