//! Runtime: the two halves of checking the Job's program, create.py: `python` reads it
//! (static, used by `check`), `simulate` runs it against a fake API server (dynamic, used by
//! `credlint simulate`). Imports `common` only.

pub mod python;
pub mod simulate;
