//! Warnings for settings that are parsed and validated but not yet acted on
//! by the data plane. They are accepted (so configs written for the planned
//! behaviour keep working) but a user must never believe they are protected
//! by a limit that does nothing. Remove an entry here when its feature lands.

use crate::read::{Fields, Sink};
use crate::Admin;

pub(crate) fn admin(sink: &mut Sink<'_>, t: &Fields<'_, '_>, _a: &Admin) {
    // No admin listener runs yet: say so rather than let a user believe the
    // API (or its token) is in place.
    if let Some(span) = t.key_span("listen").or_else(|| t.key_span("token_file")) {
        sink.warn(
            span,
            "the admin API is not served yet in this version of weir (planned); [admin] is validated but nothing listens on it",
        );
    }
}
