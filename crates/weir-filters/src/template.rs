//! A header value with variables, made per request. A value without variables is made once,
//! when the filter is built.

use http::HeaderValue;
use weir_config::filter::{Piece, Template, Var};

use crate::cx::{Cx, Reads};
use crate::statics;

#[derive(Debug)]
pub struct Value {
    /// Set when the value has no variables.
    fixed: Option<HeaderValue>,
    pieces: Vec<Piece>,
}

impl Value {
    /// What of the request as it arrived the value's variables read.
    pub fn reads(&self) -> Reads {
        self.pieces.iter().fold(Reads::default(), |r, p| match p {
            Piece::Var(Var::Path) => Reads { uri: true, ..r },
            Piece::Var(Var::Host) => Reads { host: true, ..r },
            _ => r,
        })
    }

    pub fn build(t: &Template) -> Value {
        Value {
            // The config check allows only what a header value may hold.
            fixed: t.literal().and_then(statics::value),
            pieces: t.pieces.clone(),
        }
    }

    /// The value for this request; `None` only if a variable's value could not be a header
    /// value (none can: see weir-config's `filter/template.rs`), and then the field is left out.
    pub fn make(&self, cx: &mut Cx<'_>) -> Option<HeaderValue> {
        if let Some(v) = &self.fixed {
            return Some(v.clone());
        }
        if let [Piece::Var(Var::ClientIp)] = self.pieces.as_slice() {
            if cx.client == cx.conn.client.ip() {
                return Some(cx.conn.client_ip.clone());
            }
        }
        let mut out = Vec::with_capacity(64);
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.extend_from_slice(t.as_bytes()),
                Piece::Var(v) => var(cx, *v, &mut out),
            }
        }
        HeaderValue::from_bytes(&out).ok()
    }
}

fn var(cx: &mut Cx<'_>, v: Var, out: &mut Vec<u8>) {
    use std::io::Write;
    match v {
        // The connection's own address is already a header value (X-Forwarded-For's).
        Var::ClientIp if cx.client == cx.conn.client.ip() => {
            out.extend_from_slice(cx.conn.client_ip.as_bytes())
        }
        Var::ClientIp => {
            let _ = write!(out, "{}", cx.client);
        }
        Var::Host => {
            if let Some(h) = cx.host() {
                out.extend_from_slice(h.as_bytes());
            }
        }
        Var::RequestId => out.extend_from_slice(cx.request_id().as_bytes()),
        Var::TlsSni => {
            let sni = cx.conn.tls.as_ref().and_then(|t| t.sni.as_deref());
            out.extend_from_slice(sni.unwrap_or("").as_bytes());
        }
        Var::Scheme => out.extend_from_slice(cx.scheme().as_bytes()),
        Var::Method => out.extend_from_slice(cx.method.as_str().as_bytes()),
        Var::Path => {
            if let Some(u) = cx.uri() {
                out.extend_from_slice(u.path().as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain keeps the request's target and host only for the variables that read them.
    #[test]
    fn values_say_what_they_read() {
        let reads = |vars: &[Var]| {
            let mut pieces = vec![Piece::Text("x".into())];
            pieces.extend(vars.iter().map(|v| Piece::Var(*v)));
            Value::build(&Template { pieces }).reads()
        };
        let none = Reads::default();
        assert_eq!(reads(&[]), none);
        let others = [
            Var::ClientIp,
            Var::Method,
            Var::Scheme,
            Var::RequestId,
            Var::TlsSni,
        ];
        assert_eq!(reads(&others), none);
        let uri = Reads {
            uri: true,
            host: false,
        };
        assert_eq!(reads(&[Var::Path]), uri);
        let both = Reads {
            uri: true,
            host: true,
        };
        assert_eq!(reads(&[Var::Host, Var::Method, Var::Path]), both);
    }
}
