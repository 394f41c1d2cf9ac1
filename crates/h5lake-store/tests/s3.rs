//! The shared backend suite on [`S3Store`] against a real S3-compatible
//! server (moto, run single-threaded by `tests/s3server.py`), plus what only
//! S3 has: URLs, prefixes, batched reads, multipart uploads, helpful errors.
//!
//! Needs `python3` with `moto[server]`; without them these tests fail (never
//! skip), saying what to install. `H5LAKE_TEST_PYTHON` picks another Python.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use h5lake_store::{
    open_url, ListableStore, PutOutcome, ReadableStore, S3Config, S3Store, StoreError,
    WritableStore,
};

const BUCKET: &str = "h5lake-test";

/// The server, shared by every test of this binary. Its stdin is a pipe
/// that closes when this process ends, and the server exits then
/// (`--exit-on-eof`), so no test run leaves it behind.
struct Server {
    endpoint: String,
    _child: Mutex<Child>,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let python = std::env::var("H5LAKE_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/s3server.py");
        let mut child = Command::new(&python)
            .args([script, "--port", "0", "--exit-on-eof", "--bucket", BUCKET])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot run {python} ({e}): the S3 tests need Python with moto: pip install \"moto[server]\"")
            });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some(port) = line.strip_prefix("PORT ") else {
            let _ = child.kill();
            panic!(
                "the S3 test server ({script}) did not start; it needs moto: pip install \"moto[server]\" \
                 (run `{python} {script}` to see why)"
            );
        };
        Server {
            endpoint: format!("http://127.0.0.1:{}", port.trim()),
            _child: Mutex::new(child),
        }
    })
}

/// Explicit settings: nothing comes from the developer's AWS environment.
fn config() -> S3Config {
    S3Config {
        endpoint: Some(server().endpoint.clone()),
        region: Some("us-east-1".into()),
        access_key_id: Some("testing".into()),
        secret_access_key: Some("testing".into()),
        ..Default::default()
    }
}

/// A fresh, empty store: its own prefix in the shared bucket.
fn fresh() -> S3Store {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let url = format!("s3://{BUCKET}/t{}-{n}", std::process::id());
    S3Store::open_with(&url, &config(), true).unwrap()
}

mod suite {
    h5lake_store::store_test_suite!(|| (super::fresh(), ()));
}

#[test]
fn racing_creators_have_exactly_one_winner_many_times() {
    // The suite's race, repeated on more keys: one lucky round proves little.
    let s = fresh();
    const THREADS: usize = 8;
    for round in 0..20 {
        let key = format!("race/{round}");
        let barrier = std::sync::Barrier::new(THREADS);
        let wins: usize = std::thread::scope(|scope| {
            let hs: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (s, key, barrier) = (&s, &key, &barrier);
                    scope.spawn(move || {
                        barrier.wait();
                        let o = s.put_if_absent(key, format!("{t}").as_bytes()).unwrap();
                        usize::from(matches!(o, PutOutcome::Written(_)))
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(wins, 1, "round {round}");
    }
}

#[test]
fn prefixes_isolate_stores_and_keys_keep_their_characters() {
    let a = fresh();
    let b = fresh();
    a.put("home/test user/f #1.h5/.domain.json", b"{}").unwrap();
    assert_eq!(
        a.list_prefix("").unwrap(),
        vec!["home/test user/f #1.h5/.domain.json"]
    );
    assert!(b.list_prefix("").unwrap().is_empty());
    assert_eq!(
        a.list_dir("home/").unwrap(),
        (vec![], vec!["home/test user/".to_string()])
    );
    // The bucket root sees the object under the prefix, spelled as written.
    let root = S3Store::open_with(&format!("s3://{BUCKET}"), &config(), false).unwrap();
    let all = root.list_prefix("").unwrap();
    assert!(
        all.iter()
            .any(|k| k.ends_with("/home/test user/f #1.h5/.domain.json")),
        "{all:?}"
    );
}

#[test]
fn get_many_keeps_order_and_reports_missing() {
    let s = fresh();
    let keys: Vec<String> = (0..100).map(|i| format!("c/{i}")).collect();
    for (i, k) in keys.iter().enumerate() {
        if i % 7 != 3 {
            s.put(k, format!("value {i}").as_bytes()).unwrap();
        }
    }
    let got = s.get_many(&keys).unwrap();
    assert_eq!(got.len(), keys.len());
    for (i, g) in got.iter().enumerate() {
        match g {
            None => assert_eq!(i % 7, 3),
            Some(v) => {
                assert_eq!(v.data.as_ref(), format!("value {i}").as_bytes());
                assert_eq!(Some(&v.version), s.version(&keys[i]).unwrap().as_ref());
            }
        }
    }
    assert!(s.prefers_batching());
}

#[test]
fn get_ranges_coalesces_and_clips() {
    let s = fresh();
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    s.put("big", &data).unwrap();
    let ranges = [10..20, 15..40, 2_500_000..2_500_100, 0..1];
    let got = s.get_ranges("big", &ranges).unwrap().unwrap();
    for (r, g) in ranges.iter().zip(&got) {
        assert_eq!(g.as_ref(), &data[r.start as usize..r.end as usize]);
    }
    let clipped = s
        .get_ranges("big", std::slice::from_ref(&(2_999_990..3_000_100)))
        .unwrap()
        .unwrap();
    assert_eq!(clipped[0].as_ref(), &data[2_999_990..]);
    assert!(s
        .get_ranges("missing", std::slice::from_ref(&(0..1)))
        .unwrap()
        .is_none());
}

#[test]
fn big_objects_go_up_in_parts() {
    let cfg = S3Config {
        multipart_threshold: 6 << 20,
        ..config()
    };
    let s = S3Store::open_with(&format!("s3://{BUCKET}/multipart"), &cfg, true).unwrap();
    let data: Vec<u8> = (0..(40u32 << 20) / 4 + 12345)
        .flat_map(|i| i.to_le_bytes())
        .collect();
    let v = s.put("blob", &data).unwrap();
    let got = s.get_versioned("blob").unwrap().unwrap();
    assert_eq!(got.data.len(), data.len());
    assert!(got.data == data);
    assert_eq!(got.version, v);
    // A multipart ETag says how many parts it has ("<md5>-<n>").
    assert!(v.0.contains('-'), "{v:?}");
}

#[test]
fn open_url_picks_the_backend_and_checks_the_store() {
    // Local paths.
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("new");
    assert!(matches!(
        open_url(missing.to_str().unwrap(), false),
        Err(StoreError::NotFound(_))
    ));
    let store = open_url(missing.to_str().unwrap(), true).unwrap();
    assert_eq!(store.location(), missing.display().to_string());
    assert!(matches!(
        open_url("gs://bucket/x", false),
        Err(StoreError::Config { .. })
    ));
    // S3, configured from the environment as users do it. Only this test
    // touches the environment of this process.
    std::env::set_var("AWS_ENDPOINT_URL", &server().endpoint);
    std::env::set_var("AWS_ACCESS_KEY_ID", "testing");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "testing");
    std::env::set_var("AWS_REGION", "us-east-1");
    let url = format!("s3://{BUCKET}/open-url-{}", std::process::id());
    let err = open_url(&url, false)
        .err()
        .expect("nothing stored there yet");
    assert!(matches!(err, StoreError::NotFound(_)), "{err}");
    let s = open_url(&url, true).unwrap();
    s.put("x", b"1").unwrap();
    assert_eq!(s.location(), url);
    assert_eq!(
        open_url(&url, false)
            .unwrap()
            .get("x")
            .unwrap()
            .unwrap()
            .as_ref(),
        b"1"
    );
    let err = open_url("s3://no-such-bucket-here", true).err().unwrap();
    assert!(
        matches!(err, StoreError::NotFound(_)) && err.to_string().contains("create it first"),
        "{err}"
    );
}

#[test]
fn errors_say_what_to_do() {
    let no_keys = S3Config {
        access_key_id: None,
        secret_access_key: None,
        ..config()
    };
    let err = S3Store::open_with(&format!("s3://{BUCKET}"), &no_keys, true).unwrap_err();
    assert!(err.to_string().contains("AWS_ACCESS_KEY_ID"), "{err}");
    // Nothing listens on port 9 (discard) of the loopback interface.
    let dead = S3Config {
        endpoint: Some("http://127.0.0.1:9".into()),
        ..config()
    };
    let err = S3Store::open_with(&format!("s3://{BUCKET}"), &dead, true).unwrap_err();
    assert!(err.to_string().contains("AWS_ENDPOINT_URL"), "{err}");
    for bad in ["s3://", "s3:///x", "s3://b/../x", "http://b"] {
        assert!(
            matches!(
                S3Store::open_with(bad, &config(), true),
                Err(StoreError::Config { .. })
            ),
            "{bad}"
        );
    }
}

#[test]
fn calls_from_inside_a_tokio_runtime_work() {
    // What a server does wrong, or right (spawn_blocking): both must work.
    let s = std::sync::Arc::new(fresh());
    s.put("k", b"v").unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let s2 = s.clone();
    rt.block_on(async move {
        assert_eq!(s2.get("k").unwrap().unwrap().as_ref(), b"v");
        let s3 = s2.clone();
        tokio::task::spawn_blocking(move || s3.get("k").unwrap().unwrap())
            .await
            .unwrap();
    });
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    current.block_on(async move {
        assert_eq!(s.get("k").unwrap().unwrap().as_ref(), b"v");
    });
}
