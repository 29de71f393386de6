//! credlint: lints rendered Kubernetes manifests against the ADR-072 credentials-bundle contract.
//!
//! The stages, in the order a run goes through them; a module imports only from its own stage
//! or one listed before it:
//! - `common`: helpers with users in more than one stage (the word hash of the caches, the
//!   [`common::spread::Spread`] a stage splits its work by);
//! - `load`: files and standard input to YAML documents with spans, as go-yaml v2 reads them;
//! - `model`: objects, bundle members, bundles, findings;
//! - `runtime`: create.py read (static checks) and run (the fake API server of `simulate`);
//! - `lint`: the catalog, the rules and the engine that runs them;
//! - `cache`: what linting each file produced, kept between runs of `check` (a folder of
//!   entries keyed by the file's bytes and everything else that decides the result);
//! - `report`: the output formats;
//! - `policy`: the object rules as Kyverno policies;
//! - `exec`: how a run is scheduled: threads, pieces of large files, the allocator's policy
//!   (the stages above decide every finding on the calling thread);
//! - `cli`: the commands, settings (credlint.toml and flags), suppressions, pre-commit mode and
//!   the rule documentation.
//!
//! `testkit` serves the tests, fuzz targets and benchmarks only: it is compiled for unit tests
//! and with the `testkit` feature, which the integration tests turn on.

pub mod cache;
pub mod cli;
pub mod common;
pub mod exec;
pub mod lint;
pub mod load;
pub mod model;
pub mod policy;
pub mod report;
pub mod runtime;

#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
