fn main() -> std::process::ExitCode {
    credlint::cli::main()
}
