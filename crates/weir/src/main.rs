//! The `weir` binary: command line, wiring and signals.

mod check;
mod cli;
mod ctl;
mod demo;
mod logging;
mod reload;
mod run;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Check(args) => check::check(args),
        Command::Demo(args) => demo::demo(args),
        Command::Ctl(args) => ctl::ctl(args),
        Command::Version => {
            println!("weir {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
    }
}
