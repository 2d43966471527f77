//! Reads a listener's path settings (`merge_slashes`, `escaped_slashes`). Apart from path.rs,
//! which is the normal form itself (the data plane runs it, and the model holds its
//! `PathRules`), because reading a listener needs the model.

use crate::model::{Listener, Protocol};
use crate::path::EscapedSlashes;
use crate::read::{self, Fields, Sink};

const ESCAPED_SLASHES: &[(&str, EscapedSlashes)] = &[
    ("keep", EscapedSlashes::Keep),
    ("reject", EscapedSlashes::Reject),
    ("decode", EscapedSlashes::Decode),
];

/// A listener's `merge_slashes` and `escaped_slashes`, read into `l` (its `protocol` read
/// before).
pub(crate) fn listener(sink: &mut Sink<'_>, t: &Fields<'_, '_>, l: &mut Listener) {
    if let Some(v) = t.get("merge_slashes") {
        match v.get_ref().as_bool() {
            Some(b) => l.path.merge_slashes = b,
            None => read::wrong_type(sink, v, "a boolean"),
        }
    }
    if let Some(e) = t.choice(sink, "escaped_slashes", ESCAPED_SLASHES) {
        l.path.escaped_slashes = e;
    }
    if l.protocol == Protocol::Tcp {
        for key in ["merge_slashes", "escaped_slashes"] {
            if let Some(span) = t.key_span(key) {
                sink.warn(
                    span,
                    format!("{key} has no effect on a tcp listener (it has no paths)"),
                );
            }
        }
    }
}
