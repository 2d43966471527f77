//! Where the config lives in etcd. Each resource is one key, `{prefix}/{kind}/{name}`, holding
//! its JSON spec (the admin API's body); its version is the key's `mod_revision`. Every commit
//! also writes `{prefix}/meta/revision` and compares its `mod_revision` in the same
//! transaction, so commits from different replicas happen one at a time, each validated
//! against the whole config the one before it left.

use std::sync::Arc;

use weir_store::{Kind, State, Versioned};

#[derive(Debug, Clone)]
pub struct Layout {
    /// `/weir`: no trailing slash.
    prefix: String,
}

/// A key under the prefix that is not a resource weir can read, and why; it is ignored.
#[derive(Debug, thiserror::Error)]
#[error("{key}: {why}")]
pub struct Bad {
    pub key: String,
    pub why: String,
}

/// What one key under the prefix holds.
pub enum Entry {
    Resource(Kind, String, Versioned),
    /// weir's own bookkeeping (`meta/...`).
    Meta,
}

impl Layout {
    pub fn new(prefix: &str) -> Layout {
        Layout {
            prefix: prefix.trim_end_matches('/').to_string(),
        }
    }

    /// The prefix, without a trailing `/`.
    pub fn prefix(&self) -> String {
        self.prefix.clone()
    }

    /// Every key weir reads and watches starts with this.
    pub fn range(&self) -> String {
        format!("{}/", self.prefix)
    }

    pub fn key(&self, kind: Kind, name: &str) -> String {
        format!("{}/{}/{name}", self.prefix, kind.as_str())
    }

    /// The key every commit writes and compares.
    pub fn revision_key(&self) -> String {
        format!("{}/meta/revision", self.prefix)
    }

    /// Reads a key and its value; `mod_revision` is the resource's version.
    pub fn read(&self, key: &[u8], value: &[u8], mod_revision: i64) -> Result<Entry, Bad> {
        let (kind, name) = self.name(key)?;
        let Some((kind, name)) = kind.zip(name) else {
            return Ok(Entry::Meta);
        };
        let bad = |why: String| Bad {
            key: String::from_utf8_lossy(key).into_owned(),
            why,
        };
        let body: serde_json::Value =
            serde_json::from_slice(value).map_err(|e| bad(format!("not JSON: {e}")))?;
        if !body.is_object() {
            return Err(bad("not a JSON object".into()));
        }
        Ok(Entry::Resource(
            kind,
            name,
            Versioned {
                version: mod_revision as u64,
                body: Arc::new(body),
            },
        ))
    }

    /// The kind and name a key stands for; both `None` for `meta/...`.
    pub fn name(&self, key: &[u8]) -> Result<(Option<Kind>, Option<String>), Bad> {
        let bad = |why: &str| Bad {
            key: String::from_utf8_lossy(key).into_owned(),
            why: why.to_string(),
        };
        let key = std::str::from_utf8(key).map_err(|_| bad("the key is not UTF-8"))?;
        let rest = key
            .strip_prefix(&self.range())
            .ok_or_else(|| bad("not under the prefix"))?;
        let (kind, name) = rest.split_once('/').unwrap_or((rest, ""));
        if kind == "meta" {
            return Ok((None, None));
        }
        let kind = Kind::parse(kind).ok_or_else(|| {
            bad(&format!(
                "`{kind}` is not a kind of resource (listener, route, pool, endpoint, certificate, filter)"
            ))
        })?;
        if name.is_empty() {
            return Err(bad("no name after the kind"));
        }
        Ok((Some(kind), Some(name.to_string())))
    }

    /// The state a full read of the prefix gives at `revision`. A key that does not read keeps
    /// what `last` had for it (the last good state), and is reported.
    pub fn state<'a>(
        &self,
        kvs: impl Iterator<Item = (&'a [u8], &'a [u8], i64)>,
        revision: i64,
        last: Option<&State>,
    ) -> (State, Vec<Bad>) {
        let mut state = State {
            revision: revision as u64,
            ..State::default()
        };
        let mut bad = Vec::new();
        for (key, value, mod_revision) in kvs {
            match self.read(key, value, mod_revision) {
                Ok(Entry::Resource(kind, name, v)) => {
                    state.resources.insert((kind, name), v);
                }
                Ok(Entry::Meta) => {}
                Err(b) => {
                    if let (Ok((Some(kind), Some(name))), Some(last)) = (self.name(key), last) {
                        if let Some(v) = last.get(kind, &name) {
                            state.resources.insert((kind, name), v.clone());
                        }
                    }
                    bad.push(b);
                }
            }
        }
        (state, bad)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_read_back() {
        let l = Layout::new("/weir/");
        assert_eq!(
            l.key(Kind::Endpoint, "app/10.0.0.1:80"),
            "/weir/endpoint/app/10.0.0.1:80"
        );
        let Ok(Entry::Resource(k, n, v)) = l.read(
            b"/weir/endpoint/app/10.0.0.1:80",
            br#"{"addr":"10.0.0.1:80"}"#,
            7,
        ) else {
            panic!()
        };
        assert_eq!(
            (k, n.as_str(), v.version),
            (Kind::Endpoint, "app/10.0.0.1:80", 7)
        );
        assert!(matches!(
            l.read(b"/weir/meta/revision", b"1", 3),
            Ok(Entry::Meta)
        ));
        assert!(l.read(b"/weir/pool/app", b"not json", 3).is_err());
        assert!(l.read(b"/weir/pool/app", b"[1]", 3).is_err());
        assert!(l.read(b"/weir/gadget/x", b"{}", 3).is_err());
        assert!(l.read(b"/weir/pool", b"{}", 3).is_err());
    }

    #[test]
    fn a_bad_value_keeps_the_last_good_one() {
        let l = Layout::new("/w");
        let good: Vec<(&[u8], &[u8], i64)> = vec![(b"/w/pool/app", b"{\"a\":1}", 2)];
        let (last, bad) = l.state(good.into_iter(), 2, None);
        assert!(bad.is_empty());
        let broken: Vec<(&[u8], &[u8], i64)> = vec![(b"/w/pool/app", b"{oops", 5)];
        let (now, bad) = l.state(broken.into_iter(), 5, Some(&last));
        assert_eq!(bad.len(), 1);
        assert_eq!(now.get(Kind::Pool, "app").unwrap().version, 2);
    }
}
