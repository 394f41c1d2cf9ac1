//! zlib-format deflate (filter 1), as libhdf5's `H5Z_filter_deflate` writes it.
//!
//! libdeflater's (de)compressors are not `Sync` and allocate on creation, so
//! each thread keeps its own; a pipeline can then be shared across a rayon
//! pool without locks.

use std::cell::RefCell;

use libdeflater::{CompressionLvl, Compressor, DecompressionError, Decompressor};

use crate::{alloc_zeroed, corrupt, Result};

thread_local! {
    static COMPRESSOR: RefCell<Option<(i32, Compressor)>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<Decompressor>> = const { RefCell::new(None) };
}

/// Deflate never expands by more than ~1032:1; a guess past that is corrupt data.
const MAX_RATIO: usize = 1040;

/// Compresses into a zlib stream. Levels above 12 are clamped (libdeflate's maximum).
pub fn compress(data: &[u8], level: u32) -> Vec<u8> {
    let level = level.min(12) as i32;
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().map(|(l, _)| *l) != Some(level) {
            let lvl = CompressionLvl::new(level).unwrap_or_default();
            *slot = Some((level, Compressor::new(lvl)));
        }
        let c = &mut slot.as_mut().expect("just set").1;
        let mut out = vec![0u8; c.zlib_compress_bound(data.len())];
        let n = c
            .zlib_compress(data, &mut out)
            .expect("output sized by zlib_compress_bound");
        out.truncate(n);
        out
    })
}

/// Decompresses a zlib stream whose decoded size is unknown: starts at the
/// hint (HDF5 chunks do not record their size) and doubles on demand.
pub fn decompress(data: &[u8], hint: Option<usize>) -> Result<Vec<u8>> {
    let cap = data.len().saturating_mul(MAX_RATIO).saturating_add(1024);
    let mut size = match hint {
        Some(h) => h.max(1),
        None => data.len().saturating_mul(4).max(4096),
    }
    .min(cap);
    loop {
        let mut out = alloc_zeroed(size, "deflate")?;
        match decompress_into(data, &mut out) {
            Ok(n) => {
                out.truncate(n);
                return Ok(out);
            }
            Err(DecompressionError::InsufficientSpace) if size < cap => {
                size = size.saturating_mul(2).min(cap);
            }
            Err(DecompressionError::InsufficientSpace) => {
                return Err(corrupt(
                    "deflate",
                    "decoded size exceeds what deflate can produce",
                ))
            }
            Err(DecompressionError::BadData) => {
                return Err(corrupt("deflate", "invalid zlib stream"))
            }
        }
    }
}

/// Decompresses into `out`, returning the decoded length.
pub fn decompress_into(
    data: &[u8],
    out: &mut [u8],
) -> std::result::Result<usize, DecompressionError> {
    DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        slot.get_or_insert_with(Decompressor::new)
            .zlib_decompress(data, out)
    })
}
