//! Helpers with users in more than one stage; below every stage, importing none of them.

pub mod wordhash;
