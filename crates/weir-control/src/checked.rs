//! A change that passed validation, with what the data plane needs to run it. Its own file
//! because a source carries it through a commit (`Source::commit`) without looking inside,
//! while `RunningConfig` (control.rs) makes and runs it.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use weir_config::Config;
use weir_proxy::Prepared;

use crate::held::Held;

/// A change that passed validation, with what the data plane needs to run it.
pub struct Checked {
    pub(crate) config: Arc<Config>,
    pub(crate) plan: Plan,
    /// Time spent validating and preparing, for `weir_config_apply_seconds`.
    pub(crate) took: Duration,
    /// What others wrote that does not validate, held back.
    pub(crate) held: Held,
}

/// How the data plane takes a change.
pub(crate) enum Plan {
    /// Only endpoints changed: those pools' endpoints are swapped, nothing else is rebuilt.
    Endpoints(BTreeSet<String>),
    /// Anything else: a new snapshot, with new listeners already bound.
    Whole(Prepared),
}
