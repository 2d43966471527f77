//! Warnings for settings that are parsed and validated but not yet acted on
//! by the data plane. They are accepted (so configs written for the planned
//! behaviour keep working) but a user must never believe they are protected
//! by a limit that does nothing. Remove an entry here when its feature lands.

use crate::read::{Fields, Sink};
use crate::Admin;

pub(crate) fn admin(sink: &mut Sink<'_>, t: &Fields<'_, '_>, a: &Admin) {
    // The admin listener serves health, metrics, stats and the dashboard,
    // all read-only, and checks no token yet: say so rather than let a user
    // believe the token protects anything.
    if let Some(v) = t.get("token_file") {
        sink.warn(
            v.span(),
            "token_file is not checked yet in this version of weir (planned); the admin listener is read-only (health, metrics, stats, dashboard) and asks for no token",
        );
    }
    if !a.listen.ip().is_loopback() {
        if let Some(v) = t.get("listen") {
            sink.warn(
                v.span(),
                format!(
                    "the admin listener on {} is reachable from other hosts without authentication (it is read-only: health, metrics, stats, dashboard)",
                    a.listen
                ),
            );
        }
    }
}
