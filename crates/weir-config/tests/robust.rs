//! Whatever the input, parsing returns diagnostics and never panics.

#[test]
fn every_prefix_of_a_config_is_handled() {
    let full = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/host-routing.toml")).unwrap()
        + "[pools.a.health]\ncheck = \"http\"\nexpect_status = \"200-2é9\"\n[listeners.\"ü\"]\nbind = '::1'\n";
    for (i, _) in full.char_indices() {
        let prefix = &full[..i];
        match weir_config::parse_str(prefix, "p.toml") {
            Ok(_) => {}
            Err(e) => {
                for d in &e.list {
                    assert!(d.line >= 1 && d.col >= 1 && d.len >= 1, "{d:?}");
                    let _ = d.to_string();
                }
            }
        }
    }
}

#[test]
fn odd_inputs() {
    for src in [
        "",
        "\n",
        "\u{feff}",
        "=",
        "[",
        "[[listeners]]\n",
        "a = [1, \"x\"]\n",
        "\r\n[globl]\r\n",
        "[pools.a]\nendpoints = [[]]\n",
    ] {
        let _ = weir_config::parse_str(src, "o.toml").map_err(|e| e.to_string());
    }
    // CRLF files: the source line has no trailing '\r'.
    let e = weir_config::parse_str("[globl]\r\n", "o.toml").unwrap_err();
    assert_eq!(e.list[0].source_line, "[globl]");
}
