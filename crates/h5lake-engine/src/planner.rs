//! Chunk planning: which chunks a selection touches, and for each chunk which
//! elements move between the chunk and the caller's buffer.
//!
//! Plans are built per dimension (an orthogonal selection is the outer product
//! of its dimensions), so planning costs O(chunks touched per dimension), not
//! O(elements). Copies walk the plan with the innermost dimension's runs as
//! single `memcpy`s when they are contiguous on both sides.

use h5lake_types::{DimSel, Selection};

/// Elements `src, src+step, …` (chunk-local, `len` of them) that go to the
/// consecutive output positions `dst, dst+1, …` along one dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub src: u64,
    pub dst: u64,
    pub len: u64,
    pub step: u64,
}

/// What one chunk along one dimension contributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DimPart {
    pub chunk: u64,
    pub runs: Vec<Run>,
    /// Number of selected indices inside this chunk.
    pub covered: u64,
}

/// Splits one dimension's selection by chunk.
pub fn plan_dim(sel: &DimSel, chunk: u64) -> Vec<DimPart> {
    let mut parts = Vec::new();
    match sel {
        DimSel::Slice { start, count, step } => {
            if *count == 0 {
                return parts;
            }
            let (start, count, step) = (*start, *count, *step);
            let last = start + (count - 1) * step;
            let mut c = start / chunk;
            while c <= last / chunk {
                let lo = c * chunk;
                let hi = lo + chunk; // exclusive
                let i0 = if lo > start {
                    (lo - start).div_ceil(step)
                } else {
                    0
                };
                let first = start + i0 * step;
                if first >= hi || i0 >= count {
                    // A step wider than the chunk skipped this one: jump ahead.
                    c = first / chunk;
                    continue;
                }
                let k1 = ((hi - 1 - start) / step).min(count - 1);
                let len = k1 - i0 + 1;
                parts.push(DimPart {
                    chunk: c,
                    runs: vec![Run {
                        src: first - lo,
                        dst: i0,
                        len,
                        step,
                    }],
                    covered: len,
                });
                c += 1;
            }
        }
        DimSel::Indices(ix) => {
            for (dst, &i) in ix.iter().enumerate() {
                let c = i / chunk;
                let local = i - c * chunk;
                let dst = dst as u64;
                if parts.last().is_none_or(|p: &DimPart| p.chunk != c) {
                    parts.push(DimPart {
                        chunk: c,
                        runs: Vec::new(),
                        covered: 0,
                    });
                }
                let part = parts.last_mut().expect("pushed above");
                part.covered += 1;
                match part.runs.last_mut() {
                    Some(r) if r.src + r.len == local && r.dst + r.len == dst => r.len += 1,
                    _ => part.runs.push(Run {
                        src: local,
                        dst,
                        len: 1,
                        step: 1,
                    }),
                }
            }
        }
    }
    parts
}

/// The chunks an orthogonal selection touches.
pub struct OrthoPlan {
    pub dims: Vec<Vec<DimPart>>,
}

impl OrthoPlan {
    /// Plans `sels` over chunks of shape `chunk`.
    pub fn new(sels: &[DimSel], chunk: &[u64]) -> Self {
        OrthoPlan {
            dims: sels
                .iter()
                .zip(chunk)
                .map(|(s, &c)| plan_dim(s, c))
                .collect(),
        }
    }

    /// Number of chunks touched.
    pub fn num_chunks(&self) -> usize {
        self.dims.iter().map(Vec::len).product()
    }

    /// The `i`-th chunk (row-major over the per-dimension parts).
    pub fn chunk(&self, mut i: usize) -> Vec<&DimPart> {
        let mut out = vec![None; self.dims.len()];
        for d in (0..self.dims.len()).rev() {
            let n = self.dims[d].len();
            out[d] = Some(&self.dims[d][i % n]);
            i /= n;
        }
        out.into_iter().map(|p| p.expect("filled")).collect()
    }
}

/// C-order strides, in elements, of an array of shape `shape`.
pub fn strides(shape: &[u64]) -> Vec<u64> {
    let mut s = vec![1u64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// Walks the element correspondences of one chunk: calls `f(chunk_elem,
/// out_elem, n)` for `n` elements contiguous on both sides.
pub fn walk(
    parts: &[&DimPart],
    chunk_strides: &[u64],
    out_strides: &[u64],
    f: &mut impl FnMut(u64, u64, u64),
) {
    fn rec(
        parts: &[&DimPart],
        d: usize,
        src: u64,
        dst: u64,
        cs: &[u64],
        os: &[u64],
        f: &mut impl FnMut(u64, u64, u64),
    ) {
        let last = d + 1 == parts.len();
        for r in &parts[d].runs {
            if last && r.step == 1 {
                f(src + r.src * cs[d], dst + r.dst * os[d], r.len);
                continue;
            }
            for i in 0..r.len {
                let s = src + (r.src + i * r.step) * cs[d];
                let t = dst + (r.dst + i) * os[d];
                if last {
                    f(s, t, 1);
                } else {
                    rec(parts, d + 1, s, t, cs, os, f);
                }
            }
        }
    }
    if parts.is_empty() {
        f(0, 0, 1);
        return;
    }
    rec(parts, 0, 0, 0, chunk_strides, out_strides, f);
}

/// The bytes of `buf` (elements of `es` bytes, laid out as the selection's
/// output) that hold a whole chunk in the chunk's own order, when they are
/// one contiguous run: then the chunk can be stored or loaded without
/// assembling a copy. `None` when the chunk's elements are spread out.
pub fn contiguous_source<'a>(
    parts: &[&DimPart],
    chunk_strides: &[u64],
    out_strides: &[u64],
    es: usize,
    buf: &'a [u8],
) -> Option<&'a [u8]> {
    let (d0, len) = contiguous_run(parts, chunk_strides, out_strides)?;
    let (start, bytes) = (d0 as usize * es, len as usize * es);
    (start + bytes <= buf.len()).then(|| &buf[start..start + bytes])
}

/// Where a chunk's selected elements lie in the output when they are its
/// first elements, in order, and one run of the output: (first output
/// element, number of elements).
pub fn contiguous_run(
    parts: &[&DimPart],
    chunk_strides: &[u64],
    out_strides: &[u64],
) -> Option<(u64, u64)> {
    let mut run: Option<(u64, u64)> = None; // (first output element, elements so far)
    let mut contiguous = true;
    walk(
        parts,
        chunk_strides,
        out_strides,
        &mut |s, d, n| match run {
            None => {
                contiguous &= s == 0;
                run = Some((d, n));
            }
            Some((d0, len)) => {
                contiguous &= s == len && d == d0 + len;
                run = Some((d0, len + n));
            }
        },
    );
    run.filter(|_| contiguous)
}

/// Points grouped by chunk, in the chunks' C order, held flat: a few words
/// per point and per chunk, where a map of vectors cost some 200 bytes per
/// chunk (a server's read of a million points, each in a chunk of its own,
/// held a fifth of a gigabyte).
pub struct PointPlan {
    rank: usize,
    /// Each chunk's coordinates, `rank` apiece.
    coords: Vec<u64>,
    /// Where each chunk's points start in `pairs` (one more than chunks).
    starts: Vec<usize>,
    /// (chunk-local element index, output element index), chunk by chunk.
    pairs: Vec<(u64, u64)>,
}

impl PointPlan {
    /// How many chunks the points reach.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// Whether no point was selected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `g`-th chunk's coordinates and its points' (chunk-local element
    /// index, output element index) pairs.
    pub fn group(&self, g: usize) -> (&[u64], &[(u64, u64)]) {
        (
            &self.coords[g * self.rank..(g + 1) * self.rank],
            &self.pairs[self.starts[g]..self.starts[g + 1]],
        )
    }
}

/// Groups the points of `sel` by the chunk (of shape `chunk`) each lies in.
pub fn plan_points(sel: &Selection, chunk: &[u64]) -> PointPlan {
    let rank = chunk.len();
    let mut plan = PointPlan {
        rank,
        coords: Vec::new(),
        starts: vec![0],
        pairs: Vec::new(),
    };
    let Selection::Points { rank: r, coords } = sel else {
        return plan;
    };
    debug_assert_eq!(*r, rank, "points of the dataset's rank");
    let point = |n: usize| &coords[n * rank..(n + 1) * rank];
    let chunk_of = |n: usize| point(n).iter().zip(chunk).map(|(c, k)| c / k);
    let n = coords.len().checked_div(rank).unwrap_or(0);
    // (A stable sort keeps each chunk's points in the order given.)
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| chunk_of(a).cmp(chunk_of(b)));
    let cs = strides(chunk);
    plan.pairs.reserve_exact(n);
    for (k, &i) in order.iter().enumerate() {
        if k == 0 || chunk_of(order[k - 1]).ne(chunk_of(i)) {
            if k > 0 {
                plan.starts.push(k);
            }
            plan.coords.extend(chunk_of(i));
        }
        let local: u64 = point(i)
            .iter()
            .zip(chunk)
            .zip(&cs)
            .map(|((c, k), s)| (c % k) * s)
            .sum();
        plan.pairs.push((local, i as u64));
    }
    if n > 0 {
        plan.starts.push(n);
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(sel: &DimSel, chunk: u64) -> Vec<(u64, u64, u64)> {
        // (chunk, local, dst) for every selected index.
        let idx: Vec<u64> = match sel {
            DimSel::Slice { start, count, step } => (0..*count).map(|k| start + k * step).collect(),
            DimSel::Indices(v) => v.clone(),
        };
        idx.iter()
            .enumerate()
            .map(|(d, &i)| (i / chunk, i % chunk, d as u64))
            .collect()
    }

    fn expand(parts: &[DimPart]) -> Vec<(u64, u64, u64)> {
        let mut v = Vec::new();
        for p in parts {
            let mut n = 0;
            for r in &p.runs {
                for i in 0..r.len {
                    v.push((p.chunk, r.src + i * r.step, r.dst + i));
                    n += 1;
                }
            }
            assert_eq!(n, p.covered);
        }
        v
    }

    #[test]
    fn dim_plans_match_brute_force() {
        for chunk in 1..7u64 {
            for start in 0..9u64 {
                for step in 1..11u64 {
                    for count in 0..8u64 {
                        let s = DimSel::Slice { start, count, step };
                        assert_eq!(
                            expand(&plan_dim(&s, chunk)),
                            brute(&s, chunk),
                            "{s:?} chunk {chunk}"
                        );
                    }
                }
            }
            let s = DimSel::Indices(vec![0, 1, 2, 5, 6, 9, 13, 14]);
            assert_eq!(expand(&plan_dim(&s, chunk)), brute(&s, chunk));
        }
    }

    #[test]
    fn contiguous_source_only_for_chunks_laid_out_as_stored() {
        let slice = |start, count| DimSel::Slice {
            start,
            count,
            step: 1,
        };
        let buf: Vec<u8> = (0..=255).collect();
        // Rows 2..6 of a (n, 4) array, chunks (2, 4): each chunk is two
        // whole output rows, in order.
        let plan = OrthoPlan::new(&[slice(2, 4), slice(0, 4)], &[2, 4]);
        let (cs, os) = (strides(&[2, 4]), strides(&[4, 4]));
        let second = contiguous_source(&plan.chunk(1), &cs, &os, 2, &buf);
        assert_eq!(second, Some(&buf[16..32]));
        // Chunks (2, 2) of the same selection: a chunk's rows are split
        // across output rows.
        let plan = OrthoPlan::new(&[slice(2, 4), slice(0, 4)], &[2, 2]);
        let cs = strides(&[2, 2]);
        for i in 0..plan.num_chunks() {
            assert_eq!(contiguous_source(&plan.chunk(i), &cs, &os, 2, &buf), None);
        }
    }

    #[test]
    fn walk_visits_every_element_once() {
        let sels = vec![
            DimSel::Slice {
                start: 1,
                count: 4,
                step: 2,
            },
            DimSel::Indices(vec![0, 3, 4, 7]),
        ];
        let chunk = [3u64, 4];
        let plan = OrthoPlan::new(&sels, &chunk);
        let out_shape = [4u64, 4];
        let mut seen = vec![0; 16];
        for i in 0..plan.num_chunks() {
            let parts = plan.chunk(i);
            walk(
                &parts,
                &strides(&chunk),
                &strides(&out_shape),
                &mut |_, d, n| {
                    for k in 0..n {
                        seen[(d + k) as usize] += 1;
                    }
                },
            );
        }
        assert!(seen.iter().all(|&c| c == 1), "{seen:?}");
    }

    #[test]
    fn points_are_grouped_by_chunk_in_c_order_keeping_their_order_within_one() {
        let coords = vec![5, 1, 0, 0, 5, 2, 1, 1, 9, 9, 4, 0];
        let sel = Selection::Points { rank: 2, coords };
        let plan = plan_points(&sel, &[4, 2]);
        let groups: Vec<(Vec<u64>, Vec<(u64, u64)>)> = (0..plan.len())
            .map(|g| {
                let (c, p) = plan.group(g);
                (c.to_vec(), p.to_vec())
            })
            .collect();
        assert_eq!(
            groups,
            vec![
                (vec![0, 0], vec![(0, 1), (3, 3)]),
                (vec![1, 0], vec![(3, 0), (0, 5)]),
                (vec![1, 1], vec![(2, 2)]),
                (vec![2, 4], vec![(3, 4)]),
            ]
        );
        let none = plan_points(
            &Selection::Points {
                rank: 2,
                coords: vec![],
            },
            &[4, 2],
        );
        assert!(none.is_empty());
    }
}
