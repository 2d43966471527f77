//! `weir demo`: placeholder until the testkit lands.
use std::process::ExitCode;

use crate::cli::DemoArgs;

pub fn demo(_args: DemoArgs) -> ExitCode {
    ExitCode::FAILURE
}
