//! credlint: lints rendered Kubernetes manifests against the ADR-072 credentials-bundle contract.
//!
//! Dependencies point one way: `cli` -> `engine` -> {`bundle`, `catalog`, `cel`, `checks`,
//! `members`, `schema`, `verdicts`} -> {`model`, `source`, `locate`, `yaml`, `wordhash`}.
//! After the engine, `cli` runs `settings` (from `config` and the flags: `suppress`,
//! severities, selection), `precommit` (narrowing to the changed files) and a `report` format;
//! none of them is used by the engine.

pub mod block;
pub mod bundle;
pub mod catalog;
pub mod cel;
pub mod checks;
pub mod cli;
pub mod config;
pub mod docs;
pub mod engine;
pub mod input;
pub mod kyverno;
pub mod locate;
pub mod members;
pub mod model;
pub mod object;
pub mod policies_cmd;
pub mod policy;
pub mod precommit;
pub mod python;
pub mod render;
pub mod report;
pub mod schema;
pub mod settings;
pub mod simulate;
pub mod simulation;
pub mod source;
pub mod suggest;
pub mod suppress;
pub mod testkit;
pub mod verdicts;
pub mod wordhash;
pub mod yaml;
