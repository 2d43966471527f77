//! `kind = "ip_allow"` / `"ip_deny"`: the client's address against a list of networks; 403
//! `forbidden` for those not allowed.

use ipnet::IpNet;
use std::net::IpAddr;

use crate::cx::Cx;
use crate::kind::Kind;
use crate::verdict::Verdict;
use http::Request;
use weir_codec::client_body::ClientBody;
use weir_http::error::error_response;
use weir_metrics::reason::Reason;

#[derive(Debug)]
pub struct IpFilter {
    nets: Vec<IpNet>,
    /// Whether the list says who passes (allow) or who does not (deny).
    allow: bool,
}

impl IpFilter {
    pub fn allow(l: &weir_config::filter::IpList) -> IpFilter {
        IpFilter {
            nets: l.addresses.clone(),
            allow: true,
        }
    }

    pub fn deny(l: &weir_config::filter::IpList) -> IpFilter {
        IpFilter {
            nets: l.addresses.clone(),
            allow: false,
        }
    }

    pub fn passes(&self, ip: IpAddr) -> bool {
        // A dual-stack socket shows IPv4 clients as ::ffff:a.b.c.d; lists name them as IPv4.
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        self.nets.iter().any(|n| n.contains(&ip)) == self.allow
    }
}

impl Kind for IpFilter {
    fn build(_name: &str, f: &weir_config::Filter) -> Option<Result<Self, String>> {
        match f {
            weir_config::Filter::IpAllow(l) => Some(Ok(IpFilter::allow(l))),
            weir_config::Filter::IpDeny(l) => Some(Ok(IpFilter::deny(l))),
            _ => None,
        }
    }

    fn request(&self, cx: &mut Cx<'_>, _req: &mut Request<ClientBody>) -> Verdict {
        match self.passes(cx.client) {
            true => Verdict::Continue,
            false => Verdict::Answer(
                Box::new(error_response(Reason::Forbidden)),
                Reason::Forbidden,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_match_v4_v6_and_mapped_addresses() {
        let l = weir_config::filter::IpList {
            addresses: vec![
                "10.0.0.0/8".parse().unwrap(),
                "2001:db8::/32".parse().unwrap(),
            ],
        };
        let allow = IpFilter::allow(&l);
        let deny = IpFilter::deny(&l);
        for (ip, inside) in [
            ("10.1.2.3", true),
            ("11.0.0.1", false),
            ("::ffff:10.9.9.9", true),
            ("2001:db8::1", true),
            ("2001:db9::1", false),
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(allow.passes(ip), inside, "{ip}");
            assert_eq!(deny.passes(ip), !inside, "{ip}");
        }
    }
}
