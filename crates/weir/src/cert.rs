//! `weir cert`: a self-signed pair for trying TLS out (examples/https.toml), made by rcgen
//! (`self_signed.rs`), checked by the same code a listener loads pairs with.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use crate::cli::CertArgs;

pub fn cert(args: CertArgs) -> ExitCode {
    match write(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn write(args: &CertArgs) -> Result<(), String> {
    let names: Vec<&str> = args.names.iter().map(String::as_str).collect();
    if let Some(bad) = names.iter().find(|n| !valid_name(n)) {
        return Err(format!(
            "{bad:?} is not a DNS name (letters, digits, `-`, dots; `*.` only as the first label) or an IP address"
        ));
    }
    let file = names[0].trim_start_matches("*.").replace(':', "_");
    let (cert, key) = (
        args.out.join(format!("{file}.pem")),
        args.out.join(format!("{file}.key")),
    );
    // A key may be in use (a listener loads it, a client pinned its certificate): a
    // repeated command keeps the pair, both files, rather than replacing half of it.
    if !args.force {
        if let Some(there) = [&key, &cert]
            .into_iter()
            .find(|p| p.symlink_metadata().is_ok())
        {
            return Err(format!(
                "{} already exists: nothing written (pass --force to replace {} and {})",
                there.display(),
                cert.display(),
                key.display()
            ));
        }
    }
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot make {}: {e}", args.out.display()))?;
    let pair = crate::self_signed::make(&names, args.days)
        .map_err(|e| format!("cannot make the certificate: {e}"))?;
    put(&cert, &pair.cert_pem, 0o644, args.force)?;
    put(&key, &pair.key_pem, 0o600, args.force)?;
    // The check a listener makes when it loads the pair.
    weir_tls::Identity::load(&cert, &key, SystemTime::now()).map_err(|e| e.to_string())?;
    println!("wrote {} and {}", cert.display(), key.display());
    println!(
        "use them in a listener:\n  [listeners.web.tls]\n  certificates = [{{ cert = \"{}\", key = \"{}\", default = true }}]",
        cert.display(),
        key.display()
    );
    Ok(())
}

fn valid_name(n: &str) -> bool {
    if n.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    let host = n.strip_prefix("*.").unwrap_or(n);
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
        })
}

/// Writes a new file, or replaces one only when `replace` (a file made meanwhile by
/// another command is not overwritten).
fn put(path: &Path, content: &str, mode: u32, replace: bool) -> Result<(), String> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(!replace)
        .create(replace)
        .truncate(replace)
        .mode(mode)
        .open(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    f.write_all(content.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
