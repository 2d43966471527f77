//! Warnings for settings that are parsed and validated but not yet acted on
//! by the data plane. They are accepted (so configs written for the planned
//! behaviour keep working) but a user must never believe they are protected
//! by a limit that does nothing. Remove an entry here when its feature lands.

use crate::read::{Fields, Sink};
use crate::{Admin, Balance, HealthCheck, Pool};

fn not_enforced(key: &str) -> String {
    format!("{key} is not enforced yet in this version of weir (planned); the value is validated but has no effect")
}

pub(crate) fn pool(sink: &mut Sink<'_>, t: &Fields<'_, '_>, p: &Pool) {
    // max_conn = 0 and max_queue = 0 ask for "no limit", which is what happens.
    let asks_for_limit = [("max_conn", p.max_conn > 0), ("max_queue", p.max_queue > 0)];
    for (key, set) in asks_for_limit {
        if let (true, Some(v)) = (set, t.get(key)) {
            sink.warn(v.span(), not_enforced(key));
        }
    }
    for key in ["queue_timeout", "overflow_status"] {
        if let Some(v) = t.get(key) {
            sink.warn(v.span(), not_enforced(key));
        }
    }
    if p.balance != Balance::RoundRobin {
        if let Some(v) = t.get("balance") {
            let name = v.get_ref().as_str().unwrap_or_default();
            sink.warn(
                v.span(),
                format!("balance = \"{name}\" is not implemented yet; round_robin is used"),
            );
        }
    }
    if p.health.check != HealthCheck::None {
        let span = t
            .get("health")
            .and_then(|h| h.get_ref().as_table())
            .and_then(|h| h.get("check"))
            .map(|v| v.span());
        if let Some(span) = span {
            sink.warn(
                span,
                "active health checks are not run yet in this version of weir (planned); the [health] table is validated but has no effect, every endpoint is treated as healthy",
            );
        }
    }
    if let Some(span) = t.key_span("retry") {
        sink.warn(
            span,
            "retry is not enforced yet in this version of weir (planned); the [retry] table is validated but has no effect",
        );
    }
}

pub(crate) fn admin(sink: &mut Sink<'_>, t: &Fields<'_, '_>, a: &Admin) {
    if let Some(v) = t.get("token_file") {
        sink.warn(
            v.span(),
            "token_file is not enforced yet in this version of weir (planned); the admin API does not ask for a token",
        );
    }
    // The design requires a token off loopback; until tokens are checked,
    // say plainly that the admin API is open.
    if !a.listen.ip().is_loopback() {
        if let Some(v) = t.get("listen") {
            sink.warn(
                v.span(),
                format!(
                    "admin API on {} is reachable from other hosts and has no authentication in this version of weir; prefer a loopback address",
                    a.listen
                ),
            );
        }
    }
}
