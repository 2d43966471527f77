//! What is never read back: a certificate resource's `key_pem`. Reads (GET, lists), a PUT's
//! answer, `export` and `weir ctl` show a certificate without it, so a private key sent to
//! weir can only leave it in the handshakes it signs.

use std::borrow::Cow;

use serde_json::Value;
use weir_store::Kind;

/// The key of a certificate resource that holds its private key.
pub const PRIVATE_KEY: &str = "key_pem";

/// `spec` as it may be shown: a certificate without `key_pem`, anything else as it is.
pub fn shown(kind: Kind, spec: &Value) -> Cow<'_, Value> {
    match (kind, spec) {
        (Kind::Certificate, Value::Object(m)) if m.contains_key(PRIVATE_KEY) => {
            let mut m = m.clone();
            m.remove(PRIVATE_KEY);
            Cow::Owned(Value::Object(m))
        }
        _ => Cow::Borrowed(spec),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_certificate_loses_its_key() {
        let c = json!({"listener": "web", "cert_pem": "C", "key_pem": "K"});
        assert_eq!(
            *shown(Kind::Certificate, &c),
            json!({"listener": "web", "cert_pem": "C"})
        );
        let p = json!({"key_pem": "not a secret here"});
        assert_eq!(*shown(Kind::Pool, &p), p);
    }
}
