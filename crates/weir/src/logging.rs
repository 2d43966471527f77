//! Log output: human-readable lines on stderr, filtered by `RUST_LOG`
//! (default `info`). Release builds stop at `debug`: trace-level events are compiled
//! out (the workspace's `tracing` dependency, for HTTP/2's CPU).
//!
//! One warning of a library is counted rather than written: rustls's "Illegal SNI extension:
//! ignoring IP address", once per connection whose ClientHello names an IP address (some
//! clients and every scanner of IP ranges do), which would fill the log. It goes to
//! `weir_tls_sni_ip_address_total`.

use std::fmt;
use std::sync::atomic::Ordering::Relaxed;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata};
use tracing_subscriber::layer::{Context, Filter, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(filter)
        .with_filter(Counted);
    tracing_subscriber::registry().with(fmt).init();
}

/// Leaves out (and counts) the warnings that are counted instead.
struct Counted;

const SNI_IP: &str = "Illegal SNI extension: ignoring IP address";

impl<S> Filter<S> for Counted {
    fn enabled(&self, _: &Metadata<'_>, _: &Context<'_, S>) -> bool {
        true
    }

    fn event_enabled(&self, event: &Event<'_>, _: &Context<'_, S>) -> bool {
        // Only warnings are looked at, and only their message's start.
        if *event.metadata().level() != Level::WARN {
            return true;
        }
        let mut m = StartsWith(SNI_IP, false);
        event.record(&mut m);
        if m.1 {
            weir_metrics::GLOBAL
                .tls_sni_ip_address
                .fetch_add(1, Relaxed);
        }
        !m.1
    }
}

/// Whether an event's `message` starts with the text.
struct StartsWith(&'static str, bool);

impl Visit for StartsWith {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.1 = value.starts_with(self.0);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.1 = format!("{value:?}").starts_with(self.0);
        }
    }
}
