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
