//! Receiving a PROXY protocol header: exactly its bytes are taken off the socket, however
//! they arrive. Each pass peeks at what has arrived (the header is at most
//! [`MAX_HEADER`] bytes) and consumes either the whole header, once its end is known, or
//! only bytes that are certainly part of it (a v1 line without its CRLF yet, a v2 header
//! shorter than its stated length), so the next pass waits for new bytes rather than
//! spinning on old ones.

use std::net::SocketAddr;
use std::sync::Arc;

use ppp::v1;
use ppp::v2;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// v2's fixed part: signature (12), version and command, family and protocol, length (2).
const V2_FIXED: usize = 16;
const V2_SIGNATURE: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
/// Longest v2 address block plus TLVs weir accepts. IPv6 addresses take 36 bytes; what
/// proxies add as TLVs (ALPN, authority, a unique id, TLS details, a cloud's endpoint id)
/// is a few hundred at most.
pub const V2_MAX_PAYLOAD: usize = 1024;
/// The longest v1 line, CRLF included (the specification's bound).
const V1_MAX: usize = 107;
const V1_PREFIX: &[u8; 6] = b"PROXY ";
pub const MAX_HEADER: usize = V2_FIXED + V2_MAX_PAYLOAD;

/// What a header said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The client's address and the address it connected to; `None` for a v2 `LOCAL`
    /// command (a proxy's own health check), `PROXY UNKNOWN`, or an address family that is
    /// not IP: the connection's real peer stands.
    pub addrs: Option<(SocketAddr, SocketAddr)>,
    /// v2: the TLVs that came with it (each checked to fit the header), to pass on in the
    /// v2 headers weir sends for this connection (`send_proxy = "v2"`), written as they
    /// came, in order, but for CRC32C (it covered the header it came in) and NOOP
    /// (padding); `None` when there are none.
    pub tlvs: Option<Tlvs>,
}

/// TLVs to pass on, encoded (type, length, value; one after another).
pub type Tlvs = Arc<[u8]>;

/// TLV types not passed on (PROXY protocol §2.2).
const PP2_TYPE_CRC32C: u8 = 0x03;
const PP2_TYPE_NOOP: u8 = 0x04;

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("not a PROXY protocol header: {0}")]
    Malformed(String),
    #[error("the client closed before its PROXY protocol header was complete")]
    Closed,
    #[error("reading the PROXY protocol header: {0}")]
    Io(#[from] std::io::Error),
}

/// Where the header ends, if the bytes so far say.
#[derive(Debug, PartialEq, Eq)]
enum Frame {
    /// The header is the first this many bytes.
    Complete(usize),
    /// Every byte so far belongs to the header; more are needed.
    Incomplete,
    Invalid(&'static str),
}

fn frame(b: &[u8]) -> Frame {
    let Some(&first) = b.first() else {
        return Frame::Incomplete;
    };
    if first == b'\r' {
        let sig = b.len().min(V2_SIGNATURE.len());
        if b[..sig] != V2_SIGNATURE[..sig] {
            return Frame::Invalid("bad v2 signature");
        }
        if b.len() < V2_FIXED {
            return Frame::Incomplete;
        }
        let payload = u16::from_be_bytes([b[14], b[15]]) as usize;
        if payload > V2_MAX_PAYLOAD {
            return Frame::Invalid(
                "v2 header longer than weir accepts (1024 bytes after the fixed part)",
            );
        }
        return match b.len() >= V2_FIXED + payload {
            true => Frame::Complete(V2_FIXED + payload),
            false => Frame::Incomplete,
        };
    }
    let p = b.len().min(V1_PREFIX.len());
    if b[..p] != V1_PREFIX[..p] {
        return Frame::Invalid("neither \"PROXY \" (v1) nor the v2 signature");
    }
    let seen = &b[..b.len().min(V1_MAX)];
    match seen.windows(2).position(|w| w == b"\r\n") {
        Some(i) => Frame::Complete(i + 2),
        None if seen.len() >= V1_MAX => Frame::Invalid("v1 line longer than 107 bytes"),
        None => Frame::Incomplete,
    }
}

/// Reads one header off `stream`, leaving every byte after it unread. The caller bounds
/// the wait (the listener's `header_timeout`).
pub async fn read_header(stream: &mut TcpStream) -> Result<Received, ReadError> {
    let mut buf = vec![0u8; MAX_HEADER];
    let mut have = 0;
    loop {
        let n = match stream.peek(&mut buf[have..]).await {
            Ok(0) => return Err(ReadError::Closed),
            Ok(n) => n,
            Err(e) if is_reset(&e) => return Err(ReadError::Closed),
            Err(e) => return Err(e.into()),
        };
        let avail = have + n;
        match frame(&buf[..avail]) {
            Frame::Complete(len) => {
                stream.read_exact(&mut buf[have..len]).await?;
                return parse(&buf[..len]);
            }
            Frame::Incomplete => {
                stream.read_exact(&mut buf[have..avail]).await?;
                have = avail;
            }
            Frame::Invalid(why) => return Err(ReadError::Malformed(why.into())),
        }
    }
}

fn is_reset(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
    )
}

/// A complete header's contents.
fn parse(h: &[u8]) -> Result<Received, ReadError> {
    let bad = |e: &dyn std::fmt::Display| ReadError::Malformed(e.to_string());
    if h[0] == b'P' {
        let v = v1::Header::try_from(h).map_err(|e| bad(&e))?;
        let addrs = match v.addresses {
            v1::Addresses::Tcp4(a) => Some((
                SocketAddr::from((a.source_address, a.source_port)),
                SocketAddr::from((a.destination_address, a.destination_port)),
            )),
            v1::Addresses::Tcp6(a) => Some((
                SocketAddr::from((a.source_address, a.source_port)),
                SocketAddr::from((a.destination_address, a.destination_port)),
            )),
            v1::Addresses::Unknown => None,
        };
        return Ok(Received { addrs, tlvs: None });
    }
    let v = v2::Header::try_from(h).map_err(|e| bad(&e))?;
    let mut kept = Vec::new();
    for t in v.tlvs() {
        let t = t.map_err(|e| bad(&e))?;
        if t.kind != PP2_TYPE_CRC32C && t.kind != PP2_TYPE_NOOP {
            kept.push(t.kind);
            // Fits: it came in a header of at most `V2_MAX_PAYLOAD` bytes.
            kept.extend_from_slice(&(t.value.len() as u16).to_be_bytes());
            kept.extend_from_slice(&t.value);
        }
    }
    let addrs = match (v.command, v.addresses) {
        (v2::Command::Local, _) => None,
        (v2::Command::Proxy, v2::Addresses::IPv4(a)) => Some((
            SocketAddr::from((a.source_address, a.source_port)),
            SocketAddr::from((a.destination_address, a.destination_port)),
        )),
        (v2::Command::Proxy, v2::Addresses::IPv6(a)) => Some((
            SocketAddr::from((a.source_address, a.source_port)),
            SocketAddr::from((a.destination_address, a.destination_port)),
        )),
        // UNSPEC or a UNIX socket: the specification says to use the real peer.
        (v2::Command::Proxy, _) => None,
    };
    // A LOCAL header speaks for the proxy itself: nothing of a client to pass on.
    let tlvs = (addrs.is_some() && !kept.is_empty()).then(|| kept.into());
    Ok(Received { addrs, tlvs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[test]
    fn frames_end_where_the_header_does() {
        let v1 = b"PROXY TCP4 1.2.3.4 5.6.7.8 1000 80\r\nGET / HTTP/1.1\r\n";
        assert_eq!(frame(v1), Frame::Complete(36));
        assert_eq!(frame(&v1[..10]), Frame::Incomplete);
        assert_eq!(frame(b"PRO"), Frame::Incomplete);
        assert!(matches!(frame(b"GET / HTTP/1.1\r\n"), Frame::Invalid(_)));
        assert!(matches!(frame(&[b'P'; 200]), Frame::Invalid(_)));
        let long = [b"PROXY ".as_slice(), &[b'1'; 120]].concat();
        assert!(matches!(frame(&long), Frame::Invalid(_)));
        let mut v2 = V2_SIGNATURE.to_vec();
        v2.extend_from_slice(&[0x21, 0x11, 0, 12]);
        assert_eq!(frame(&v2), Frame::Incomplete);
        v2.extend_from_slice(&[1; 12]);
        v2.extend_from_slice(b"\x16\x03\x01");
        assert_eq!(frame(&v2), Frame::Complete(28));
        let mut huge = V2_SIGNATURE.to_vec();
        huge.extend_from_slice(&[0x21, 0x11, 0xff, 0xff]);
        assert!(matches!(frame(&huge), Frame::Invalid(_)));
        assert!(matches!(frame(b"\r\n\r\nX"), Frame::Invalid(_)));
    }

    #[test]
    fn parses_what_the_writer_writes() {
        let src: SocketAddr = "10.1.2.3:4567".parse().unwrap();
        let dst: SocketAddr = "[2001:db8::1]:443".parse().unwrap();
        for v in [weir_config::SendProxy::V1, weir_config::SendProxy::V2] {
            let h = super::super::header(v, Some((src, dst)), None);
            let r = parse(&h).unwrap();
            let (s, _) = r.addrs.unwrap();
            // Mixed families go as IPv6, the IPv4 address mapped.
            assert_eq!(s.ip().to_canonical(), src.ip(), "{v:?}");
            assert_eq!(s.port(), 4567);
            assert_eq!(
                parse(&super::super::header(v, None, None)).unwrap().addrs,
                None
            );
        }
        assert!(matches!(
            parse(b"PROXY TCP4 1.2.3.4 nonsense 1 2\r\n"),
            Err(ReadError::Malformed(_))
        ));
    }

    #[test]
    fn v2_tlvs_are_kept_but_crc32c_and_noop() {
        let src: SocketAddr = "10.1.2.3:4567".parse().unwrap();
        let dst: SocketAddr = "10.9.9.9:443".parse().unwrap();
        let h = ppp::v2::Builder::with_addresses(
            ppp::v2::Version::Two | ppp::v2::Command::Proxy,
            ppp::v2::Protocol::Stream,
            (src, dst),
        )
        .write_tlv(0x02, b"app.example.com")
        .and_then(|b| b.write_tlv(PP2_TYPE_NOOP, b"pad"))
        .and_then(|b| b.write_tlv(0x05, b"id-1"))
        .and_then(|b| b.write_tlv(PP2_TYPE_CRC32C, &[0; 4]))
        .and_then(|b| b.build())
        .unwrap();
        let r = parse(&h).unwrap();
        let kept: &[u8] = b"\x02\x00\x0fapp.example.com\x05\x00\x04id-1";
        assert_eq!(r.tlvs.as_deref(), Some(kept));
        // Written on after the addresses, and read back the same.
        let again = super::super::header(weir_config::SendProxy::V2, r.addrs, r.tlvs.as_ref());
        assert_eq!(parse(&again).unwrap(), r);
        // v1 has no room for them; LOCAL and headers without TLVs have none.
        let v1 = super::super::header(weir_config::SendProxy::V1, r.addrs, r.tlvs.as_ref());
        assert_eq!(v1, b"PROXY TCP4 10.1.2.3 10.9.9.9 4567 443\r\n");
        let local = super::super::header(weir_config::SendProxy::V2, None, r.tlvs.as_ref());
        assert_eq!(parse(&local).unwrap().tlvs, None);
        let bare = super::super::header(weir_config::SendProxy::V2, r.addrs, None);
        assert_eq!(parse(&bare).unwrap().tlvs, None);
    }

    /// The bytes after the header stay on the socket, however the header was split.
    #[tokio::test]
    async fn leaves_the_rest_unread() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let v2 = super::super::header(
            weir_config::SendProxy::V2,
            Some(("192.0.2.7:1234".parse().unwrap(), addr)),
            None,
        );
        for (head, split) in [
            (b"PROXY TCP4 192.0.2.7 127.0.0.1 1234 80\r\n".to_vec(), 20),
            (b"PROXY TCP4 192.0.2.7 127.0.0.1 1234 80\r\n".to_vec(), 39),
            (v2.clone(), 5),
            (v2.clone(), 14),
        ] {
            let mut c = TcpStream::connect(addr).await.unwrap();
            let (mut s, _) = l.accept().await.unwrap();
            let (a, b) = head.split_at(split);
            c.write_all(a).await.unwrap();
            let (b, rest) = (b.to_vec(), b"GET / HTTP/1.1\r\n");
            let writer = tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                c.write_all(&[b.as_slice(), rest].concat()).await.unwrap();
                c
            });
            let r = read_header(&mut s).await.unwrap();
            assert_eq!(r.addrs.unwrap().0, "192.0.2.7:1234".parse().unwrap());
            let _c = writer.await.unwrap();
            let mut after = [0u8; 16];
            s.read_exact(&mut after).await.unwrap();
            assert_eq!(&after, rest);
        }
    }
}
