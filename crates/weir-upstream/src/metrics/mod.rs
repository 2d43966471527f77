//! What each endpoint and pool counts: kept in the registry entries that outlive
//! snapshots, read at scrape time by the data plane's renderers.

pub mod endpoint;
pub mod pool;
