//! Writes a benchmark corpus: `cargo run --release --example gen-corpus -- DIR N`.
//!
//! `DIR/split/` gets one file per owner (its five objects and a few unrelated application
//! objects: a Deployment, a Service, an application Role), the way a monorepo render lays it
//! out; `DIR/all.yaml` holds everything in one stream, the largest single input. Owners cycle
//! through the four kinds and 50 namespaces; every bundle is valid, so a run reports nothing.

use credlint::testkit::render::{Spec, clean_script};
use std::fmt::Write as _;
use std::io::Write as _;

fn app_objects(namespace: &str, owner: &str) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {owner}-server\n  namespace: {namespace}\n  \
         labels: {{app.kubernetes.io/name: {owner}, app.kubernetes.io/part-of: shop}}\nspec:\n  replicas: 2\n  \
         selector:\n    matchLabels: {{app: {owner}}}\n  template:\n    metadata:\n      labels: {{app: {owner}}}\n    \
         spec:\n      containers:\n        - name: server\n          image: registry.example/platform/{owner}:3.1.4\n          \
         ports:\n            - containerPort: 6379\n          env:\n            - name: PASSWORD\n              valueFrom:\n                \
         secretKeyRef: {{name: {owner}-app, key: password}}\n          resources:\n            requests: {{cpu: 100m, memory: 128Mi}}\n            \
         limits: {{memory: 256Mi}}\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: {owner}\n  namespace: {namespace}\nspec:\n  \
         selector: {{app: {owner}}}\n  ports:\n    - port: 6379\n      targetPort: 6379\n---\napiVersion: rbac.authorization.k8s.io/v1\n\
         kind: Role\nmetadata:\n  name: {owner}-reader\n  namespace: {namespace}\nrules:\n  - apiGroups: [\"\"]\n    \
         resources: [configmaps]\n    verbs: [get, list, watch]\n"
    );
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(n)) = (
        args.first(),
        args.get(1).and_then(|n| n.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: gen-corpus DIR N");
        std::process::exit(2);
    };
    let dir = std::path::Path::new(dir);
    let split = dir.join("split");
    std::fs::create_dir_all(&split).expect("the corpus folder is writable");
    let script = clean_script();
    let kinds = ["cache", "broker", "bucket", "component"];
    let mut all =
        std::io::BufWriter::new(std::fs::File::create(dir.join("all.yaml")).expect("writable"));
    let (mut bytes, mut documents) = (0usize, 0usize);
    for i in 0..n {
        let namespace = format!("team-{:02}", i % 50);
        let kind = kinds[i % kinds.len()];
        let owner = format!("{kind}-{i:05}");
        let text = format!(
            "{}{}",
            Spec::example(&namespace, &owner, kind, &script).render(),
            app_objects(&namespace, &owner)
        );
        documents += text.matches("\n---\n").count() + 1;
        bytes += text.len();
        std::fs::write(split.join(format!("{owner}.yaml")), &text).expect("writable");
        if i > 0 {
            all.write_all(b"---\n").expect("writable");
        }
        all.write_all(text.as_bytes()).expect("writable");
    }
    all.flush().expect("writable");
    eprintln!(
        "{n} bundles, {documents} documents, {:.1} MB in {}",
        bytes as f64 / 1e6,
        dir.display()
    );
}
