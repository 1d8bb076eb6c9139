use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    match git_ralph::cli::Cli::try_parse() {
        Ok(cli) => git_ralph::run(cli),
        Err(err) => {
            let _ = err.print();
            if err.use_stderr() {
                git_ralph::exit::Exit::Usage.code()
            } else {
                ExitCode::SUCCESS
            }
        }
    }
}
