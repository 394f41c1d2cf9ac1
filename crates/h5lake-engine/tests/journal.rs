//! Deferred metadata (`Durability::AtFlush`): changes are seen by their own
//! domain at once, by the store only after `flush`, and merged with other
//! writers' changes without losing any.

mod common;

use std::sync::Arc;

use common::TestStore;
use h5lake_engine::{Domain, DomainOptions, Durability, EngineError, OpenMode, Selection};
use h5lake_store::ReadableStore;
use serde_json::json;

fn deferred(path: &std::path::Path, mode: OpenMode) -> Domain {
    let opts = DomainOptions {
        durability: Durability::AtFlush,
        ..DomainOptions::default()
    };
    Domain::open_local_with(path, mode, &opts).unwrap()
}

/// Whether the store on disk holds the object's document (what another
/// process sees; a handle of this process would commit the pending
/// changes when it opens).
fn on_disk(path: &std::path::Path, id: &str) -> bool {
    path.join(h5lake_engine::ids::doc_key(id).unwrap()).exists()
}

/// The link names of a group as the store on disk has them.
fn links_on_disk(path: &std::path::Path, g: &str) -> Vec<String> {
    let text = std::fs::read(path.join(h5lake_engine::ids::doc_key(g).unwrap())).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&text).unwrap();
    doc["links"].as_object().unwrap().keys().cloned().collect()
}

/// A handle that reads the store itself, committing what this process has
/// pending on it first.
fn direct(path: &std::path::Path) -> Domain {
    Domain::open_local(path, OpenMode::ReadWrite).unwrap()
}

/// A new store in a temporary directory, open with deferred metadata, and
/// its root group's id.
fn fresh() -> (tempfile::TempDir, std::path::PathBuf, Domain, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.h5l");
    let dom = deferred(&p, OpenMode::Truncate);
    let root = dom.root_id().to_string();
    (dir, p, dom, root)
}

/// A store written with durable writes, holding a group linked as "old";
/// its root group's id and the group's.
fn stored_with_a_group() -> (tempfile::TempDir, std::path::PathBuf, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.h5l");
    let setup = Domain::open_local(&p, OpenMode::Truncate).unwrap();
    let root = setup.root_id().to_string();
    let old = setup.create_group(json!({})).unwrap();
    setup.link_create(&root, "old", hard(&old)).unwrap();
    (dir, p, root, old)
}

/// A new 1-D chunked dataset of `n` elements of `dtype` in chunks of `chunk`.
fn chunked(dom: &Domain, dtype: serde_json::Value, n: u64, chunk: u64) -> String {
    dom.create_dataset(
        dtype,
        json!({"class": "H5S_SIMPLE", "dims": [n]}),
        json!({"layout": {"class": "H5D_CHUNKED", "dims": [chunk]}}),
    )
    .unwrap()
}

/// The directory holding an object's document and chunks.
fn object_dir(p: &std::path::Path, id: &str) -> std::path::PathBuf {
    p.join(h5lake_engine::ids::doc_key(id).unwrap())
        .parent()
        .unwrap()
        .to_path_buf()
}

fn hard(id: &str) -> serde_json::Value {
    json!({"class": "H5L_TYPE_HARD", "id": id})
}

fn names(dom: &Domain, g: &str) -> Vec<String> {
    dom.link_names(g).unwrap()
}

#[test]
fn pending_changes_are_seen_here_and_reach_the_store_at_flush() {
    let (_dir, p, dom, root) = fresh();
    let g = dom.create_group(json!({})).unwrap();
    dom.link_create(&root, "g", hard(&g)).unwrap();
    let d = chunked(
        &dom,
        json!({"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}),
        4,
        4,
    );
    dom.link_create(&g, "d", hard(&d)).unwrap();
    let data: Vec<u8> = [1i32, 2, 3, 4]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    dom.write(&d, &Selection::all(&[4]), &data).unwrap();
    dom.attr_create(&g, "a", json!({"type": {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}, "shape": {"class": "H5S_SCALAR"}, "value": 7}), false)
        .unwrap();

    // Seen here at once, data included.
    let mut out = vec![0u8; 16];
    dom.read(&d, &Selection::all(&[4]), &mut out).unwrap();
    assert_eq!(out, data);
    assert_eq!(dom.attr_get(&g, "a").unwrap()["value"], 7);

    // Not in the store yet; no chunk or document file written.
    assert!(links_on_disk(&p, &root).is_empty());
    assert!(!on_disk(&p, &g) && !on_disk(&p, &d));

    dom.flush().unwrap();
    assert_eq!(links_on_disk(&p, &root), ["g"]);
    let other = direct(&p);
    assert_eq!(names(&other, &root), ["g"]);
    assert_eq!(names(&other, &g), ["d"]);
    let mut out = vec![0u8; 16];
    other.read(&d, &Selection::all(&[4]), &mut out).unwrap();
    assert_eq!(out, data);
    assert_eq!(other.attr_get(&g, "a").unwrap()["value"], 7);
}

#[test]
fn a_commit_merges_with_another_writers_changes() {
    let (_dir, p, root, old) = stored_with_a_group();
    Domain::open_local(&p, OpenMode::ReadWrite)
        .unwrap()
        .link_create(&root, "keep", hard(&old))
        .unwrap();

    let dom = deferred(&p, OpenMode::ReadWrite);
    let other = direct(&p);
    for i in 0..20 {
        let g = dom.create_group(json!({})).unwrap();
        dom.link_create(&root, &format!("mine{i}"), hard(&g))
            .unwrap();
        let h = other.create_group(json!({})).unwrap();
        other
            .link_create(&root, &format!("theirs{i}"), hard(&h))
            .unwrap();
    }
    dom.link_delete(&root, "old").unwrap();
    other.attr_create(&root, "t", json!({"type": {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}, "shape": {"class": "H5S_SCALAR"}, "value": 1}), false).unwrap();
    // The same new name on both sides: theirs stays, and the flush says so.
    let mine = dom.create_group(json!({})).unwrap();
    dom.link_create(&root, "both", hard(&mine)).unwrap();
    other
        .link_create(
            &root,
            "both",
            json!({"class": "H5L_TYPE_SOFT", "h5path": "/keep"}),
        )
        .unwrap();
    // A new group on both sides is one group: ours goes into theirs.
    let (ours_g, ours_c) = (
        dom.create_group(json!({})).unwrap(),
        dom.create_group(json!({})).unwrap(),
    );
    dom.link_create(&root, "shared", hard(&ours_g)).unwrap();
    dom.link_create(&ours_g, "c1", hard(&ours_c)).unwrap();
    let (theirs_g, theirs_c) = (
        other.create_group(json!({})).unwrap(),
        other.create_group(json!({})).unwrap(),
    );
    other.link_create(&root, "shared", hard(&theirs_g)).unwrap();
    other.link_create(&theirs_g, "c2", hard(&theirs_c)).unwrap();

    let err = dom.flush().unwrap_err();
    assert!(matches!(err, EngineError::AlreadyExists(_)), "{err}");
    assert!(err.to_string().contains("\"both\""), "{err}");
    assert!(!err.to_string().contains("\"shared\""), "{err}");

    let seen = direct(&p);
    let all = names(&seen, &root);
    assert_eq!(all.len(), 1 + 40 + 2, "{all:?}");
    assert!(!all.contains(&"old".to_string()));
    for i in 0..20 {
        assert!(all.contains(&format!("mine{i}")) && all.contains(&format!("theirs{i}")));
    }
    assert_eq!(seen.link_get(&root, "both").unwrap()["h5path"], "/keep");
    assert_eq!(
        seen.link_get(&root, "shared").unwrap()["id"],
        theirs_g.as_str()
    );
    let mut merged = names(&seen, &theirs_g);
    merged.sort();
    assert_eq!(merged, ["c1", "c2"]);
    assert_eq!(
        seen.link_get(&theirs_g, "c1").unwrap()["id"],
        ours_c.as_str()
    );
    assert_eq!(seen.attr_get(&root, "t").unwrap()["value"], 1);
    // Nothing is left pending after the report.
    dom.flush().unwrap();
}

#[test]
fn groups_linking_each_other_are_whole_after_the_commit() {
    let (_dir, p, dom, root) = fresh();
    let a = dom.create_group(json!({})).unwrap();
    let b = dom.create_group(json!({})).unwrap();
    dom.link_create(&root, "a", hard(&a)).unwrap();
    dom.link_create(&a, "b", hard(&b)).unwrap();
    dom.link_create(&b, "back", hard(&a)).unwrap();
    dom.flush().unwrap();
    let seen = direct(&p);
    assert_eq!(names(&seen, &a), ["b"]);
    assert_eq!(names(&seen, &b), ["back"]);
}

#[test]
fn deleting_objects_is_deferred_and_a_new_object_deleted_leaves_no_trace() {
    let (_dir, p, root, old) = stored_with_a_group();

    let dom = deferred(&p, OpenMode::ReadWrite);
    let fresh = dom.create_group(json!({})).unwrap();
    dom.delete_object(&fresh).unwrap();
    dom.link_delete(&root, "old").unwrap();
    dom.delete_object(&old).unwrap();
    assert!(matches!(dom.get_doc(&old), Err(EngineError::NotFound(_))));
    assert!(on_disk(&p, &old));
    dom.flush().unwrap();
    assert!(!on_disk(&p, &old));
    let seen = direct(&p);
    assert!(matches!(seen.get_doc(&old), Err(EngineError::NotFound(_))));
    assert!(matches!(
        seen.get_doc(&fresh),
        Err(EngineError::NotFound(_))
    ));
    assert!(names(&seen, &root).is_empty());
}

#[test]
fn handles_in_one_process_share_pending_changes_and_drop_commits() {
    let (_dir, p, dom, root) = fresh();
    let g = dom.create_group(json!({})).unwrap();
    dom.link_create(&root, "g", hard(&g)).unwrap();
    let reader = deferred(&p, OpenMode::Read);
    assert_eq!(names(&reader, &root), ["g"]);
    drop(reader);
    assert!(links_on_disk(&p, &root).is_empty());
    drop(dom);
    assert_eq!(links_on_disk(&p, &root), ["g"]);
}

#[test]
fn a_failed_edit_changes_nothing() {
    let (_dir, _p, dom, root) = fresh();
    let g = dom.create_group(json!({})).unwrap();
    dom.link_create(&root, "x", hard(&g)).unwrap();
    let batch = vec![("y".to_string(), hard(&g)), ("x".to_string(), hard(&g))];
    assert!(dom.links_create(&root, batch, false).is_err());
    assert!(dom
        .links_delete(&root, &["x".to_string(), "nope".to_string()])
        .is_err());
    assert_eq!(names(&dom, &root), ["x"]);
}

#[test]
fn statistics_of_chunks_written_at_the_commit_stay_trusted() {
    let (_dir, p, dom, _) = fresh();
    let d = chunked(
        &dom,
        json!({"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}),
        8,
        4,
    );
    let data: Vec<u8> = (0..8).flat_map(|x| f64::from(x).to_le_bytes()).collect();
    dom.write(&d, &Selection::all(&[8]), &data).unwrap();
    dom.flush().unwrap();
    // The two records went into the dataset's document, not one object each.
    let prefix = object_dir(&p, &d);
    assert!(!prefix.join(".h5lake").exists());
    let (_, agg) = direct(&p).aggregate(&d, None).unwrap();
    assert_eq!((agg.chunks_from_stats, agg.chunks_read), (2, 0));
    assert_eq!(agg.leaves[0].count, 8);
    assert_eq!(agg.leaves[0].max.map(|n| n.as_f64()), Some(7.0));

    // A chunk changed behind h5lake's back (as HSDS would write it): its
    // record in the document no longer matches and is not trusted.
    let changed: Vec<u8> = [0.0f64, 1.0, 2.0, 100.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    std::fs::write(prefix.join("0"), changed).unwrap();
    let (_, agg) = direct(&p).aggregate(&d, None).unwrap();
    assert_eq!((agg.chunks_from_stats, agg.chunks_read), (1, 1));
    assert_eq!(agg.leaves[0].max.map(|n| n.as_f64()), Some(100.0));
}

#[test]
fn statistics_of_many_new_chunks_spill_from_the_document_to_objects() {
    let (_dir, p, dom, _) = fresh();
    let d = chunked(
        &dom,
        json!({"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}),
        256,
        2,
    );
    let data: Vec<u8> = (0..256i64).flat_map(|x| x.to_le_bytes()).collect();
    dom.write(&d, &Selection::all(&[256]), &data).unwrap();
    dom.flush().unwrap();
    let prefix = object_dir(&p, &d);
    let objects = std::fs::read_dir(prefix.join(".h5lake/stats"))
        .unwrap()
        .count();
    let doc: serde_json::Value = serde_json::from_slice(
        &std::fs::read(p.join(h5lake_engine::ids::doc_key(&d).unwrap())).unwrap(),
    )
    .unwrap();
    let in_doc = doc["h5lake"]["chunk_stats"].as_object().unwrap().len();
    assert!(
        in_doc > 0 && objects > 0,
        "{in_doc} in the document, {objects} objects"
    );
    assert_eq!(in_doc + objects, 128);
    let (_, agg) = direct(&p).aggregate(&d, None).unwrap();
    assert_eq!((agg.chunks_from_stats, agg.chunks_read), (128, 0));
    assert_eq!(agg.leaves[0].sum.as_f64(), 255.0 * 128.0);
}

#[test]
fn records_of_many_chunks_are_read_from_their_summaries_while_they_match() {
    let (_dir, p, dom, _) = fresh();
    // 600 chunks: their records spill to objects, across three summaries.
    let d = chunked(
        &dom,
        json!({"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}),
        1200,
        2,
    );
    let data: Vec<u8> = (0..1200i64).flat_map(|x| x.to_le_bytes()).collect();
    dom.write(&d, &Selection::all(&[1200]), &data).unwrap();
    dom.flush().unwrap();
    let prefix = object_dir(&p, &d);
    let mut shards: Vec<String> = std::fs::read_dir(prefix.join(".h5lake/summary"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    shards.sort();
    assert_eq!(shards, ["0", "1", "2"]);
    // With the record objects gone, the summaries alone answer.
    std::fs::remove_dir_all(prefix.join(".h5lake/stats")).unwrap();
    let (_, agg) = direct(&p).aggregate(&d, None).unwrap();
    assert_eq!((agg.chunks_from_stats, agg.chunks_read), (600, 0));
    assert_eq!(agg.leaves[0].sum.as_f64(), 1199.0 * 600.0);

    // A chunk changed behind h5lake's back: its summarised record no longer
    // names the chunk's version, so the chunk is read.
    let changed: Vec<u8> = [0i64, 5000].iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(prefix.join("300"), changed).unwrap();
    let (_, agg) = direct(&p).aggregate(&d, None).unwrap();
    assert_eq!((agg.chunks_from_stats, agg.chunks_read), (599, 1));
    assert_eq!(agg.leaves[0].max.map(|n| n.as_f64()), Some(5000.0));

    // A later write of existing chunks: the next commit brings the summary
    // up to date, so again no chunk needs reading.
    let later: Vec<u8> = [-7i64, -8].iter().flat_map(|x| x.to_le_bytes()).collect();
    dom.write(&d, &Selection::from_slices(&[(600, 2, 1)]), &later)
        .unwrap();
    dom.flush().unwrap();
    std::fs::remove_dir_all(prefix.join(".h5lake/stats")).unwrap();
    let (_, agg) = direct(&p).aggregate(&d, None).unwrap();
    assert_eq!((agg.chunks_from_stats, agg.chunks_read), (600, 0));
    assert_eq!(agg.leaves[0].min.map(|n| n.as_f64()), Some(-8.0));
}

#[test]
fn a_new_group_unlinked_before_the_commit_is_not_written() {
    let (_dir, p, dom, root) = fresh();
    let kept = dom.create_group(json!({})).unwrap();
    let gone = dom.create_group(json!({})).unwrap();
    dom.link_create(&root, "kept", hard(&kept)).unwrap();
    dom.link_create(&root, "gone", hard(&gone)).unwrap();
    dom.link_create(&root, "moved", hard(&kept)).unwrap();
    dom.link_delete(&root, "kept").unwrap();
    dom.link_delete(&root, "gone").unwrap();
    dom.flush().unwrap();
    let seen = direct(&p);
    assert!(seen.get_doc(&kept).is_ok());
    assert!(matches!(seen.get_doc(&gone), Err(EngineError::NotFound(_))));
}

#[test]
fn a_handle_that_reads_the_store_itself_sees_what_this_process_has_pending() {
    let (_dir, p, dom, root) = fresh();
    let g = dom.create_group(json!({})).unwrap();
    dom.link_create(&root, "g", hard(&g)).unwrap();
    assert_eq!(names(&direct(&p), &root), ["g"]);
}

#[test]
fn an_edit_of_unknown_extent_after_member_edits_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.h5l");
    let setup = Domain::open_local(&p, OpenMode::Truncate).unwrap();
    let root = setup.root_id().to_string();
    drop(setup);
    let dom = deferred(&p, OpenMode::ReadWrite);
    let other = Domain::open_local(&p, OpenMode::ReadWrite).unwrap();
    let g = dom.create_group(json!({})).unwrap();
    dom.link_create(&root, "mine", hard(&g)).unwrap();
    // Another writer changes the same document meanwhile.
    let h = other.create_group(json!({})).unwrap();
    other.link_create(&root, "theirs", hard(&h)).unwrap();
    // A change the journal cannot name the extent of.
    dom.update_doc(&root, |doc| {
        doc["note"] = json!("x");
        Ok(())
    })
    .unwrap();
    dom.link_create(&root, "later", hard(&g)).unwrap();
    dom.flush().unwrap();
    let mut got = links_on_disk(&p, &root);
    got.sort();
    assert_eq!(got, ["later", "mine", "theirs"]);
    let text = std::fs::read(p.join(h5lake_engine::ids::doc_key(&root).unwrap())).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&text).unwrap();
    assert_eq!(doc["note"], "x");
}

#[test]
fn a_failed_edit_does_not_count_as_a_change_at_the_merge() {
    let (_dir, p, root, old) = stored_with_a_group();
    let dom = deferred(&p, OpenMode::ReadWrite);
    let other = Domain::open_local(&p, OpenMode::ReadWrite).unwrap();
    let g = dom.create_group(json!({})).unwrap();
    dom.link_create(&root, "mine", hard(&g)).unwrap();
    // Refused here ("old" exists): nothing of this attempt may reach the store.
    assert!(dom.link_create(&root, "old", hard(&g)).is_err());
    // Meanwhile another writer removes "old".
    other.link_delete(&root, "old").unwrap();
    dom.flush().unwrap();
    assert_eq!(links_on_disk(&p, &root), ["mine"]);
    assert!(on_disk(&p, &old));
}

/// `n` new one-chunk datasets of 4 int32 each, linked from the root as
/// `d0`, `d1`, …, holding `i`, `i+1`, `i+2`, `i+3`; their ids.
fn many_small_datasets(dom: &Domain, root: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let d = chunked(
                dom,
                json!({"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}),
                4,
                4,
            );
            dom.link_create(root, &format!("d{i}"), hard(&d)).unwrap();
            dom.write(&d, &Selection::all(&[4]), &ints(i as i32))
                .unwrap();
            d
        })
        .collect()
}

fn ints(first: i32) -> Vec<u8> {
    (first..first + 4).flat_map(|x| x.to_le_bytes()).collect()
}

fn read4(dom: &Domain, id: &str) -> Vec<u8> {
    let mut out = vec![0u8; 16];
    dom.read(id, &Selection::all(&[4]), &mut out).unwrap();
    out
}

fn chunk_on_disk(p: &std::path::Path, id: &str) -> bool {
    object_dir(p, id).join("0").exists()
}

#[test]
fn chunks_of_new_datasets_reach_the_store_early_and_nothing_else_does() {
    let (_dir, p, dom, root) = fresh();
    let ids = many_small_datasets(&dom, &root, 300);
    // The early batches run on their own thread: wait for some chunks.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while ids.iter().filter(|d| chunk_on_disk(&p, d)).count() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "no chunk was written early"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // Nothing links to them: no document is there yet.
    assert!(ids.iter().all(|d| !on_disk(&p, d)));
    assert!(links_on_disk(&p, &root).is_empty());
    // Reads see every chunk, sent or not.
    for (i, d) in ids.iter().enumerate() {
        assert_eq!(read4(&dom, d), ints(i as i32));
    }
    // Rewritten and deleted after being sent: the store ends as the domain says.
    let sent: Vec<usize> = (0..ids.len())
        .filter(|&i| chunk_on_disk(&p, &ids[i]))
        .collect();
    let (rewritten, removed) = (sent[0], sent[sent.len() - 1]);
    assert_ne!(rewritten, removed);
    dom.write(&ids[rewritten], &Selection::all(&[4]), &ints(-100))
        .unwrap();
    dom.link_delete(&root, &format!("d{removed}")).unwrap();
    dom.flush().unwrap();
    let seen = direct(&p);
    for (i, d) in ids.iter().enumerate() {
        if i == removed {
            assert!(
                !chunk_on_disk(&p, d),
                "the chunk of a dataset deleted before the commit stays"
            );
            continue;
        }
        let want = if i == rewritten {
            ints(-100)
        } else {
            ints(i as i32)
        };
        assert_eq!(read4(&seen, d), want, "d{i}");
        // The statistics records name the chunks' versions in the store.
        let (_, agg) = seen.aggregate(d, None).unwrap();
        assert_eq!((agg.chunks_from_stats, agg.chunks_read), (1, 0), "d{i}");
    }
    assert_eq!(links_on_disk(&p, &root).len(), ids.len() - 1);
}

#[test]
fn chunks_rewritten_while_early_batches_run_keep_the_last_write() {
    let (_dir, p, dom, root) = fresh();
    let ids = many_small_datasets(&dom, &root, 200);
    for round in 1..4 {
        for (i, d) in ids.iter().enumerate() {
            dom.write(d, &Selection::all(&[4]), &ints(1000 * round + i as i32))
                .unwrap();
        }
    }
    dom.flush().unwrap();
    let seen = direct(&p);
    for (i, d) in ids.iter().enumerate() {
        assert_eq!(read4(&seen, d), ints(3000 + i as i32), "d{i}");
        let (_, agg) = seen.aggregate(d, None).unwrap();
        assert_eq!(
            agg.leaves[0].min.map(|n| n.as_f64()),
            Some(f64::from(3000 + i as i32))
        );
    }
}

#[test]
fn a_chunk_outgrowing_the_journal_while_its_early_batch_runs_keeps_the_last_write() {
    // Unpublished writes are slow, so the program's own writes meet a
    // batch in flight.
    let store: std::sync::Arc<dyn h5lake_store::Store> =
        std::sync::Arc::new(TestStore::slow_fresh(std::time::Duration::from_millis(2)));
    let opts = DomainOptions {
        durability: Durability::AtFlush,
        ..DomainOptions::default()
    };
    let dom =
        Domain::open_with(store.clone(), "", OpenMode::Truncate, "slow".into(), &opts).unwrap();
    let root = dom.root_id().to_string();
    // Zeros compress to a few hundred bytes (kept, then sent early); the
    // noise written next does not compress and goes to the store at once.
    let n: u64 = 100_000;
    let ids: Vec<String> = (0..64)
        .map(|i| {
            let d = dom
                .create_dataset(
                    json!({"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}),
                    json!({"class": "H5S_SIMPLE", "dims": [n]}),
                    json!({"layout": {"class": "H5D_CHUNKED", "dims": [n]},
                           "filters": [{"class": "H5Z_FILTER_DEFLATE", "id": 1, "level": 1}]}),
                )
                .unwrap();
            dom.link_create(&root, &format!("d{i}"), hard(&d)).unwrap();
            dom.write(&d, &Selection::all(&[n]), &vec![0u8; n as usize * 4])
                .unwrap();
            d
        })
        .collect();
    let noise = |i: usize| -> Vec<u8> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ i as u64;
        (0..n)
            .flat_map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x as u32).to_le_bytes()
            })
            .collect()
    };
    for (i, d) in ids.iter().enumerate().rev() {
        dom.write(d, &Selection::all(&[n]), &noise(i)).unwrap();
    }
    dom.flush().unwrap();
    let seen = Domain::open(store, "", OpenMode::Read, "slow".into()).unwrap();
    for (i, d) in ids.iter().enumerate() {
        let mut out = vec![0u8; n as usize * 4];
        seen.read(d, &Selection::all(&[n]), &mut out).unwrap();
        assert!(out == noise(i), "d{i} lost its last write");
    }
}

#[test]
fn a_chunk_that_could_not_be_written_early_fails_the_flush_by_name() {
    let store: std::sync::Arc<dyn h5lake_store::Store> =
        std::sync::Arc::new(TestStore::failing_fresh());
    let opts = DomainOptions {
        durability: Durability::AtFlush,
        ..DomainOptions::default()
    };
    let dom = Domain::open_with(store, "", OpenMode::Truncate, "failing".into(), &opts).unwrap();
    let root = dom.root_id().to_string();
    // Enough chunks for early batches; every write of theirs fails.
    many_small_datasets(&dom, &root, 200);
    let err = dom
        .flush()
        .expect_err("a chunk that never reached the store");
    assert!(err.to_string().contains("no space left (test)"), "{err}");
    // Still pending, and still readable here.
    assert_eq!(names(&dom, &root).len(), 200);
}

/// A store holding a 1-D table of `i32` rows (unlimited, chunks of 10) made
/// with durable writes; its root's id and the table's.
fn stored_with_a_table() -> (tempfile::TempDir, std::path::PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.h5l");
    let setup = Domain::open_local(&p, OpenMode::Truncate).unwrap();
    let root = setup.root_id().to_string();
    let t = setup
        .create_dataset(
            json!({"class": "H5T_INTEGER", "base": "H5T_STD_I32LE"}),
            json!({"class": "H5S_SIMPLE", "dims": [0], "maxdims": ["H5S_UNLIMITED"]}),
            json!({"layout": {"class": "H5D_CHUNKED", "dims": [10]}}),
        )
        .unwrap();
    setup.link_create(&root, "t", hard(&t)).unwrap();
    (dir, p, t)
}

#[test]
fn appends_of_writers_with_their_own_pending_changes_claim_distinct_rows() {
    let (dir, p, t) = stored_with_a_table();
    // The same store by another name has a journal of its own, as another
    // process would.
    let alias = dir.path().join("alias.h5l");
    std::os::unix::fs::symlink(&p, &alias).unwrap();
    let a = deferred(&p, OpenMode::ReadWrite);
    let b = deferred(&alias, OpenMode::ReadWrite);
    // Something of each writer's own pending on the table's document too.
    let attr = |v: i64| json!({"type": {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}, "shape": {"class": "H5S_SCALAR"}, "value": v});
    a.attr_create(&t, "a", attr(1), false).unwrap();
    b.attr_create(&t, "b", attr(2), false).unwrap();

    let mut starts = vec![a.extend_rows(&t, 3).unwrap(), b.extend_rows(&t, 3).unwrap()];
    starts.push(a.extend(&t, 0, 4).unwrap().0[0]);
    starts.push(b.extend(&t, 0, 4).unwrap().0[0]);
    starts.push(b.extend_rows(&t, 2).unwrap());
    assert_eq!(starts, [0, 3, 6, 10, 14]);
    // Each sees the rows it claimed at once (a write there is in the extent).
    a.write(&t, &Selection::from_slices(&[(6, 4, 1)]), &[7u8; 16])
        .unwrap();
    assert_eq!(b.dataset(&t).unwrap().dims, [16]);

    a.flush().unwrap();
    b.flush().unwrap();
    let seen = direct(&p);
    assert_eq!(seen.dataset(&t).unwrap().dims, [16]);
    assert_eq!(seen.attr_get(&t, "a").unwrap()["value"], 1);
    assert_eq!(seen.attr_get(&t, "b").unwrap()["value"], 2);
}

#[test]
fn chunks_that_reach_the_store_while_a_listing_runs_are_listed() {
    use std::time::Duration;
    // One early batch of 64 chunks (5 ms a write, about 320 ms in all)
    // lands while a listing (400 ms here, a slow S3 listing) runs: it read
    // the store before the chunks were there and merges with the journal
    // after they left it. A chunk in neither would read as missing.
    let store: std::sync::Arc<dyn h5lake_store::Store> = std::sync::Arc::new(
        TestStore::slow_fresh_and_lists(Duration::from_millis(5), Duration::from_millis(400)),
    );
    let opts = DomainOptions {
        durability: Durability::AtFlush,
        ..DomainOptions::default()
    };
    let dom = Domain::open_with(store, "", OpenMode::Truncate, "slow".into(), &opts).unwrap();
    let root = dom.root_id().to_string();
    let ids = many_small_datasets(&dom, &root, 64);
    // The last chunk of the batch is written last, long after this
    // listing read the store.
    assert_eq!(
        dom.chunk_count(&ids[63]).unwrap(),
        1,
        "a chunk that landed mid-listing"
    );
    assert_eq!(dom.chunk_count(&ids[0]).unwrap(), 1);
    dom.flush().unwrap();
}

/// A store in memory holding groups `a` (with a group linked as `x`), `b`
/// and `c`; two handles on it, the first with `durability`, the other
/// writing each change at once; and the ids of root, a, b, c, x.
fn three_groups(durability: Durability) -> (Arc<TestStore>, Domain, Domain, [String; 5]) {
    let store = Arc::new(TestStore::default());
    let open = |mode, durability| {
        let opts = DomainOptions {
            durability,
            ..DomainOptions::default()
        };
        Domain::open_with(store.clone(), "", mode, "mem".into(), &opts).unwrap()
    };
    let setup = open(OpenMode::Truncate, Durability::EachCall);
    let root = setup.root_id().to_string();
    let mut ids = vec![root.clone()];
    for name in ["a", "b", "c"] {
        let g = setup.create_group(json!({})).unwrap();
        setup.link_create(&root, name, hard(&g)).unwrap();
        ids.push(g);
    }
    let x = setup.create_group(json!({})).unwrap();
    setup.link_create(&ids[1], "x", hard(&x)).unwrap();
    ids.push(x);
    let dom = open(OpenMode::ReadWrite, durability);
    let other = open(OpenMode::ReadWrite, Durability::EachCall);
    (store, dom, other, ids.try_into().unwrap())
}

/// A handle that reads what `store` holds.
fn read_back(store: Arc<TestStore>) -> Domain {
    Domain::open_with(
        store,
        "",
        OpenMode::Read,
        "mem".into(),
        &DomainOptions::default(),
    )
    .unwrap()
}

fn doc_key_end(id: &str) -> String {
    h5lake_engine::ids::doc_key(id).unwrap()
}

#[test]
fn a_link_moved_between_groups_by_two_writers_at_once_ends_up_in_one() {
    // Before: each move was a link made in one group and one removed from
    // the other, merged alone, so the object ended up linked from both.
    for durability in [Durability::AtFlush, Durability::EachCall] {
        let (store, dom, other, [_, a, b, c, x]) = three_groups(durability);
        let (a2, c2) = (a.clone(), c.clone());
        let moved = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = moved.clone();
        // The other writer's move lands just after ours made its new link.
        store.after_put(&doc_key_end(&b), move || {
            other.link_move(&a2, "x", &c2, "x").unwrap();
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let ours = dom.link_move(&a, "x", &b, "x").and_then(|()| dom.flush());
        assert!(
            moved.load(std::sync::atomic::Ordering::SeqCst),
            "{durability:?}"
        );
        let err = ours.unwrap_err();
        assert!(
            err.to_string().contains("another writer"),
            "{durability:?}: {err}"
        );
        let seen = read_back(store.clone());
        assert!(names(&seen, &a).is_empty(), "{durability:?}");
        assert!(names(&seen, &b).is_empty(), "{durability:?}");
        assert_eq!(names(&seen, &c), ["x"], "{durability:?}");
        assert_eq!(seen.link_get(&c, "x").unwrap()["id"], x.as_str());
    }
}

#[test]
fn a_link_moved_between_groups_after_another_writer_deleted_it_is_not_made() {
    let (store, dom, other, [_, a, b, _, _]) = three_groups(Durability::AtFlush);
    dom.link_move(&a, "x", &b, "x").unwrap();
    other.link_delete(&a, "x").unwrap();
    let err = dom.flush().unwrap_err();
    assert!(err.to_string().contains("another writer"), "{err}");
    let seen = read_back(store);
    assert!(names(&seen, &a).is_empty() && names(&seen, &b).is_empty());
}

#[test]
fn a_move_between_groups_to_a_name_another_writer_made_leaves_the_link_in_place() {
    // Before: the new name was refused as made by both, and the old link
    // was removed all the same: the object was lost from the tree.
    let (store, dom, other, [_, a, b, _, x]) = three_groups(Durability::AtFlush);
    dom.link_move(&a, "x", &b, "y").unwrap();
    let theirs = other.create_group(json!({})).unwrap();
    other.link_create(&b, "y", hard(&theirs)).unwrap();
    let err = dom.flush().unwrap_err();
    assert!(err.to_string().contains("stays where it was"), "{err}");
    let seen = read_back(store);
    assert_eq!(seen.link_get(&a, "x").unwrap()["id"], x.as_str());
    assert_eq!(seen.link_get(&b, "y").unwrap()["id"], theirs.as_str());
}

#[test]
fn a_commit_makes_a_moved_link_before_it_removes_the_old_one() {
    // A crash between the two writes must leave the object linked twice,
    // not lost: when the old group is written, the new one already is.
    // (The pending documents are kept in a hash map: several rounds, so
    // that no order of it passes by chance.)
    for round in 0..10 {
        let into_new_group = round == 0;
        let (store, dom, _, [root, a, b, _, x]) = three_groups(Durability::AtFlush);
        let to = if into_new_group {
            let g = dom.create_group(json!({})).unwrap();
            dom.link_create(&root, "fresh", hard(&g)).unwrap();
            g
        } else {
            b.clone()
        };
        dom.link_move(&a, "x", &to, "x").unwrap();
        let (probe, a2, to2, x2) = (store.clone(), a.clone(), to.clone(), x.clone());
        let removed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = removed.clone();
        store.after_each_put(move |_| {
            let in_a = stored_targets(&probe, &a2).contains(&x2);
            if !in_a {
                // the old link is gone: the new one is in already
                assert!(
                    stored_targets(&probe, &to2).contains(&x2),
                    "x linked from nowhere"
                );
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        });
        dom.flush().unwrap();
        assert!(removed.load(std::sync::atomic::Ordering::SeqCst));
        assert!(names(&dom, &a).is_empty());
        assert_eq!(names(&dom, &to), ["x"]);
    }
}

#[test]
fn statistics_of_many_chunks_are_checked_against_one_listing_where_the_store_lists_versions() {
    // From an audit on S3: sum() "from statistics" asked each chunk's
    // version (a HEAD per chunk), slower than reading the whole dataset.
    let store = Arc::new(TestStore::listing_versions());
    let opts = DomainOptions::default();
    let dom =
        Domain::open_with(store.clone(), "", OpenMode::Truncate, "mem".into(), &opts).unwrap();
    let d = chunked(
        &dom,
        json!({"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}),
        256,
        4,
    );
    let data: Vec<u8> = (0..256).flat_map(|x| f64::from(x).to_le_bytes()).collect();
    dom.write(&d, &Selection::all(&[256]), &data).unwrap();
    let before = store.chunk_versions_asked();
    let listed = store.listings();
    let (_, agg) = dom.aggregate(&d, None).unwrap();
    assert_eq!(
        store.chunk_versions_asked(),
        before,
        "no version asked chunk by chunk"
    );
    assert_eq!(
        store.listings() - listed,
        1,
        "the chunks and their versions come from one listing"
    );
    assert_eq!((agg.chunks_from_stats, agg.chunks_read), (64, 0));
    assert_eq!(agg.leaves[0].max.map(|n| n.as_f64()), Some(255.0));
    // A chunk changed behind h5lake's back is still not trusted.
    let key = format!("{}0", h5lake_engine::ids::object_prefix(&d).unwrap());
    let changed: Vec<u8> = [0.0f64, 1.0, 2.0, 1000.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    h5lake_store::WritableStore::put(&*store, &key, &changed).unwrap();
    let (_, agg) = dom.aggregate(&d, None).unwrap();
    assert_eq!((agg.chunks_from_stats, agg.chunks_read), (63, 1));
    assert_eq!(agg.leaves[0].max.map(|n| n.as_f64()), Some(1000.0));
}

/// The hard link targets of a group's document as the store holds it.
fn stored_targets(store: &TestStore, group: &str) -> Vec<String> {
    let Some(text) = store.get(&doc_key_end(group)).unwrap() else {
        return Vec::new();
    };
    let doc: serde_json::Value = serde_json::from_slice(&text).unwrap();
    doc["links"]
        .as_object()
        .map(|m| {
            m.values()
                .filter_map(|l| l["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn moves_through_a_group_that_is_both_source_and_destination_never_leave_an_object_unlinked() {
    // From a review: with /a/x -> /b/x and /b/y -> /c/y in one flush, both
    // a and b were written in the hash map's order, so a's removal of x
    // could land before b's new x (a crash there lost x).
    for _round in 0..10 {
        let (store, dom, _, [_, a, b, c, x]) = three_groups(Durability::AtFlush);
        let y = dom.create_group(json!({})).unwrap();
        dom.link_create(&b, "y", hard(&y)).unwrap();
        dom.flush().unwrap();
        dom.link_move(&a, "x", &b, "x").unwrap();
        dom.link_move(&b, "y", &c, "y").unwrap();
        linked_at_every_put(&store, [&a, &b, &c], [&x, &y]);
        dom.flush().unwrap();
        let seen = read_back(store);
        assert!(names(&seen, &a).is_empty());
        assert_eq!(names(&seen, &b), ["x"]);
        assert_eq!(names(&seen, &c), ["y"]);
    }
}

#[test]
fn a_move_into_a_new_group_whose_name_another_writer_took_leaves_the_link_in_place() {
    // From a review: the new group was written but its own link refused
    // (made by both), so the object moved into it was linked from nowhere.
    let (store, dom, other, [root, a, _, _, x]) = three_groups(Durability::AtFlush);
    let fresh = dom.create_group(json!({})).unwrap();
    dom.link_create(&root, "fresh", hard(&fresh)).unwrap();
    dom.link_move(&a, "x", &fresh, "x").unwrap();
    let theirs = other.create_group(json!({})).unwrap();
    other.link_create(&root, "fresh", hard(&theirs)).unwrap();
    let err = dom.flush().unwrap_err();
    assert!(err.to_string().contains("stays where it was"), "{err}");
    let seen = read_back(store);
    assert_eq!(seen.link_get(&a, "x").unwrap()["id"], x.as_str());
    assert_eq!(
        seen.link_get(&root, "fresh").unwrap()["id"],
        theirs.as_str()
    );
}

#[test]
fn a_soft_link_deleted_and_another_made_to_the_same_path_are_not_taken_for_a_move() {
    // From a review: they were paired as a move, and another writer's
    // change of the deleted one took the new one back with an error.
    let (store, dom, other, [_, a, b, _, _]) = three_groups(Durability::AtFlush);
    let soft = json!({"class": "H5L_TYPE_SOFT", "h5path": "/t"});
    dom.link_create(&a, "s", soft.clone()).unwrap();
    dom.flush().unwrap();
    dom.link_delete(&a, "s").unwrap();
    dom.link_create(&b, "s2", soft.clone()).unwrap();
    other.link_delete(&a, "s").unwrap();
    dom.flush().unwrap();
    let seen = read_back(store);
    assert!(!names(&seen, &a).contains(&"s".to_string()));
    assert_eq!(seen.link_get(&b, "s2").unwrap()["h5path"], "/t");
}

#[test]
fn a_name_emptied_by_one_move_and_filled_by_another_keeps_both_objects_linked_at_every_write() {
    // From a crash audit: /b/x -> /c/x, then /a/x -> /b/x in one flush.
    // The second move replaced a link rather than making a new name, so
    // neither was seen as a move and a, b and c went out in any order.
    for _round in 0..10 {
        let (store, dom, _, [_, a, b, c, x]) = three_groups(Durability::AtFlush);
        // x is at a/x; y at b/x.
        let y = dom.create_group(json!({})).unwrap();
        dom.link_create(&b, "x", hard(&y)).unwrap();
        dom.flush().unwrap();
        dom.link_move(&b, "x", &c, "x").unwrap();
        dom.link_move(&a, "x", &b, "x").unwrap();
        linked_at_every_put(&store, [&a, &b, &c], [&x, &y]);
        dom.flush().unwrap();
        let seen = read_back(store);
        assert!(names(&seen, &a).is_empty());
        assert_eq!(stored_targets_of(&seen, &b), [x.clone()]);
        assert_eq!(stored_targets_of(&seen, &c), [y.clone()]);
    }
}

/// Checks after every conditional put to `store` that each of `objects`
/// is linked from one of `groups` (what a crash at that moment leaves).
fn linked_at_every_put(store: &Arc<TestStore>, groups: [&String; 3], objects: [&String; 2]) {
    let probe = store.clone();
    let groups = groups.map(String::clone);
    let objects = objects.map(String::clone);
    store.after_each_put(move |_| {
        let linked = |id: &str| {
            groups
                .iter()
                .any(|g| stored_targets(&probe, g).iter().any(|t| t == id))
        };
        assert!(
            objects.iter().all(|o| linked(o)),
            "an object was linked from nowhere"
        );
    });
}

/// The hard link targets of a group as a handle reads it.
fn stored_targets_of(dom: &Domain, group: &str) -> Vec<String> {
    dom.links(group)
        .unwrap()
        .into_iter()
        .filter_map(|(_, l)| l["id"].as_str().map(str::to_string))
        .collect()
}

/// Checks after every conditional put to `store` that each of `objects` is
/// reachable by hard links from `root` in what the store holds (what a
/// crash at that moment leaves).
fn reachable_at_every_put(store: &Arc<TestStore>, root: &str, objects: &[&String]) {
    let probe = store.clone();
    let root = root.to_string();
    let objects: Vec<String> = objects.iter().map(|o| (*o).clone()).collect();
    store.after_each_put(move |_| {
        let mut seen = std::collections::HashSet::from([root.clone()]);
        let mut queue = vec![root.clone()];
        while let Some(g) = queue.pop() {
            for t in stored_targets(&probe, &g) {
                if t.starts_with("g-") && seen.insert(t.clone()) {
                    queue.push(t);
                } else {
                    seen.insert(t);
                }
            }
        }
        for o in &objects {
            assert!(seen.contains(o), "{o} was reachable from nowhere");
        }
    });
}

#[test]
fn a_rename_within_a_group_into_a_name_moved_out_waits_for_that_move() {
    // From a review: /a/x -> /b/y, then /a/w -> /a/x. The removal of w was
    // not held with x, so a's first write left w's object unlinked.
    for _round in 0..10 {
        let (store, dom, _, [root, a, b, _c, x]) = three_groups(Durability::AtFlush);
        let w = dom.create_group(json!({})).unwrap();
        dom.link_create(&a, "w", hard(&w)).unwrap();
        dom.flush().unwrap();
        dom.link_move(&a, "x", &b, "y").unwrap();
        dom.link_move(&a, "w", &a, "x").unwrap();
        reachable_at_every_put(&store, &root, &[&x, &w]);
        dom.flush().unwrap();
        let seen = read_back(store);
        assert_eq!(stored_targets_of(&seen, &a), [w.clone()]);
        assert_eq!(stored_targets_of(&seen, &b), [x.clone()]);
    }
}

#[test]
fn a_move_into_a_new_group_hung_at_a_name_moved_out_waits_for_that_move() {
    // From a review: /a/x -> /b/y, a new group made at /a/x, /c/w moved
    // into it. c's second write went before a's (which gives the new group
    // its link), leaving w's object reachable from nowhere.
    for _round in 0..10 {
        let (store, dom, _, [root, a, b, c, x]) = three_groups(Durability::AtFlush);
        let w = dom.create_group(json!({})).unwrap();
        dom.link_create(&c, "w", hard(&w)).unwrap();
        dom.flush().unwrap();
        dom.link_move(&a, "x", &b, "y").unwrap();
        let n = dom.create_group(json!({})).unwrap();
        dom.link_create(&a, "x", hard(&n)).unwrap();
        dom.link_move(&c, "w", &n, "v").unwrap();
        reachable_at_every_put(&store, &root, &[&x, &w]);
        dom.flush().unwrap();
        let seen = read_back(store);
        assert_eq!(stored_targets_of(&seen, &a), [n.clone()]);
        assert_eq!(stored_targets_of(&seen, &n), [w.clone()]);
        assert!(names(&seen, &c).is_empty());
    }
}

#[test]
fn a_move_into_a_new_group_whose_name_another_writer_took_keeps_the_object() {
    // From a review: /a/x -> /a/n/y with /a/n new; another writer made
    // /a/n meanwhile. The first write's refusal of n was forgotten before
    // the move was judged, and /a/x was removed: the object was lost.
    let (store, dom, other, [root, a, _b, _c, x]) = three_groups(Durability::AtFlush);
    let n = dom.create_group(json!({})).unwrap();
    dom.link_create(&a, "n", hard(&n)).unwrap();
    dom.link_move(&a, "x", &n, "y").unwrap();
    let theirs = other.create_group(json!({})).unwrap();
    other.link_create(&a, "n", hard(&theirs)).unwrap();
    reachable_at_every_put(&store, &root, &[&x, &theirs]);
    assert!(dom.flush().is_err(), "the clash is reported");
    let seen = read_back(store);
    let targets = stored_targets_of(&seen, &a);
    assert!(
        targets.contains(&x) && targets.contains(&theirs),
        "{targets:?}"
    );
}

#[test]
fn links_swapped_between_groups_stay_reachable_at_every_write() {
    // A swap through a temporary name (a/x -> a/t, b/x -> a/x, a/t ->
    // b/x) is a cycle at the commit: each group waits for the other. One
    // goes first, keeping the object it moves out under a temporary name
    // until its new link is in.
    for _round in 0..10 {
        let (store, dom, _, [root, a, b, _c, x]) = three_groups(Durability::AtFlush);
        let y = dom.create_group(json!({})).unwrap();
        dom.link_create(&b, "x", hard(&y)).unwrap();
        dom.flush().unwrap();
        dom.link_move(&a, "x", &a, "t").unwrap();
        dom.link_move(&b, "x", &a, "x").unwrap();
        dom.link_move(&a, "t", &b, "x").unwrap();
        reachable_at_every_put(&store, &root, &[&x, &y]);
        dom.flush().unwrap();
        let seen = read_back(store);
        assert_eq!(names(&seen, &a), ["x"]);
        assert_eq!(names(&seen, &b), ["x"]);
        assert_eq!(stored_targets_of(&seen, &a), [y.clone()]);
        assert_eq!(stored_targets_of(&seen, &b), [x.clone()]);
    }
}

#[test]
fn a_group_moved_into_a_group_below_it_is_refused_and_stays() {
    // HDF5 hangs the group below itself, out of the tree, with all it
    // holds; the move is refused instead.
    for durability in [Durability::AtFlush, Durability::EachCall] {
        let (store, dom, _, [root, a, _, _, x]) = three_groups(durability);
        let err = dom.link_move(&root, "a", &x, "a").unwrap_err();
        assert!(err.to_string().contains("inside the group"), "{err}");
        dom.flush().unwrap();
        let seen = read_back(store);
        assert_eq!(seen.link_get(&root, "a").unwrap()["id"], a.as_str());
        assert_eq!(seen.link_get(&a, "x").unwrap()["id"], x.as_str());
        assert!(names(&seen, &x).is_empty(), "{durability:?}");
    }
}

#[test]
fn two_writers_moving_two_groups_each_into_the_other_leave_both_in_the_tree() {
    // Before: each move was checked against its writer's own view only;
    // b went into c and c into b, and both were linked from nowhere.
    for durability in [Durability::AtFlush, Durability::EachCall] {
        let (store, dom, other, [root, _, b, c, _]) = three_groups(durability);
        reachable_at_every_put(&store, &root, &[&b, &c]);
        if durability == Durability::AtFlush {
            // Ours is pending while theirs lands whole.
            dom.link_move(&root, "b", &c, "b").unwrap();
            other.link_move(&root, "c", &b, "c").unwrap();
            let err = dom.flush().unwrap_err();
            assert!(
                err.to_string().contains("inside the group it moves"),
                "{err}"
            );
        } else {
            // Theirs lands between our look before our new link and our
            // look after it (their own look came before our link).
            let (b2, c2, r2) = (b.clone(), c.clone(), root.clone());
            store.after_put(&doc_key_end(&c), move || {
                other.link_create(&b2, "c", hard(&c2)).unwrap();
                other.link_delete(&r2, "c").unwrap();
            });
            let err = dom.link_move(&root, "b", &c, "b").unwrap_err();
            assert!(err.to_string().contains("inside the group"), "{err}");
        }
        let seen = read_back(store);
        assert_eq!(seen.link_get(&root, "b").unwrap()["id"], b.as_str());
        assert_eq!(seen.link_get(&b, "c").unwrap()["id"], c.as_str());
        assert!(names(&seen, &c).is_empty(), "{durability:?}");
    }
}

#[test]
fn moves_that_keep_the_group_in_the_tree_are_made() {
    // From a review: a group linking up to the root was refused as moved
    // "inside itself"; one commit moving a/x out to the root and then a
    // into x was refused at random (a's old link to x was still in the
    // store when the second move was looked at), as were moves into the
    // root alongside a link made to it (judged not made, "another writer").
    for durability in [Durability::AtFlush, Durability::EachCall] {
        let (store, dom, _, [root, a, b, c, x]) = three_groups(durability);
        dom.link_create(&a, "up", hard(&root)).unwrap();
        dom.link_move(&root, "a", &b, "a").unwrap();
        dom.link_move(&a, "x", &root, "x").unwrap();
        dom.link_move(&b, "a", &x, "a").unwrap();
        // A group linking sideways to where it goes is refused: telling
        // whether the destination hangs elsewhere too would take a walk of
        // the whole tree (see move_may_detach).
        dom.link_create(&c, "sideways", hard(&b)).unwrap();
        let err = dom.link_move(&root, "c", &b, "c").unwrap_err();
        assert!(err.to_string().contains("inside the group"), "{err}");
        dom.flush().unwrap();
        let seen = read_back(store);
        let mut top = names(&seen, &root);
        top.sort();
        assert_eq!(top, ["b", "c", "x"], "{durability:?}");
        assert!(names(&seen, &b).is_empty());
        assert_eq!(seen.link_get(&x, "a").unwrap()["id"], a.as_str());
        assert_eq!(seen.link_get(&a, "up").unwrap()["id"], root.as_str());
        // ... and so is one that hangs b below itself through c.
        seen_writer_moves_b_into_c(&seen, &b, &c);
    }
}

/// Moves c into b, then b into c, which b holds then: refused.
fn seen_writer_moves_b_into_c(seen: &Domain, b: &str, c: &str) {
    let root = seen.root_id().to_string();
    let w = Domain::open_with(
        seen.store().clone(),
        "",
        OpenMode::ReadWrite,
        "mem".into(),
        &DomainOptions::default(),
    )
    .unwrap();
    w.link_delete(c, "sideways").unwrap();
    w.link_move(&root, "c", b, "c").unwrap();
    let err = w.link_move(&root, "b", c, "b").unwrap_err();
    assert!(err.to_string().contains("inside the group"), "{err}");
}
