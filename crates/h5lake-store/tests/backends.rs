//! Runs the shared backend suite on every in-crate backend, plus the checks
//! only a local directory can have: other processes and crashes.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use h5lake_store::{
    testsuite, ListableStore, LocalStore, MemoryStore, PutOutcome, ReadableStore, StoreError,
    WritableStore,
};

mod memory {
    h5lake_store::store_test_suite!(|| (h5lake_store::MemoryStore::new(), ()));
}

mod local {
    h5lake_store::store_test_suite!(|| {
        let dir = tempfile::tempdir().unwrap();
        (h5lake_store::LocalStore::create(dir.path()).unwrap(), dir)
    });
}

mod local_sync {
    // Same suite with fsync on, so the durable path is exercised too.
    h5lake_store::store_test_suite!(|| {
        let dir = tempfile::tempdir().unwrap();
        (
            h5lake_store::LocalStore::create(dir.path())
                .unwrap()
                .with_sync(true),
            dir,
        )
    });
}

#[test]
fn run_all_entry_point_works() {
    testsuite::run_all(&MemoryStore::new);
}

/// Files on disk: everything below the temp dir except the root itself.
fn files_on_disk(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let rel = e
                .path()
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
                out.push(format!("{rel}/"));
            } else {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn local_open_requires_existing_dir() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    assert!(matches!(
        LocalStore::open(&missing),
        Err(StoreError::NotFound(_))
    ));
    let store = LocalStore::create(missing.join("deeper")).unwrap();
    assert!(store.root().is_dir());
    LocalStore::open(missing.join("deeper")).unwrap();
    std::fs::write(dir.path().join("file"), b"").unwrap();
    assert!(matches!(
        LocalStore::open(dir.path().join("file")),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn local_key_maps_to_file_and_leaves_no_debris() {
    let dir = tempfile::tempdir().unwrap();
    let s = LocalStore::new(dir.path()).unwrap();
    s.put("db/a/.group.json", b"{}").unwrap();
    s.put_if_absent("db/a/d/x/0_0", b"chunk").unwrap();
    assert_eq!(
        s.put_if_absent("db/a/d/x/0_0", b"again").unwrap(),
        PutOutcome::Conflict
    );
    let v = s
        .get_versioned("db/a/.group.json")
        .unwrap()
        .unwrap()
        .version;
    assert_eq!(
        s.put_if_version("db/a/.group.json", b"{1}", &v)
            .unwrap()
            .clone(),
        {
            let now = s
                .get_versioned("db/a/.group.json")
                .unwrap()
                .unwrap()
                .version;
            PutOutcome::Written(now)
        }
    );
    assert_eq!(
        s.put_if_version("db/a/.group.json", b"{2}", &v).unwrap(),
        PutOutcome::Conflict
    );
    assert_eq!(
        std::fs::read(dir.path().join("db/a/.group.json")).unwrap(),
        b"{1}"
    );
    assert_eq!(
        files_on_disk(dir.path()),
        vec![
            "db/",
            "db/a/",
            "db/a/.group.json",
            "db/a/d/",
            "db/a/d/x/",
            "db/a/d/x/0_0"
        ]
    );
    s.delete("db/a/d/x/0_0").unwrap();
    assert_eq!(
        files_on_disk(dir.path()),
        vec!["db/", "db/a/", "db/a/.group.json"]
    );
    s.delete_prefix("db/").unwrap();
    assert!(files_on_disk(dir.path()).is_empty());
}

#[test]
fn local_hides_and_reserves_temp_names() {
    let dir = tempfile::tempdir().unwrap();
    let s = LocalStore::new(dir.path()).unwrap();
    s.put("g/.group.json", b"{}").unwrap();
    // What a crashed writer leaves behind.
    std::fs::write(
        dir.path().join("g/.h5lake-tmp-0123456789abcdef.tmp"),
        b"half",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    std::fs::create_dir(dir.path().join("orphan")).unwrap();
    std::fs::write(dir.path().join("orphan/.h5lake-tmp-1.tmp"), b"").unwrap();
    assert_eq!(s.list_prefix("").unwrap(), vec!["g/.group.json"]);
    assert_eq!(
        s.list_dir("g/").unwrap(),
        (vec!["g/.group.json".to_string()], vec![])
    );
    assert_eq!(s.list_dir("").unwrap(), (vec![], vec!["g/".to_string()]));
    assert!(matches!(
        s.put("g/.h5lake-tmp-x.tmp", b""),
        Err(StoreError::InvalidKey { .. })
    ));
    assert!(matches!(
        s.get(".h5lake-tmp-x.tmp/y"),
        Err(StoreError::InvalidKey { .. })
    ));
    // Young temp files may belong to live writers and are kept.
    assert_eq!(
        s.remove_stale_temp_files(Duration::from_secs(3600))
            .unwrap(),
        0
    );
    assert_eq!(s.remove_stale_temp_files(Duration::ZERO).unwrap(), 2);
    assert_eq!(s.list_prefix("").unwrap(), vec!["g/.group.json"]);
}

#[test]
fn local_versions_change_even_for_identical_rewrites() {
    // Every write is a new inode with a fresh random-nanosecond mtime, so
    // even same-size, same-content rewrites (where inode reuse is likeliest)
    // get a new version.
    let dir = tempfile::tempdir().unwrap();
    let s = LocalStore::new(dir.path()).unwrap();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..200 {
        assert!(seen.insert(s.put("k", b"same").unwrap()));
    }
}

#[test]
fn local_object_and_directory_cannot_share_a_name() {
    let dir = tempfile::tempdir().unwrap();
    let s = LocalStore::new(dir.path()).unwrap();
    s.put("a/b", b"x").unwrap();
    assert!(s.put("a", b"y").is_err());
    assert!(s.put("a/b/c", b"y").is_err());
    assert_eq!(s.list_prefix("").unwrap(), vec!["a/b"]);
}

#[cfg(unix)]
#[test]
fn local_permission_denied_is_reported_as_such() {
    use std::os::unix::fs::PermissionsExt;
    // root ignores permission bits; nothing to test then.
    if unsafe { libc::geteuid() } == 0 {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = LocalStore::new(dir.path()).unwrap();
    s.put("ro/k", b"x").unwrap();
    std::fs::set_permissions(
        dir.path().join("ro"),
        std::fs::Permissions::from_mode(0o555),
    )
    .unwrap();
    let r = s.put("ro/k2", b"y");
    std::fs::set_permissions(
        dir.path().join("ro"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    assert!(matches!(r, Err(StoreError::PermissionDenied(_))), "{r:?}");
}

// ---- multi-process tests -------------------------------------------------
//
// The test binary re-runs itself with CHILD_ENV set; `child_process_entry`
// then does the child's work (and is a no-op in a normal test run).

const CHILD_ENV: &str = "H5LAKE_STORE_TEST_CHILD";
const CHILD_DIR_ENV: &str = "H5LAKE_STORE_TEST_DIR";

fn spawn_child(role: &str, dir: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "child_process_entry",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, role)
        .env(CHILD_DIR_ENV, dir)
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn child_process_entry() {
    let Ok(role) = std::env::var(CHILD_ENV) else {
        return;
    };
    let store = LocalStore::open(std::env::var(CHILD_DIR_ENV).unwrap()).unwrap();
    match role.as_str() {
        "increment" => {
            for _ in 0..50 {
                testsuite::increment(&store, "shared/counter");
            }
        }
        "overwrite-forever" => {
            let mut value = vec![0u8; 1 << 20];
            for i in 0u64.. {
                value.fill(i as u8);
                store.put("crash/blob", &value).unwrap();
            }
        }
        other => panic!("unknown child role {other}"),
    }
}

#[test]
fn local_conditional_increments_across_processes() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::new(dir.path()).unwrap();
    store.put("shared/counter", b"0").unwrap();
    let children: Vec<_> = (0..4)
        .map(|_| spawn_child("increment", dir.path()))
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    assert_eq!(
        store.get("shared/counter").unwrap().unwrap().as_ref(),
        b"200"
    );
    assert_eq!(store.list_prefix("").unwrap(), vec!["shared/counter"]);
}

#[test]
fn local_put_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::new(dir.path()).unwrap();
    for round in 0..3 {
        let mut child = spawn_child("overwrite-forever", dir.path());
        // Kill only once the child is really writing, then a bit later.
        let start = Instant::now();
        while !store.exists("crash/blob").unwrap() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "child never wrote"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(200 + 37 * round));
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();

        let blob = store
            .get("crash/blob")
            .unwrap()
            .expect("last committed value readable");
        assert_eq!(blob.len(), 1 << 20);
        assert!(blob.iter().all(|&b| b == blob[0]), "torn value after kill");
        assert_eq!(store.list_prefix("").unwrap(), vec!["crash/blob"]);
        assert_eq!(store.list_dir("crash/").unwrap().0, vec!["crash/blob"]);
    }
    // The orphaned temp files are still there on disk, only hidden; they can
    // be swept once no writer can own them.
    store.remove_stale_temp_files(Duration::ZERO).unwrap();
    assert_eq!(files_on_disk(dir.path()), vec!["crash/", "crash/blob"]);
}
