//! Certificates for TLS tests, made by rcgen: a CA that signs leaves for given names and
//! validity. Written as PEM files, as an operator's would be. (`weir cert` and the demo make
//! their self-signed pairs in the binary itself.)

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};

/// A certificate and key, in memory and (once written) on disk.
#[derive(Debug, Clone)]
pub struct Pair {
    pub cert_pem: String,
    pub key_pem: String,
    /// The leaf's DER, to compare with what a server presented.
    pub der: Vec<u8>,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Pair {
    fn of(cert: &rcgen::Certificate, key: &KeyPair) -> Pair {
        Pair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            der: cert.der().to_vec(),
            cert: PathBuf::new(),
            key: PathBuf::new(),
        }
    }

    /// Writes `NAME.pem` and `NAME.key` in `dir` (the paths are kept in the pair).
    pub fn write(mut self, dir: &Path, name: &str) -> Pair {
        self.cert = dir.join(format!("{name}.pem"));
        self.key = dir.join(format!("{name}.key"));
        std::fs::write(&self.cert, &self.cert_pem).expect("write cert");
        std::fs::write(&self.key, &self.key_pem).expect("write key");
        self
    }
}

pub struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pub pem: String,
}

/// How long a leaf is valid, from now.
#[derive(Debug, Clone, Copy)]
pub struct Validity {
    pub from_days: i64,
    pub to_days: i64,
}

impl Default for Validity {
    /// Valid from a day ago for a year.
    fn default() -> Self {
        Validity {
            from_days: -1,
            to_days: 365,
        }
    }
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
        p.distinguished_name.push(DnType::CommonName, name);
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().expect("key");
        let cert = p.self_signed(&key).expect("self-signed CA");
        Ca {
            pem: cert.pem(),
            issuer: Issuer::new(p, key),
        }
    }

    /// A server (and client) certificate for `names` (DNS names or IP addresses), valid
    /// from a day ago for a year, with `CN=names[0]`.
    pub fn leaf(&self, names: &[&str]) -> Pair {
        self.leaf_valid(names, Validity::default())
    }

    pub fn leaf_valid(&self, names: &[&str], v: Validity) -> Pair {
        let mut p = params(names, v);
        p.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let key = KeyPair::generate().expect("key");
        let cert = p.signed_by(&key, &self.issuer).expect("signed leaf");
        Pair::of(&cert, &key)
    }

    /// A client certificate with exactly this subject, in this order (`("CN", "alice")`,
    /// `("O", "Example")`; values as UTF8String, so any character a test needs), and these
    /// DNS and URI subjectAltNames.
    pub fn leaf_subject(&self, subject: &[(&str, &str)], dns: &[&str], uris: &[&str]) -> Pair {
        let mut p = params(&[], Validity::default());
        p.distinguished_name = rcgen::DistinguishedName::new();
        for (t, v) in subject {
            let t = match *t {
                "CN" => DnType::CommonName,
                "O" => DnType::OrganizationName,
                "OU" => DnType::OrganizationalUnitName,
                "C" => DnType::CountryName,
                other => panic!("no DN type {other} in the test kit"),
            };
            p.distinguished_name
                .push(t, rcgen::DnValue::Utf8String(v.to_string()));
        }
        p.subject_alt_names = dns
            .iter()
            .map(|d| rcgen::SanType::DnsName(d.to_string().try_into().expect("DNS name")))
            .chain(
                uris.iter()
                    .map(|u| rcgen::SanType::URI(u.to_string().try_into().expect("URI"))),
            )
            .collect();
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate().expect("key");
        let cert = p.signed_by(&key, &self.issuer).expect("signed leaf");
        Pair::of(&cert, &key)
    }

    /// [`Ca::leaf`] written as `dir/FILE.pem` and `dir/FILE.key`: (cert, key).
    pub fn leaf_files(&self, dir: &Path, file: &str, names: &[&str]) -> (PathBuf, PathBuf) {
        let p = self.leaf(names).write(dir, file);
        (p.cert, p.key)
    }

    /// Writes the CA certificate as `NAME.pem` in `dir`.
    pub fn write(&self, dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(format!("{name}.pem"));
        std::fs::write(&path, &self.pem).expect("write CA");
        path
    }
}

/// A leaf's parameters: `names` as subjectAltNames (IP addresses as IP SANs), `CN=names[0]`.
fn params(names: &[&str], v: Validity) -> CertificateParams {
    let mut p = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .expect("params");
    if let Some(cn) = names.first() {
        p.distinguished_name.push(DnType::CommonName, *cn);
    }
    let now = time::OffsetDateTime::now_utc();
    p.not_before = now + time::Duration::days(v.from_days);
    p.not_after = now + time::Duration::days(v.to_days);
    p
}
