//! What a verified client certificate says about its holder, in the forms a backend is given:
//! the subject as an RFC 4514 string (as nginx's `$ssl_client_s_dn`), and an Envoy-style
//! `x-forwarded-client-cert` element with the certificate's SHA-256 and its URI and DNS
//! names.
//!
//! Both are escaped so that no certificate can be read as another: a CN of
//! `alice,O=Example` is `CN=alice\,O=Example`, never `CN=alice,O=Example`. Characters a header
//! value cannot carry (control characters, bytes outside ASCII) are written as RFC 4514 hex
//! pairs (`\0A`) in the subject and as `%0A` in names, never dropped; `had_control` says so, for
//! the log.

use sha2::{Digest, Sha256};
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::x509::{AttributeTypeAndValue, X509Name};

/// A verified client certificate's identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    /// RFC 4514: the last RDN first, `,` between RDNs, `+` within one.
    pub subject: String,
    /// The SHA-256 of the certificate's DER, lower-case hex (Envoy's `Hash=`).
    pub sha256: String,
    /// subjectAltName URIs (SPIFFE ids) and DNS names, escaped as said above.
    pub uris: Vec<String>,
    pub dns: Vec<String>,
    /// Some value held a control character (encoded, not dropped).
    pub had_control: bool,
}

impl ClientIdentity {
    /// From the leaf's DER; `None` if it does not parse (rustls verified it, so it does).
    pub fn of(der: &[u8]) -> Option<ClientIdentity> {
        let (_, cert) = X509Certificate::from_der(der).ok()?;
        let mut had_control = false;
        let subject = rfc4514(cert.subject(), &mut had_control);
        let (mut uris, mut dns) = (Vec::new(), Vec::new());
        if let Ok(Some(san)) = cert.subject_alternative_name() {
            for n in &san.value.general_names {
                match n {
                    GeneralName::URI(u) => uris.push(percent_unsafe(u, &mut had_control)),
                    GeneralName::DNSName(d) => dns.push(percent_unsafe(d, &mut had_control)),
                    _ => {}
                }
            }
        }
        Some(ClientIdentity {
            subject,
            sha256: hex(&Sha256::digest(der)),
            uris,
            dns,
            had_control,
        })
    }

    /// The `x-forwarded-client-cert` element: `Hash=...;Subject="...";URI=...;DNS=...` (one
    /// `URI=`/`DNS=` per name), values quoted where they hold `,`, `;`, `=` or `"`.
    pub fn forwarded_client_cert(&self) -> String {
        let mut out = format!("Hash={}", self.sha256);
        out.push_str(";Subject=");
        quoted(&mut out, &self.subject);
        for u in &self.uris {
            out.push_str(";URI=");
            maybe_quoted(&mut out, u);
        }
        for d in &self.dns {
            out.push_str(";DNS=");
            maybe_quoted(&mut out, d);
        }
        out
    }
}

/// RFC 4514 §2: RDNs from the last to the first.
fn rfc4514(name: &X509Name<'_>, had_control: &mut bool) -> String {
    let rdns: Vec<_> = name.iter_rdn().collect();
    let mut out = String::new();
    for (i, rdn) in rdns.iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        for (j, atv) in rdn.iter().enumerate() {
            if j > 0 {
                out.push('+');
            }
            attribute(&mut out, atv, had_control);
        }
    }
    out
}

/// `TYPE=value`: a short name and an escaped string where RFC 4514 §3 has one, else the
/// dotted OID and `#` with the value's DER in hex (§2.4).
fn attribute(out: &mut String, atv: &AttributeTypeAndValue<'_>, had_control: &mut bool) {
    let oid = atv.attr_type().to_id_string();
    let short = SHORT_NAMES.iter().find(|(o, _)| *o == oid).map(|(_, n)| *n);
    match (short, atv.as_str()) {
        (Some(name), Ok(value)) => {
            out.push_str(name);
            out.push('=');
            escape_value(out, value, had_control);
        }
        _ => {
            out.push_str(short.unwrap_or(&oid));
            out.push_str("=#");
            use x509_parser::der_parser::asn1_rs::ToDer;
            let der = atv.attr_value().to_der_vec().unwrap_or_default();
            out.push_str(&hex(&der));
        }
    }
}

/// RFC 4514 §3's names (and the two §3 lists that RFC 2253 readers know).
const SHORT_NAMES: &[(&str, &str)] = &[
    ("2.5.4.3", "CN"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.6", "C"),
    ("2.5.4.9", "STREET"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("0.9.2342.19200300.100.1.1", "UID"),
];

/// RFC 4514 §2.4: `"+,;<>\` escaped with `\`, a leading space or `#` and a trailing space
/// too; anything a header cannot carry as a hex pair per UTF-8 byte.
fn escape_value(out: &mut String, value: &str, had_control: &mut bool) {
    let last = value.len().saturating_sub(1);
    for (i, c) in value.char_indices() {
        match c {
            '"' | '+' | ',' | ';' | '<' | '>' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' ' if i == 0 || i == last => out.push_str("\\ "),
            '#' if i == 0 => out.push_str("\\#"),
            ' '..='~' => out.push(c),
            _ => {
                *had_control |= c.is_control();
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push('\\');
                    push_hex(out, b);
                }
            }
        }
    }
}

/// A URI or DNS name with anything outside visible ASCII percent-encoded.
fn percent_unsafe(s: &str, had_control: &mut bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if (b'!'..=b'~').contains(&b) {
            out.push(b as char);
        } else {
            *had_control |= b < 0x20 || b == 0x7f;
            out.push('%');
            push_hex(&mut out, b);
        }
    }
    out
}

fn quoted(out: &mut String, v: &str) {
    out.push('"');
    for c in v.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

fn maybe_quoted(out: &mut String, v: &str) {
    if v.contains([',', ';', '=', '"', ' ']) {
        quoted(out, v);
    } else {
        out.push_str(v);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn push_hex(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push(HEX[(b >> 4) as usize] as char);
    out.push(HEX[(b & 15) as usize] as char);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DistinguishedName, DnType, DnValue, KeyPair, SanType};

    fn cert(dn: &[(DnType, &str)], sans: Vec<SanType>) -> Vec<u8> {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name = DistinguishedName::new();
        for (t, v) in dn {
            p.distinguished_name
                .push(t.clone(), DnValue::Utf8String(v.to_string()));
        }
        p.subject_alt_names = sans;
        let key = KeyPair::generate().unwrap();
        p.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn rdns_are_written_last_first() {
        let der = cert(
            &[
                (DnType::CountryName, "DE"),
                (DnType::OrganizationName, "Example"),
                (DnType::CommonName, "alice"),
            ],
            vec![],
        );
        assert_eq!(
            ClientIdentity::of(&der).unwrap().subject,
            "CN=alice,O=Example,C=DE"
        );
    }

    #[test]
    fn a_value_cannot_pass_for_another_subject() {
        let fake = cert(&[(DnType::CommonName, "alice,O=Example")], vec![]);
        let real = cert(
            &[
                (DnType::OrganizationName, "Example"),
                (DnType::CommonName, "alice"),
            ],
            vec![],
        );
        let (fake, real) = (
            ClientIdentity::of(&fake).unwrap(),
            ClientIdentity::of(&real).unwrap(),
        );
        assert_eq!(real.subject, "CN=alice,O=Example");
        assert_eq!(fake.subject, "CN=alice\\,O=Example");
        let spaced = cert(&[(DnType::CommonName, " #a+b;c<d>e\"f\\g ")], vec![]);
        assert_eq!(
            ClientIdentity::of(&spaced).unwrap().subject,
            "CN=\\ #a\\+b\\;c\\<d\\>e\\\"f\\\\g\\ "
        );
        let hash = cert(&[(DnType::CommonName, "#a#")], vec![]);
        assert_eq!(ClientIdentity::of(&hash).unwrap().subject, "CN=\\#a#");
    }

    #[test]
    fn control_characters_and_other_bytes_are_hex_pairs() {
        let der = cert(&[(DnType::CommonName, "bob\r\nX-Evil: 1é")], vec![]);
        let id = ClientIdentity::of(&der).unwrap();
        assert_eq!(id.subject, "CN=bob\\0D\\0AX-Evil: 1\\C3\\A9");
        assert!(id.had_control);
        let plain = ClientIdentity::of(&cert(&[(DnType::CommonName, "é")], vec![])).unwrap();
        assert!(!plain.had_control, "not a control character");
    }

    #[test]
    fn the_forwarded_element_has_the_hash_subject_and_names() {
        let der = cert(
            &[(DnType::CommonName, "alice;x=1")],
            vec![
                SanType::URI("spiffe://example.org/alice".try_into().unwrap()),
                SanType::DnsName("alice.example.org".try_into().unwrap()),
                SanType::DnsName("b.example.org".try_into().unwrap()),
            ],
        );
        let id = ClientIdentity::of(&der).unwrap();
        assert_eq!(id.sha256.len(), 64);
        assert_eq!(id.sha256, hex(&Sha256::digest(&der)));
        assert_eq!(
            id.forwarded_client_cert(),
            format!(
                "Hash={};Subject=\"CN=alice\\\\;x=1\";URI=spiffe://example.org/alice;DNS=alice.example.org;DNS=b.example.org",
                id.sha256
            )
        );
    }

    #[test]
    fn a_type_without_a_short_name_is_its_oid_and_hex() {
        let der = cert(&[(DnType::CustomDnType(vec![1, 2, 3, 4]), "x")], vec![]);
        // UTF8String "x": tag 0x0c, length 1, 0x78.
        assert_eq!(ClientIdentity::of(&der).unwrap().subject, "1.2.3.4=#0c0178");
    }
}
