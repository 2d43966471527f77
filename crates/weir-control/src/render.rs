//! Resources as a config file: what `export` answers, and what validation reads.
//!
//! Validating a change means validating the whole resulting config with the same code as
//! `weir check`, so the rules live in one place (weir-config). That code reports problems at
//! a line and column of TOML text, so the text is generated here together with a map from
//! each position back to the resource field it came from; the API then names the field.

use std::fmt::Write;

use serde_json::Value;
use weir_store::{Kind, State};

/// Where a piece of generated text came from: `pools/app/health/timeout`.
#[derive(Debug, Clone)]
struct Origin {
    line: usize,
    /// 1-based, inclusive start and exclusive end, in characters; a table header covers the line.
    cols: std::ops::Range<usize>,
    field: String,
}

/// Generated TOML and the origin of each key and value in it.
#[derive(Debug, Default)]
pub struct Rendered {
    pub text: String,
    origins: Vec<Origin>,
    line: usize,
}

impl Rendered {
    /// The field a diagnostic at (`line`, `col`) is about: the key or value under it, else the
    /// table it is in.
    pub fn field_at(&self, line: usize, col: usize) -> Option<&str> {
        let on_line = || self.origins.iter().filter(move |o| o.line == line);
        on_line()
            .find(|o| o.cols.contains(&col))
            .or_else(|| on_line().max_by_key(|o| o.cols.len()))
            .or_else(|| {
                self.origins
                    .iter()
                    .rev()
                    .find(|o| o.line < line && o.cols.start == 1)
            })
            .map(|o| o.field.as_str())
    }

    fn push_line(&mut self, text: &str, origins: Vec<(std::ops::Range<usize>, String)>) {
        self.line += 1;
        for (cols, field) in origins {
            self.origins.push(Origin {
                line: self.line,
                cols,
                field,
            });
        }
        self.text.push_str(text);
        self.text.push('\n');
    }
}

/// The process settings written before the resources (`[admin]`, `[global]`), as TOML.
pub type Preamble = String;

/// `state` as a config file. Endpoints appear in their pool's `endpoints` array; a lease's
/// `ttl` is not a config key and is left out.
pub fn render(state: &State, preamble: &str) -> Rendered {
    let mut out = Rendered::default();
    for line in preamble.lines() {
        out.push_line(line, Vec::new());
    }
    for (kind, section) in [
        (Kind::Listener, "listeners"),
        (Kind::Route, "routes"),
        (Kind::Pool, "pools"),
        (Kind::Certificate, "certificates"),
        (Kind::Filter, "filters"),
    ] {
        for (name, v) in state.of_kind(kind) {
            let path = format!("{section}/{name}");
            let header = format!("[{section}.{}]", key(name));
            if !out.text.is_empty() {
                out.push_line("", Vec::new());
            }
            let width = header.chars().count();
            out.push_line(&header, vec![(1..width + 1, path.clone())]);
            let Some(spec) = v.body.as_object() else {
                continue;
            };
            let mut nested = Vec::new();
            for (k, val) in spec {
                match val {
                    Value::Object(_) => nested.push((k, val)),
                    Value::Null => {}
                    _ => key_value(&mut out, &path, k, val),
                }
            }
            if kind == Kind::Pool {
                endpoints(&mut out, state, name, &path);
            }
            for (k, val) in nested {
                let sub = format!("{path}/{k}");
                let header = format!("[{section}.{}.{}]", key(name), key(k));
                let width = header.chars().count();
                out.push_line(&header, vec![(1..width + 1, sub.clone())]);
                if let Value::Object(m) = val {
                    for (k2, v2) in m {
                        if !v2.is_null() {
                            key_value(&mut out, &sub, k2, v2);
                        }
                    }
                }
            }
        }
    }
    out
}

fn key_value(out: &mut Rendered, path: &str, k: &str, v: &Value) {
    let k_text = key(k);
    let line = format!("{k_text} = {}", value(v));
    let width = line.chars().count();
    out.push_line(&line, vec![(1..width + 1, format!("{path}/{k}"))]);
}

/// One endpoint per line, each key's span mapped to its field.
fn endpoints(out: &mut Rendered, state: &State, pool: &str, path: &str) {
    let eps: Vec<_> = state.endpoints_of(pool).collect();
    if eps.is_empty() {
        return;
    }
    out.push_line("endpoints = [", vec![(1..14, format!("{path}/endpoints"))]);
    for (addr, v) in eps {
        let ep = format!("{path}/endpoints/{addr}");
        let mut line = String::from("  { ");
        let mut origins = Vec::new();
        let mut item = |line: &mut String, k: &str, text: String| {
            let start = line.chars().count() + 1;
            let _ = write!(line, "{} = {text}, ", key(k));
            let end = line.chars().count() - 1;
            origins.push((start..end, format!("{ep}/{k}")));
        };
        // An SRV name has no port: the resource name tells the key.
        let name_key = match addr.starts_with('_') && !addr.contains(':') {
            true => "srv",
            false => "addr",
        };
        item(&mut line, name_key, value(&Value::String(addr.to_owned())));
        if let Some(spec) = v.body.as_object() {
            for (k, val) in spec {
                if k != "ttl" && k != "addr" && k != "srv" && !val.is_null() {
                    item(&mut line, k, value(val));
                }
            }
        }
        line.truncate(line.len() - 2);
        line.push_str(" },");
        // The braces belong to the endpoint as a whole.
        let width = line.chars().count();
        origins.push((1..width + 1, ep.clone()));
        out.push_line(&line, origins);
    }
    out.push_line("]", Vec::new());
}

/// A bare key when TOML allows one, else a quoted one.
fn key(k: &str) -> String {
    let bare = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        k.to_owned()
    } else {
        quote(k)
    }
}

/// JSON's string escapes are a subset of TOML basic strings' (`\uXXXX` for control
/// characters included), so serde_json's quoting is valid TOML.
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn value(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            // `{:?}` keeps the `.0` that makes `1.0` a TOML float.
            (None, Some(f)) => format!("{f:?}"),
            _ => n.to_string(),
        },
        Value::Array(a) => {
            let items: Vec<String> = a.iter().filter(|x| !x.is_null()).map(value).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(m) => {
            let items: Vec<String> = m
                .iter()
                .filter(|(_, x)| !x.is_null())
                .map(|(k, x)| format!("{} = {}", key(k), value(x)))
                .collect();
            format!("{{ {} }}", items.join(", "))
        }
        // Callers skip nulls; an absent key is what null means in a spec.
        Value::Null => "\"\"".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use weir_store::Versioned;

    fn state(items: &[(Kind, &str, Value)]) -> State {
        let mut s = State::default();
        for (k, n, v) in items {
            s.resources.insert(
                (*k, n.to_string()),
                Versioned {
                    version: 1,
                    body: v.clone().into(),
                },
            );
        }
        s
    }

    #[test]
    fn renders_a_valid_file_and_maps_fields_back() {
        let s = state(&[
            (
                Kind::Listener,
                "web",
                json!({"bind": "127.0.0.1:8080", "pool": "app"}),
            ),
            (
                Kind::Pool,
                "app",
                json!({"max_conn": 4, "hash_balance_factor": 1.0, "health": {"check": "tcp", "interval": "bogus"}}),
            ),
            (
                Kind::Endpoint,
                "app/127.0.0.1:9001",
                json!({"weight": 3, "ttl": "5s"}),
            ),
            (Kind::Endpoint, "app/127.0.0.1:9002", json!({"weight": 0})),
        ]);
        let r = render(&s, "[admin]\nlisten = \"127.0.0.1:9901\"");
        let err = weir_config::parse_str(&r.text, "<api>").unwrap_err();
        let fields: Vec<_> = err
            .errors()
            .map(|d| r.field_at(d.line, d.col).unwrap_or("?").to_owned())
            .collect();
        assert!(
            fields.contains(&"pools/app/health/interval".to_owned()),
            "{fields:?}\n{}",
            r.text
        );
        assert!(
            fields.contains(&"pools/app/endpoints/127.0.0.1:9002/weight".to_owned()),
            "{fields:?}\n{}",
            r.text
        );
        assert!(!r.text.contains("ttl"));
        assert!(r.text.contains("hash_balance_factor = 1.0"));
    }
}
