use clap::Parser;

fn main() -> std::process::ExitCode {
    credlint::cli::run(credlint::cli::Cli::parse())
}
