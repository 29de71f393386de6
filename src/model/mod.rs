//! Model: what the documents mean: Kubernetes objects, the bundle members among them and the
//! bundles they assemble into, and the findings a run produces. Imports `load`.

mod finding;
pub use finding::*;

pub mod bundle;
pub mod members;
pub mod object;
pub mod outcome;
pub mod writers;
