//! Load: what to read (files, folders, standard input), its text, and the YAML documents in it
//! with spans, read as Kubernetes reads them. Imports only `common`.

pub mod block;
pub mod input;
pub mod json_stream;
pub mod locate;
pub mod pieces;
pub mod source;
pub mod stream;
pub mod yaml;
