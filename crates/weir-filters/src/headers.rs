//! `kind = "headers"`: request fields changed before the request goes upstream, response
//! fields before the answer goes to the client; and the request id.

use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response};

use crate::cx::{Cx, Reads};
use crate::kind::Kind;
use crate::statics;
use crate::template::Value;
use crate::verdict::{Later, Verdict};
use weir_codec::client_body::ClientBody;
use weir_http::body::ProxyBody;

/// The longest request id kept from a client.
const MAX_ID: usize = 200;

#[derive(Debug)]
pub struct Headers {
    request: Ops,
    response: Ops,
    request_id: Option<HeaderName>,
}

#[derive(Debug, Default)]
struct Ops {
    remove: Vec<HeaderName>,
    set: Vec<(HeaderName, Value)>,
    add: Vec<(HeaderName, Value)>,
}

impl Ops {
    fn build(o: &weir_config::filter::HeaderOps) -> Ops {
        // Names were checked and lower-cased by the config.
        let name = |n: &String| statics::name(n);
        let pair = |(n, t): &(String, weir_config::filter::Template)| {
            name(n).map(|n| (n, Value::build(t)))
        };
        Ops {
            remove: o.remove.iter().filter_map(name).collect(),
            set: o.set.iter().filter_map(pair).collect(),
            add: o.add.iter().filter_map(pair).collect(),
        }
    }

    fn reads(&self) -> impl Iterator<Item = Reads> + '_ {
        self.set.iter().chain(&self.add).map(|(_, v)| v.reads())
    }

    fn apply(&self, cx: &mut Cx<'_>, h: &mut HeaderMap) {
        for n in &self.remove {
            h.remove(n);
        }
        for (n, v) in &self.set {
            match v.make(cx) {
                Some(v) => h.insert(n.clone(), v),
                None => h.remove(n),
            };
        }
        for (n, v) in &self.add {
            if let Some(v) = v.make(cx) {
                h.append(n.clone(), v);
            }
        }
    }
}

impl Headers {
    pub fn build(h: &weir_config::filter::HeaderRules) -> Headers {
        Headers {
            request: Ops::build(&h.request),
            response: Ops::build(&h.response),
            request_id: h.request_id.as_deref().and_then(statics::name),
        }
    }
}

impl Kind for Headers {
    fn build(_name: &str, f: &weir_config::Filter) -> Option<Result<Self, String>> {
        let weir_config::Filter::Headers(h) = f else {
            return None;
        };
        Some(Ok(Headers::build(h)))
    }

    /// What the values' variables read of the request as it arrived.
    fn reads(&self) -> Reads {
        let all = self.request.reads().chain(self.response.reads());
        all.fold(Reads::default(), Reads::or)
    }

    fn request(&self, cx: &mut Cx<'_>, req: &mut Request<ClientBody>) -> Verdict {
        if let Some(name) = &self.request_id {
            // A client's id is believed only from a proxy the listener trusts; anyone else
            // could pick ids to collide with other requests' in the logs.
            let theirs = cx
                .conn
                .trusted
                .as_ref()
                .and_then(|_| req.headers().get(name))
                .filter(|v| valid_id(v))
                .cloned();
            let id = match theirs {
                Some(v) => cx.request_id.insert(v).clone(),
                None => cx.request_id(),
            };
            req.headers_mut().insert(name.clone(), id);
        }
        self.request.apply(cx, req.headers_mut());
        Verdict::Continue
    }

    fn response(&self, cx: &mut Cx<'_>, resp: &mut Response<ProxyBody>) -> Later {
        self.response.apply(cx, resp.headers_mut());
        if let (Some(name), Some(id)) = (&self.request_id, &cx.request_id) {
            resp.headers_mut().insert(name.clone(), id.clone());
        }
        Later::Done
    }
}

fn valid_id(v: &HeaderValue) -> bool {
    let b = v.as_bytes();
    !b.is_empty() && b.len() <= MAX_ID && b.iter().all(|c| c.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_id::new_request_id;

    #[test]
    fn request_ids_are_32_hex_digits_using_all_of_them() {
        let ids: Vec<HeaderValue> = (0..64).map(|_| new_request_id()).collect();
        let mut seen = std::collections::HashSet::new();
        for id in &ids {
            let b = id.as_bytes();
            assert_eq!(b.len(), 32, "{id:?}");
            assert!(b
                .iter()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
            seen.extend(b.iter().copied());
        }
        assert_eq!(
            seen.len(),
            16,
            "every hex digit turns up in 2048 random ones"
        );
        let distinct: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len());
    }
}
