//! credlint: lints rendered Kubernetes manifests against the ADR-072 credentials-bundle contract.

pub mod schema;
pub mod yaml;
