//! credlint: lints rendered Kubernetes manifests against the ADR-072 credentials-bundle contract.

pub mod cel;
pub mod locate;
pub mod model;
pub mod source;
pub mod yaml;
