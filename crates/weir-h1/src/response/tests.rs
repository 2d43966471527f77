//! The response head parser on its own: heads split anywhere, framing by status and method,
//! what is refused, and `101` only to the upgrade asked for.

use bytes::BytesMut;
use http::{HeaderValue, Method};

use super::*;

fn head(input: &str, method: Method) -> Result<Option<Head>, Error> {
    let mut buf = BytesMut::from(input.as_bytes());
    parse(&mut buf, &method)
}

#[test]
fn simple_head() {
    let h = head(
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: 1\r\nx-a: 2\r\n\r\nok",
        Method::GET,
    )
    .unwrap()
    .unwrap();
    assert_eq!(h.parts.status, 200);
    assert_eq!(h.parts.headers.get_all("x-a").iter().count(), 2);
    assert_eq!(h.decoder.remaining(), Some(2));
    assert!(h.keep_alive);
    assert!(h.reason.is_none(), "the usual phrase is not kept");
}

#[test]
fn partial_heads_wait_for_more() {
    let full = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Nope\r\ncontent-length: 0\r\n\r\n";
    for cut in 0..full.len() {
        let mut buf = BytesMut::from(&full.as_bytes()[..cut]);
        assert!(parse(&mut buf, &Method::GET).unwrap().is_none(), "{cut}");
        buf.extend_from_slice(&full.as_bytes()[cut..]);
        let h = parse(&mut buf, &Method::GET).unwrap().unwrap();
        assert_eq!(h.parts.status, 404);
        assert!(h.decoder.is_done());
        assert_eq!(h.reason.as_deref(), Some(&b"Nope"[..]));
    }
}

#[test]
fn framing_rules() {
    let done = |s: &str, m: Method| head(s, m).unwrap().unwrap().decoder.is_done();
    assert!(done(
        "HTTP/1.1 204 No Content\r\ncontent-length: 5\r\n\r\n",
        Method::GET
    ));
    assert!(done("HTTP/1.1 304 Not Modified\r\n\r\n", Method::GET));
    assert!(done(
        "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n",
        Method::HEAD
    ));
    assert!(done(
        "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
        Method::GET
    ));
    let eof = |s: &str| {
        head(s, Method::GET)
            .unwrap()
            .unwrap()
            .decoder
            .is_eof_delimited()
    };
    assert!(eof("HTTP/1.1 200 OK\r\n\r\n"));
    assert!(eof("HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n"));
    assert!(!eof(
        "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, Chunked\r\n\r\n"
    ));
    let ka = |s: &str| head(s, Method::GET).unwrap().unwrap().keep_alive;
    assert!(!ka(
        "HTTP/1.1 200 OK\r\nconnection: Close\r\ncontent-length: 0\r\n\r\n"
    ));
    assert!(!ka(
        "HTTP/1.1 200 OK\r\nconnection: close\r\nconnection: keep-alive\r\n\r\n"
    ));
    assert!(!ka("HTTP/1.0 200 OK\r\ncontent-length: 0\r\n\r\n"));
    assert!(ka(
        "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\ncontent-length: 0\r\n\r\n"
    ));
}

#[test]
fn invalid_heads() {
    for bad in [
        "HTTP/1.1 200 OK\r\ncontent-length: 1\r\ntransfer-encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n",
        "HTTP/1.0 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\n",
        "HTTP/1.1 2000 OK\r\n\r\n",
        "HTTP/2.0 200 OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nbad header\r\n\r\n",
        "HTTP/1.1 200 OK\r\nx: a\r\n folded\r\n\r\n",
        "garbage\r\n\r\n",
    ] {
        assert!(head(bad, Method::GET).is_err(), "{bad:?}");
    }
    let many = format!(
        "HTTP/1.1 200 OK\r\n{}\r\n",
        "a: b\r\n".repeat(MAX_HEADERS + 1)
    );
    assert!(head(&many, Method::GET).is_err());
    let big = format!("HTTP/1.1 200 OK\r\nx: {}\r\n\r\n", "a".repeat(MAX_HEAD));
    assert!(matches!(head(&big, Method::GET), Err(Error::HeadTooLarge)));
    let mut unfinished = BytesMut::from(&big.as_bytes()[..MAX_HEAD + 10]);
    assert!(matches!(
        parse(&mut unfinished, &Method::GET),
        Err(Error::HeadTooLarge)
    ));
}

/// A 101 is accepted only for the upgrade the request offered; the bytes
/// after its head stay in the buffer (they are the new protocol's).
#[test]
fn a_101_only_to_the_upgrade_asked_for() {
    let ws = HeaderValue::from_static("websocket");
    let ok = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: Upgrade\r\n\r\n\x01\x02hi";
    let mut buf = BytesMut::from(ok);
    let h = parse_for(&mut buf, &Method::GET, Some(&ws))
        .unwrap()
        .unwrap();
    assert!(h.upgraded && !h.keep_alive && h.decoder.is_done());
    assert_eq!(&buf[..], b"\x01\x02hi");
    for (resp, asked) in [
        (ok, None),
        (
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
            Some(&ws),
        ),
        ("HTTP/1.1 101 Switching Protocols\r\n\r\n", Some(&ws)),
    ] {
        let mut buf = BytesMut::from(resp);
        assert!(
            parse_for(&mut buf, &Method::GET, asked).is_err(),
            "{resp:?}"
        );
    }
    // Declined: an ordinary answer, and the connection is not reused.
    let mut buf = BytesMut::from("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
    let h = parse_for(&mut buf, &Method::GET, Some(&ws))
        .unwrap()
        .unwrap();
    assert!(!h.upgraded && !h.keep_alive);
    assert!(offered(b"foo/2, websocket", b"WebSocket"));
    assert!(!offered(b"websocket", b"websocket, h2c"));
}

#[test]
fn the_framing_property_holds_on_known_streams() {
    use crate::fuzz::response::{check, frame, End};
    let answers = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nx-t: 1\r\n\r\nHTTP/1.1 404 Nicht Gefunden\r\n\r\nuntil the end";
    for first in 0..8u8 {
        let mut data = vec![first];
        data.extend_from_slice(answers);
        check(&data);
    }
    let (resps, end) = frame([&answers[..]], &Method::GET, None);
    assert_eq!(end, End::Clean);
    let bodies: Vec<&[u8]> = resps.iter().map(|r| &r.4[..]).collect();
    assert_eq!(bodies, [&b"ok"[..], b"abc", b"until the end"]);
    assert_eq!(resps[2].2.as_deref(), Some(&b"Nicht Gefunden"[..]));
    // HEAD: no bodies, so the body bytes are read as the next head, and refused.
    let (resps, end) = frame([&answers[..]], &Method::HEAD, None);
    assert_eq!((resps.len(), end), (1, End::Refused));
    let ws = HeaderValue::from_static("websocket");
    let up = b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\n\x81\x00";
    assert_eq!(
        frame([&up[..]], &Method::GET, Some(&ws)),
        (vec![], End::Upgraded)
    );
    let cut = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhel";
    assert_eq!(
        frame([&cut[..]], &Method::GET, None),
        (vec![], End::NeedMore)
    );
    let bad = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n";
    assert_eq!(
        frame([&bad[..]], &Method::GET, None),
        (vec![], End::BadBody)
    );
}

/// Random inputs, and random mutations of valid answers: what the fuzz target does, a few
/// thousand times, on stable.
#[test]
fn the_framing_property_holds_on_random_input() {
    use crate::fuzz::response::check;
    let seeds: [&[u8]; 3] = [
        b"\x00HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabcHTTP/1.1 204 No Content\r\n\r\n",
        b"\x04HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\nxx",
        b"\x02HTTP/1.0 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n4;x=y\r\nabcd\r\n0\r\n\r\nHTTP/1.1 500 Oops\r\nconnection: close\r\n\r\nrest",
    ];
    let alphabet = b"HTP/1.0 2345\r\n:;,-chunkedtransfer-encodingcontent-lengthconnectionupgrade0123456789abcdefxyz \t\x00\x7f\xff";
    let mut rng = fastrand::Rng::with_seed(11);
    for _ in 0..3000 {
        let mut data = seeds[rng.usize(..seeds.len())].to_vec();
        for _ in 0..rng.usize(0..6) {
            let at = rng.usize(1..=data.len());
            match rng.u8(..3) {
                0 if at < data.len() => {
                    data.remove(at);
                }
                1 => data.insert(at, alphabet[rng.usize(..alphabet.len())]),
                _ => {
                    let n = rng.usize(1..data.len().max(2));
                    let copy = data[n.min(data.len())..(n + 8).min(data.len())].to_vec();
                    data.splice(at..at, copy);
                }
            }
        }
        check(&data);
    }
    for _ in 0..500 {
        let data: Vec<u8> = (0..rng.usize(..200)).map(|_| rng.u8(..)).collect();
        check(&data);
    }
}
