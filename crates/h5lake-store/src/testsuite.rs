//! The behaviour every backend must show, as plain functions so that any
//! backend crate (S3 included) can run exactly the same checks.
//!
//! Each case takes a fresh, empty store and panics on a violation. Use
//! [`run_all`] for one test that runs everything, or
//! [`store_test_suite!`](crate::store_test_suite) for one `#[test]` per case
//! (better failure reports).
//!
//! Deliberately *not* required: that rewriting identical bytes changes the
//! version. S3 ETags are content hashes, and a conditional write based on
//! unchanged content is harmless.

use std::collections::BTreeSet;

use crate::{PutOutcome, Store, StoreError};

/// Every case, in order, each on a store fresh from `make`.
pub fn run_all<S: Store>(make: &dyn Fn() -> S) {
    for (name, case) in cases::<S>() {
        eprintln!("store testsuite: {name}");
        case(&make());
    }
}

/// One check, run on a fresh store.
pub type Case<S> = fn(&S);

/// Name and function of every case (what [`run_all`] runs). Keep in step
/// with the list in [`store_test_suite!`](crate::store_test_suite).
pub fn cases<S: Store>() -> Vec<(&'static str, Case<S>)> {
    vec![
        ("get_missing", get_missing::<S>),
        ("roundtrip", roundtrip::<S>),
        ("overwrite", overwrite::<S>),
        ("get_range", get_range::<S>),
        ("exists", exists::<S>),
        ("put_if_absent_twice", put_if_absent_twice::<S>),
        ("put_fresh", put_fresh::<S>),
        ("put_if_version", put_if_version::<S>),
        ("versions_track_writes", versions_track_writes::<S>),
        ("get_into_replaces_buffer", get_into_replaces_buffer::<S>),
        ("get_scattered_fills_runs", get_scattered_fills_runs::<S>),
        ("get_many", get_many::<S>),
        ("get_ranges", get_ranges::<S>),
        (
            "open_object_reads_one_version",
            open_object_reads_one_version::<S>,
        ),
        ("delete", delete::<S>),
        ("delete_prefix", delete_prefix::<S>),
        ("list_prefix", list_prefix::<S>),
        ("list_dir", list_dir::<S>),
        ("list_sizes", list_sizes::<S>),
        ("invalid_keys", invalid_keys::<S>),
        ("concurrent_increments", concurrent_increments::<S>),
        ("concurrent_put_if_absent", concurrent_put_if_absent::<S>),
        ("concurrent_churn", concurrent_churn::<S>),
        ("patch", patch::<S>),
        ("concurrent_patches", concurrent_patches::<S>),
    ]
}

/// Generates one `#[test]` per case. `$make` is a closure returning
/// `(store, guard)`; the guard (e.g. a `tempfile::TempDir`) lives as long as
/// the test.
///
/// ```ignore
/// mod memory {
///     h5lake_store::store_test_suite!(|| (h5lake_store::MemoryStore::new(), ()));
/// }
/// ```
#[macro_export]
macro_rules! store_test_suite {
    ($make:expr) => {
        $crate::store_test_suite!(@cases $make;
            get_missing, roundtrip, overwrite, get_range, exists, put_if_absent_twice, put_fresh,
            put_if_version, versions_track_writes, get_into_replaces_buffer,
            get_scattered_fills_runs, get_many, get_ranges, open_object_reads_one_version, delete, delete_prefix, list_prefix, list_dir, list_sizes,
            invalid_keys, concurrent_increments, concurrent_put_if_absent, concurrent_churn,
            patch, concurrent_patches);
    };
    (@cases $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                let (store, _guard) = ($make)();
                $crate::testsuite::$case(&store);
            }
        )*
    };
}

fn get<S: Store>(s: &S, key: &str) -> Option<Vec<u8>> {
    s.get(key).unwrap().map(|b| b.to_vec())
}

fn all_keys<S: Store>(s: &S) -> Vec<String> {
    s.list_prefix("").unwrap()
}

/// A missing key reads as `None` through every read call, even below a
/// missing or non-directory "parent".
pub fn get_missing<S: Store>(s: &S) {
    assert_eq!(get(s, "nope"), None);
    assert!(s.get_versioned("a/b/c").unwrap().is_none());
    assert!(s.get_range("a/b/c", 0, 10).unwrap().is_none());
    assert!(!s.exists("a/b/c").unwrap());
    s.put("file", b"x").unwrap();
    assert_eq!(
        get(s, "file/child"),
        None,
        "a key below an object is missing, not an error"
    );
    // A "directory" is not an object.
    s.put("dir/leaf", b"x").unwrap();
    assert_eq!(get(s, "dir"), None);
    assert!(!s.exists("dir").unwrap());
}

/// Bytes come back exactly, including empty and non-UTF-8 values.
pub fn roundtrip<S: Store>(s: &S) {
    let v = s.put("a/b/c.bin", &[0, 1, 2, 255]).unwrap();
    assert_eq!(get(s, "a/b/c.bin").unwrap(), vec![0, 1, 2, 255]);
    let got = s.get_versioned("a/b/c.bin").unwrap().unwrap();
    assert_eq!(got.data.as_ref(), &[0, 1, 2, 255]);
    assert_eq!(got.version, v, "put returns the version a later read sees");
    s.put("empty", b"").unwrap();
    assert_eq!(get(s, "empty").unwrap(), Vec::<u8>::new());
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    s.put("big", &big).unwrap();
    assert_eq!(get(s, "big").unwrap(), big);
}

/// A second put replaces the first, also with shorter data.
pub fn overwrite<S: Store>(s: &S) {
    s.put("k", b"first value").unwrap();
    s.put("k", b"2nd").unwrap();
    assert_eq!(get(s, "k").unwrap(), b"2nd");
    assert_eq!(all_keys(s), vec!["k"]);
}

/// Ranges clip at the end of the object; a range past the end is empty.
pub fn get_range<S: Store>(s: &S) {
    s.put("r", b"0123456789").unwrap();
    let r = |o, l| s.get_range("r", o, l).unwrap().unwrap().to_vec();
    assert_eq!(r(0, 10), b"0123456789");
    assert_eq!(r(2, 3), b"234");
    assert_eq!(r(8, 100), b"89");
    assert_eq!(r(10, 5), b"");
    assert_eq!(r(50, 5), b"");
    assert_eq!(r(3, 0), b"");
    assert_eq!(r(4, u64::MAX), b"456789");
    assert!(s.get_range("missing", 0, 1).unwrap().is_none());
}

/// `exists` agrees with `get`.
pub fn exists<S: Store>(s: &S) {
    assert!(!s.exists("e/x").unwrap());
    s.put("e/x", b"").unwrap();
    assert!(s.exists("e/x").unwrap());
    assert!(!s.exists("e").unwrap());
    s.delete("e/x").unwrap();
    assert!(!s.exists("e/x").unwrap());
}

/// Create-if-absent creates once; the loser changes nothing.
pub fn put_if_absent_twice<S: Store>(s: &S) {
    let first = s.put_if_absent("p/once", b"one").unwrap();
    let PutOutcome::Written(v) = first else {
        panic!("first put_if_absent must write")
    };
    assert_eq!(
        s.put_if_absent("p/once", b"two").unwrap(),
        PutOutcome::Conflict
    );
    let got = s.get_versioned("p/once").unwrap().unwrap();
    assert_eq!(got.data.as_ref(), b"one");
    assert_eq!(got.version, v);
    assert_eq!(
        all_keys(s),
        vec!["p/once"],
        "a conflicting write leaves nothing behind"
    );
}

/// A fresh object is created once, under directories that do not exist
/// yet, with the version reads report; a second one under the same key
/// changes nothing.
pub fn put_fresh<S: Store>(s: &S) {
    let PutOutcome::Written(v) = s.put_fresh("f/new/obj/.doc", b"first").unwrap() else {
        panic!("put_fresh of a new key must write")
    };
    let got = s.get_versioned("f/new/obj/.doc").unwrap().unwrap();
    assert_eq!(got.data.as_ref(), b"first");
    assert_eq!(got.version, v);
    assert_eq!(
        s.put_fresh("f/new/obj/.doc", b"second").unwrap(),
        PutOutcome::Conflict
    );
    assert_eq!(
        s.put_if_absent("f/new/obj/.doc", b"third").unwrap(),
        PutOutcome::Conflict
    );
    let PutOutcome::Written(w) = s.put_fresh("f/new/obj/0", b"chunk").unwrap() else {
        panic!("put_fresh beside an existing key must write")
    };
    assert_ne!(v, w);
    assert_eq!(get(s, "f/new/obj/.doc").unwrap(), b"first");
    assert_eq!(all_keys(s), vec!["f/new/obj/.doc", "f/new/obj/0"]);
}

/// Conditional replace succeeds only on the current version.
pub fn put_if_version<S: Store>(s: &S) {
    let v1 = s.put("cv", b"v1").unwrap();
    let PutOutcome::Written(v2) = s.put_if_version("cv", b"v2", &v1).unwrap() else {
        panic!("put_if_version with the current version must write")
    };
    assert_ne!(v1, v2);
    assert_eq!(get(s, "cv").unwrap(), b"v2");
    assert_eq!(
        s.put_if_version("cv", b"stale", &v1).unwrap(),
        PutOutcome::Conflict
    );
    assert_eq!(get(s, "cv").unwrap(), b"v2");
    // Missing key: nothing to match, nothing created.
    assert_eq!(
        s.put_if_version("cv-missing", b"x", &v2).unwrap(),
        PutOutcome::Conflict
    );
    assert!(!s.exists("cv-missing").unwrap());
    // Deleted in between: the old version must not resurrect it.
    s.delete("cv").unwrap();
    assert_eq!(
        s.put_if_version("cv", b"again", &v2).unwrap(),
        PutOutcome::Conflict
    );
    assert!(!s.exists("cv").unwrap());
    assert!(
        all_keys(s).is_empty(),
        "conflicts leave nothing behind: {:?}",
        all_keys(s)
    );
}

/// Versions are stable across reads and move on with every (different) write,
/// including delete + recreate.
pub fn versions_track_writes<S: Store>(s: &S) {
    let mut seen = BTreeSet::new();
    for i in 0..20u32 {
        let v = s.put("vt", format!("value {i}").as_bytes()).unwrap();
        let r1 = s.get_versioned("vt").unwrap().unwrap().version;
        let r2 = s.get_versioned("vt").unwrap().unwrap().version;
        assert_eq!(v, r1);
        assert_eq!(r1, r2);
        assert_eq!(
            s.version("vt").unwrap(),
            Some(r1),
            "version() agrees with get_versioned()"
        );
        assert!(seen.insert(v.0), "version repeated after a write");
        s.delete("vt").unwrap();
        assert_eq!(s.version("vt").unwrap(), None);
    }
}

/// `get_into` replaces the buffer's contents and reports the same version
/// as `get_versioned`; a missing key leaves `None`.
pub fn get_into_replaces_buffer<S: Store>(s: &S) {
    let v = s.put("gi/a", b"hello world").unwrap();
    let mut buf = b"previous contents that are longer".to_vec();
    assert_eq!(s.get_into("gi/a", &mut buf).unwrap(), Some(v));
    assert_eq!(buf, b"hello world");
    s.put("gi/b", b"x").unwrap();
    s.get_into("gi/b", &mut buf).unwrap();
    assert_eq!(buf, b"x");
    assert_eq!(s.get_into("gi/none", &mut buf).unwrap(), None);
}

/// `get_scattered` puts each run of the object where it is asked to, and
/// refuses (without failing) an object of another size.
pub fn get_scattered_fills_runs<S: Store>(s: &S) {
    let data: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    s.put("gs/a", &data).unwrap();
    let mut out = vec![0u8; 3000];
    {
        // Runs land out of order in the destination, as rows of a chunk do.
        let (left, right) = out.split_at_mut(1500);
        let (r0, r1) = right.split_at_mut(1000);
        let mut runs: Vec<(u64, &mut [u8])> = vec![(0, r1), (500, left), (2000, r0)];
        assert_eq!(
            s.get_scattered("gs/a", 3000, &mut runs).unwrap(),
            Some(true)
        );
    }
    assert_eq!(&out[2500..], &data[..500]);
    assert_eq!(&out[..1500], &data[500..2000]);
    assert_eq!(&out[1500..2500], &data[2000..]);
    let mut small = [0u8; 10];
    assert_eq!(
        s.get_scattered("gs/a", 10, &mut [(0, &mut small[..])])
            .unwrap(),
        Some(false)
    );
    assert_eq!(
        s.get_scattered("gs/none", 10, &mut [(0, &mut small[..])])
            .unwrap(),
        None
    );
}

/// Batched reads answer in the order asked, `None` for missing keys, with
/// the versions single reads see.
pub fn get_many<S: Store>(s: &S) {
    assert!(s.get_many(&[]).unwrap().is_empty());
    let keys: Vec<String> = (0..40).map(|i| format!("gm/{i}")).collect();
    for (i, k) in keys.iter().enumerate().filter(|(i, _)| i % 3 != 1) {
        s.put(k, format!("v{i}").as_bytes()).unwrap();
    }
    let mut asked = keys.clone();
    asked.push(keys[0].clone());
    let got = s.get_many(&asked).unwrap();
    assert_eq!(got.len(), asked.len());
    for (k, g) in asked.iter().zip(&got) {
        let single = s.get_versioned(k).unwrap();
        match (g, single) {
            (None, None) => {}
            (Some(g), Some(one)) => {
                assert_eq!(g.data, one.data, "{k}");
                assert_eq!(g.version, one.version, "{k}");
            }
            (g, one) => panic!("{k}: get_many {g:?}, get_versioned {one:?}"),
        }
    }
    assert!(got[1].is_none() && got[0].is_some());
    assert!(matches!(
        s.get_many(&["ok".to_string(), "../x".to_string()]),
        Err(StoreError::InvalidKey { .. })
    ));
}

/// Several ranges of one object come back in the order asked, clipped at
/// the end like `get_range`; a missing object is `None`.
pub fn get_ranges<S: Store>(s: &S) {
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    s.put("gr", &data).unwrap();
    let ranges = [
        150_000..150_010,
        0..4,
        2..9,
        199_990..200_000,
        5..5,
        199_995..200_100,
        300_000..300_001,
    ];
    let got = s.get_ranges("gr", &ranges).unwrap().unwrap();
    assert_eq!(got.len(), ranges.len());
    for (r, g) in ranges.iter().zip(&got) {
        let (lo, hi) = (r.start.min(200_000) as usize, r.end.min(200_000) as usize);
        assert_eq!(g.as_ref(), &data[lo..hi.max(lo)], "{r:?}");
    }
    assert!(s
        .get_ranges("gr-missing", std::slice::from_ref(&(0..1)))
        .unwrap()
        .is_none());
    assert!(s.get_ranges("gr", &[]).unwrap().unwrap().is_empty());
}

/// An opened object gives its tail, its length and ranges of the version
/// opened; once replaced, a backend either still reads the old version or
/// says it changed — never the new bytes under the old version.
pub fn open_object_reads_one_version<S: Store>(s: &S) {
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let version = s.put("oo", &data).unwrap();
    assert!(s.open_object("oo-missing", 16).unwrap().is_none());
    let obj = s.open_object("oo", 1000).unwrap().unwrap();
    assert_eq!(obj.len(), 200_000);
    assert_eq!(obj.version(), &version);
    assert_eq!(obj.tail().as_ref(), &data[199_000..]);
    let ranges = [
        150_000..150_010,
        0..4,
        2..9,
        5..5,
        199_995..200_100,
        300_000..300_001,
    ];
    let got = obj.read_ranges(&ranges).unwrap();
    assert_eq!(got.len(), ranges.len());
    for (r, g) in ranges.iter().zip(&got) {
        let (lo, hi) = (r.start.min(200_000) as usize, r.end.min(200_000) as usize);
        assert_eq!(g.as_ref(), &data[lo..hi.max(lo)], "{r:?}");
    }
    let mut buf = vec![7u8; 3];
    obj.read_ranges_into(&ranges, &mut buf).unwrap();
    let joined: Vec<u8> = got.iter().flat_map(|g| g.iter().copied()).collect();
    assert_eq!(buf, joined);
    // A tail longer than the object is the whole object.
    s.put("oo-small", b"abc").unwrap();
    let small = s.open_object("oo-small", 1 << 16).unwrap().unwrap();
    assert_eq!((small.len(), small.tail().as_ref()), (3, &b"abc"[..]));
    s.put("oo-empty", b"").unwrap();
    let empty = s.open_object("oo-empty", 8).unwrap().unwrap();
    assert_eq!((empty.len(), empty.tail().len()), (0, 0));

    let other: Vec<u8> = data.iter().map(|b| b.wrapping_add(1)).collect();
    s.put("oo", &other).unwrap();
    match obj.read_ranges(&[0..4]) {
        Ok(parts) => assert_eq!(parts[0].as_ref(), &data[..4]),
        Err(StoreError::Changed(_)) => {}
        Err(e) => panic!("reading a replaced object: {e}"),
    }

    // Ranges given without a copy (where a backend can) are the same
    // bytes, and stay those of the version opened when it is replaced,
    // even by a shorter object.
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 253) as u8).collect();
    s.put("oo-big", &big).unwrap();
    let obj = s.open_object("oo-big", 16).unwrap().unwrap();
    let ranges = [5..10, 1_000_000..2_500_000, 2_999_990..3_000_100];
    if let Some(mapped) = obj.map_ranges(&ranges).unwrap() {
        assert_eq!(mapped, obj.read_ranges(&ranges).unwrap());
        s.put("oo-big", &[1, 2, 3]).unwrap();
        for (r, m) in ranges.iter().zip(&mapped) {
            let hi = r.end.min(3_000_000) as usize;
            assert_eq!(m.as_ref(), &big[r.start as usize..hi], "{r:?}");
        }
        // A backend that keeps mappings between reads never gives a
        // replaced object's bytes for the new one.
        let newer: Vec<u8> = big.iter().map(|b| b ^ 0x5a).collect();
        s.put("oo-big", &newer).unwrap();
        let obj = s.open_object("oo-big", 16).unwrap().unwrap();
        let again = obj.map_ranges(&ranges).unwrap().expect("mapped as before");
        for (r, m) in ranges.iter().zip(&again) {
            let hi = r.end.min(3_000_000) as usize;
            assert_eq!(m.as_ref(), &newer[r.start as usize..hi], "{r:?}");
        }
    }
}

/// Deleting is idempotent and leaves neighbours alone.
pub fn delete<S: Store>(s: &S) {
    s.delete("never/was").unwrap();
    s.put("d/a", b"1").unwrap();
    s.put("d/b", b"2").unwrap();
    s.delete("d/a").unwrap();
    s.delete("d/a").unwrap();
    assert_eq!(get(s, "d/a"), None);
    assert_eq!(get(s, "d/b").unwrap(), b"2");
    s.delete("d/b").unwrap();
    assert!(all_keys(s).is_empty());
    assert_eq!(
        s.list_dir("").unwrap(),
        (vec![], vec![]),
        "no empty 'directory' lingers"
    );
    // The key can be written again afterwards.
    s.put("d/a", b"3").unwrap();
    assert_eq!(get(s, "d/a").unwrap(), b"3");
}

/// Directory prefixes remove a subtree; other prefixes match as strings.
pub fn delete_prefix<S: Store>(s: &S) {
    for k in [
        "x/1", "x/y/2", "x/y/.z", "xa/3", "x0", "q/c_0", "q/c_1", "q/d_0",
    ] {
        s.put(k, k.as_bytes()).unwrap();
    }
    s.delete_prefix("x/").unwrap();
    assert_eq!(all_keys(s), vec!["q/c_0", "q/c_1", "q/d_0", "x0", "xa/3"]);
    s.delete_prefix("q/c_").unwrap();
    assert_eq!(all_keys(s), vec!["q/d_0", "x0", "xa/3"]);
    s.delete_prefix("nothing/").unwrap();
    s.delete_prefix("x").unwrap();
    assert_eq!(all_keys(s), vec!["q/d_0"]);
    assert_eq!(s.list_dir("").unwrap(), (vec![], vec!["q/".to_string()]));
    s.delete_prefix("").unwrap();
    assert!(all_keys(s).is_empty());
}

/// Recursive listing: full keys, sorted bytewise, dot-files included.
pub fn list_prefix<S: Store>(s: &S) {
    assert!(all_keys(s).is_empty());
    let keys = [
        "db/1234/.group.json",
        "db/1234/d/abc/.dataset.json",
        "db/1234/d/abc/0_0",
        "db/1234/d/abc/0_1",
        "db/1234/d/abd/.dataset.json",
        "db/1234/g/x/.group.json",
        "home/.domain.json",
        "home/f.h5/.domain.json",
        "top",
    ];
    for k in keys.iter().rev() {
        s.put(k, b"{}").unwrap();
    }
    assert_eq!(all_keys(s), keys);
    assert_eq!(s.list_prefix("db/1234/d/").unwrap(), keys[1..5]);
    assert_eq!(s.list_prefix("db/1234/d/ab").unwrap(), keys[1..5]);
    assert_eq!(s.list_prefix("db/1234/d/abc/0_").unwrap(), keys[2..4]);
    assert_eq!(s.list_prefix("db/1234/.").unwrap(), keys[0..1]);
    assert_eq!(s.list_prefix("db/1234/d/abc/0_1").unwrap(), keys[3..4]);
    assert_eq!(s.list_prefix("to").unwrap(), keys[8..9]);
    assert!(s.list_prefix("zzz/").unwrap().is_empty());
    assert!(s.list_prefix("top/").unwrap().is_empty());
    let mut sorted = all_keys(s);
    sorted.sort();
    assert_eq!(sorted, all_keys(s));
}

/// One level: keys and child prefixes, both full and sorted.
pub fn list_dir<S: Store>(s: &S) {
    for k in [
        "home/.domain.json",
        "home/b/.domain.json",
        "home/a/x/y",
        "home/z",
        "other/q",
        "root",
    ] {
        s.put(k, b"").unwrap();
    }
    let strs = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        s.list_dir("").unwrap(),
        (strs(&["root"]), strs(&["home/", "other/"]))
    );
    assert_eq!(
        s.list_dir("home/").unwrap(),
        (
            strs(&["home/.domain.json", "home/z"]),
            strs(&["home/a/", "home/b/"])
        )
    );
    assert_eq!(
        s.list_dir("home/a/").unwrap(),
        (vec![], strs(&["home/a/x/"]))
    );
    assert_eq!(s.list_dir("missing/").unwrap(), (vec![], vec![]));
    assert!(
        s.list_dir("home").is_err(),
        "list_dir needs a '/'-terminated prefix"
    );
}

/// Sizes come with the keys a recursive listing gives.
pub fn list_sizes<S: Store>(s: &S) {
    s.put("ls/a", b"").unwrap();
    s.put("ls/b/c", b"12345").unwrap();
    s.put("ls/bc", &[7; 3000]).unwrap();
    s.put("other", b"x").unwrap();
    let want = |v: &[(&str, u64)]| {
        v.iter()
            .map(|(k, n)| (k.to_string(), *n))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        s.list_sizes("ls/").unwrap(),
        want(&[("ls/a", 0), ("ls/b/c", 5), ("ls/bc", 3000)])
    );
    assert_eq!(
        s.list_sizes("ls/b").unwrap(),
        want(&[("ls/b/c", 5), ("ls/bc", 3000)])
    );
    assert_eq!(s.list_sizes("").unwrap().len(), 4);
    assert!(s.list_sizes("none/").unwrap().is_empty());
}

/// Keys that could escape the root or are ambiguous are refused by every
/// call, and nothing is written.
pub fn invalid_keys<S: Store>(s: &S) {
    let bad = [
        "",
        "/abs",
        "../x",
        "a/../../x",
        "a//b",
        "a/./b",
        "trailing/",
        ".",
        "..",
        "a/\0",
    ];
    let v = s.put("ok", b"x").unwrap();
    for k in bad {
        let is_invalid = |r: crate::Result<()>| matches!(r, Err(StoreError::InvalidKey { .. }));
        assert!(is_invalid(s.get(k).map(|_| ())), "get {k:?}");
        assert!(
            is_invalid(s.put_fresh(k, b"evil").map(|_| ())),
            "put_fresh {k:?}"
        );
        assert!(
            is_invalid(s.get_versioned(k).map(|_| ())),
            "get_versioned {k:?}"
        );
        assert!(
            is_invalid(s.get_range(k, 0, 1).map(|_| ())),
            "get_range {k:?}"
        );
        assert!(is_invalid(s.exists(k).map(|_| ())), "exists {k:?}");
        assert!(is_invalid(s.put(k, b"evil").map(|_| ())), "put {k:?}");
        assert!(
            is_invalid(s.put_if_absent(k, b"evil").map(|_| ())),
            "put_if_absent {k:?}"
        );
        assert!(
            is_invalid(s.put_if_version(k, b"evil", &v).map(|_| ())),
            "put_if_version {k:?}"
        );
        assert!(is_invalid(s.delete(k)), "delete {k:?}");
    }
    for p in ["/", "/abs/", "../", "a//", "a/../"] {
        assert!(s.list_prefix(p).is_err(), "list_prefix {p:?}");
        assert!(s.list_dir(p).is_err(), "list_dir {p:?}");
        assert!(s.delete_prefix(p).is_err(), "delete_prefix {p:?}");
    }
    assert_eq!(all_keys(s), vec!["ok"]);
    assert_eq!(get(s, "ok").unwrap(), b"x");
}

/// Racing read-modify-write cycles with `put_if_version` lose no update.
pub fn concurrent_increments<S: Store>(s: &S) {
    const THREADS: usize = 8;
    const ROUNDS: usize = 50;
    s.put("counter", b"0").unwrap();
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                for _ in 0..ROUNDS {
                    increment(s, "counter");
                }
            });
        }
    });
    assert_eq!(
        get(s, "counter").unwrap(),
        (THREADS * ROUNDS).to_string().as_bytes()
    );
    assert_eq!(
        all_keys(s),
        vec!["counter"],
        "no temp or lock files visible"
    );
}

/// One optimistic increment of a decimal counter; retries until it wins.
/// Public so multi-process tests can drive the same loop.
///
/// # Panics
/// On store errors or a non-numeric value.
pub fn increment<S: Store + ?Sized>(s: &S, key: &str) {
    loop {
        let cur = s.get_versioned(key).unwrap().expect("counter exists");
        let n: u64 = std::str::from_utf8(&cur.data).unwrap().parse().unwrap();
        match s
            .put_if_version(key, (n + 1).to_string().as_bytes(), &cur.version)
            .unwrap()
        {
            PutOutcome::Written(_) => return,
            PutOutcome::Conflict => std::thread::yield_now(),
        }
    }
}

/// `patch` edits an object in place (or, where a backend cannot, declines
/// and changes nothing); it never creates, resizes or reaches past an object.
pub fn patch<S: Store>(s: &S) {
    s.put("p/obj", b"0123456789").unwrap();
    let before = s.version("p/obj").unwrap().unwrap();
    let edits: [(u64, &[u8]); 2] = [(1, b"ab"), (8, b"yz")];
    match s.patch("p/obj", 10, &edits).unwrap() {
        Some(v) => {
            assert_eq!(get(s, "p/obj").unwrap(), b"0ab34567yz");
            assert_eq!(s.version("p/obj").unwrap(), Some(v.clone()));
            assert_ne!(v, before, "a patch is a new version");
            // A read-modify-write based on the old version must now lose.
            let outcome = s.put_if_version("p/obj", b"stale", &before).unwrap();
            assert_eq!(outcome, PutOutcome::Conflict);
        }
        None => {
            assert_eq!(get(s, "p/obj").unwrap(), b"0123456789");
            assert_eq!(s.version("p/obj").unwrap(), Some(before));
        }
    }
    let now = get(s, "p/obj").unwrap();
    // Absent key, or an object of another length: declined, nothing written.
    assert_eq!(s.patch("p/none", 10, &edits).unwrap(), None);
    assert_eq!(get(s, "p/none"), None);
    assert_eq!(s.patch("p/obj", 11, &edits).unwrap(), None);
    // An edit beyond the object is refused.
    let far: [(u64, &[u8]); 2] = [(0, b"x"), (9, b"xy")];
    assert!(matches!(
        s.patch("p/obj", 10, &far),
        Err(StoreError::InvalidPatch { .. })
    ));
    assert!(matches!(
        s.patch("p/obj", 10, &[(u64::MAX, b"x".as_slice())]),
        Err(StoreError::InvalidPatch { .. })
    ));
    assert_eq!(get(s, "p/obj").unwrap(), now);
    assert_eq!(
        all_keys(s),
        vec!["p/obj"],
        "no journal or temp file visible"
    );
}

/// Patches racing each other and read-modify-write cycles on one object
/// lose no update: each thread owns one 8-byte slot and counts it up, half
/// of them by `patch` (falling back to a conditional put where a backend
/// declines), half by `put_if_version` of the whole object.
pub fn concurrent_patches<S: Store>(s: &S) {
    const THREADS: usize = 8;
    const ROUNDS: u64 = 40;
    s.put("slots", &[0u8; THREADS * 8]).unwrap();
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            scope.spawn(move || {
                let at = t * 8;
                for n in 1..=ROUNDS {
                    let bytes = n.to_le_bytes();
                    if t % 2 == 0
                        && s.patch("slots", (THREADS * 8) as u64, &[(at as u64, &bytes)])
                            .unwrap()
                            .is_some()
                    {
                        continue;
                    }
                    loop {
                        let cur = s.get_versioned("slots").unwrap().unwrap();
                        let mut data = cur.data.to_vec();
                        data[at..at + 8].copy_from_slice(&bytes);
                        if let PutOutcome::Written(_) =
                            s.put_if_version("slots", &data, &cur.version).unwrap()
                        {
                            break;
                        }
                        std::thread::yield_now();
                    }
                }
            });
        }
    });
    let data = get(s, "slots").unwrap();
    for t in 0..THREADS {
        let n = u64::from_le_bytes(data[t * 8..t * 8 + 8].try_into().unwrap());
        assert_eq!(n, ROUNDS, "slot {t} lost updates");
    }
}

/// Exactly one of several racing creators wins.
pub fn concurrent_put_if_absent<S: Store>(s: &S) {
    const THREADS: usize = 8;
    for round in 0..5 {
        let key = format!("race/{round}");
        let barrier = std::sync::Barrier::new(THREADS);
        let outcomes: Vec<(usize, PutOutcome)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (key, barrier) = (&key, &barrier);
                    scope.spawn(move || {
                        barrier.wait();
                        (
                            t,
                            s.put_if_absent(key, format!("writer {t}").as_bytes())
                                .unwrap(),
                        )
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let winners: Vec<usize> = outcomes
            .iter()
            .filter(|(_, o)| matches!(o, PutOutcome::Written(_)))
            .map(|(t, _)| *t)
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
        assert_eq!(
            get(s, &key).unwrap(),
            format!("writer {}", winners[0]).as_bytes()
        );
    }
    assert_eq!(all_keys(s).len(), 5);
}

/// Writers and deleters sharing "directories" never see spurious errors, even
/// where a backend creates and prunes real directories underneath them.
pub fn concurrent_churn<S: Store>(s: &S) {
    const THREADS: usize = 6;
    const ROUNDS: usize = 60;
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            scope.spawn(move || {
                let mine = format!("churn/a/b/{t}");
                for i in 0..ROUNDS {
                    s.put(&mine, format!("{i}").as_bytes()).unwrap();
                    assert_eq!(get(s, &mine).unwrap(), format!("{i}").as_bytes());
                    match i % 3 {
                        0 => s.delete(&mine).unwrap(),
                        1 => s.delete_prefix(&format!("{mine}/")).unwrap(),
                        _ => {
                            let created = s
                                .put_if_absent(&format!("churn/a/c/{t}-{i}"), b"x")
                                .unwrap();
                            assert!(matches!(created, PutOutcome::Written(_)));
                            s.delete(&format!("churn/a/c/{t}-{i}")).unwrap();
                        }
                    }
                }
                s.delete(&mine).unwrap();
            });
        }
    });
    assert!(all_keys(s).is_empty(), "{:?}", all_keys(s));
    assert_eq!(s.list_dir("").unwrap(), (vec![], vec![]));
}
