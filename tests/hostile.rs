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
#[allow(clippy::zombie_processes)]
fn spawn(program: &OsStr, args: &[&OsStr], cwd: &Path) -> Run {
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
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
    // SAFETY: geteuid has no preconditions.
    let run = if unsafe { libc::geteuid() } == 0 {
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
    // A FIFO found in a walk is not read: with no writer, reading it would never end.
    sane(
        "a folder named x.yaml and a FIFO in a walked folder",
        &run,
        1,
    );
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
