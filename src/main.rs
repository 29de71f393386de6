// Set in the binary only: the library (tests, fuzz targets, embedders) keeps the system's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

unsafe extern "C" {
    /// mimalloc's run-time options (`mi_option_set` in mimalloc.h).
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_t`: how long freed memory stays
/// committed before it is given back (10 ms by default, 100 ms in arenas).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

fn main() -> std::process::ExitCode {
    // Freed memory is given back at once: a run is short and its peak is what counts (glibc
    // returns a large block when it is freed; with the delay, a buffer grown to 256 MiB held
    // its 64 and 128 MiB predecessors too, 530 MB in all).
    // SAFETY: sets an integer option; mimalloc allows it at any time, from any thread.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    credlint::cli::main()
}
