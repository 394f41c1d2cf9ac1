//! LZF (filter 32000: h5py's filter around liblzf). A chunk is one bare LZF
//! stream; the decoded size is the chunk's size, known to the caller.
//!
//! The stream is a sequence of items, each led by a control byte `c`:
//! `c < 32` — `c + 1` literal bytes follow; otherwise a back reference of
//! length `(c >> 5) + 2` (when `c >> 5 == 7`, one more byte adds to it) at
//! distance `((c & 31) << 8 | next byte) + 1` before the output's end.

use crate::{corrupt, Result};

const MAX_LITERAL: usize = 32;
const MAX_MATCH: usize = 7 + 255 + 2;
const MAX_DISTANCE: usize = 1 << 13;
const HASH_BITS: u32 = 14;

fn hash(b: &[u8]) -> usize {
    let v = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
    (v.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
}

fn push_literals(out: &mut Vec<u8>, lit: &[u8]) {
    for run in lit.chunks(MAX_LITERAL) {
        out.push((run.len() - 1) as u8);
        out.extend_from_slice(run);
    }
}

/// Compresses `data` (greedy matching over a hash of the last position of
/// each 3-byte prefix). Incompressible data grows by one byte in 32, and
/// still decodes: unlike liblzf's callers, there is no "did not fit" case.
pub fn compress(data: &[u8]) -> Vec<u8> {
    let n = data.len();
    let mut out = Vec::with_capacity(n / 2 + 16);
    let mut table = vec![usize::MAX; 1 << HASH_BITS];
    let (mut i, mut lit) = (0usize, 0usize);
    while i + 3 <= n {
        let h = hash(&data[i..]);
        let cand = table[h];
        table[h] = i;
        if cand != usize::MAX && i - cand <= MAX_DISTANCE && data[cand..cand + 3] == data[i..i + 3]
        {
            let max = MAX_MATCH.min(n - i);
            let mut len = 3;
            while len < max && data[cand + len] == data[i + len] {
                len += 1;
            }
            push_literals(&mut out, &data[lit..i]);
            let off = i - cand - 1;
            let l = len - 2;
            if l < 7 {
                out.push(((l as u8) << 5) | (off >> 8) as u8);
            } else {
                out.push((7 << 5) | (off >> 8) as u8);
                out.push((l - 7) as u8);
            }
            out.push(off as u8);
            i += len;
            lit = i;
        } else {
            i += 1;
        }
    }
    push_literals(&mut out, &data[lit..]);
    out
}

/// Decompresses one stream; `expected` (the chunk's byte size) sizes the
/// output up front.
///
/// # Errors
/// [`crate::CodecError::Corrupt`] for a stream that runs past its end or
/// refers before the start of the output.
pub fn decompress(data: &[u8], expected: Option<usize>) -> Result<Vec<u8>> {
    let bad = |why: &str| corrupt("lzf", why.to_string());
    let mut out = Vec::with_capacity(expected.unwrap_or(data.len() * 2));
    let mut i = 0;
    while i < data.len() {
        let c = data[i] as usize;
        i += 1;
        if c < 32 {
            let run = data
                .get(i..i + c + 1)
                .ok_or_else(|| bad("a literal run goes past the end"))?;
            out.extend_from_slice(run);
            i += c + 1;
            continue;
        }
        let mut len = c >> 5;
        if len == 7 {
            len += *data.get(i).ok_or_else(|| bad("truncated back reference"))? as usize;
            i += 1;
        }
        let low = *data.get(i).ok_or_else(|| bad("truncated back reference"))? as usize;
        i += 1;
        let dist = ((c & 31) << 8 | low) + 1;
        let start = out
            .len()
            .checked_sub(dist)
            .ok_or_else(|| bad("a back reference points before the start"))?;
        // Byte by byte: the source may overlap what is being written.
        for k in 0..len + 2 {
            let b = out[start + k];
            out.push(b);
        }
    }
    if let Some(n) = expected {
        if out.len() != n {
            return Err(bad(&format!("decoded {} bytes, expected {n}", out.len())));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_compresses() {
        let mut data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i / 7).to_le_bytes())
            .collect();
        data.extend_from_slice(&[9u8; 5000]);
        let c = compress(&data);
        assert!(c.len() < data.len() / 3, "{} of {}", c.len(), data.len());
        assert_eq!(decompress(&c, Some(data.len())).unwrap(), data);
        let noise: Vec<u8> = (0..10_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        assert_eq!(decompress(&compress(&noise), None).unwrap(), noise);
        assert_eq!(
            decompress(&compress(&[]), Some(0)).unwrap(),
            Vec::<u8>::new()
        );
        assert_eq!(decompress(&compress(&[1, 2]), None).unwrap(), vec![1, 2]);
    }

    #[test]
    fn damaged_streams_are_errors() {
        assert!(decompress(&[5, 1, 2], None).is_err());
        assert!(decompress(&[0, 1, 0x20, 5], None).is_err());
        assert!(decompress(&[0xe0], None).is_err());
        let c = compress(&[7u8; 1000]);
        assert!(decompress(&c, Some(999)).is_err());
    }
}
