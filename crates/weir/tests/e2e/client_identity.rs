//! What a backend is told about a verified client certificate (`client_identity_header`,
//! `client_cert_header`): the subject in RFC 4514 form, escaped so that no certificate can
//! pass for another; the certificate's SHA-256 and its URI and DNS names; control characters
//! encoded and logged, never dropped. Real curl presents the certificates.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use weir_testkit::certs::{Ca, Pair};
use weir_testkit::HttpUpstream;

use crate::common::{free_addr, Weir};
use crate::tls_kit::curl;

struct Rig {
    _dir: tempfile::TempDir,
    dir: std::path::PathBuf,
    ca_path: std::path::PathBuf,
    clients: Ca,
    listen: SocketAddr,
    weir: Weir,
    _up: HttpUpstream,
}

async fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("weir test CA");
    let ca_path = ca.write(dir.path(), "ca");
    let shop = ca.leaf(&["shop.test"]).write(dir.path(), "shop");
    let clients = Ca::new("clients CA");
    let clients_path = clients.write(dir.path(), "clients");
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"
[listeners.web.tls]
certificates = [{{ cert = "{}", key = "{}" , default = true }}]
client_auth = "optional"
client_ca = "{}"
client_identity_header = "X-Client-Subject"
client_cert_header = "X-Forwarded-Client-Cert"

[pools.app]
endpoints = [{{ addr = "{}" }}]
"#,
        shop.cert.display(),
        shop.key.display(),
        clients_path.display(),
        up.addr()
    );
    let weir = Weir::start(&cfg, &[listen]);
    Rig {
        dir: dir.path().to_path_buf(),
        _dir: dir,
        ca_path,
        clients,
        listen,
        weir,
        _up: up,
    }
}

impl Rig {
    /// The identity headers the backend got for a request with this client certificate (and
    /// forged values of both headers from the client).
    fn seen(&self, cert: Option<&Pair>) -> (Option<String>, Option<String>) {
        let mut args = vec![
            "-H".to_string(),
            "X-Client-Subject: CN=admin".to_string(),
            "-H".to_string(),
            "X-Forwarded-Client-Cert: Hash=00;Subject=\"CN=admin\"".to_string(),
        ];
        if let Some(p) = cert {
            args.extend([
                "--cert".to_string(),
                p.cert.display().to_string(),
                "--key".to_string(),
                p.key.display().to_string(),
            ]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, out, err) = curl(&self.ca_path, "shop.test", self.listen, "/headers", &args);
        assert!(ok, "{err}");
        let body = out.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        let v: serde_json::Value =
            serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {out}"));
        let get = |name: &str| {
            let all: Vec<String> = v["headers"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p[0].as_str().unwrap().eq_ignore_ascii_case(name))
                .map(|p| p[1].as_str().unwrap().to_string())
                .collect();
            assert!(all.len() <= 1, "{name}: {all:?}");
            all.into_iter().next()
        };
        (get("x-client-subject"), get("x-forwarded-client-cert"))
    }

    fn client(&self, name: &str, subject: &[(&str, &str)], dns: &[&str], uris: &[&str]) -> Pair {
        self.clients
            .leaf_subject(subject, dns, uris)
            .write(&self.dir, name)
    }
}

/// `openssl x509 -fingerprint -sha256`, as lower-case hex without colons.
fn sha256_of(cert: &Path) -> String {
    let out = Command::new("openssl")
        .args(["x509", "-noout", "-fingerprint", "-sha256", "-in"])
        .arg(cert)
        .output()
        .expect("openssl runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let (_, hex) = text.trim().split_once('=').expect("a fingerprint");
    hex.replace(':', "").to_ascii_lowercase()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subject_cannot_pass_for_another() {
    let r = rig().await;
    let real = r.client("real", &[("CN", "alice"), ("O", "Example")], &[], &[]);
    let fake = r.client("fake", &[("CN", "alice, O=Example")], &[], &[]);
    let (real_subject, _) = tokio::task::block_in_place(|| r.seen(Some(&real)));
    let (fake_subject, _) = tokio::task::block_in_place(|| r.seen(Some(&fake)));
    // RFC 4514: the last RDN first; a comma inside a value escaped.
    assert_eq!(real_subject.as_deref(), Some("O=Example,CN=alice"));
    assert_eq!(fake_subject.as_deref(), Some("CN=alice\\, O=Example"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backend_gets_the_certificates_hash_and_names_and_never_the_clients_claims() {
    let r = rig().await;
    let alice = r.client(
        "alice",
        &[("CN", "alice"), ("OU", "ops; eng")],
        &["alice.example.org"],
        &["spiffe://example.org/ns/prod/sa/alice"],
    );
    let (subject, xfcc) = tokio::task::block_in_place(|| r.seen(Some(&alice)));
    assert_eq!(subject.as_deref(), Some("OU=ops\\; eng,CN=alice"));
    assert_eq!(
        xfcc.as_deref(),
        Some(
            format!(
                "Hash={};Subject=\"OU=ops\\\\; eng,CN=alice\";URI=spiffe://example.org/ns/prod/sa/alice;DNS=alice.example.org",
                sha256_of(&alice.cert)
            )
            .as_str()
        )
    );
    // Without a certificate, neither header: the client's own are removed.
    let (subject, xfcc) = tokio::task::block_in_place(|| r.seen(None));
    assert_eq!((subject, xfcc), (None, None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_are_encoded_and_logged_once() {
    let r = rig().await;
    let bob = r.client("bob", &[("CN", "bob\r\nX-Injected: 1")], &[], &[]);
    for _ in 0..3 {
        // A new connection (and handshake) per curl.
        let (subject, xfcc) = tokio::task::block_in_place(|| r.seen(Some(&bob)));
        assert_eq!(subject.as_deref(), Some("CN=bob\\0D\\0AX-Injected: 1"));
        assert!(xfcc
            .unwrap()
            .contains("Subject=\"CN=bob\\\\0D\\\\0AX-Injected: 1\""));
    }
    r.weir
        .wait_log(0, "control characters", std::time::Duration::from_secs(20));
    let lines = r.weir.log_text().matches("control characters").count();
    assert_eq!(
        lines, 1,
        "one line per period for one listener, not one per handshake"
    );
}
