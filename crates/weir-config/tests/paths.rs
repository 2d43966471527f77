//! A listener's path rules (`merge_slashes`, `escaped_slashes`), and route prefixes that
//! could never match a path in normal form, each at its line and column.

mod common;
use common::*;

use weir_config::path::EscapedSlashes;

fn warnings(src: &str) -> Vec<(usize, usize, String)> {
    ok(src)
        .warnings
        .into_iter()
        .map(|d| (d.line, d.col, d.message))
        .collect()
}

#[test]
fn the_keys_read_into_the_model_with_their_defaults() {
    let l = ok(BASE);
    let p = l.config.listeners["web"].path;
    assert!(p.merge_slashes);
    assert_eq!(p.escaped_slashes, EscapedSlashes::Keep);
    for (v, want) in [
        ("keep", EscapedSlashes::Keep),
        ("reject", EscapedSlashes::Reject),
        ("decode", EscapedSlashes::Decode),
    ] {
        let src = BASE.replace(
            "bind = \"127.0.0.1:8080\"\n",
            &format!(
                "bind = \"127.0.0.1:8080\"\nmerge_slashes = false\nescaped_slashes = \"{v}\"\n"
            ),
        );
        let l = ok(&src);
        assert!(l.warnings.is_empty(), "{:#?}", l.warnings);
        let p = l.config.listeners["web"].path;
        assert!(!p.merge_slashes);
        assert_eq!(p.escaped_slashes, want);
    }
}

#[test]
fn bad_values_are_errors_at_their_place() {
    let src = BASE.replace(
        "bind = \"127.0.0.1:8080\"\n",
        "bind = \"127.0.0.1:8080\"\nescaped_slashes = \"decoded\"\n",
    );
    one_error(&src, 3, 19, "did you mean `decode`");
    let src = BASE.replace(
        "bind = \"127.0.0.1:8080\"\n",
        "bind = \"127.0.0.1:8080\"\nmerge_slashes = \"yes\"\n",
    );
    one_error(&src, 3, 17, "a boolean");
}

#[test]
fn a_prefix_not_in_normal_form_warns_with_the_form_it_would_need() {
    let src = format!(
        r#"{BASE}
[routes.a]
listener = "web"
path_prefix = "/api//v1"
pool = "app"

[routes.b]
listener = "web"
path_prefix = "/%61dmin/./x"
pool = "app"

[routes.c]
listener = "web"
path_prefix = "/up/../.."
pool = "app"

[routes.fine]
listener = "web"
path_prefix = "/api/v1/"
pool = "app"
"#
    );
    let w = warnings(&src);
    assert_eq!(w.len(), 3, "{w:#?}");
    assert_eq!((w[0].0, w[0].1), (9, 15));
    assert!(w[0].2.contains("where it reads \"/api/v1\""), "{w:#?}");
    assert!(w[1].2.contains("where it reads \"/admin/x\""), "{w:#?}");
    assert!(w[2].2.contains("climbs above the root"), "{w:#?}");
    // Without merging, `//` is a form a request can have.
    let kept = src.replace(
        "bind = \"127.0.0.1:8080\"\n",
        "bind = \"127.0.0.1:8080\"\nmerge_slashes = false\n",
    );
    assert_eq!(warnings(&kept).len(), 2);
}

#[test]
fn the_keys_warn_on_a_tcp_listener() {
    let src = r#"[listeners.db]
protocol = "tcp"
bind = "127.0.0.1:8081"
pool = "pg"
merge_slashes = false

[pools.pg]
endpoints = [{ addr = "127.0.0.1:9002" }]
"#;
    let w = warnings(src);
    assert_eq!(w.len(), 1, "{w:#?}");
    assert_eq!((w[0].0, w[0].1), (5, 1));
    assert!(w[0].2.contains("no effect on a tcp listener"), "{w:#?}");
}
