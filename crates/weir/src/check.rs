//! `weir check`: validate files like `nginx -t`, but report every error.

use std::process::ExitCode;

use weir_config::LoadError;

use crate::cli::CheckArgs;

pub fn check(args: CheckArgs) -> ExitCode {
    let mut failed = false;
    for path in &args.files {
        let name = path.display();
        // A name that does not resolve now is a warning: weir starts with it.
        match weir_config::load_file_looking_up(path, &weir_dns::lookup_now) {
            Ok(loaded) => {
                for w in &loaded.warnings {
                    eprintln!("{w}\n");
                }
                if !loaded.omitted.is_empty() {
                    eprintln!("{}\n", loaded.omitted);
                }
                println!("{name}: ok ({})", weir_config::summary(&loaded.config));
            }
            Err(LoadError::Invalid(diags)) => {
                failed = true;
                eprintln!("{diags}");
                let errors = diags.error_count();
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
