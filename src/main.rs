// Set in the binary only: the library (tests, fuzz targets, embedders) keeps the system's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    credlint::cli::main()
}
