//! Sending a PROXY protocol header to an endpoint (a pool's `send_proxy`).

use std::net::SocketAddr;

use ppp::{v1, v2};
use weir_config::SendProxy;

use super::read::Tlvs;

/// The header for a connection from `addrs.0` to `addrs.1`, or, without addresses (a
/// health check, which has no client), v2's `LOCAL` command or v1's `PROXY UNKNOWN`. An
/// IPv4 and an IPv6 address together go as IPv6, the IPv4 one mapped. `tlvs`, what the
/// client connection's own v2 header brought (`Received::tlvs`), go after the addresses
/// of a v2 header (v1 has no room for them).
pub fn header(
    version: SendProxy,
    addrs: Option<(SocketAddr, SocketAddr)>,
    tlvs: Option<&Tlvs>,
) -> Vec<u8> {
    let addrs = addrs.map(same_family);
    match version {
        SendProxy::V1 => match addrs {
            Some(a) => v1::Addresses::from(a).to_string().into_bytes(),
            None => b"PROXY UNKNOWN\r\n".to_vec(),
        },
        SendProxy::V2 => {
            let b = match addrs {
                Some(a) => v2::Builder::with_addresses(
                    v2::Version::Two | v2::Command::Proxy,
                    v2::Protocol::Stream,
                    a,
                ),
                None => v2::Builder::new(
                    v2::Version::Two | v2::Command::Local,
                    v2::AddressFamily::Unspecified | v2::Protocol::Unspecified,
                ),
            };
            let b = match tlvs {
                Some(t) if addrs.is_some() => b.write_payload(&t[..]),
                _ => Ok(b),
            };
            // Writing into a Vec does not fail, and the addresses and TLVs fit the length
            // field (the TLVs came in a header of at most `V2_MAX_PAYLOAD` bytes).
            b.and_then(|b| b.build()).expect("a PROXY v2 header")
        }
    }
}

fn same_family((s, d): (SocketAddr, SocketAddr)) -> (SocketAddr, SocketAddr) {
    let canon = |a: SocketAddr| SocketAddr::new(a.ip().to_canonical(), a.port());
    let (s, d) = (canon(s), canon(d));
    let v6 = |a: SocketAddr| match a {
        SocketAddr::V4(v4) => SocketAddr::new(v4.ip().to_ipv6_mapped().into(), v4.port()),
        a => a,
    };
    match s.is_ipv4() == d.is_ipv4() {
        true => (s, d),
        false => (v6(s), v6(d)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_lines_and_v2_local() {
        let a = (
            "10.0.0.1:5000".parse().unwrap(),
            "10.0.0.2:80".parse().unwrap(),
        );
        assert_eq!(
            header(SendProxy::V1, Some(a), None),
            b"PROXY TCP4 10.0.0.1 10.0.0.2 5000 80\r\n"
        );
        assert_eq!(header(SendProxy::V1, None, None), b"PROXY UNKNOWN\r\n");
        let local = header(SendProxy::V2, None, None);
        assert_eq!(local.len(), 16);
        assert_eq!(local[12], 0x20, "version 2, LOCAL");
        let v2 = header(SendProxy::V2, Some(a), None);
        assert_eq!((v2[12], v2[13], v2.len()), (0x21, 0x11, 28));
    }
}
