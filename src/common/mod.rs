//! Helpers with users in more than one stage; below every stage, importing none of them.

pub mod sha256;
pub mod wordhash;
