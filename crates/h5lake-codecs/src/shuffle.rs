//! HDF5 byte shuffle (filter 2).
//!
//! Layout: with `n = len / size` whole elements, byte `b` of element `i` goes to
//! `out[b * n + i]`; the `len % size` trailing bytes stay where they were at the
//! end, exactly as libhdf5 does, so partial elements never break a chunk.

/// Elements handled per unrolled step; keeps the inner loops bounds-check free.
const BLOCK: usize = 16;

/// Transposes `src` into byte planes.
pub fn shuffle(src: &[u8], size: usize) -> Vec<u8> {
    let mut dst = vec![0u8; src.len()];
    shuffle_into(src, &mut dst, size);
    dst
}

/// Inverse of [`shuffle`].
pub fn unshuffle(src: &[u8], size: usize) -> Vec<u8> {
    let mut dst = vec![0u8; src.len()];
    unshuffle_into(src, &mut dst, size);
    dst
}

/// Shuffles `src` into `dst` (same length).
pub fn shuffle_into(src: &[u8], dst: &mut [u8], size: usize) {
    debug_assert_eq!(src.len(), dst.len());
    let n = src.len().checked_div(size).unwrap_or(0);
    if size <= 1 || n <= 1 {
        dst.copy_from_slice(src);
        return;
    }
    match size {
        2 => shuffle_fixed::<2>(src, dst, n),
        4 => shuffle_fixed::<4>(src, dst, n),
        8 => shuffle_fixed::<8>(src, dst, n),
        _ => shuffle_generic(src, dst, n, size),
    }
    let body = n * size;
    dst[body..].copy_from_slice(&src[body..]);
}

/// Unshuffles `src` into `dst` (same length).
pub fn unshuffle_into(src: &[u8], dst: &mut [u8], size: usize) {
    debug_assert_eq!(src.len(), dst.len());
    let n = src.len().checked_div(size).unwrap_or(0);
    if size <= 1 || n <= 1 {
        dst.copy_from_slice(src);
        return;
    }
    match size {
        2 => unshuffle_fixed::<2>(src, dst, n),
        4 => unshuffle_fixed::<4>(src, dst, n),
        8 => unshuffle_fixed::<8>(src, dst, n),
        _ => unshuffle_generic(src, dst, n, size),
    }
    let body = n * size;
    dst[body..].copy_from_slice(&src[body..]);
}

// A const element size lets the compiler unroll the per-byte loop and turn the
// 16-element block into straight-line loads/stores; this is the hot path for
// 2/4/8-byte numeric chunks.
#[inline(always)]
fn shuffle_fixed<const S: usize>(src: &[u8], dst: &mut [u8], n: usize) {
    let blocks = n / BLOCK;
    for blk in 0..blocks {
        let i0 = blk * BLOCK;
        let s = &src[i0 * S..(i0 + BLOCK) * S];
        for b in 0..S {
            let d = &mut dst[b * n + i0..b * n + i0 + BLOCK];
            for k in 0..BLOCK {
                d[k] = s[k * S + b];
            }
        }
    }
    for i in blocks * BLOCK..n {
        for b in 0..S {
            dst[b * n + i] = src[i * S + b];
        }
    }
}

#[inline(always)]
fn unshuffle_fixed<const S: usize>(src: &[u8], dst: &mut [u8], n: usize) {
    let blocks = n / BLOCK;
    for blk in 0..blocks {
        let i0 = blk * BLOCK;
        let d = &mut dst[i0 * S..(i0 + BLOCK) * S];
        for b in 0..S {
            let s = &src[b * n + i0..b * n + i0 + BLOCK];
            for k in 0..BLOCK {
                d[k * S + b] = s[k];
            }
        }
    }
    for i in blocks * BLOCK..n {
        for b in 0..S {
            dst[i * S + b] = src[b * n + i];
        }
    }
}

fn shuffle_generic(src: &[u8], dst: &mut [u8], n: usize, size: usize) {
    // Plane by plane: each output plane is written sequentially.
    for (b, plane) in dst[..n * size].chunks_exact_mut(n).enumerate() {
        for (o, elem) in plane.iter_mut().zip(src.chunks_exact(size)) {
            *o = elem[b];
        }
    }
}

fn unshuffle_generic(src: &[u8], dst: &mut [u8], n: usize, size: usize) {
    for (b, plane) in src[..n * size].chunks_exact(n).enumerate() {
        for (elem, &v) in dst.chunks_exact_mut(size).zip(plane) {
            elem[b] = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(src: &[u8], size: usize) -> Vec<u8> {
        let n = src.len() / size;
        let mut out = src.to_vec();
        for i in 0..n {
            for b in 0..size {
                out[b * n + i] = src[i * size + b];
            }
        }
        out
    }

    #[test]
    fn matches_naive_for_all_sizes_and_tails() {
        for size in 1..=17 {
            for len in [0, 1, 5, 16, 33, 100, 257, 1000] {
                let src: Vec<u8> = (0..len).map(|i| (i * 7 + size) as u8).collect();
                let s = shuffle(&src, size);
                assert_eq!(s, naive(&src, size), "size {size} len {len}");
                assert_eq!(unshuffle(&s, size), src);
            }
        }
    }

    #[test]
    fn known_layout() {
        assert_eq!(
            shuffle(&[1, 2, 3, 4, 5, 6, 7], 2),
            vec![1, 3, 5, 2, 4, 6, 7]
        );
    }
}
