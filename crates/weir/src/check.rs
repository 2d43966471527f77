//! `weir check`: validate files like `nginx -t`, but report every error.

use std::process::ExitCode;

use weir_config::LoadError;

use crate::cli::CheckArgs;

pub fn check(args: CheckArgs) -> ExitCode {
    let mut failed = false;
    for path in &args.files {
        let name = path.display();
        match weir_config::load_file(path) {
            Ok(loaded) => {
                for w in &loaded.warnings {
                    eprintln!("{w}\n");
                }
                println!("{name}: ok ({})", weir_config::summary(&loaded.config));
            }
            Err(LoadError::Invalid(diags)) => {
                failed = true;
                eprintln!("{diags}");
                let errors = diags
                    .0
                    .iter()
                    .filter(|d| d.severity == weir_config::Severity::Error)
                    .count();
                let s = if errors == 1 { "" } else { "s" };
                eprintln!("{name}: {errors} error{s}");
            }
            Err(e) => {
                failed = true;
                eprintln!("{e}");
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
