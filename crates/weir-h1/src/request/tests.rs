//! The request head parser on its own (heads split at every byte, smuggling refused), and
//! the framing property of `fuzz.rs` on known streams and on random input.

use bytes::BytesMut;
use http::Method;

use crate::fuzz::{check, frame, End};
use crate::request::{parse, Head, ParseError, MAX_HEADERS, MAX_URI_LEN};

fn head(input: &str) -> Result<Option<Head>, ParseError> {
    let mut buf = BytesMut::from(input.as_bytes());
    parse(&mut buf, 64 * 1024)
}

fn refused(input: &str) -> Option<u16> {
    match head(input) {
        Err(e) => e.status(),
        Ok(h) => panic!("accepted {input:?}: {:?}", h.map(|h| h.parts)),
    }
}

#[test]
fn heads_parse_the_same_split_anywhere() {
    let full = "POST /a?b=c HTTP/1.1\r\nHost: x\r\nX-A: 1\r\nx-a: 2\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\n\r\n";
    for cut in 0..full.len() {
        let mut buf = BytesMut::from(&full.as_bytes()[..cut]);
        let first = parse(&mut buf, 1 << 16).unwrap();
        if cut < full.find("hello").unwrap() {
            assert!(first.is_none(), "{cut}");
            buf.extend_from_slice(&full.as_bytes()[cut..]);
        } else {
            buf.extend_from_slice(&full.as_bytes()[cut..]);
        }
        let h = match first {
            Some(h) => h,
            None => parse(&mut buf, 1 << 16).unwrap().unwrap(),
        };
        assert_eq!(h.parts.method, Method::POST);
        assert_eq!(h.parts.uri, "/a?b=c");
        assert_eq!(h.parts.headers.get_all("x-a").iter().count(), 2);
        assert_eq!(h.body.remaining(), Some(5));
        assert!(h.keep_alive);
    }
    check(full.as_bytes());
}

#[test]
fn keep_alive_and_expect() {
    let ka = |s: &str| head(s).unwrap().unwrap().keep_alive;
    assert!(ka("GET / HTTP/1.1\r\n\r\n"));
    assert!(!ka("GET / HTTP/1.1\r\nConnection: Close\r\n\r\n"));
    assert!(!ka(
        "GET / HTTP/1.1\r\nconnection: close\r\nconnection: keep-alive\r\n\r\n"
    ));
    assert!(!ka("GET / HTTP/1.0\r\n\r\n"));
    assert!(ka("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
    let ex = |s: &str| head(s).unwrap().unwrap().expect_continue;
    assert!(ex(
        "PUT / HTTP/1.1\r\nExpect: 100-Continue\r\ncontent-length: 1\r\n\r\n"
    ));
    // No body, or HTTP/1.0: nothing to wait for.
    assert!(!ex("PUT / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n"));
    assert!(!ex(
        "PUT / HTTP/1.0\r\nExpect: 100-continue\r\ncontent-length: 1\r\n\r\n"
    ));
    // Any other expectation cannot be met: 417 (HTTP/1.0's are ignored).
    match head("PUT / HTTP/1.1\r\nExpect: 200-ok\r\ncontent-length: 1\r\n\r\n") {
        Err(e @ ParseError::Expectation) => assert_eq!(e.status(), Some(417)),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted"),
    }
    assert!(!ex(
        "PUT / HTTP/1.0\r\nExpect: 200-ok\r\ncontent-length: 1\r\n\r\n"
    ));
}

#[test]
fn framing_headers() {
    let body = |s: &str| head(s).unwrap().unwrap().body;
    assert!(body("GET / HTTP/1.1\r\n\r\n").is_done());
    assert_eq!(
        body("POST / HTTP/1.1\r\ncontent-length: 7\r\ncontent-length: 7\r\n\r\n").remaining(),
        Some(7)
    );
    assert_eq!(
        head("POST / HTTP/1.1\r\ncontent-length: 7\r\nContent-Length: 7\r\n\r\n")
            .unwrap()
            .unwrap()
            .parts
            .headers
            .get_all("content-length")
            .iter()
            .count(),
        1
    );
    assert_eq!(
        body("POST / HTTP/1.1\r\ntransfer-encoding: Chunked\r\n\r\n").remaining(),
        None
    );
}

#[test]
fn smuggling_and_malformed_heads_are_refused() {
    for (bad, status) in [
        // Both framings (CL.TE / TE.CL smuggling).
        (
            "POST / HTTP/1.1\r\ncontent-length: 4\r\ntransfer-encoding: chunked\r\n\r\n",
            400,
        ),
        (
            "POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\ncontent-length: 4\r\n\r\n",
            400,
        ),
        // Lengths that disagree, or are not plain digits.
        (
            "POST / HTTP/1.1\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n",
            400,
        ),
        ("POST / HTTP/1.1\r\ncontent-length: 5, 5\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\ncontent-length: +5\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\ncontent-length: -1\r\n\r\n", 400),
        (
            "POST / HTTP/1.1\r\ncontent-length: 99999999999999999999\r\n\r\n",
            400,
        ),
        // Transfer codings that do not end in one chunked.
        ("POST / HTTP/1.1\r\ntransfer-encoding: gzip\r\n\r\n", 400),
        (
            "POST / HTTP/1.1\r\ntransfer-encoding: chunked, gzip\r\n\r\n",
            400,
        ),
        (
            "POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n\r\n",
            400,
        ),
        (
            "POST / HTTP/1.1\r\ntransfer-encoding: chunked,\r\n\r\n",
            400,
        ),
        (
            "POST / HTTP/1.1\r\ntransfer-encoding: xchunked\r\n\r\n",
            400,
        ),
        ("POST / HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n", 400),
        // Codings weir cannot pass on.
        (
            "POST / HTTP/1.1\r\ntransfer-encoding: gzip, chunked\r\n\r\n",
            501,
        ),
        // obs-fold, whitespace before the colon, bad names and lines.
        ("GET / HTTP/1.1\r\nx-a: 1\r\n  folded\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nhost : x\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\ncontent-length : 0\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nBad Header\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nx-a: a\x01b\r\n\r\n", 400),
        ("GARBAGE\r\n\r\n", 400),
        ("GET / HTTP/2.0\r\n\r\n", 400),
        ("G(T / HTTP/1.1\r\n\r\n", 400),
        ("GET /a b HTTP/1.1\r\n\r\n", 400),
    ] {
        assert_eq!(refused(bad), Some(status), "{bad:?}");
    }
    let many = format!(
        "GET / HTTP/1.1\r\n{}\r\n",
        "a: b\r\n".repeat(MAX_HEADERS + 1)
    );
    assert_eq!(refused(&many), Some(431));
    let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_URI_LEN));
    let mut buf = BytesMut::from(long.as_bytes());
    assert_eq!(
        parse(&mut buf, 1 << 20).err().and_then(|e| e.status()),
        Some(414)
    );
    let big = format!("GET / HTTP/1.1\r\nx: {}\r\n\r\n", "a".repeat(9000));
    let mut buf = BytesMut::from(big.as_bytes());
    assert_eq!(
        parse(&mut buf, 8192).err(),
        Some(ParseError::TooLarge(8192))
    );
    let mut unfinished = BytesMut::from(&big.as_bytes()[..8192]);
    assert!(parse(&mut unfinished, 8192).is_err());
    let mut h2 = BytesMut::from(&b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"[..]);
    assert_eq!(parse(&mut h2, 8192).err(), Some(ParseError::Http2Preface));
}

#[test]
fn the_framing_property_holds_on_known_streams() {
    let pipelined = b"GET /1 HTTP/1.1\r\n\r\nPOST /2 HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nx-t: 1\r\n\r\nPUT /3 HTTP/1.1\r\ncontent-length: 2\r\n\r\nok";
    check(pipelined);
    // Found by the fuzz target: an HTTP/2 preface cut before its version.
    check(b"PRI * HTTP/2.0\n");
    let (reqs, end) = frame([&pipelined[..]]);
    assert_eq!(end, End::Clean);
    let bodies: Vec<&[u8]> = reqs.iter().map(|r| &r.3[..]).collect();
    assert_eq!(bodies, [&b""[..], b"abc", b"ok"]);
    let (_, end) = frame([&b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n"[..]]);
    assert_eq!(end, End::BadBody);
}

/// Random inputs, and random mutations of valid streams: what the fuzz
/// target does, a few thousand times, on stable.
#[test]
fn the_framing_property_holds_on_random_input() {
    let seeds: [&[u8]; 3] = [
        b"GET / HTTP/1.1\r\nhost: a\r\n\r\n",
        b"POST /u HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n4;x=y\r\nabcd\r\n0\r\n\r\n",
        b"PUT / HTTP/1.1\r\ncontent-length: 3\r\nexpect: 100-continue\r\n\r\nabcGET / HTTP/1.0\r\n\r\n",
    ];
    let alphabet = b"GETPOST /HTP1.0\r\n:;,-chunkedtransfer-encodingcontent-length0123456789abcdefxyz \t\x00\x7f\xff";
    let mut rng = fastrand::Rng::with_seed(7);
    for _ in 0..3000 {
        let mut data = seeds[rng.usize(..seeds.len())].to_vec();
        for _ in 0..rng.usize(0..6) {
            let at = rng.usize(..=data.len());
            match rng.u8(..3) {
                0 if !data.is_empty() && at < data.len() => {
                    data.remove(at);
                }
                1 => data.insert(at, alphabet[rng.usize(..alphabet.len())]),
                _ => {
                    let n = rng.usize(..data.len().max(1));
                    let copy = data[n..(n + 8).min(data.len())].to_vec();
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
