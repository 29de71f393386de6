// Set in the binary only: the library (tests, fuzz targets, embedders) keeps the system's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

unsafe extern "C" {
    /// mimalloc's run-time options (`mi_option_set` in mimalloc.h).
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    fn mi_malloc(size: usize) -> *mut c_void;
    fn mi_calloc(count: usize, size: usize) -> *mut c_void;
    fn mi_realloc(p: *mut c_void, size: usize) -> *mut c_void;
    fn mi_free(p: *mut c_void);
}

use std::ffi::c_void;

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_t`: how long freed memory stays
/// committed before it is given back (10 ms by default, 100 ms in arenas).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

fn main() -> std::process::ExitCode {
    // A small run (a pre-commit hook's file) gives no freed memory back: every page it frees
    // is soon reused or dropped at exit, and giving one back costs an madvise call and a TLB
    // flush on the other cores (8% of a 10-object file's run, a third of it at exit).
    // SAFETY: sets an integer option (a negative delay: never); allowed at any time.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    credlint::load::input::on_memory(purge_for);
    // tree-sitter (C) allocates with malloc unless told otherwise, and glibc's malloc gave
    // each parsing thread an arena of its own, grown a page at a time: 74 mprotect calls in a
    // 10-object file's run, on its longest chain. mimalloc is already there for the rest.
    // SAFETY: before any tree-sitter call (nothing has run yet), and the four functions are
    // one allocator's; the wrappers below never return null for a non-zero size.
    unsafe {
        tree_sitter::set_allocator(Some(tree_sitter::Allocator {
            malloc: ts_malloc,
            calloc: ts_calloc,
            realloc: ts_realloc,
            free: mi_free,
        }))
    };
    credlint::cli::main()
}

/// A large run gives freed memory back after mimalloc's usual delay: at once, every document
/// freed made a system call whose pages the next document faulted in again (a tenth of the
/// CPU of a 4,000-bundle tree, for 1 MB less peak). Standard input growing past a few MiB
/// gives it back at once: with the delay, a buffer grown to 256 MiB held its 64 and 128 MiB
/// predecessors too, 530 MB in all. A large file read whole keeps what it frees: the file
/// sets the peak, and its documents reuse those pages.
fn purge_for(memory: credlint::load::input::Memory) {
    let delay = match memory {
        credlint::load::input::Memory::Large => 10,
        credlint::load::input::Memory::Growing => 0,
        // One large file held whole: an 84 MB render's run took 10 ms less (of 310) for 6 MB
        // more peak.
        credlint::load::input::Memory::Whole => -1,
    };
    // SAFETY: sets an integer option; mimalloc allows it at any time, from any thread.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, delay) };
}

// tree-sitter's allocator must not return null (its own default aborts instead); neither do
// these.
unsafe extern "C" fn ts_malloc(size: usize) -> *mut c_void {
    // SAFETY: mimalloc's malloc, any size.
    non_null(unsafe { mi_malloc(size) }, size)
}

unsafe extern "C" fn ts_calloc(count: usize, size: usize) -> *mut c_void {
    // SAFETY: mimalloc's calloc checks count * size for overflow itself.
    non_null(
        unsafe { mi_calloc(count, size) },
        count.saturating_mul(size),
    )
}

unsafe extern "C" fn ts_realloc(p: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: `p` came from this allocator (tree-sitter frees and grows only its own).
    non_null(unsafe { mi_realloc(p, size) }, size)
}

fn non_null(p: *mut c_void, size: usize) -> *mut c_void {
    if p.is_null() && size > 0 {
        std::process::abort();
    }
    p
}
