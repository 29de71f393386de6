//! Derived documentation is checked in and kept current: `docs/rules.md` is what
//! `credlint rules --format markdown` prints. `UPDATE_DOCS=1 cargo test --test docs` rewrites it.

use std::path::Path;

#[test]
fn the_rule_reference_is_current_and_linked_from_the_readme() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("docs/rules.md");
    let generated = credlint::cli::docs::markdown(credlint::lint::catalog::Catalog::get());
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(&path, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/rules.md is stale: run `UPDATE_DOCS=1 cargo test --test docs` \
         (or `cargo run -- rules --format markdown > docs/rules.md`)"
    );
    for rule in &credlint::lint::catalog::Catalog::get().rules {
        assert!(
            on_disk.contains(&format!("\n## {}\n", rule.id)),
            "{} has no section",
            rule.id
        );
    }
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains("](docs/rules.md)"),
        "the README links the rule reference"
    );
}

/// Every rule that cites the bundle contract cites a section docs/bundle.md has, and the
/// remediation texts that name bundle.md name the shipped file.
#[test]
fn rules_cite_sections_of_the_shipped_bundle_contract() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let contract = std::fs::read_to_string(root.join("docs/bundle.md")).unwrap();
    let mut cited = 0;
    for rule in &credlint::lint::catalog::Catalog::get().rules {
        if let Some(number) = &rule.contract {
            let section = credlint::cli::docs::contract_section(rule)
                .unwrap_or_else(|| panic!("{}: docs/bundle.md has no section {number}", rule.id));
            assert!(contract.contains(&format!("\n## {}\n", section.title)));
            assert!(
                contract.contains(&format!("(#{})", section.anchor)),
                "{}: the table of contents links #{}",
                rule.id,
                section.anchor
            );
            cited += 1;
        }
        for text in [&rule.remediation, &rule.rationale] {
            assert!(
                !text.contains("bundle.md") || text.contains("docs/bundle.md section"),
                "{}: cite the shipped file as `docs/bundle.md section N`",
                rule.id
            );
        }
    }
    assert!(
        cited > 30,
        "the contract rules cite their section ({cited})"
    );
}

/// The README and the docs link only files that are in the repository (or web addresses).
#[test]
fn documentation_links_only_files_in_the_repository() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    for doc in ["README.md", "docs/bundle.md", "docs/rules.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let base = root.join(doc).parent().unwrap().to_path_buf();
        for m in link.captures_iter(&text) {
            let target = &m[1];
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with('#')
            {
                continue;
            }
            let file = target.split('#').next().unwrap();
            let path = base.join(file);
            assert!(
                path.exists(),
                "{doc} links {target}, which is not in the repository"
            );
            let inside = path
                .canonicalize()
                .unwrap()
                .starts_with(root.canonicalize().unwrap());
            assert!(inside, "{doc} links {target}, outside the repository");
        }
    }
}

/// `credlint config-schema` prints the checked-in docs/credlint.schema.json (the test against
/// the parser is beside the generator, in src/cli/config_schema.rs).
#[test]
fn the_config_schema_is_current() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join(credlint::cli::config_schema::PATH);
    let generated = credlint::cli::config_schema::text();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/credlint.schema.json is stale: run `UPDATE_DOCS=1 cargo test --test docs` (or \
         `cargo run -- config-schema > docs/credlint.schema.json`)"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_credlint"))
        .arg("config-schema")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), generated);
}
