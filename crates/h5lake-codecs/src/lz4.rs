//! LZ4 in the HDF5 LZ4 filter's framing (filter 32004, `H5Zlz4.c`):
//! u64 BE decoded size, u32 BE block size, then per block a u32 BE stored
//! size and the LZ4 block; a block that does not shrink is stored raw with
//! stored size == block size (which is also how the reader tells them apart).

use crate::{alloc_zeroed, corrupt, Result};

/// H5Zlz4's default: one block per chunk up to 1 GiB.
const DEFAULT_BLOCK: usize = 1 << 30;

/// LZ4 cannot expand more than ~255:1; larger claims are corrupt headers.
const MAX_RATIO: u64 = 256;

/// Compresses `data` with blocks of `block_size` bytes (0 = the plugin default).
pub fn compress(data: &[u8], block_size: usize) -> Vec<u8> {
    let block = match block_size {
        0 => DEFAULT_BLOCK,
        b => b,
    }
    .min(data.len());
    let mut out = Vec::with_capacity(12 + data.len() / 2);
    out.extend_from_slice(&(data.len() as u64).to_be_bytes());
    out.extend_from_slice(&(block as u32).to_be_bytes());
    if block == 0 {
        return out;
    }
    for chunk in data.chunks(block) {
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        let bound = lz4_flex::block::get_maximum_output_size(chunk.len());
        out.resize(start + 4 + bound, 0);
        let n = lz4_flex::block::compress_into(chunk, &mut out[start + 4..])
            .expect("output sized by get_maximum_output_size");
        let stored = if n >= chunk.len() {
            out[start + 4..start + 4 + chunk.len()].copy_from_slice(chunk);
            chunk.len()
        } else {
            n
        };
        out.truncate(start + 4 + stored);
        out[start..start + 4].copy_from_slice(&(stored as u32).to_be_bytes());
    }
    out
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes(s.try_into().expect("4 bytes")))
}

/// Decodes an HDF5-LZ4 chunk.
pub fn decompress(data: &[u8]) -> Result<Vec<u8>> {
    let orig = data
        .get(..8)
        .map(|s| u64::from_be_bytes(s.try_into().expect("8 bytes")))
        .ok_or_else(|| corrupt("lz4", "shorter than the 12-byte header"))?;
    let block =
        be32(data, 8).ok_or_else(|| corrupt("lz4", "shorter than the 12-byte header"))? as u64;
    if orig > (data.len() as u64).saturating_mul(MAX_RATIO) + 64 {
        return Err(corrupt(
            "lz4",
            format!("header claims {orig} bytes from {} stored", data.len()),
        ));
    }
    let orig = orig as usize;
    let mut out = alloc_zeroed(orig, "lz4")?;
    if orig == 0 {
        return Ok(out);
    }
    // As H5Zlz4 does: a block size larger than the data means one block.
    let block = (block.min(orig as u64)) as usize;
    if block == 0 {
        return Err(corrupt("lz4", "block size 0 with data present"));
    }
    let mut pos = 12;
    for dst in out.chunks_mut(block) {
        let csize =
            be32(data, pos).ok_or_else(|| corrupt("lz4", "truncated block header"))? as usize;
        pos += 4;
        let src = data
            .get(pos..pos.saturating_add(csize))
            .ok_or_else(|| corrupt("lz4", "block runs past the end of the chunk"))?;
        if csize == dst.len() {
            dst.copy_from_slice(src);
        } else {
            let n = lz4_flex::block::decompress_into(src, dst)
                .map_err(|e| corrupt("lz4", e.to_string()))?;
            if n != dst.len() {
                return Err(corrupt(
                    "lz4",
                    format!("block decoded to {n} bytes, expected {}", dst.len()),
                ));
            }
        }
        pos += csize;
    }
    Ok(out)
}
