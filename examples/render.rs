//! Prints a correct credentials bundle: `cargo run --example render -- NAMESPACE OWNER KIND [SCRIPT]`.
//! The fixtures start from its output.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: render NAMESPACE OWNER cache|broker|bucket|component [SCRIPT_FILE]");
        std::process::exit(2);
    }
    let script = match args.get(3) {
        Some(path) => std::fs::read_to_string(path).unwrap_or_else(|e| {
            eprintln!("render: {path}: {e}");
            std::process::exit(2)
        }),
        None => {
            "import json\nimport sys\n\nprint(json.dumps({\"plan\": sys.argv[1]}))\n".to_string()
        }
    };
    let spec = credlint::testkit::render::Spec::example(&args[0], &args[1], &args[2], &script);
    print!("{}", spec.render());
}
