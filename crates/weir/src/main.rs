//! The `weir` binary: command line, wiring and signals.

mod alloc;
mod boot;
mod cert;
mod check;
mod cli;
mod ctl;
mod demo;
mod logging;
mod reload;
mod run;
mod self_signed;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

// mimalloc: every client connection allocates a few buffers of kilobytes,
// where glibc takes its slow paths (bins, consolidation, aligned task cells).
// Measured in one bench run against glibc: less CPU per unit in all five perf
// scenarios (tcp-conn 73.3 → 70.2 µs, http-small user 5.0 → 4.3 µs), at
// ~7 MiB more peak RSS (docs/BENCHMARKS.md). Entered through alloc.rs.
#[global_allocator]
static GLOBAL: alloc::MiMalloc = alloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Check(args) => check::check(args),
        Command::Demo(args) => demo::demo(args),
        Command::Ctl(args) => ctl::ctl(args),
        Command::Cert(args) => cert::cert(args),
        Command::Version => {
            println!(
                "weir {} (TLS: rustls with {})",
                env!("CARGO_PKG_VERSION"),
                weir_tls::provider::NAME
            );
            ExitCode::SUCCESS
        }
    }
}
