// Set in the binary only: the library (tests, fuzz targets, embedders) keeps the system's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::ffi::c_void;

unsafe extern "C" {
    /// mimalloc's run-time options (`mi_option_set` in mimalloc.h).
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    fn mi_malloc(size: usize) -> *mut c_void;
    fn mi_calloc(count: usize, size: usize) -> *mut c_void;
    fn mi_realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
    fn mi_free(ptr: *mut c_void);
}

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_t`: how long freed memory stays
/// committed before it is given back (10 ms by default, 100 ms in arenas).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

fn main() -> std::process::ExitCode {
    // A small run (a pre-commit hook's file) gives no freed memory back: every page it frees
    // is soon reused or dropped at exit, and giving one back costs an madvise call and a TLB
    // flush on the other cores (8% of a 10-object file's run, a third of it at exit). Once a
    // run has read a few MiB, freed memory is given back at once: then its peak is what
    // counts (with mimalloc's delay, a buffer grown to 256 MiB held its 64 and 128 MiB
    // predecessors too, 530 MB in all).
    // SAFETY: sets an integer option (a negative delay: never); allowed at any time.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    credlint::load::input::when_large(give_back_at_once);
    // tree-sitter (create.py's parser, C) allocates from mimalloc too: with the C library's
    // malloc, the thread that parses made an arena of its own (a 64 MiB mapping, trimmed and
    // faulted in) and freed the tree there at a cost mimalloc does not have.
    // SAFETY: before any tree-sitter call, on the only thread; the four functions are one
    // allocator's, keep malloc's alignment, and never return null (they abort instead).
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

/// Out of memory ends the process, as tree-sitter's own allocator does: it does not expect null.
fn non_null(ptr: *mut c_void) -> *mut c_void {
    if ptr.is_null() {
        std::process::abort();
    }
    ptr
}

unsafe extern "C" fn ts_malloc(size: usize) -> *mut c_void {
    // SAFETY: any size may be asked for; 0 gives a unique pointer, as malloc may.
    non_null(unsafe { mi_malloc(size.max(1)) })
}

unsafe extern "C" fn ts_calloc(count: usize, size: usize) -> *mut c_void {
    // SAFETY: mi_calloc checks the product for overflow (null, hence abort).
    non_null(unsafe { mi_calloc(count.max(1), size.max(1)) })
}

unsafe extern "C" fn ts_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: `ptr` came from these functions (tree-sitter frees and grows only its own).
    non_null(unsafe { mi_realloc(ptr, size.max(1)) })
}

fn give_back_at_once() {
    // SAFETY: sets an integer option; mimalloc allows it at any time, from any thread.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
}
