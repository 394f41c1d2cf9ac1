//! Times the statistics pass over the rows of bench/query.py's table
//! (t i8, sensor i4, value f4, flag u1; 17-byte rows), each leaf alone and
//! all together, from memory and from cache-sized blocks.
//! `cargo run --release -p h5lake-query --example stats_pass`
use std::time::Instant;

use h5lake_types::Datatype;

fn main() {
    let dtype = Datatype::from_json(&serde_json::json!({
        "class": "H5T_COMPOUND",
        "fields": [
            {"name": "t", "type": "H5T_STD_I64LE"},
            {"name": "sensor", "type": "H5T_STD_I32LE"},
            {"name": "value", "type": "H5T_IEEE_F32LE"},
            {"name": "flag", "type": "H5T_STD_U8LE"}
        ]
    }))
    .expect("a compound");
    let leaves = h5lake_query::leaves(&dtype);
    let n = 32_000_000usize;
    let size = 17;
    let mut data = vec![0u8; n * size];
    let mut x = 1u64;
    for (i, row) in data.chunks_exact_mut(size).enumerate() {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        row[0..8].copy_from_slice(&((i as i64) * 10 + (x >> 60) as i64).to_le_bytes());
        row[8..12].copy_from_slice(&((x >> 33) as i32 % 1000).to_le_bytes());
        row[12..16].copy_from_slice(&(((x >> 40) as f32) / 1e6).to_le_bytes());
        row[16] = (x >> 63) as u8;
    }
    let time = |what: &str, ls: &[h5lake_query::Leaf]| {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            let s = h5lake_query::stats::compute(ls, &data, size, &[(0, n)]);
            std::hint::black_box(s);
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!("{what:>12}: {:.1} ms", best * 1e3);
    };
    if std::env::var_os("ONLY_L2").is_none() {
        for l in &leaves {
            time(&l.name, std::slice::from_ref(l));
        }
        time("all", &leaves);
    }
    // Cache-hot: the same pass over one 256 KiB block, repeated to 32 M rows.
    let block = (256 << 10) / size * size;
    let rows = block / size;
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..n / rows {
            let s = h5lake_query::stats::compute(&leaves, &data[..block], size, &[(0, rows)]);
            std::hint::black_box(s);
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!("{:>12}: {:.1} ms", "all, in L2", best * 1e3);
}
