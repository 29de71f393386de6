// Set in the binary only: the library (tests, fuzz targets, embedders) keeps the system's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

unsafe extern "C" {
    /// mimalloc's run-time options (`mi_option_set` in mimalloc.h).
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_t`: how long freed memory stays
/// committed before it is given back, in milliseconds (negative: never).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

fn main() -> std::process::ExitCode {
    tune(credlint::exec::Memory::Keep);
    credlint::cli::main(Some(tune))
}

/// The allocator policy the run asked for, set once before its inputs are read.
fn tune(memory: credlint::exec::Memory) {
    let delay = match memory {
        credlint::exec::Memory::Keep => -1,
        // mimalloc's own default.
        credlint::exec::Memory::Return => 10,
        credlint::exec::Memory::ReturnAtOnce => 0,
    };
    // SAFETY: sets an integer option; mimalloc allows it at any time, from any thread.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, delay) };
}
