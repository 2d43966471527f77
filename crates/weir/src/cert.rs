//! `weir cert`: a self-signed pair for trying TLS out (examples/https.toml), made by rcgen
//! (`self_signed.rs`), checked by the same code a listener loads pairs with.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
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
    if args.force {
        // What is replaced must be a file: renaming over anything else fails, and would
        // fail for the second file of the pair after the first was replaced.
        if let Some(odd) = [&key, &cert]
            .into_iter()
            .find(|p| p.symlink_metadata().is_ok_and(|m| !m.file_type().is_file()))
        {
            return Err(format!(
                "{} is not a file: nothing written (remove it, or choose --out)",
                odd.display()
            ));
        }
    }
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot make {}: {e}", args.out.display()))?;
    let pair = crate::self_signed::make(&names, args.days)
        .map_err(|e| format!("cannot make the certificate: {e}"))?;
    // Both files are written beside their places and checked as a pair before either takes
    // its place: a failure on the way leaves what was there, never half a new pair.
    let new_cert = Staged::write(&cert, &pair.cert_pem, 0o644)?;
    let new_key = Staged::write(&key, &pair.key_pem, 0o600)?;
    // The check a listener makes when it loads the pair.
    weir_tls::Identity::load(&new_cert.0, &new_key.0, SystemTime::now())
        .map_err(|e| e.to_string())?;
    new_key.place(&key, args.force)?;
    if let Err(e) = new_cert.place(&cert, args.force) {
        if !args.force {
            // The key placed just now was new: without its certificate it is no pair.
            let _ = std::fs::remove_file(&key);
        }
        return Err(e);
    }
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

/// A file written beside its place (`.NAME.new` in the same directory, so that taking the
/// place is a rename or a link, never a copy); removed when dropped, if still there.
struct Staged(PathBuf);

impl Staged {
    fn write(place: &Path, content: &str, mode: u32) -> Result<Staged, String> {
        use std::io::Write;
        let name = place.file_name().unwrap_or_default().to_string_lossy();
        let path = place.with_file_name(format!(".{name}.new"));
        let _ = std::fs::remove_file(&path);
        let staged = Staged(path);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&staged.0)
            .map_err(|e| format!("cannot write {}: {e}", place.display()))?;
        f.write_all(content.as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(|e| format!("cannot write {}: {e}", place.display()))?;
        Ok(staged)
    }

    /// Puts the file in `place`: replacing what is there when `replace`, else only where
    /// nothing is (a file made meanwhile by another command is not overwritten).
    fn place(&self, place: &Path, replace: bool) -> Result<(), String> {
        match replace {
            true => std::fs::rename(&self.0, place),
            false => std::fs::hard_link(&self.0, place),
        }
        .map_err(|e| format!("cannot write {}: {e}", place.display()))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
