//! Regenerates `fixtures/clean/` from the renderer: `cargo run --example fixtures`.
//! The test `clean_renderings_are_current` fails when the files differ from what this writes.

fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/clean");
    let script = credlint::testkit::render::clean_script();
    for (path, content) in credlint::testkit::render::clean_renderings(&script) {
        let target = root.join(&path);
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir).expect("fixtures/clean is writable");
        }
        std::fs::write(&target, content).expect("fixtures/clean is writable");
        println!("wrote fixtures/clean/{path}");
    }
}
