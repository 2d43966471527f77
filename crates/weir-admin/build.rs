//! Embeds every file under `assets/` (the dashboard) into the binary, so the
//! dashboard works offline and ships as one file.

use std::fmt::Write;
use std::path::Path;

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

fn main() {
    // Read when the script runs, not baked in when it was compiled: a build of another
    // checkout sharing the target directory reuses the compiled script, and its baked-in
    // path (that checkout's, maybe gone since) embedded no dashboard at all.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest).join("assets");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut out = String::from("pub static ASSETS: &[(&str, &str, &[u8])] = &[\n");
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let mut files: Vec<_> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        for p in files {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            println!("cargo:rerun-if-changed={}", p.display());
            writeln!(
                out,
                "    ({name:?}, {:?}, include_bytes!({:?})),",
                content_type(&name),
                p.display().to_string()
            )
            .unwrap();
        }
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("assets.rs");
    std::fs::write(dest, out).unwrap();
}
