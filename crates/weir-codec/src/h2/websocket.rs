//! WebSocket over HTTP/2 (RFC 8441): a client's extended CONNECT (`:protocol =
//! websocket`) is the HTTP/2 form of an HTTP/1.1 `Upgrade: websocket`. weir proxies it
//! as that upgrade (its endpoints speak WebSocket over HTTP/1.1): the request made into
//! one here, the upstream's `101` made into the `200` that opens the client's tunnel.

use base64::Engine;
use http::header::{self, HeaderMap, HeaderValue};
use http::request::Parts;
use http::{Method, Response, StatusCode, Version};

const PROTOCOL: &str = "websocket";
/// Headers of the WebSocket handshake that belong to the client (RFC 8441 §5).
const NEGOTIATED: [&str; 2] = ["sec-websocket-protocol", "sec-websocket-extensions"];

/// Makes an extended CONNECT for WebSocket (`protocol`: its `:protocol`) into the HTTP/1.1
/// upgrade request it stands for (GET, `Upgrade: websocket`, a fresh `Sec-WebSocket-Key`);
/// whether it was one.
pub fn as_upgrade(parts: &mut Parts, protocol: Option<&[u8]>) -> bool {
    let websocket = parts.method == Method::CONNECT
        && protocol.is_some_and(|p| p.eq_ignore_ascii_case(PROTOCOL.as_bytes()));
    if !websocket {
        return false;
    }
    parts.method = Method::GET;
    parts.version = Version::HTTP_11;
    // HTTP/1.1 names the host in `Host`; HTTP/2 in `:authority`.
    if let Some(a) = parts.uri.authority() {
        if !parts.headers.contains_key(header::HOST) {
            if let Ok(v) = HeaderValue::from_str(a.as_str()) {
                parts.headers.insert(header::HOST, v);
            }
        }
    }
    let h = &mut parts.headers;
    h.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static(PROTOCOL));
    h.insert(header::SEC_WEBSOCKET_KEY, key());
    if !h.contains_key(header::SEC_WEBSOCKET_VERSION) {
        h.insert(
            header::SEC_WEBSOCKET_VERSION,
            HeaderValue::from_static("13"),
        );
    }
    true
}

/// A handshake nonce (RFC 6455 §4.1: 16 random bytes, base64): it only pairs the
/// upstream's answer with this request, so no cryptographic randomness is needed.
fn key() -> HeaderValue {
    let mut nonce = [0u8; 16];
    nonce[..8].copy_from_slice(&fastrand::u64(..).to_le_bytes());
    nonce[8..].copy_from_slice(&fastrand::u64(..).to_le_bytes());
    let b64 = base64::engine::general_purpose::STANDARD.encode(nonce);
    HeaderValue::from_str(&b64).expect("base64 is a valid header value")
}

/// The client's answer once the upstream switched: `200`, with what the upstream chose of
/// the subprotocols and extensions the client offered.
pub fn accepted(upstream: &HeaderMap) -> Response<()> {
    let mut resp = Response::new(());
    *resp.status_mut() = StatusCode::OK;
    for name in NEGOTIATED {
        for v in upstream.get_all(name) {
            resp.headers_mut().append(name, v.clone());
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Request;

    #[test]
    fn an_extended_connect_becomes_an_upgrade() {
        let req = Request::connect("https://chat.test/room")
            .header("sec-websocket-protocol", "chat")
            .body(())
            .unwrap();
        let (mut parts, ()) = req.into_parts();
        assert!(as_upgrade(&mut parts, Some(b"websocket")));
        assert_eq!(
            (parts.method, parts.version),
            (Method::GET, Version::HTTP_11)
        );
        assert_eq!(parts.headers["upgrade"], "websocket");
        assert_eq!(parts.headers["connection"], "upgrade");
        assert_eq!(parts.headers["sec-websocket-version"], "13");
        assert_eq!(parts.headers["sec-websocket-key"].len(), 24);
        assert_eq!(parts.uri.path(), "/room");
        assert_eq!(parts.headers["host"], "chat.test");

        // A CONNECT for another protocol, or a plain one, is left alone.
        let (mut plain, ()) = Request::connect("chat.test:443")
            .body(())
            .unwrap()
            .into_parts();
        assert!(!as_upgrade(&mut plain, None));
        assert!(!as_upgrade(&mut plain, Some(b"chat")));
        assert_eq!(plain.method, Method::CONNECT);
    }

    #[test]
    fn the_switch_answers_200_with_what_was_negotiated() {
        let mut h = HeaderMap::new();
        h.insert("sec-websocket-protocol", HeaderValue::from_static("chat"));
        h.insert("sec-websocket-accept", HeaderValue::from_static("x"));
        h.insert("upgrade", HeaderValue::from_static("websocket"));
        let r = accepted(&h);
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers().len(), 1);
        assert_eq!(r.headers()["sec-websocket-protocol"], "chat");
    }
}
