//! Log output: human-readable lines on stderr, filtered by `RUST_LOG`
//! (default `info`). Release builds stop at `debug`: trace-level events are compiled
//! out (the workspace's `tracing` dependency, for HTTP/2's CPU).

use tracing_subscriber::EnvFilter;

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
