use super::*;
use crate::common::spread::Serial;
use crate::lint::Linter;
use crate::testkit::TempDir;

/// A result as the test compares it: everything but the timings.
fn shown(mut out: FileOut) -> String {
    out.timings = Default::default();
    format!("{out:?}")
}

/// A folder of the test's own (removed when it ends) and, inside it, a path for the cache that
/// does not exist yet.
fn temp(name: &str) -> (TempDir, PathBuf) {
    let base = TempDir::new(&format!("credlint-cache-{name}"));
    let dir = base.join("cache");
    (base, dir)
}

/// Every fixture's result, encoded and decoded into another file number, is the same result
/// moved to that file; one byte less of any encoding is refused.
#[test]
fn every_fixture_result_survives_the_format() {
    let engine = Linter::new(Options::default()).unwrap();
    let texts = crate::testkit::fixture_texts();
    assert!(texts.len() > 100);
    for text in &texts {
        let out = engine
            .lint_bytes(3, "a.yaml", text.as_bytes(), &Serial)
            .unwrap();
        let bytes = codec::encode(&out, 3).expect("every place is in file 3");
        let back = codec::decode(&bytes, 3).expect("decodes");
        assert_eq!(
            shown(back),
            shown(
                engine
                    .lint_bytes(3, "a.yaml", text.as_bytes(), &Serial)
                    .unwrap()
            ),
            "{text}"
        );
        let moved = codec::decode(&bytes, 7).unwrap();
        assert_eq!(
            shown(moved),
            shown(
                engine
                    .lint_bytes(7, "a.yaml", text.as_bytes(), &Serial)
                    .unwrap()
            ),
            "moved to another file number"
        );
        for cut in [0, bytes.len() / 2, bytes.len().saturating_sub(1)] {
            if cut < bytes.len() {
                assert!(codec::decode(&bytes[..cut], 3).is_none(), "cut at {cut}");
            }
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(codec::decode(&longer, 3).is_none(), "trailing bytes");
    }
    // A result with a place in another file cannot be moved: it is not kept.
    let with_findings = texts
        .iter()
        .map(|text| {
            engine
                .lint_bytes(3, "a.yaml", text.as_bytes(), &Serial)
                .unwrap()
        })
        .find(|out| !out.findings.is_empty());
    let mut out = with_findings.expect("some fixture has findings");
    assert!(codec::encode(&out, 3).is_some());
    out.findings[0].loc.file = 4;
    assert!(codec::encode(&out, 3).is_none());
}

/// Garbage of every length never panics the decoder, and gives nothing or a result (never a
/// huge allocation: counts are checked against the bytes left).
#[test]
fn garbage_is_refused_without_panicking() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for len in 0..2000 {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let _ = codec::decode(&bytes, 0);
    }
    // A count of items far beyond the bytes left.
    assert!(codec::decode(&[0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f], 0).is_none());
}

#[test]
fn entries_are_found_again_and_damaged_or_foreign_ones_are_misses() {
    let (_base, dir) = temp("entries");
    let engine = Linter::new(Options::default()).unwrap();
    let cache = Cache::open(&dir, &Options::default()).unwrap();
    assert!(
        std::fs::read_to_string(dir.join(".gitignore"))
            .unwrap()
            .lines()
            .any(|l| l == "*")
    );
    let text = std::fs::read("fixtures/clean/cache.yaml").unwrap();
    let out = engine.lint_bytes(0, "a.yaml", &text, &Serial).unwrap();
    let key = cache.key(true, &text);
    assert!(cache.recall(&key, 0).is_none(), "empty cache");
    cache.remember(&key, 0, &out);
    let path = cache.path(&key.key);
    let good = std::fs::read(&path).unwrap();
    assert_eq!(
        shown(cache.recall(&key, 2).unwrap()),
        shown(engine.lint_bytes(2, "a.yaml", &text, &Serial).unwrap())
    );
    // Another key's entry under this key's name, a flipped byte anywhere, a cut, garbage.
    let other_key = cache.key(true, b"other bytes");
    cache.remember(&other_key, 0, &out);
    let foreign = std::fs::read(cache.path(&other_key.key)).unwrap();
    let mut damaged = vec![foreign, Vec::new(), b"not an entry".to_vec()];
    for at in [0, 20, 60, 85, HEADER + 3, good.len() - 1] {
        let mut b = good.clone();
        b[at] ^= 0x20;
        damaged.push(b);
    }
    damaged.push(good[..good.len() - 1].to_vec());
    for (i, bytes) in damaged.iter().enumerate() {
        std::fs::write(&path, bytes).unwrap();
        assert!(cache.recall(&key, 0).is_none(), "damage {i} was trusted");
    }
    // Too large to read, or no regular file: a miss without reading it, and the fresh result
    // is written over it.
    let huge = std::fs::File::create(&path).unwrap();
    huge.set_len(MAX_ENTRY_BYTES + 1).unwrap();
    drop(huge);
    assert!(cache.recall(&key, 0).is_none(), "an entry over the cap");
    cache.remember(&key, 0, &out);
    assert_eq!(std::fs::read(&path).unwrap(), good, "rewritten");
    std::fs::remove_file(&path).unwrap();
    let fifo = std::ffi::CString::new(path.to_string_lossy().into_owned()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    assert!(
        cache.recall(&key, 0).is_none(),
        "a FIFO (opening it would wait)"
    );
    cache.remember(&key, 0, &out);
    assert!(cache.recall(&key, 0).is_some(), "rewritten over the FIFO");
    // Other options, another key: the image changes verdicts.
    let options = Options {
        credentials_image: Some("registry.example/x:1".into()),
        ..Options::default()
    };
    let other = Cache::open(&dir, &options).unwrap();
    assert_ne!(other.key(true, &text).key, key.key);
    assert_eq!(
        Cache::open(&dir, &Options::default())
            .unwrap()
            .key(true, &text)
            .key,
        key.key
    );
    // Every other input of the key changes it too: the bytes, whether the file reads as YAML,
    // an empty image beside none, and each switch that changes what is kept or judged.
    let mut keys = vec![
        key.key,
        cache.key(true, &text[1..]).key,
        cache.key(false, &text).key,
    ];
    for options in [
        Options {
            credentials_image: Some(String::new()),
            ..Options::default()
        },
        Options {
            pragma_everywhere: true,
            ..Options::default()
        },
        Options {
            keep: crate::model::members::Keep {
                programs: true,
                ..Default::default()
            },
            ..Options::default()
        },
    ] {
        keys.push(Cache::open(&dir, &options).unwrap().key(true, &text).key);
    }
    let distinct: std::collections::HashSet<_> = keys.iter().collect();
    assert_eq!(distinct.len(), keys.len(), "two inputs share a key");
}

fn secret(byte: u8) -> ring::hmac::Key {
    ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &[byte; 32])
}

#[test]
fn pruning_removes_only_its_own_least_recently_used_entries_and_stale_temporary_files() {
    let (_base, dir) = temp("prune");
    std::fs::create_dir_all(&dir).unwrap();
    let ours = secret(1);
    let now = SystemTime::now();
    let age = |name: &str, secs: u64| {
        let f = std::fs::File::options()
            .append(true)
            .open(dir.join(name))
            .unwrap();
        f.set_modified(now - Duration::from_secs(secs)).unwrap();
    };
    let names: Vec<String> = (0..10u8)
        .map(|i| {
            let key = [i; 32];
            let name = crate::common::hex(&key);
            std::fs::write(dir.join(&name), seal(&ours, &key, &[7; 12])).unwrap();
            // Entry 0 is the oldest.
            age(&name, 1000 - u64::from(i));
            name
        })
        .collect();
    assert_eq!(HEADER + 12, 132);
    // Files named like entries that this cache did not write, all older and larger than its
    // own: another program's blob, an entry of another secret (another user, a restored
    // cache), and a copy of an entry of ours under another name. Never counted, never removed.
    let blob = format!("{:064x}", 0xb10b);
    std::fs::write(dir.join(&blob), vec![0; 10_000]).unwrap();
    let foreign = crate::common::hex(&[0xf0; 32]);
    std::fs::write(
        dir.join(&foreign),
        seal(&secret(2), &[0xf0; 32], &[7; 5000]),
    )
    .unwrap();
    let copied = crate::common::hex(&[0xc0; 32]);
    std::fs::write(dir.join(&copied), seal(&ours, &[0; 32], &[7; 5000])).unwrap();
    for name in [&blob, &foreign, &copied] {
        age(name, 5000);
    }
    let stale = std::fs::File::create(dir.join(".credlint-tmp-1-0")).unwrap();
    stale.set_modified(now - 2 * STALE_TEMP).unwrap();
    std::fs::write(dir.join(".credlint-tmp-1-1"), "a run writing now").unwrap();
    std::fs::write(dir.join(".gitignore"), "*\n").unwrap();
    // Another program's old temporary file, in a folder shared with it: not credlint's.
    let theirs = std::fs::File::create(dir.join(".tmp-theirs")).unwrap();
    theirs.set_modified(now - 2 * STALE_TEMP).unwrap();
    prune(&dir, 2000, &ours);
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        16,
        "its own entries are under the limit"
    );
    prune(&dir, 800, &ours);
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let mut expected: Vec<String> = names[6..].to_vec();
    expected.extend(
        [".gitignore", ".credlint-tmp-1-1", ".tmp-theirs"]
            .map(String::from)
            .into_iter()
            .chain([blob, foreign, copied]),
    );
    expected.sort();
    assert_eq!(left, expected, "down to 3/4 of the limit, oldest first");
}

/// An entry reads back only under the secret and the key it was sealed with, whole: any
/// flipped bit, a cut, an added byte, another secret or another key is refused.
#[test]
fn an_entry_reads_back_only_whole_under_its_secret_and_key() {
    let ours = secret(1);
    let key = [3; 32];
    let body: Vec<u8> = (0..200u32).map(|i| (i * 7 + 3) as u8).collect();
    let entry = seal(&ours, &key, &body);
    assert_eq!(super::body(&entry, &key, &ours), Some(&body[..]));
    assert!(own_header(&entry[..HEADER], &key, &ours));
    for at in 0..entry.len() {
        let mut b = entry.clone();
        b[at] ^= 0x01;
        assert!(super::body(&b, &key, &ours).is_none(), "byte {at} flipped");
    }
    assert!(super::body(&entry[..entry.len() - 1], &key, &ours).is_none());
    let mut longer = entry.clone();
    longer.push(0);
    assert!(super::body(&longer, &key, &ours).is_none());
    assert!(super::body(&entry, &key, &secret(2)).is_none());
    assert!(!own_header(&entry, &key, &secret(2)));
    assert!(super::body(&entry, &[4; 32], &ours).is_none());
    // The entry with its key field rewritten to another key: the tags bind the key.
    let mut moved = entry.clone();
    moved[16..48].copy_from_slice(&[4; 32]);
    assert!(super::body(&moved, &[4; 32], &ours).is_none());
    assert!(!own_header(&moved, &[4; 32], &ours));
}

#[test]
fn the_folder_comes_from_the_flag_then_the_variable_then_the_default() {
    assert_eq!(folder(None, true, None), None);
    assert_eq!(
        folder(
            Some(Path::new("x")),
            false,
            Some(Path::new("conf/credlint.toml"))
        ),
        Some(PathBuf::from("x"))
    );
    // The variable is read by the integration tests, which set it per process.
}

#[test]
fn a_folder_that_is_not_a_cache_gets_no_gitignore() {
    let (_base, dir) = temp("not-ours");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "someone's").unwrap();
    Cache::open(&dir, &Options::default()).unwrap();
    assert!(!dir.join(".gitignore").exists());
    // A folder credlint made is marked, and stays so when opened again.
    let ours = dir.join("cache");
    Cache::open(&ours, &Options::default()).unwrap();
    std::fs::remove_file(ours.join(".gitignore")).unwrap();
    Cache::open(&ours, &Options::default()).unwrap();
    assert!(ours.join(".gitignore").is_file() && ours.join("CACHEDIR.TAG").is_file());
}

/// A link under an entry's name is never followed (it could lead to a FIFO, a device or
/// another cache's entry): a miss, and the fresh result replaces the link, not its target.
#[test]
fn a_link_under_an_entry_name_is_a_miss_and_replaced() {
    let (base, dir) = temp("link");
    let engine = Linter::new(Options::default()).unwrap();
    let cache = Cache::open(&dir, &Options::default()).unwrap();
    let text = std::fs::read("fixtures/clean/cache.yaml").unwrap();
    let out = engine.lint_bytes(0, "a.yaml", &text, &Serial).unwrap();
    let key = cache.key(true, &text);
    // A whole, valid entry, reachable only through the link.
    cache.remember(&key, 0, &out);
    let path = cache.path(&key.key);
    let target = base.join("elsewhere");
    std::fs::rename(&path, &target).unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    assert!(cache.recall(&key, 0).is_none(), "the link was followed");
    cache.remember(&key, 0, &out);
    assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
    assert!(cache.recall(&key, 0).is_some());
    assert!(target.is_file(), "the link's target is left alone");
}

/// A hit on an entry older than `REFRESH_AFTER` moves its time to now (pruning removes the
/// least recently used first); a hit on a recent one leaves it, so a warm run writes nothing.
#[test]
fn a_hit_refreshes_an_old_entry_only() {
    let (_base, dir) = temp("refresh");
    let engine = Linter::new(Options::default()).unwrap();
    let cache = Cache::open(&dir, &Options::default()).unwrap();
    let text = std::fs::read("fixtures/clean/cache.yaml").unwrap();
    let key = cache.key(true, &text);
    cache.remember(
        &key,
        0,
        &engine.lint_bytes(0, "a.yaml", &text, &Serial).unwrap(),
    );
    let path = cache.path(&key.key);
    let set = |age: Duration| {
        let f = std::fs::File::options().append(true).open(&path).unwrap();
        let time = SystemTime::now() - age;
        f.set_modified(time).unwrap();
        std::fs::metadata(&path).unwrap().modified().unwrap()
    };
    let recent = set(REFRESH_AFTER / 2);
    assert!(cache.recall(&key, 0).is_some());
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        recent
    );
    set(REFRESH_AFTER * 2);
    assert!(cache.recall(&key, 0).is_some());
    let age = std::fs::metadata(&path)
        .unwrap()
        .modified()
        .unwrap()
        .elapsed()
        .unwrap_or_default();
    assert!(age < REFRESH_AFTER / 2, "not refreshed: {age:?} old");
}

/// A run that wrote lists the folder (and prunes it) only when the ledger is missing, says a
/// quarter of the limit was written since the last listing, or is a day old; otherwise it adds
/// its bytes to the ledger. A stale temporary file shows whether the folder was listed.
#[test]
fn the_folder_is_listed_only_when_the_ledger_says_it_is_due() {
    let (_base, dir) = temp("ledger");
    let engine = Linter::new(Options::default()).unwrap();
    let text = std::fs::read("fixtures/clean/cache.yaml").unwrap();
    let out = engine.lint_bytes(0, "a.yaml", &text, &Serial).unwrap();
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let stale = dir.join(".credlint-tmp-9-9");
    // One run that writes `bytes` of input (a new entry each time), after `ledger` was left.
    let run = |ledger: Option<String>, bytes: &[u8]| -> (bool, String) {
        let cache = Cache::open(&dir, &Options::default()).unwrap();
        let f = std::fs::File::create(&stale).unwrap();
        f.set_modified(SystemTime::now() - 2 * STALE_TEMP).unwrap();
        match ledger {
            Some(text) => std::fs::write(dir.join(LEDGER), text).unwrap(),
            None => {
                let _ = std::fs::remove_file(dir.join(LEDGER));
            }
        }
        cache.remember(&cache.key(true, bytes), 0, &out);
        cache.prune();
        let listed = !stale.exists();
        (listed, std::fs::read_to_string(dir.join(LEDGER)).unwrap())
    };
    let (listed, ledger) = run(None, b"a");
    assert!(listed, "no ledger yet");
    let (at, since) = parse_ledger(ledger.as_bytes()).unwrap();
    assert!(at >= now && since == 0, "{ledger}");
    let (listed, ledger) = run(Some(format!("{now} 100\n")), b"b");
    assert!(!listed, "a few bytes written since");
    let (at, since) = parse_ledger(ledger.as_bytes()).unwrap();
    assert_eq!(at, now);
    assert!(since > 100, "{ledger}");
    let near = PRUNE_AFTER_BYTES - 10;
    assert!(
        run(Some(format!("{now} {near}\n")), b"c").0,
        "a quarter written"
    );
    let old = now - PRUNE_AFTER.as_secs();
    assert!(run(Some(format!("{old} 0\n")), b"d").0, "a day old");
    assert!(run(Some("not a ledger".into()), b"e").0, "unreadable");
    // A run that wrote nothing touches neither the folder nor the ledger.
    let cache = Cache::open(&dir, &Options::default()).unwrap();
    let f = std::fs::File::create(&stale).unwrap();
    f.set_modified(SystemTime::now() - 2 * STALE_TEMP).unwrap();
    std::fs::write(dir.join(LEDGER), format!("{now} 5\n")).unwrap();
    cache.prune();
    assert!(stale.exists());
    assert_eq!(
        std::fs::read_to_string(dir.join(LEDGER)).unwrap(),
        format!("{now} 5\n")
    );
}

/// A whole run, filed and read back, is the run it was (places in every file, counts, ignore
/// annotations, which files each bundle lies in); read for a run of another number of files,
/// cut short, or from under another run's name, it is refused.
#[test]
fn a_whole_run_reads_back_only_for_its_own_files_and_name() {
    let (_base, dir) = temp("whole");
    let cache = Cache::open(&dir, &Options::default()).unwrap();
    // A run's result as the engine leaves it, file by file (the bundle stage adds findings of
    // the same shape).
    let engine = Linter::new(Options::default()).unwrap();
    let inputs =
        crate::testkit::fixture_inputs(&["fixtures/ignore-unused", "fixtures/bundle-duplicate"]);
    let n = inputs.len();
    let mut run = crate::model::outcome::Outcome {
        files: inputs.iter().map(|f| f.display.clone()).collect(),
        findings: Vec::new(),
        summary: Default::default(),
        bundles: Vec::new(),
        touched: Default::default(),
        input_errors: Vec::new(),
        ignores: Vec::new(),
        timings: Default::default(),
        bundle_files: vec![("ns/a".into(), vec![0, n - 1]), ("ns/b".into(), vec![1])],
    };
    for (i, input) in inputs.iter().enumerate() {
        let text = std::fs::read(&input.display).unwrap();
        let out = engine.lint_bytes(i, "a.yaml", &text, &Serial).unwrap();
        run.findings.extend(out.findings);
        run.ignores.extend(out.ignores);
        run.summary.documents += out.documents;
        run.summary.objects += out.objects;
    }
    run.summary.files = n;
    run.summary.errors = run.findings.len();
    assert!(run.findings.iter().any(|f| f.loc.file > 0) && !run.ignores.is_empty());
    let (key, other) = ([5; 32], [6; 32]);
    assert!(cache.recall_run(&key, n).is_none(), "empty cache");
    cache.remember_run(&key, &run);
    let back = cache.recall_run(&key, n).expect("filed");
    assert_eq!(
        format!("{:?}", back.findings),
        format!("{:?}", run.findings)
    );
    assert_eq!(back.summary, run.summary);
    assert_eq!(back.ignores, run.ignores);
    assert_eq!(back.bundle_files, run.bundle_files);
    // A run of fewer files cannot hold a place in the last one.
    assert!(cache.recall_run(&key, n - 1).is_none());
    assert!(cache.recall_run(&key, n + 1).is_none());
    let good = std::fs::read(cache.path(&key)).unwrap();
    std::fs::write(cache.path(&other), &good).unwrap();
    assert!(
        cache.recall_run(&other, n).is_none(),
        "copied under another name"
    );
    std::fs::write(cache.path(&key), &good[..good.len() - 1]).unwrap();
    assert!(cache.recall_run(&key, n).is_none(), "cut short");
    // A file's entry is no run.
    let text = std::fs::read("fixtures/clean/cache.yaml").unwrap();
    let file_key = cache.key(true, &text);
    let out = Linter::new(Options::default())
        .unwrap()
        .lint_bytes(0, "a.yaml", &text, &Serial)
        .unwrap();
    cache.remember(&file_key, 0, &out);
    assert!(cache.recall_run(&file_key.key, 1).is_none());
    assert!(codec::decode_run(b"garbage", n).is_none());
}

/// A run of many files leaves a pack of the entries it used; the next run of the same files
/// is served from it with no entry file left, each entry in it still checked on its own; a
/// run of other files, or of few, has none; a few new entries do not rewrite it, many do; and
/// pruning knows it for the cache's own.
#[test]
fn a_pack_serves_the_next_run_of_the_same_files_and_each_entry_in_it_still_verifies() {
    let (_base, dir) = temp("pack");
    let engine = Linter::new(Options::default()).unwrap();
    let text = std::fs::read("fixtures/clean/cache.yaml").unwrap();
    let n = pack::MIN_FILES + 6;
    // Each file's result, with its places in that file (as an entry holds it).
    let outs: Vec<FileOut> = (0..n)
        .map(|i| engine.lint_bytes(i, "a.yaml", &text, &Serial).unwrap())
        .collect();
    let expected: Vec<String> = (0..n)
        .map(|i| shown(engine.lint_bytes(i, "a.yaml", &text, &Serial).unwrap()))
        .collect();
    let names: Vec<String> = (0..n).map(|i| format!("tree/{i}.yaml")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let cache = Cache::open(&dir, &Options::default()).unwrap();
    let keys: Vec<MemoKey> = (0..n)
        .map(|i| cache.key(true, format!("file {i}").as_bytes()))
        .collect();
    // The first run: every file linted and remembered.
    cache.begin(&names);
    let pack_name = *cache
        .pack_name
        .get()
        .expect("a run of many files has a pack");
    for (i, key) in keys.iter().enumerate() {
        assert!(cache.recall(key, i).is_none());
        cache.remember(key, i, &outs[i]);
    }
    cache.finish();
    let pack_path = cache.path(&pack_name);
    let written = std::fs::read(&pack_path).expect("the pack is written");
    for key in &keys {
        std::fs::remove_file(cache.path(&key.key)).unwrap();
    }
    let run = |names: &[&str]| {
        let cache = Cache::open(&dir, &Options::default()).unwrap();
        cache.begin(names);
        let hits: Vec<bool> = keys
            .iter()
            .enumerate()
            .map(|(i, key)| {
                cache
                    .recall(key, i)
                    .map(|back| assert_eq!(shown(back), expected[i]))
                    .is_some()
            })
            .collect();
        (cache, hits)
    };
    let (again, hits) = run(&names);
    assert!(hits.iter().all(|&h| h), "served from the pack alone");
    again.finish();
    assert_eq!(std::fs::read(&pack_path).unwrap(), written, "not rewritten");
    // Another list of files, or a short one, has another pack or none.
    let mut other = names.clone();
    other.pop();
    assert!(run(&other).1.iter().all(|&h| !h));
    assert!(run(&names[..3]).1.iter().all(|&h| !h));
    // A flipped byte in one entry's body, or its slot pointed at another entry: that entry
    // alone is a miss.
    let locate = |key: &[u8; 32]| {
        let at = written
            .windows(48)
            .position(|w| w[..32] == key[..] && w[32..40] != [0; 8])
            .unwrap();
        let offset = u64::from_le_bytes(written[at + 32..at + 40].try_into().unwrap());
        (at, offset as usize)
    };
    let (_, offset) = locate(&keys[5].key);
    let mut damaged = written.clone();
    damaged[offset + HEADER + 2] ^= 1;
    std::fs::write(&pack_path, &damaged).unwrap();
    let (_, hits) = run(&names);
    assert_eq!(hits.iter().filter(|&&h| !h).count(), 1);
    assert!(!hits[5]);
    let (slot, _) = locate(&keys[7].key);
    let (_, elsewhere) = locate(&keys[8].key);
    let mut pointed = written.clone();
    pointed[slot + 32..slot + 40].copy_from_slice(&(elsewhere as u64).to_le_bytes());
    std::fs::write(&pack_path, &pointed).unwrap();
    let (_, hits) = run(&names);
    assert!(!hits[7] && hits[8], "another key's entry is no hit");
    // A name tag not made under this secret, a directory cut short, or garbage: no pack.
    let mut foreign = written.clone();
    foreign[60] ^= 1;
    let cut = pack::HEAD + 10;
    for bad in [
        foreign,
        written[..cut].to_vec(),
        b"credlint-pack01\n".to_vec(),
    ] {
        std::fs::write(&pack_path, &bad).unwrap();
        assert!(run(&names).1.iter().all(|&h| !h));
    }
    // Cut in the entries: those cut off are misses, the whole ones before still serve.
    std::fs::write(&pack_path, &written[..written.len() / 2]).unwrap();
    let hits = run(&names).1;
    assert!(hits.contains(&true) && hits.contains(&false));
    // One new entry in a run served from the pack leaves it as it is; a sixteenth and more
    // rewrite it.
    std::fs::write(&pack_path, &written).unwrap();
    let cache = Cache::open(&dir, &Options::default()).unwrap();
    cache.begin(&names);
    for (i, key) in keys.iter().enumerate().skip(1) {
        assert!(cache.recall(key, i).is_some());
    }
    let fresh = cache.key(true, b"edited");
    cache.remember(&fresh, 0, &outs[0]);
    cache.finish();
    assert_eq!(std::fs::read(&pack_path).unwrap(), written);
    let cache = Cache::open(&dir, &Options::default()).unwrap();
    cache.begin(&names);
    let edited: Vec<MemoKey> = (0..n / 8)
        .map(|i| cache.key(true, format!("edit {i}").as_bytes()))
        .collect();
    for (i, key) in edited.iter().enumerate() {
        cache.remember(key, i, &outs[i]);
    }
    for (i, key) in keys.iter().enumerate().skip(edited.len()) {
        assert!(cache.recall(key, i).is_some());
    }
    cache.finish();
    let rewritten = std::fs::read(&pack_path).unwrap();
    assert_ne!(rewritten, written);
    for key in &edited {
        std::fs::remove_file(cache.path(&key.key)).unwrap();
    }
    let cache = Cache::open(&dir, &Options::default()).unwrap();
    cache.begin(&names);
    for (i, key) in edited.iter().enumerate() {
        assert!(cache.recall(key, i).is_some(), "the new entries are in it");
    }
    // A run whose entries would make a pack over its limit keeps none of them, and writes no
    // pack.
    let mut cache = Cache::open(&dir, &Options::default()).unwrap();
    cache.pack_limit = (HEADER as u64 + 64) * 8;
    let other: Vec<String> = (0..n).map(|i| format!("other/{i}.yaml")).collect();
    cache.begin(&other.iter().map(String::as_str).collect::<Vec<_>>());
    let other_pack = cache.path(cache.pack_name.get().unwrap());
    for (i, key) in keys.iter().enumerate() {
        cache.remember(key, i, &outs[i]);
    }
    assert!(
        lock(&cache.used).0.is_empty(),
        "nothing kept past the limit"
    );
    cache.finish();
    assert!(!other_pack.exists());
    // Pruning counts the pack as the cache's own, and removes it like an entry.
    let secret = key::load(&dir).unwrap();
    prune(&dir, 0, &secret);
    assert!(!pack_path.exists());
}
