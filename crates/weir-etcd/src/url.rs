//! `etcd://HOST:PORT[,HOST:PORT...]/PREFIX`: which members to talk to, and the key prefix the
//! config lives under (so several weir clusters can share one etcd).

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreUrl {
    /// `HOST:PORT` of each member given.
    pub members: Vec<String>,
    /// The key prefix, without a trailing `/`: `/weir` for `etcd://.../weir`.
    pub prefix: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UrlError {
    #[error("`{0}` is not an etcd store URL: write etcd://HOST:PORT[,HOST:PORT...]/PREFIX")]
    Scheme(String),
    #[error("`{url}`: member `{member}` is not HOST:PORT")]
    Member { url: String, member: String },
    #[error("`{0}`: no prefix; write etcd://HOST:PORT/PREFIX (e.g. /weir), so that weir's keys do not mix with others'")]
    NoPrefix(String),
}

impl StoreUrl {
    pub fn parse(url: &str) -> Result<StoreUrl, UrlError> {
        let rest = url
            .strip_prefix("etcd://")
            .ok_or_else(|| UrlError::Scheme(url.to_string()))?;
        let (hosts, prefix) = rest
            .split_once('/')
            .ok_or_else(|| UrlError::NoPrefix(url.to_string()))?;
        let prefix = prefix.trim_end_matches('/');
        if prefix.is_empty() {
            return Err(UrlError::NoPrefix(url.to_string()));
        }
        let members: Vec<String> = hosts.split(',').map(str::to_string).collect();
        for m in &members {
            let port = m.rsplit_once(':').map(|(h, p)| (h, p.parse::<u16>()));
            if !matches!(port, Some((h, Ok(_))) if !h.is_empty()) {
                return Err(UrlError::Member {
                    url: url.to_string(),
                    member: m.clone(),
                });
            }
        }
        Ok(StoreUrl {
            members,
            prefix: format!("/{prefix}"),
        })
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "etcd://{}{}", self.members.join(","), self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_members_and_prefix() {
        let u = StoreUrl::parse("etcd://127.0.0.1:2379,10.0.0.2:2379/weir/prod/").unwrap();
        assert_eq!(u.members, ["127.0.0.1:2379", "10.0.0.2:2379"]);
        assert_eq!(u.prefix, "/weir/prod");
        assert_eq!(
            u.to_string(),
            "etcd://127.0.0.1:2379,10.0.0.2:2379/weir/prod"
        );
        assert!(matches!(
            StoreUrl::parse("http://a:1/w"),
            Err(UrlError::Scheme(_))
        ));
        assert!(matches!(
            StoreUrl::parse("etcd://a:1"),
            Err(UrlError::NoPrefix(_))
        ));
        assert!(matches!(
            StoreUrl::parse("etcd://a:1/"),
            Err(UrlError::NoPrefix(_))
        ));
        assert!(matches!(
            StoreUrl::parse("etcd://a,b:2/w"),
            Err(UrlError::Member { .. })
        ));
    }
}
