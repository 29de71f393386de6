//! Lint: the rule catalog and the rules: CEL object rules, rules decided in Rust, the `schema`
//! rule, user Kyverno policies (`check --policy`), and the engine that runs them over every
//! file and bundle. Imports `load`, `model`, `runtime`.

pub mod catalog;
pub mod cel;
pub mod checks;
pub mod engine;
pub mod kyverno;
pub mod schema;
pub mod verdicts;
