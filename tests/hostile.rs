//! Hostile and broken input, as a new user's files might be: each runs the real binary and
//! must end (a 60 s guard against hangs, not a performance claim) within 500 MB of peak
//! resident memory (the child's own, sampled from /proc), never panic, exit as cli.md says (a bad
//! document is a finding, exit 1; nothing to lint or a missing or unreadable path, exit 2),
//! and keep every finding of the real bundle beside the hostile part: the fixture
//! `role-forbidden-verb/bad-list-watch.yaml`, whose two `role-forbidden-verb` findings must
//! still be reported at their lines. Big inputs are generated into a temporary folder.
//!
//! Each test prints `hostile: <input>: <seconds> s, <MB> MB peak` (`--nocapture` shows them).

mod common;

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const GUARD: Duration = Duration::from_secs(60);
const MAX_RSS_MB: i64 = 500;
/// The bundle with a real fault that every hostile input stands beside.
const BUNDLE: &str = "fixtures/role-forbidden-verb/bad-list-watch.yaml";
/// Where its two findings are, in the fixture.
const FAULTS: [(usize, usize); 2] = [(27, 18), (27, 31)];

struct Run {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
    elapsed: Duration,
    rss_mb: i64,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn bundle() -> String {
    std::fs::read_to_string(root().join(BUNDLE)).unwrap()
}

fn temp_dir(name: &str) -> common::TempDir {
    common::TempDir::new(&format!("credlint-hostile-{name}"))
}

/// Runs `program args` (the binary, or a wrapper before it), reading both pipes, killing it
/// after the guard, and sampling its peak resident memory. The child is reaped with waitpid,
/// after waitid has seen it exit without reaping it.
fn spawn(program: &OsStr, args: &[&OsStr], cwd: &Path) -> Run {
    spawn_with(program, args, cwd, Stdio::null(), &[])
}

/// [`spawn`] with standard input from `stdin` and more environment variables.
#[allow(clippy::zombie_processes)]
fn spawn_with(
    program: &OsStr,
    args: &[&OsStr],
    cwd: &Path,
    stdin: Stdio,
    env: &[(&str, &str)],
) -> Run {
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        // The verdict cache goes under cargo's folder for test output, not into the repository
        // (a test that means another sets it in `env`).
        .env("CREDLINT_CACHE_DIR", common::cache_dir())
        .envs(env.iter().copied())
        .current_dir(cwd)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let pid = child.id() as libc::pid_t;
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader_out = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out.read_to_end(&mut buf);
        buf
    });
    let reader_err = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = err.read_to_end(&mut buf);
        buf
    });
    // Peak resident memory as the kernel keeps it for the child's own address space (VmHWM),
    // sampled until it exits. wait4's ru_maxrss would count the test process too: the child
    // starts as a copy of it, and exec keeps that copy's peak.
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        std::thread::spawn(move || {
            let mut peak_kb = 0i64;
            let status = format!("/proc/{pid}/status");
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(text) = std::fs::read_to_string(&status)
                    && let Some(kb) = text
                        .lines()
                        .find_map(|l| l.strip_prefix("VmHWM:"))
                        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
                {
                    peak_kb = peak_kb.max(kb);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            peak_kb
        })
    };
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if finished.recv_timeout(GUARD).is_err() {
            // SAFETY: kill(2) on the child we spawned and have not reaped yet.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    // Wait for the exit without reaping, so that the pid cannot be reused while sampled.
    // SAFETY: an all-zero siginfo_t is a valid value for waitid to fill in.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid on our own child's pid, with a valid pointer.
    let waited = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        )
    };
    assert_eq!(waited, 0, "waitid failed");
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let peak_kb = sampler.join().unwrap();
    let mut status = 0;
    // SAFETY: waitpid on our own child's pid, which has exited and is not reaped yet.
    let reaped = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(reaped, pid, "waitpid failed");
    let _ = done.send(());
    watchdog.join().unwrap();
    let elapsed = started.elapsed();
    let stdout = reader_out.join().unwrap();
    let stderr = String::from_utf8_lossy(&reader_err.join().unwrap()).into_owned();
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    assert!(
        code.is_some(),
        "killed by signal {} after {elapsed:?}: {stderr}",
        libc::WTERMSIG(status)
    );
    Run {
        code,
        stdout,
        stderr,
        elapsed,
        rss_mb: peak_kb / 1024,
    }
}

fn credlint<S: AsRef<OsStr>>(args: &[S]) -> Run {
    let args: Vec<&OsStr> = args.iter().map(AsRef::as_ref).collect();
    spawn(OsStr::new(env!("CARGO_BIN_EXE_credlint")), &args, &root())
}

/// What every hostile run must be: ended in time and memory, no panic, the expected exit.
fn sane(name: &str, run: &Run, code: i32) {
    eprintln!(
        "hostile: {name}: {:.2} s, {} MB peak",
        run.elapsed.as_secs_f64(),
        run.rss_mb
    );
    assert!(run.elapsed < GUARD, "{name}: did not end within {GUARD:?}");
    assert!(
        run.rss_mb < MAX_RSS_MB,
        "{name}: {} MB peak resident memory",
        run.rss_mb
    );
    assert_ne!(run.code, Some(101), "{name} panicked: {}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{name}: {}", run.stderr);
    assert_eq!(run.code, Some(code), "{name}: {}", run.stderr);
}

fn report(run: &Run) -> serde_json::Value {
    serde_json::from_slice(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&run.stdout)))
}

/// `(file, line, column, rule)` of every finding.
fn findings(run: &Run) -> Vec<(String, u64, u64, String)> {
    report(run)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["file"].as_str().unwrap_or_default().to_string(),
                f["line"].as_u64().unwrap(),
                f["column"].as_u64().unwrap(),
                f["rule"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The bundle's two faults are reported in `file`, `offset` lines further down.
fn faults_kept(name: &str, run: &Run, file: &str, offset: usize) {
    let found = findings(run);
    for (line, column) in FAULTS {
        let want = (
            file.to_string(),
            (line + offset) as u64,
            column as u64,
            "role-forbidden-verb".to_string(),
        );
        assert!(
            found.contains(&want),
            "{name}: lost {want:?}; found {found:?}"
        );
    }
}

fn has_rule(run: &Run, rule: &str) -> bool {
    findings(run).iter().any(|f| f.3 == rule)
}

/// Writes `hostile` then the bundle into one file (`---` between) and checks it.
fn beside_in_one_file(name: &str, hostile: &[u8]) -> Run {
    let dir = temp_dir(name);
    let path = dir.join("input.yaml");
    let mut bytes = hostile.to_vec();
    if !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(b"---\n");
    let offset = bytes.iter().filter(|&&b| b == b'\n').count();
    bytes.extend_from_slice(bundle().as_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let display = path.to_string_lossy().into_owned();
    let run = credlint(&["check", "--format", "json", &display]);
    sane(name, &run, 1);
    faults_kept(name, &run, &display, offset);
    let _ = std::fs::remove_dir_all(&dir);
    run
}

#[test]
fn an_alias_bomb_is_a_finding() {
    let mut bomb = String::from("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for (i, c) in ('b'..='j').enumerate() {
        let p = (b'a' + i as u8) as char;
        bomb.push_str(&format!(
            "{c}: &{c} [{}]\n",
            vec![format!("*{p}"); 9].join(", ")
        ));
    }
    let run = beside_in_one_file("alias bomb (billion laughs)", bomb.as_bytes());
    assert!(has_rule(&run, "yaml-syntax"));
}

#[test]
fn a_long_string_aliased_many_times_is_a_finding() {
    let text = format!(
        "a: &s {}\nb: [{}]\n",
        "y".repeat(1 << 20),
        vec!["*s"; 90_000].join(",")
    );
    let run = beside_in_one_file("1 MB string aliased 90,000 times", text.as_bytes());
    assert!(has_rule(&run, "yaml-syntax"));
}

#[test]
fn nested_anchors_no_alias_names_cost_nothing() {
    let mut text = String::from("x: ");
    for i in 0..150 {
        text.push_str(&format!("&a{i} ["));
    }
    text.push_str(&vec!["1"; 1_000_000].join(","));
    text.push_str(&"]".repeat(150));
    text.push('\n');
    let run = beside_in_one_file("150 nested anchors around a million items", text.as_bytes());
    assert!(!has_rule(&run, "yaml-syntax"), "{:?}", findings(&run));
}

#[test]
fn a_million_nested_block_sequences_is_a_finding() {
    let text = format!("{}x\n", "- ".repeat(1_000_000));
    let run = beside_in_one_file("a million nested block sequences", text.as_bytes());
    assert!(has_rule(&run, "yaml-syntax"));
}

#[test]
fn a_hundred_thousand_nested_flow_brackets_is_a_finding() {
    let text = format!("{}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    let run = beside_in_one_file("100,000 nested flow brackets", text.as_bytes());
    assert!(has_rule(&run, "yaml-syntax"));
}

#[test]
fn invalid_utf8_is_a_finding_at_its_byte() {
    let run = beside_in_one_file(
        "invalid UTF-8",
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {k: \"\xff\xfe\xc3\"}\n",
    );
    let syntax: Vec<_> = findings(&run)
        .into_iter()
        .filter(|f| f.3 == "yaml-syntax")
        .collect();
    assert_eq!(syntax.len(), 1, "{syntax:?}");
    assert_eq!((syntax[0].1, syntax[0].2), (4, 12), "{syntax:?}");
}

#[test]
fn nul_bytes_are_a_finding() {
    let run = beside_in_one_file(
        "NUL bytes",
        b"apiVersion: v1\nkind: ConfigMap\x00\nmetadata: {name: a\x00b}\n",
    );
    assert!(has_rule(&run, "yaml-syntax"));
}

#[test]
fn a_byte_order_mark_changes_nothing() {
    let dir = temp_dir("bom");
    let path = dir.join("bom.yaml");
    let mut bytes = "\u{feff}".as_bytes().to_vec();
    bytes.extend_from_slice(bundle().as_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let display = path.to_string_lossy().into_owned();
    let run = credlint(&["check", "--format", "json", &display]);
    sane("a byte-order mark", &run, 1);
    faults_kept("a byte-order mark", &run, &display, 0);
    assert_eq!(findings(&run).len(), FAULTS.len(), "{:?}", findings(&run));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_fifty_megabyte_scalar_is_read() {
    let mut text =
        String::from("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  blob: \"");
    text.push_str(&"x".repeat(50 << 20));
    text.push_str("\"\n");
    let run = beside_in_one_file("a 50 MB scalar", text.as_bytes());
    assert_eq!(findings(&run).len(), FAULTS.len(), "{:?}", findings(&run));
}

#[test]
fn a_minified_json_list_of_many_bundles_on_one_line() {
    let dir = temp_dir("minified");
    let roles: Vec<String> = (0..3000)
        .map(|i| {
            format!(
                r#"{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{{"name":"o{i}-credentials","namespace":"ns","annotations":{{"argocd.argoproj.io/hook":"PreSync"}}}},"rules":[{{"apiGroups":[""],"resources":["secrets"],"verbs":["create","list"]}}]}}"#
            )
        })
        .collect();
    let path = dir.join("minified.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
            roles.join(",")
        ),
    )
    .unwrap();
    let display = path.to_string_lossy().into_owned();
    let run = credlint(&["check", "--format", "json", &display]);
    sane(
        "a minified JSON List of 3,000 bad Roles on one line",
        &run,
        1,
    );
    let found = findings(&run);
    let verbs = found
        .iter()
        .filter(|f| f.3 == "role-forbidden-verb")
        .count();
    assert_eq!(verbs, 3000);
    // The last one stands near the end of the line, its column counted in characters.
    let last = found
        .iter()
        .filter(|f| f.3 == "role-forbidden-verb")
        .map(|f| f.2)
        .max()
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let expected = text.rfind("\"list\"").unwrap() + 1;
    assert_eq!(last as usize, expected);
    let run = credlint(&["check", &display]);
    sane("the same, as text", &run, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_hundred_thousand_empty_documents_before_a_bundle() {
    let run = beside_in_one_file(
        "200,000 empty documents before a bundle",
        "---\n".repeat(200_000).as_bytes(),
    );
    assert_eq!(report(&run)["summary"]["documents"], 5);
}

#[test]
fn a_broken_document_beside_a_bundle_hides_nothing() {
    let run = beside_in_one_file(
        "a broken document beside a bundle",
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [broken\n",
    );
    let syntax: Vec<_> = findings(&run)
        .into_iter()
        .filter(|f| f.3 == "yaml-syntax")
        .collect();
    assert_eq!(syntax.len(), 1, "{syntax:?}");
    // And beside it in another file.
    let dir = temp_dir("broken-beside");
    std::fs::write(dir.join("a-broken.yaml"), "kind: [Role\n").unwrap();
    std::fs::write(dir.join("b-bundle.yaml"), bundle()).unwrap();
    let display = dir.to_string_lossy().into_owned();
    let run = credlint(&["check", "--format", "json", &display]);
    sane("a broken file beside a bundle", &run, 1);
    faults_kept(
        "a broken file beside a bundle",
        &run,
        &format!("{display}/b-bundle.yaml"),
        0,
    );
    assert!(has_rule(&run, "yaml-syntax"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_symlink_loop_in_a_folder_is_walked_once() {
    let dir = temp_dir("loop");
    std::fs::create_dir_all(dir.join("a/b")).unwrap();
    std::fs::write(dir.join("a/bundle.yaml"), bundle()).unwrap();
    std::os::unix::fs::symlink("..", dir.join("a/b/up")).unwrap();
    std::os::unix::fs::symlink(&dir, dir.join("a/b/root")).unwrap();
    // Links that lead nowhere, under names credlint does not read.
    std::os::unix::fs::symlink("self", dir.join("a/self")).unwrap();
    std::os::unix::fs::symlink("gone", dir.join("a/README.md")).unwrap();
    let display = dir.to_string_lossy().into_owned();
    let run = credlint(&["check", "--format", "json", &display]);
    sane("a symlink loop in a folder", &run, 1);
    faults_kept(
        "a symlink loop",
        &run,
        &format!("{display}/a/bundle.yaml"),
        0,
    );
    assert_eq!(report(&run)["summary"]["files"], 1);
    // A manifest's name on a link to itself is a path that cannot be read: exit 2, the
    // bundle still reported.
    std::os::unix::fs::symlink("loop.yaml", dir.join("a/loop.yaml")).unwrap();
    let run = credlint(&["check", "--format", "json", &display]);
    sane("a manifest that is a link to itself", &run, 2);
    assert!(run.stderr.contains("loop.yaml"), "{}", run.stderr);
    faults_kept(
        "beside a looping manifest link",
        &run,
        &format!("{display}/a/bundle.yaml"),
        0,
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_path_through_a_file_is_unreadable_and_the_rest_is_still_linted() {
    // Whoever runs the suite, root included, cannot read `bundle.yaml/x.yaml`.
    let dir = temp_dir("through-file");
    std::fs::write(dir.join("bundle.yaml"), bundle()).unwrap();
    let good = dir.join("bundle.yaml").to_string_lossy().into_owned();
    let bad = dir
        .join("bundle.yaml/x.yaml")
        .to_string_lossy()
        .into_owned();
    let run = credlint(&["check", "--format", "json", &good, &bad]);
    sane("a path component that is a file", &run, 2);
    assert!(run.stderr.contains(&bad), "{}", run.stderr);
    faults_kept("a path through a file", &run, &good, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_name_that_is_not_utf8_is_linted_and_shown_lossily() {
    use std::os::unix::ffi::OsStrExt;
    // Linux file names are bytes; pre-commit passes them as they are.
    let dir = temp_dir("not-utf8");
    let name = OsStr::from_bytes(b"bundle-\xff\xfe.yaml");
    let path = dir.join(name);
    std::fs::write(&path, bundle()).unwrap();
    let shown = path.to_string_lossy().into_owned();
    assert!(shown.ends_with("bundle-\u{FFFD}\u{FFFD}.yaml"), "{shown}");
    let arg = |s: &'static str| OsStr::new(s);
    let run = credlint(&[arg("check"), arg("--format"), arg("json"), path.as_os_str()]);
    sane("a file name that is not UTF-8", &run, 1);
    faults_kept("a file name that is not UTF-8", &run, &shown, 0);
    // The text report names it the same way.
    let run = credlint(&[arg("check"), path.as_os_str()]);
    sane("a file name that is not UTF-8, text", &run, 1);
    assert!(
        String::from_utf8_lossy(&run.stdout).contains(&format!("at {shown}:27:18")),
        "{}",
        String::from_utf8_lossy(&run.stdout)
    );
    // SARIF: a valid document whose results point at the file (its URI percent-encoded).
    let run = credlint(&[
        arg("check"),
        arg("--format"),
        arg("sarif"),
        path.as_os_str(),
    ]);
    sane("a file name that is not UTF-8, SARIF", &run, 1);
    let sarif = report(&run);
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{sarif}");
    for r in results {
        let uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap();
        assert!(uri.ends_with("bundle-%EF%BF%BD%EF%BF%BD.yaml"), "{uri}");
    }
    // As the pre-commit hook runs it: from the repository, the changed file by its own name.
    let run = spawn(
        OsStr::new(env!("CARGO_BIN_EXE_credlint")),
        &[
            arg("check"),
            arg("--pre-commit"),
            arg("--format"),
            arg("json"),
            name,
        ],
        &dir,
    );
    sane("a file name that is not UTF-8, --pre-commit", &run, 1);
    faults_kept(
        "a file name that is not UTF-8, --pre-commit",
        &run,
        "bundle-\u{FFFD}\u{FFFD}.yaml",
        0,
    );
    // A missing one is exit 2, named the same way, and the rest is still linted.
    let missing = dir.join(OsStr::from_bytes(b"gone-\xff.yaml"));
    let run = credlint(&[
        arg("check"),
        arg("--format"),
        arg("json"),
        path.as_os_str(),
        missing.as_os_str(),
    ]);
    sane("a missing file name that is not UTF-8", &run, 2);
    assert!(
        run.stderr
            .contains(&format!("{}: no such file", missing.to_string_lossy())),
        "{}",
        run.stderr
    );
    faults_kept("beside a missing name that is not UTF-8", &run, &shown, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_without_read_permission_is_unreadable() {
    let dir = temp_dir("unreadable");
    std::fs::write(dir.join("bundle.yaml"), bundle()).unwrap();
    std::fs::write(dir.join("secret.yaml"), bundle()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        dir.join("secret.yaml"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    let display = dir.to_string_lossy().into_owned();
    let binary = env!("CARGO_BIN_EXE_credlint");
    let run = if common::is_root() {
        // Permissions do not stop root: drop to nobody for the run, where setpriv exists.
        let Ok(setpriv) = which("setpriv") else {
            eprintln!("skipped: running as root without setpriv");
            return;
        };
        let words = [
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            binary,
            "check",
            "--format",
            "json",
            &display,
        ];
        let args: Vec<&OsStr> = words.iter().map(OsStr::new).collect();
        spawn(setpriv.as_os_str(), &args, Path::new("/"))
    } else {
        credlint(&["check", "--format", "json", &display])
    };
    sane("a file without read permission", &run, 2);
    assert!(
        run.stderr.contains("secret.yaml: permission denied"),
        "{}",
        run.stderr
    );
    faults_kept(
        "beside an unreadable file",
        &run,
        &format!("{display}/bundle.yaml"),
        0,
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn which(name: &str) -> Result<PathBuf, ()> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or(())
}

/// Whether `python3` is here to run simulate's programs; where it is not, the test says
/// `SKIPPED`, and fails instead where `.ci/run` requires it (`CREDLINT_REQUIRE_PYTHON=1`).
fn python_or_skip() -> bool {
    if which("python3").is_ok() {
        return true;
    }
    common::skip_unless_required(
        "CREDLINT_REQUIRE_PYTHON",
        "python3 is not installed (simulate runs the programs with it)",
    );
    false
}

#[test]
fn a_folder_named_like_a_manifest_and_a_fifo_are_skipped() {
    let dir = temp_dir("not-files");
    std::fs::create_dir_all(dir.join("folder.yaml")).unwrap();
    std::fs::write(dir.join("bundle.yaml"), bundle()).unwrap();
    let fifo = dir.join("pipe.yaml");
    let path = std::ffi::CString::new(fifo.to_string_lossy().into_owned()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);
    let display = dir.to_string_lossy().into_owned();
    let run = credlint(&["check", "--format", "json", &display]);
    // A FIFO found in a walk is not read: with no writer, reading it would never end. A
    // warning says so.
    sane(
        "a folder named x.yaml and a FIFO in a walked folder",
        &run,
        1,
    );
    assert!(run.stderr.contains("pipe.yaml: a FIFO"), "{}", run.stderr);
    faults_kept("beside a FIFO", &run, &format!("{display}/bundle.yaml"), 0);
    assert_eq!(report(&run)["summary"]["files"], 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_empty_folder_is_nothing_to_lint() {
    let dir = temp_dir("empty");
    let display = dir.to_string_lossy().into_owned();
    let run = credlint(&["check", &display]);
    sane("an empty folder", &run, 2);
    assert!(run.stderr.contains("nothing to lint"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_path_exits_2_and_the_rest_is_still_linted() {
    let run = credlint(&["check", "no/such/folder"]);
    sane("a missing path", &run, 2);
    assert!(run.stderr.contains("no/such/folder"), "{}", run.stderr);
    let run = credlint(&["check", "--format", "json", BUNDLE, "no/such/file.yaml"]);
    sane("a missing path beside a bundle", &run, 2);
    faults_kept("beside a missing path", &run, BUNDLE, 0);
}

/// Runs the binary in the repository with standard input from `stdin` and more environment.
fn credlint_with<S: AsRef<OsStr>>(args: &[S], stdin: Stdio, env: &[(&str, &str)]) -> Run {
    let args: Vec<&OsStr> = args.iter().map(AsRef::as_ref).collect();
    spawn_with(
        OsStr::new(env!("CARGO_BIN_EXE_credlint")),
        &args,
        &root(),
        stdin,
        env,
    )
}

/// A temporary folder holding the bundle as `bundle.yaml`, and the folder's display path.
fn folder_with_bundle(name: &str) -> (common::TempDir, String) {
    let dir = temp_dir(name);
    std::fs::write(dir.join("bundle.yaml"), bundle()).unwrap();
    let display = dir.to_string_lossy().into_owned();
    (dir, display)
}

fn stdin_from(path: &Path) -> Stdio {
    std::fs::File::open(path).unwrap().into()
}

#[test]
fn input_without_an_object_is_nothing_to_lint() {
    let dir = temp_dir("no-objects");
    for (name, text) in [
        ("empty standard input", ""),
        (
            "blank lines, comments and markers",
            "\n# helm failed\n---\n\n---\n",
        ),
    ] {
        let path = dir.join("stdin");
        std::fs::write(&path, text).unwrap();
        let run = credlint_with(&["check", "--format", "json", "-"], stdin_from(&path), &[]);
        sane(name, &run, 2);
        assert!(
            run.stderr.contains("nothing to lint"),
            "{name}: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "{name}");
    }
    // Documents with content that are no object make no manifest (docs/bundle.md, "Files that
    // are not manifests"): nothing to lint, never a pass.
    let path = dir.join("stdin");
    std::fs::write(&path, "replicas: 3\n---\n- a\n- b\n---\njust text\n").unwrap();
    let run = credlint_with(&["check", "--format", "json", "-"], stdin_from(&path), &[]);
    sane("documents that are no object", &run, 2);
    assert!(run.stderr.contains("nothing to lint"), "{}", run.stderr);
    // Files found in a folder are no better when none holds an object.
    std::fs::write(dir.join("values.yaml"), "replicas: 3\n").unwrap();
    std::fs::write(dir.join("package.json"), "{\"name\": \"x\"}\n").unwrap();
    std::fs::remove_file(&path).unwrap();
    let display = dir.to_string_lossy().into_owned();
    let run = credlint(&["check", "--format", "json", &display]);
    sane("a folder of files without an object", &run, 2);
    assert!(run.stderr.contains("nothing to lint"), "{}", run.stderr);
    // Beside the bundle the bundle's findings are all still there, and only they.
    std::fs::write(dir.join("bundle.yaml"), bundle()).unwrap();
    let run = credlint(&["check", "--format", "json", &display]);
    sane("files without an object beside a bundle", &run, 1);
    assert!(
        findings(&run).iter().all(|f| f.0.ends_with("bundle.yaml")),
        "{:?}",
        findings(&run)
    );
    faults_kept("beside values", &run, &format!("{display}/bundle.yaml"), 0);
}

#[test]
fn a_read_error_on_standard_input_exits_2() {
    // A folder as standard input: every read fails (EISDIR).
    let dir = temp_dir("stdin-folder");
    let run = credlint_with(&["check", "-"], stdin_from(&dir), &[]);
    sane("a folder as standard input", &run, 2);
    assert!(
        run.stderr.contains("cannot read standard input"),
        "{}",
        run.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_top_level_sequence_of_objects_is_a_located_error() {
    let mut roles = String::new();
    for name in ["a", "b"] {
        roles.push_str(&format!(
            "- apiVersion: rbac.authorization.k8s.io/v1\n  kind: Role\n  metadata: \
             {{name: {name}-credentials, namespace: shop}}\n  rules: [{{apiGroups: [\"\"], \
             resources: [secrets], verbs: [list]}}]\n"
        ));
    }
    let run = beside_in_one_file("a top-level YAML sequence of Roles", roles.as_bytes());
    let syntax: Vec<_> = findings(&run)
        .into_iter()
        .filter(|f| f.3 == "yaml-syntax")
        .collect();
    assert_eq!(syntax.len(), 1, "{syntax:?}");
    assert_eq!((syntax[0].1, syntax[0].2), (1, 1), "{syntax:?}");
    // The JSON form, in a file of its own beside the bundle.
    let (dir, display) = folder_with_bundle("json-array");
    std::fs::write(
        dir.join("array.json"),
        "\n  [{\"apiVersion\": \"v1\", \"kind\": \"ServiceAccount\", \"metadata\": {\"name\": \"x\"}}]",
    )
    .unwrap();
    let run = credlint(&["check", "--format", "json", &display]);
    sane("a top-level JSON array", &run, 1);
    faults_kept(
        "beside a JSON array",
        &run,
        &format!("{display}/bundle.yaml"),
        0,
    );
    let array = format!("{display}/array.json");
    assert!(
        findings(&run).contains(&(array, 2, 3, "yaml-syntax".into())),
        "{:?}",
        findings(&run)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn concatenated_json_objects_are_linted_one_by_one() {
    let role = |name: &str| {
        format!(
            r#"{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{{"name":"{name}-credentials","namespace":"shop","annotations":{{"argocd.argoproj.io/hook":"PreSync"}}}},"rules":[{{"apiGroups":[""],"resources":["secrets"],"verbs":["create","watch"]}}]}}"#
        )
    };
    let (dir, display) = folder_with_bundle("json-stream");
    // Two back to back on one line, then one on the next.
    let text = format!("{}{}\n{}\n", role("a"), role("b"), role("c"));
    std::fs::write(dir.join("stream.json"), &text).unwrap();
    let run = credlint(&["check", "--format", "json", &display]);
    sane("concatenated JSON objects", &run, 1);
    faults_kept(
        "beside a JSON stream",
        &run,
        &format!("{display}/bundle.yaml"),
        0,
    );
    let stream = format!("{display}/stream.json");
    let watches: Vec<(u64, u64)> = findings(&run)
        .into_iter()
        .filter(|f| f.0 == stream && f.3 == "role-forbidden-verb")
        .map(|f| (f.1, f.2))
        .collect();
    let at = |offset: usize| {
        let line_start = text[..offset].rfind('\n').map_or(0, |n| n + 1);
        (
            text[..offset].matches('\n').count() as u64 + 1,
            (offset - line_start) as u64 + 1,
        )
    };
    let expected: Vec<(u64, u64)> = text
        .match_indices("\"watch\"")
        .map(|(i, _)| at(i))
        .collect();
    assert_eq!(watches, expected, "{:?}", findings(&run));
    assert!(!has_rule(&run, "yaml-syntax"), "{:?}", findings(&run));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn links_out_of_the_tree_are_named_never_followed_or_quoted() {
    let (dir, display) = folder_with_bundle("links-out");
    std::os::unix::fs::symlink("/proc/self/environ", dir.join("x.yaml")).unwrap();
    let outside = temp_dir("links-target");
    std::fs::write(outside.join("role.yaml"), "kind: [broken\n").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("linked")).unwrap();
    let secret = "credlint-hostile-token-4f1c";
    for format in ["json", "text"] {
        let run = credlint_with(
            &["check", "--format", format, &display],
            Stdio::null(),
            &[("CI_JOB_TOKEN", secret)],
        );
        sane("links out of the walked folder", &run, 1);
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(
            !stdout.contains(secret) && !run.stderr.contains(secret),
            "{format}: leaked"
        );
        assert!(
            !stdout.contains("role.yaml") && !stdout.contains("environ"),
            "{stdout}"
        );
        for named in [
            format!("{display}/x.yaml"),
            "/proc/self/environ".to_string(),
            format!("{display}/linked"),
            outside.display().to_string(),
        ] {
            assert!(run.stderr.contains(&named), "{named}: {}", run.stderr);
        }
        if format == "json" {
            faults_kept(
                "beside links out",
                &run,
                &format!("{display}/bundle.yaml"),
                0,
            );
            assert_eq!(report(&run)["summary"]["files"], 1);
        }
    }
    // Named on the command line, the link is not followed either.
    let link = format!("{display}/x.yaml");
    let bundle = format!("{display}/bundle.yaml");
    let run = credlint_with(
        &["check", "--format", "json", &link, &bundle],
        Stdio::null(),
        &[("CI_JOB_TOKEN", secret)],
    );
    sane("a link out named on the command line", &run, 1);
    assert!(!String::from_utf8_lossy(&run.stdout).contains(secret));
    assert!(run.stderr.contains("/proc/self/environ"), "{}", run.stderr);
    faults_kept("beside a named link out", &run, &bundle, 0);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&outside);
}

#[test]
fn special_files_named_are_refused_and_every_read_is_bounded() {
    let (dir, display) = folder_with_bundle("special");
    let bundle = format!("{display}/bundle.yaml");
    for device in ["/dev/zero", "/dev/urandom"] {
        let run = credlint(&["check", "--format", "json", device, &bundle]);
        sane(device, &run, 2);
        assert!(
            run.stderr
                .contains(&format!("{device}: a character device")),
            "{}",
            run.stderr
        );
        faults_kept(device, &run, &bundle, 0);
        let run = credlint(&["check", "--config", device, &bundle]);
        sane("a device as --config", &run, 2);
        assert!(run.stderr.contains("character device"), "{}", run.stderr);
        let run = credlint(&["check", "--policy", device, &bundle]);
        sane("a device as --policy", &run, 2);
        assert!(run.stderr.contains("character device"), "{}", run.stderr);
    }
    // A FIFO named on the command line is refused without waiting for a writer.
    let fifo = dir.join("named.yaml");
    let path = std::ffi::CString::new(fifo.to_string_lossy().into_owned()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);
    let named = fifo.to_string_lossy().into_owned();
    let run = credlint(&["check", "--format", "json", &named, &bundle]);
    sane("a FIFO named on the command line", &run, 2);
    assert!(run.stderr.contains("named.yaml: a FIFO"), "{}", run.stderr);
    faults_kept("beside a named FIFO", &run, &bundle, 0);
    // Endless standard input stops at the cap.
    let run = credlint_with(&["check", "-"], stdin_from(Path::new("/dev/zero")), &[]);
    sane("/dev/zero as standard input", &run, 2);
    assert!(
        run.stderr.contains("larger than the 256 MiB"),
        "{}",
        run.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_over_4_gib_is_refused_without_reading_it() {
    let (dir, display) = folder_with_bundle("huge");
    // Sparse: 5 GiB that take no room on the disk.
    let huge = std::fs::File::create(dir.join("huge.yaml")).unwrap();
    huge.set_len(5 << 30).unwrap();
    let run = credlint(&["check", "--format", "json", &display]);
    sane("a 5 GiB file", &run, 2);
    assert!(
        run.stderr.contains("huge.yaml: larger than the 256 MiB"),
        "{}",
        run.stderr
    );
    faults_kept(
        "beside a 5 GiB file",
        &run,
        &format!("{display}/bundle.yaml"),
        0,
    );
    // The same bytes on standard input.
    let run = credlint_with(&["check", "-"], stdin_from(&dir.join("huge.yaml")), &[]);
    sane("5 GiB on standard input", &run, 2);
    assert!(
        run.stderr.contains("larger than the 256 MiB"),
        "{}",
        run.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ignore_files_count_from_the_repository_root_down_and_are_bounded() {
    let dir = temp_dir("gitignore");
    // A .gitignore above the repository hides nothing in it.
    std::fs::write(dir.join(".gitignore"), "*.yaml\n").unwrap();
    let repo = dir.join("repo");
    std::fs::create_dir_all(repo.join(".git/info")).unwrap();
    std::fs::write(repo.join("bundle.yaml"), bundle()).unwrap();
    // .git/info/exclude is honoured, as git honours it.
    std::fs::write(repo.join(".git/info/exclude"), "broken.yaml\n").unwrap();
    std::fs::write(repo.join("broken.yaml"), "kind: [Role\n").unwrap();
    let display = repo.to_string_lossy().into_owned();
    let run = credlint(&["check", "--format", "json", &display]);
    sane("a .gitignore above the repository", &run, 1);
    faults_kept(
        "under an ignoring parent",
        &run,
        &format!("{display}/bundle.yaml"),
        0,
    );
    assert!(!has_rule(&run, "yaml-syntax"), "{:?}", findings(&run));
    // An ignore file too large to honour is refused, not compiled.
    let patterns: String = (0..60_000)
        .map(|i| format!("/generated/part-{i}/*.yaml\n"))
        .collect();
    std::fs::write(repo.join(".gitignore"), patterns).unwrap();
    let run = credlint(&["check", "--format", "json", &display]);
    sane("a 2 MB .gitignore", &run, 2);
    assert!(
        run.stderr.contains(".gitignore: an ignore file larger"),
        "{}",
        run.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn config_that_cannot_be_read_and_excludes_of_the_root_exit_2() {
    let (dir, display) = folder_with_bundle("config");
    let bundle = format!("{display}/bundle.yaml");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let binary = OsStr::new(env!("CARGO_BIN_EXE_credlint"));
    // A dangling credlint.toml is not "no config".
    std::os::unix::fs::symlink("gone.toml", work.join("credlint.toml")).unwrap();
    let args = [OsStr::new("check"), OsStr::new(&bundle)];
    let run = spawn(binary, &args, &work);
    sane("a dangling credlint.toml", &run, 2);
    assert!(run.stderr.contains("credlint.toml"), "{}", run.stderr);
    std::fs::remove_file(work.join("credlint.toml")).unwrap();
    // A credlint.toml that is a folder cannot be read either.
    std::fs::create_dir_all(work.join("credlint.toml")).unwrap();
    let run = spawn(binary, &args, &work);
    sane("a folder named credlint.toml", &run, 2);
    std::fs::remove_dir_all(work.join("credlint.toml")).unwrap();
    for exclude in ["", "/", ".", "charts,,vendor"] {
        let run = credlint(&["check", "--exclude", exclude, &display]);
        sane("an --exclude of the root", &run, 2);
        assert!(
            run.stderr.contains("--exclude"),
            "{exclude:?}: {}",
            run.stderr
        );
    }
    std::fs::write(work.join("credlint.toml"), "exclude = [\"/\"]\n").unwrap();
    let run = spawn(binary, &args, &work);
    sane("exclude = [\"/\"]", &run, 2);
    assert!(run.stderr.contains("credlint.toml:1"), "{}", run.stderr);
    // Next to a valid one, the run goes on and finds the bundle's faults.
    std::fs::write(work.join("credlint.toml"), "exclude = [\"charts\"]\n").unwrap();
    let json = [
        OsStr::new("check"),
        OsStr::new("--format"),
        OsStr::new("json"),
        OsStr::new(&bundle),
    ];
    let run = spawn(binary, &json, &work);
    sane("a valid credlint.toml", &run, 1);
    faults_kept("with a valid config", &run, &bundle, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn policies_out_never_replaces_a_hand_written_file() {
    let dir = temp_dir("policies-out");
    let own = "resources: [my-policy.yaml]\n";
    std::fs::write(dir.join("kustomization.yaml"), own).unwrap();
    let out = dir.to_string_lossy().into_owned();
    let run = credlint(&["policies", "--out", &out]);
    sane("policies --out over a hand-written kustomization", &run, 2);
    assert!(run.stderr.contains("kustomization.yaml"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap(),
        own
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "nothing else written"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn output_that_cannot_be_written_is_exit_2_and_a_closed_pipe_is_quiet() {
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full");
    let Ok(_) = full() else {
        eprintln!("SKIPPED /dev/full: not on this system");
        return;
    };
    let binary = env!("CARGO_BIN_EXE_credlint");
    let commands: [&[&str]; 5] = [
        &["explain", "job-ttl"],
        &["explain", "policy:x"],
        &["rules"],
        &["policies"],
        &["check", "--format", "json", BUNDLE],
    ];
    for args in commands {
        let out = Command::new(binary)
            .args(args)
            .current_dir(root())
            .env("CREDLINT_CACHE_DIR", common::cache_dir())
            .stdout(full().unwrap())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("cannot write"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        // A reader that goes away at once: no panic, no message.
        let mut child = Command::new(binary)
            .args(args)
            .current_dir(root())
            .env("CREDLINT_CACHE_DIR", common::cache_dir())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("cannot write"), "{args:?}: {stderr}");
        assert_ne!(out.status.code(), Some(101), "{args:?}");
    }
}

#[test]
fn a_huge_thread_count_is_capped_and_said() {
    let run = credlint(&["check", "--format", "json", "--threads", "100000", BUNDLE]);
    sane("--threads 100000", &run, 1);
    assert!(run.stderr.contains("--threads 100000"), "{}", run.stderr);
    faults_kept("with 100,000 threads asked", &run, BUNDLE, 0);
}

#[test]
fn one_role_rule_of_thousands_of_items_is_linear() {
    // 2,000 groups x 2,000 resources x 2,000 verbs, all of them permitted ones: a walk over
    // every combination would be 8e9 steps.
    let n = 2000;
    let list = |item: &str| vec![format!("\"{item}\""); n].join(",");
    let role = format!(
        "{{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"Role\",\"metadata\":\
         {{\"name\":\"big-credentials\",\"namespace\":\"shop\",\"annotations\":\
         {{\"argocd.argoproj.io/hook\":\"PreSync\"}}}},\"rules\":[{{\"apiGroups\":[{}],\
         \"resources\":[{}],\"verbs\":[{}],\"resourceNames\":[\"a\"]}}]}}",
        list(""),
        list("secrets"),
        list("list"),
    );
    let run = beside_in_one_file("one Role rule of 2,000 x 2,000 x 2,000", role.as_bytes());
    let verbs = findings(&run)
        .iter()
        .filter(|f| f.1 == 1 && f.3 == "role-forbidden-verb")
        .count();
    assert_eq!(verbs, n, "{:?}", findings(&run).len());
}

#[test]
fn a_policy_expression_past_the_cost_budget_is_an_error_naming_the_policy() {
    let (dir, display) = folder_with_bundle("cel-cost");
    let items = (0..3_000)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let policy = format!(
        "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata:\n  name: \
         costly\nspec:\n  matchConstraints:\n    resourceRules:\n      - apiGroups: ['']\n        \
         apiVersions: [v1]\n        operations: [CREATE]\n        resources: [serviceaccounts]\n  \
         validations:\n    - expression: \"[{items}].map(a, [{items}].map(b, object.metadata.name)).size() > 0\"\n"
    );
    let policies = temp_dir("cel-cost-policy");
    std::fs::write(policies.join("costly.yaml"), policy).unwrap();
    let policy_path = policies.join("costly.yaml").to_string_lossy().into_owned();
    let run = credlint(&[
        "check",
        "--format",
        "json",
        "--policy",
        &policy_path,
        &display,
    ]);
    sane("a policy past the CEL cost budget", &run, 1);
    faults_kept(
        "beside a costly policy",
        &run,
        &format!("{display}/bundle.yaml"),
        0,
    );
    let costly: Vec<String> = report(&run)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "policy:costly")
        .map(|f| f["message"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(!costly.is_empty(), "{:?}", findings(&run));
    assert!(
        costly.iter().all(|m| m.contains("cost budget")),
        "{costly:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&policies);
}

#[test]
fn simulate_stopped_by_a_signal_kills_the_program_and_removes_its_run_folder() {
    if !python_or_skip() {
        return;
    }
    for (name, signal) in [
        ("SIGTERM", libc::SIGTERM),
        ("SIGINT", libc::SIGINT),
        ("SIGHUP", libc::SIGHUP),
    ] {
        let dir = temp_dir(&format!("signal-{name}"));
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let script = "import time\ntime.sleep(60)\n";
        let spec = credlint::testkit::render::Spec::example("shop", "shop-db", "component", script);
        std::fs::write(dir.join("bundle.yaml"), spec.render()).unwrap();
        // No cache: the program must run (and a run in the repository leaves no cache there).
        let child = Command::new(env!("CARGO_BIN_EXE_credlint"))
            .args(["simulate", "--no-cache", "--timeout", "60"])
            .arg(dir.as_path())
            .env("TMPDIR", &tmp)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        // The program as this test sees it: its command line names create.py (in the pod's
        // root or its run folder) and credlint is its parent or, through the waiter that
        // stands for it outside its PID namespace, its grandparent. Looked for until one runs:
        // its sleep is virtual, so it ends at once, and each run starts it again.
        let parent_of = |pid: i32| -> Option<i32> {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            stat.rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        };
        let credlint = child.id() as i32;
        let find = || {
            std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .filter_map(|e| {
                    let pid = e.file_name().to_str()?.parse::<i32>().ok()?;
                    let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
                    let parent = parent_of(pid)?;
                    (String::from_utf8_lossy(&cmdline).contains("create.py")
                        && (parent == credlint || parent_of(parent) == Some(credlint)))
                    .then_some(pid)
                })
                .next()
        };
        let mut program = find();
        while program.is_none() && started.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(1));
            program = find();
        }
        let program = program.expect("the program's process");
        assert!(
            std::fs::read_dir(&tmp).unwrap().count() > 0,
            "a run folder exists"
        );
        // SAFETY: kill(2) on the child we spawned and have not reaped.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(128 + signal), "{name}: {stderr}");
        let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
        assert!(left.is_empty(), "{name}: run folders left: {left:?}");
        // The program is gone (a zombie's last moments aside, it is reaped by whoever adopted it).
        let gone = Instant::now();
        let alive = || {
            std::fs::read_to_string(format!("/proc/{program}/stat")).is_ok_and(|s| {
                !s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            })
        };
        while alive() && gone.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(), "{name}: the program {program} outlived credlint");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_plan_simulate_cannot_run_skips_its_bundle_only() {
    if which("python3").is_err() {
        eprintln!("SKIPPED python3 is not installed");
        return;
    }
    let dir = temp_dir("unsimulable-plan");
    let script = std::fs::read_to_string(root().join("fixtures/runtime/create.py")).unwrap();
    let good = credlint::testkit::render::Spec::example("shop", "shop-db", "component", &script);
    // More planned Secrets than the fake namespace holds: this plan is not simulated.
    let mut big =
        credlint::testkit::render::Spec::example("shop", "shop-big", "component", &script);
    big.secrets = (0..65)
        .map(|i| (format!("shop-big-s{i}"), vec!["password".to_string()]))
        .collect();
    std::fs::write(dir.join("good.yaml"), good.render()).unwrap();
    std::fs::write(dir.join("big.yaml"), big.render()).unwrap();
    let display = dir.to_string_lossy().into_owned();
    let run = credlint(&["simulate", "--format", "json", "--timeout", "20", &display]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains("shop-big") && run.stderr.contains("is not simulated"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("shop-db"), "{}", run.stderr);
    assert_eq!(report(&run)["findings"], serde_json::json!([]));
}

/// Runs `credlint simulate --format json` on a component bundle whose create.py is the correct
/// program of fixtures/runtime with `prefix` run first.
fn simulate_with_prefix(name: &str, prefix: &str) -> (Run, Vec<(String, String)>) {
    simulate_with_prefix_env(name, prefix, &[])
}

/// [`simulate_with_prefix`] with more environment variables for credlint.
fn simulate_with_prefix_env(
    name: &str,
    prefix: &str,
    env: &[(&str, &str)],
) -> (Run, Vec<(String, String)>) {
    let dir = temp_dir(name);
    let script = format!(
        "{prefix}\n{}",
        std::fs::read_to_string(root().join("fixtures/runtime/create.py")).unwrap()
    );
    let spec = credlint::testkit::render::Spec::example("shop", "shop-db", "component", &script);
    std::fs::write(dir.join("bundle.yaml"), spec.render()).unwrap();
    let display = dir.to_string_lossy().into_owned();
    // No cache: these tests are about what the program does when it runs.
    let simulate = |env: &[(&str, &str)]| {
        credlint_with(
            &[
                "simulate",
                "--no-cache",
                "--format",
                "json",
                "--timeout",
                "20",
                &display,
            ],
            Stdio::null(),
            env,
        )
    };
    // As root, both ways: the runs forked from one interpreter and fresh ones.
    let run = common::zygote_and_fresh(env, simulate, |r| {
        (
            r.code,
            String::from_utf8_lossy(&r.stdout).into_owned(),
            r.stderr.clone(),
        )
    });
    let found = report(&run)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap_or_default().to_string(),
                f["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    (run, found)
}

#[test]
fn simulate_keeps_a_megabyte_of_a_flooded_stream_and_reports_it() {
    if !python_or_skip() {
        return;
    }
    // 16 MiB per run: far past the cap, and past any pipe buffer, so a reader that stopped
    // draining would leave the program blocked until the timeout.
    let (run, found) = simulate_with_prefix(
        "flood",
        "import sys as _s\n_s.stdout.write('x' * (16 << 20))\n_s.stdout.flush()",
    );
    sane("a program flooding its stdout", &run, 1);
    assert!(!found.is_empty(), "{found:?}");
    for (rule, message) in &found {
        assert_eq!(rule, "runtime-failed", "{found:?}");
        assert!(
            message.contains(&format!("wrote {} bytes to its standard output", 16 << 20))
                && message.contains("over the 1 MiB"),
            "{message}"
        );
    }
}

#[test]
fn simulate_reports_files_and_ports_beyond_the_run_folder_and_the_fake_api() {
    if !python_or_skip() {
        return;
    }
    let dir = temp_dir("escape-target");
    let written = dir.join("written-outside");
    let prefix = format!(
        "import socket as _so\n\
         try:\n    open('/etc/passwd').read(64)\nexcept OSError:\n    pass\n\
         try:\n    open({written:?}, 'w').write('x')\nexcept OSError:\n    pass\n\
         _c = _so.socket()\n\
         try:\n    _c.connect(('127.0.0.1', 9))\nexcept OSError:\n    pass\n\
         _c.close()",
        written = written.to_string_lossy()
    );
    let (run, found) = simulate_with_prefix("escape", &prefix);
    sane("a program reaching beyond its sandbox", &run, 1);
    let escapes: Vec<&String> = found
        .iter()
        .filter(|(rule, _)| rule == "runtime-sandbox-escape")
        .map(|(_, m)| m)
        .collect();
    let has = |needle: &str| escapes.iter().any(|m| m.contains(needle));
    assert!(has("read /etc/passwd"), "{found:?}");
    assert!(
        has(&format!("wrote or changed {}", written.to_string_lossy())),
        "{found:?}"
    );
    assert!(has("connected to 127.0.0.1:9,"), "{found:?}");
    // Nothing else: the correct program after the prefix still passes every scenario.
    assert!(
        found
            .iter()
            .all(|(rule, _)| rule == "runtime-sandbox-escape"),
        "{found:?}"
    );
}

/// The kernel's Landlock ABI version, asked as credlint asks it.
fn landlock_abi() -> Option<i64> {
    // SAFETY: with the VERSION flag (1) the kernel reads no attribute and returns the version.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    (v > 0).then_some(v)
}

#[test]
fn simulate_confines_the_program_where_the_kernel_allows_and_still_reports_it() {
    if !python_or_skip() {
        return;
    }
    let abi = landlock_abi();
    // Confined (Landlock, where this kernel has it), then with the confinement turned off, as
    // on a kernel without Landlock: the same accesses are reported either way; only confined
    // do they fail.
    for confined in [true, false] {
        if confined && abi.is_none() {
            eprintln!("SKIPPED the confined run: this kernel has no Landlock");
            continue;
        }
        // Not the folder of the bundle, which the run removes.
        let dir = temp_dir(if confined {
            "confined-target"
        } else {
            "unconfined-target"
        });
        // Open to every user: as root credlint runs the program as the pod's user, and only
        // Landlock is to keep it out here.
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .unwrap();
        let secret = dir.join("outside-secret");
        std::fs::write(&secret, "not for the program").unwrap();
        let written = dir.join("written-outside");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        // A read that succeeds says so with a connect to port 7, which is reported.
        let prefix = format!(
            "import socket as _so\n\
             try:\n    open({secret:?}).read()\nexcept OSError:\n    pass\n\
             else:\n    _so.socket().connect_ex(('127.0.0.1', 7))\n\
             try:\n    open({written:?}, 'w').write('x')\nexcept OSError:\n    pass\n\
             _c = _so.socket()\n_c.settimeout(5)\n\
             try:\n    _c.connect(('127.0.0.1', {port}))\nexcept OSError:\n    pass\n\
             _c.close()",
            secret = secret.to_string_lossy(),
            written = written.to_string_lossy(),
        );
        let env: &[(&str, &str)] = if confined {
            &[]
        } else {
            &[("CREDLINT_LANDLOCK", "0")]
        };
        let name = if confined { "confined" } else { "unconfined" };
        let (run, found) = simulate_with_prefix_env(name, &prefix, env);
        sane(
            &format!("a program reaching beyond its folder, {name}"),
            &run,
            1,
        );
        let has = |needle: &str| {
            found
                .iter()
                .any(|(rule, m)| rule == "runtime-sandbox-escape" && m.contains(needle))
        };
        assert!(
            has(&format!("read {}", secret.to_string_lossy())),
            "{found:?}"
        );
        assert!(
            has(&format!("wrote or changed {}", written.to_string_lossy())),
            "{found:?}"
        );
        assert!(has(&format!("connected to 127.0.0.1:{port},")), "{found:?}");
        assert!(
            found
                .iter()
                .all(|(rule, _)| rule == "runtime-sandbox-escape"),
            "{found:?}"
        );
        let note = "without a Landlock sandbox";
        let reached = listener.accept().is_ok();
        if confined {
            assert!(!run.stderr.contains(note), "{}", run.stderr);
            assert!(
                !written.exists(),
                "the confined program wrote outside its folder"
            );
            assert!(
                !has("127.0.0.1:7,"),
                "the confined program read outside: {found:?}"
            );
            assert!(
                !reached,
                "the confined program reached a port of no fake server"
            );
        } else {
            assert_eq!(run.stderr.matches(note).count(), 1, "{}", run.stderr);
            assert!(run.stderr.contains("CREDLINT_LANDLOCK=0"), "{}", run.stderr);
            // Without Landlock, only the pod's root keeps the host's files out of its reach:
            // where it has one, the host's paths are not there at all.
            let pod_root = report(&run)["summary"]["sandbox"]["held"]
                .as_array()
                .is_some_and(|held| held.iter().any(|l| l == "pod-filesystem"));
            assert_eq!(written.exists(), !pod_root);
            assert_eq!(has("127.0.0.1:7,"), !pod_root, "{found:?}");
            // Without Landlock, only the program's own network namespace keeps the host's
            // port out of its reach (tests/sandbox.rs); where it has none, the port is reached.
            let own_network = report(&run)["summary"]["sandbox"]["held"]
                .as_array()
                .is_some_and(|held| held.iter().any(|l| l == "network-namespace"));
            assert_eq!(reached, !own_network);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
