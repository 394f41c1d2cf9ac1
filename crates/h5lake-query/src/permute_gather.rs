//! One member of fixed-size rows pulled out into a column by AVX-512 byte
//! permutes (VBMI). One `vpermt2b` picks any 64 of 128 source bytes, so
//! for rows of a few dozen bytes a handful of permutes fills a register
//! of member values that would otherwise take one strided load each. The
//! permute also puts big-endian members into the machine's order.

/// How one member's values are picked out of the rows: per output register
/// (`64 / width` consecutive values), one permute per step, each over the
/// 128 bytes that start at its first row.
#[derive(Clone, Debug)]
pub(crate) struct PermutePlan {
    offset: usize,
    width: usize,
    big: bool,
    steps: Vec<Step>,
}

#[derive(Clone, Debug)]
struct Step {
    /// The step's first row, counted from the output register's first row.
    first_row: usize,
    /// Per output byte, its source byte among the 128 loaded.
    index: [u8; 64],
    /// The output bytes this step fills.
    mask: u64,
}

impl PermutePlan {
    /// The plan for a member of `width` bytes at `offset` in rows of
    /// `size` bytes (`big`: stored big-endian); `None` where permutes would
    /// not beat one load per value (rows too wide for several to fit in
    /// one permute's reach) or the width is not that of a number.
    pub(crate) fn new(size: usize, offset: usize, width: usize, big: bool) -> Option<Self> {
        if !matches!(width, 1 | 2 | 4 | 8) || offset + width > size || offset + width > 128 {
            return None;
        }
        let per_register = 64 / width;
        // rows one permute reaches: every byte of the last one lies in the
        // 128 bytes loaded from the first one's start
        let reach = ((128 - offset - width) / size + 1).min(per_register);
        let n_steps = per_register.div_ceil(reach);
        if n_steps * 4 > per_register {
            return None;
        }
        let swap = big == cfg!(target_endian = "little");
        let steps = (0..n_steps)
            .map(|s| {
                let first_row = s * reach;
                let rows = reach.min(per_register - first_row);
                let mut index = [0u8; 64];
                let mut mask = 0u64;
                for v in 0..rows {
                    for b in 0..width {
                        let out = (first_row + v) * width + b;
                        let from = if swap { width - 1 - b } else { b };
                        index[out] = u8::try_from(v * size + offset + from)
                            .expect("within the permute's 128 bytes");
                        mask |= 1 << out;
                    }
                }
                Step {
                    first_row,
                    index,
                    mask,
                }
            })
            .collect();
        Some(Self {
            offset,
            width,
            big,
            steps,
        })
    }

    /// The member's width in bytes.
    pub(crate) fn width(&self) -> usize {
        self.width
    }

    /// What [`PermutePlan::gather`] left: the member of rows `from..to`,
    /// one value at a time.
    pub(crate) fn gather_rest(
        &self,
        rows: &[u8],
        size: usize,
        range: (usize, usize),
        out: &mut [u8],
    ) {
        gather_scalar(rows, size, self.offset, self.width, self.big, range, out);
    }

    /// Writes the member of the first rows of `rows` (`size` bytes each)
    /// into `out`, a whole register of values at a time, as far as every
    /// load stays inside `rows` and at most `count` rows; returns how many
    /// rows it wrote (the caller does the rest one by one).
    ///
    /// # Safety
    /// The CPU must have AVX-512 F, BW and VBMI; `out` must hold
    /// `count * width` bytes.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    pub(crate) unsafe fn gather(
        &self,
        rows: &[u8],
        size: usize,
        count: usize,
        out: &mut [u8],
    ) -> usize {
        use std::arch::x86_64::{
            _mm512_loadu_si512, _mm512_maskz_permutex2var_epi8, _mm512_or_si512,
            _mm512_setzero_si512, _mm512_storeu_si512,
        };
        assert!(out.len() >= count * self.width);
        let per_register = 64 / self.width;
        let last_first_row = self.steps.last().map_or(0, |s| s.first_row);
        let mut done = 0;
        while done + per_register <= count && (done + last_first_row) * size + 128 <= rows.len() {
            let base = rows.as_ptr().add(done * size);
            let mut acc = _mm512_setzero_si512();
            for s in &self.steps {
                // (The index comes from L1 each time: this runs once per
                // block of rows, and a list of registers made here would be
                // an allocation per call.)
                let index = _mm512_loadu_si512(s.index.as_ptr().cast());
                // SAFETY: the loop's condition keeps both 64-byte loads of
                // every step inside `rows`.
                let at = base.add(s.first_row * size);
                let lo = _mm512_loadu_si512(at.cast());
                let hi = _mm512_loadu_si512(at.add(64).cast());
                acc = _mm512_or_si512(acc, _mm512_maskz_permutex2var_epi8(s.mask, lo, index, hi));
            }
            _mm512_storeu_si512(out.as_mut_ptr().add(done * self.width).cast(), acc);
            done += per_register;
        }
        done
    }
}

/// The member (`width` bytes at `offset`) of each row of `rows` from row
/// `from` to `to`, into `out` at its place, one value at a time, put into
/// the machine's order.
fn gather_scalar(
    rows: &[u8],
    size: usize,
    offset: usize,
    width: usize,
    big: bool,
    (from, to): (usize, usize),
    out: &mut [u8],
) {
    let swap = big == cfg!(target_endian = "little");
    for r in from..to {
        let src = &rows[r * size + offset..r * size + offset + width];
        let dst = &mut out[r * width..(r + 1) * width];
        dst.copy_from_slice(src);
        if swap {
            dst.reverse();
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    fn has_vbmi() -> bool {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vbmi")
    }

    #[test]
    fn permutes_give_what_one_load_per_value_gives() {
        if !has_vbmi() {
            eprintln!("no AVX-512 VBMI on this CPU: nothing to compare");
            return;
        }
        let mut x = 7u64;
        let bytes: Vec<u8> = (0..40_000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect();
        let mut planned = 0;
        for size in 1usize..=48 {
            for width in [1, 2, 4, 8] {
                for offset in 0..size.saturating_sub(width - 1) {
                    for big in [false, true] {
                        let Some(plan) = PermutePlan::new(size, offset, width, big) else {
                            continue;
                        };
                        planned += 1;
                        for count in [0, 1, 63, 64, 65, 200, bytes.len() / size] {
                            let rows = &bytes[..count * size];
                            let mut want = vec![0u8; count * width];
                            gather_scalar(rows, size, offset, width, big, (0, count), &mut want);
                            let mut got = vec![0u8; count * width];
                            // SAFETY: the CPU has VBMI (checked above).
                            let done = unsafe { plan.gather(rows, size, count, &mut got) };
                            gather_scalar(rows, size, offset, width, big, (done, count), &mut got);
                            assert_eq!(
                                got, want,
                                "size {size} offset {offset} width {width} big {big} count {count}"
                            );
                            if count * size >= 4096 {
                                assert!(done > 0, "the permutes did the bulk");
                            }
                        }
                    }
                }
            }
        }
        assert!(planned > 500, "most narrow rows are planned ({planned})");
        // the bench's 17-byte rows: every member is planned
        for (offset, width) in [(0, 8), (8, 4), (12, 4), (16, 1)] {
            assert!(PermutePlan::new(17, offset, width, false).is_some());
        }
    }
}
