//! Virtual datasets: a dataset whose elements are selections of other
//! datasets — in the same store or in other h5lake stores (local paths,
//! `s3://` URLs) — mapped as HDF5's virtual layout maps them: each mapping
//! pairs a regular hyperslab of the virtual dataset with one of equal shape
//! in a source; what no mapping covers, and what a missing or too-small
//! source cannot give, reads as the fill value.
//!
//! The mappings live in the dataset document under `h5lake.virtual`
//! (HSDS has no virtual layout: to HSDS the dataset holds no chunks and
//! reads as fill). A read asks every source it touches at once, each of
//! those reads being chunk-parallel itself.
//!
//! Other stores are opened under this store's link policy, so a document
//! cannot make a server open a store its operator did not allow.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use h5lake_types::convert::NumericConversion;
use h5lake_types::{DimSel, Selection};
use serde_json::{json, Value};

use crate::dataset::{DatasetMeta, OutPtr, Projection};

/// Virtual datasets whose sources are virtual datasets: how deep a read
/// is, so that a cycle of mappings (stores mapping each other) ends in an
/// error instead of recursing without end.
mod nesting {
    use std::cell::Cell;

    use crate::dataset::for_each_task;
    use crate::error::{EngineError, Result};

    /// Virtual datasets of virtual datasets, at most this many levels.
    const MAX_DEPTH: u32 = 16;

    thread_local! {
        static DEPTH: Cell<u32> = const { Cell::new(0) };
    }

    /// Restores the depth of the thread when dropped.
    pub(super) struct Level(u32);

    impl Drop for Level {
        fn drop(&mut self) {
            DEPTH.with(|d| d.set(self.0));
        }
    }

    fn enter(depth: u32) -> Level {
        Level(DEPTH.with(|d| d.replace(depth)))
    }

    /// One level deeper than this thread's work is now.
    ///
    /// # Errors
    /// Past [`MAX_DEPTH`].
    pub(super) fn deeper(id: &str) -> Result<Level> {
        let depth = DEPTH.with(Cell::get) + 1;
        if depth > MAX_DEPTH {
            return Err(EngineError::Invalid(format!(
                "virtual dataset {id}: sources nested more than {MAX_DEPTH} virtual datasets \
                 deep (do the mappings lead back to it?)"
            )));
        }
        Ok(enter(depth))
    }

    /// [`for_each_task`], each task at the depth of the thread that asks.
    pub(super) fn tasks(n: usize, f: impl Fn(usize) -> Result<()> + Sync + Send) -> Result<()> {
        let depth = DEPTH.with(Cell::get);
        for_each_task(n, false, |i| {
            let _level = enter(depth);
            f(i)
        })
    }
}

use crate::domain::{Domain, DomainOptions, OpenMode};
use crate::error::{EngineError, Result};
use crate::hdf5_sources::{same_file, Current};

/// Where the mappings live in a dataset document.
const VIRTUAL_KEY: &str = "/h5lake/virtual";

/// Mappings at most this many are checked pairwise for overlap; more are
/// read one after another (overlapping ones must be, later ones winning).
const MAX_OVERLAP_CHECK: usize = 2048;

/// A regular hyperslab along one dimension, as HDF5 defines one: `count`
/// blocks of `block` consecutive indices, the first at `start`, each
/// `step` after the one before. Its elements are numbered block by block.
/// Kept normalised: `block > 1` only where blocks have gaps between them
/// (`count > 1`, `step > block`); other runs have `block == 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub start: u64,
    pub step: u64,
    pub count: u64,
    pub block: u64,
}

impl Run {
    /// The count of an unlimited run (HDF5's `H5S_UNLIMITED`): blocks
    /// without end, as many of them as the source's extent holds.
    pub const UNLIMITED: u64 = u64::MAX;

    /// The normalised run of HDF5's (start, stride, count, block); `None`
    /// for an empty, overlapping or overflowing one. `count` may be
    /// [`Run::UNLIMITED`].
    pub fn new(start: u64, step: u64, count: u64, block: u64) -> Option<Run> {
        // (One block's stride means nothing.)
        let step = if count == 1 { 1 } else { step };
        if step < 1 || count < 1 || block < 1 || (count > 1 && step < block) {
            return None;
        }
        if count == Self::UNLIMITED {
            let contiguous = step == block;
            return Some(Run {
                start,
                step: if contiguous { 1 } else { step },
                count,
                block: if contiguous { 1 } else { block },
            });
        }
        start.checked_add((count - 1).checked_mul(step)?.checked_add(block - 1)?)?;
        Some(if block == 1 {
            Run {
                start,
                step,
                count,
                block,
            }
        } else if count == 1 || step == block {
            Run {
                start,
                step: 1,
                count: count.checked_mul(block)?,
                block: 1,
            }
        } else {
            Run {
                start,
                step,
                count,
                block,
            }
        })
    }

    /// Whether it runs on without end (see [`Run::UNLIMITED`]).
    pub fn is_unlimited(&self) -> bool {
        self.count == Self::UNLIMITED
    }

    /// How many indices it holds (`u64::MAX` when unlimited).
    pub fn len(&self) -> u64 {
        self.count.saturating_mul(self.block)
    }

    fn last(&self) -> u64 {
        self.start + (self.count - 1) * self.step + self.block - 1
    }

    /// The `k`-th index it holds.
    fn coord(&self, k: u64) -> u64 {
        self.start + (k / self.block) * self.step + k % self.block
    }

    /// Which of its indices `x` is, if it is one.
    fn index_of(&self, x: u64) -> Option<u64> {
        let off = x.checked_sub(self.start)?;
        let (i, b) = (off / self.step, off % self.step);
        (i < self.count && b < self.block).then_some(i * self.block + b)
    }

    /// How many of its indices lie below `extent` (for an unlimited run,
    /// those a source of that extent holds).
    fn len_below(&self, extent: u64) -> u64 {
        if extent <= self.start {
            return 0;
        }
        let whole = if extent - self.start >= self.block {
            ((extent - self.start - self.block) / self.step + 1).min(self.count)
        } else {
            0
        };
        let next = self.start + whole * self.step;
        let partial = if whole < self.count && next < extent {
            (extent - next).min(self.block)
        } else {
            0
        };
        whole * self.block + partial
    }

    /// Its first `n` indices as runs, cut where a block of `self` or of
    /// `other` ends so that the two sides' pieces pair up index for index.
    /// Whole blocks of both sides come as one piece.
    fn first(&self, other: &Run, n: u64) -> Vec<(Run, Run)> {
        // (A contiguous run has no block edges to cut at.)
        let period = |r: &Run| if r.step == r.block { 1 } else { r.block };
        let (pa, pb) = (period(self), period(other));
        let lcm = (pa / gcd(pa, pb)).saturating_mul(pb);
        let whole = n / lcm * lcm;
        let piece = |r: &Run, from: u64, len: u64| {
            if r.step == r.block || r.block == 1 {
                Run::new(r.coord(from), r.step, len, 1)
            } else {
                Run::new(r.coord(from), r.step, len / r.block, r.block)
            }
        };
        let mut out = Vec::new();
        if whole > 0 {
            out.extend(piece(self, 0, whole).zip(piece(other, 0, whole)));
        }
        let edge = |r: &Run, k: u64| {
            if r.step == r.block {
                u64::MAX
            } else {
                (k / r.block + 1) * r.block
            }
        };
        let mut k = whole;
        while k < n {
            let end = n.min(edge(self, k)).min(edge(other, k));
            out.extend(Run::new(self.coord(k), 1, end - k, 1).zip(Run::new(
                other.coord(k),
                1,
                end - k,
                1,
            )));
            k = end;
        }
        out
    }

    /// The run of HDF5's `(start, stride, count, block)` along one
    /// dimension of a regular hyperslab, where a count or a block may be
    /// `H5S_UNLIMITED` (`u64::MAX`, [`Run::UNLIMITED`]); `None` for one of
    /// no index (a mapping of nothing) or overlapping blocks.
    pub fn from_hdf5(start: u64, stride: u64, count: u64, block: u64) -> Option<Run> {
        match (count, block) {
            // One block without end: indices without end.
            (1, Self::UNLIMITED) => Run::new(start, 1, Self::UNLIMITED, 1),
            (_, Self::UNLIMITED) => None,
            _ => Run::new(start, stride, count, block),
        }
    }

    /// HDF5's `(start, stride, count, block)` of it (`H5S_UNLIMITED` as the
    /// count of an unlimited run).
    pub fn to_hdf5(&self) -> [u64; 4] {
        [self.start, self.step, self.count, self.block]
    }

    /// The extent a dataspace needs to hold it (of an unlimited run, its
    /// first block).
    pub fn reach(&self) -> u64 {
        if self.is_unlimited() {
            self.start + self.block
        } else {
            self.last() + 1
        }
    }

    /// `[start, step, count]`, with the block as a fourth item when it is
    /// not 1; a `null` count for an unlimited run.
    pub fn of_json(v: &Value) -> Option<Run> {
        let a = v.as_array().filter(|a| a.len() == 3 || a.len() == 4)?;
        let block = match a.get(3) {
            Some(b) => b.as_u64()?,
            None => 1,
        };
        let count = match &a[2] {
            Value::Null => Self::UNLIMITED,
            c => c.as_u64().filter(|&c| c != Self::UNLIMITED)?,
        };
        Run::new(a[0].as_u64()?, a[1].as_u64()?, count, block)
    }

    /// HDF5's `(start, stride, count, block)` of a stored run as stored,
    /// not normalised (a printf-style series keeps the length of its
    /// blocks); `None` when it is not a valid run.
    pub fn hdf5_of_json(v: &Value) -> Option<[u64; 4]> {
        Run::of_json(v)?;
        let a = v.as_array()?;
        let count = match &a[2] {
            Value::Null => Self::UNLIMITED,
            c => c.as_u64()?,
        };
        let block = match a.get(3) {
            Some(b) => b.as_u64()?,
            None => 1,
        };
        Some([a[0].as_u64()?, a[1].as_u64()?, count, block])
    }

    /// As stored: `[start, step, count]`, or with the block.
    pub fn to_json(self) -> Value {
        let count = if self.is_unlimited() {
            Value::Null
        } else {
            json!(self.count)
        };
        if self.block == 1 {
            json!([self.start, self.step, count])
        } else {
            json!([self.start, self.step, count, self.block])
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The stored runs of a source selection that is the whole source (HDF5's
/// "all" selection, whose dataspace holds no extent): every index of the
/// source's extent `dims` when known, else the virtual selection `dst`'s
/// shape without its dimensions of one index (what HDF5 then requires the
/// source to be).
pub fn whole_source(dims: Option<&[u64]>, dst: &[Value]) -> Vec<Value> {
    match dims {
        Some(dims) => dims.iter().map(|&d| json!([0, 1, d])).collect(),
        None => {
            let runs: Vec<Run> = dst.iter().filter_map(Run::of_json).collect();
            let mut out: Vec<Value> = runs
                .iter()
                .filter(|r| r.len() > 1)
                .map(|r| json!([0, 1, r.len()]))
                .collect();
            if out.is_empty() {
                out.push(json!([0, 1, 1]));
            }
            out
        }
    }
}

/// Whether the stored runs `dst` and `src` pair dimension for dimension
/// as they are (the same lengths, dimensions of one index aside), or hold
/// an unlimited run (paired when read); other selections of as many
/// elements are paired by [`pair_runs`]. Malformed runs count as paired:
/// the dataset's creation refuses them by name.
pub fn same_shape(dst: &[Value], src: &[Value]) -> bool {
    let runs = |v: &[Value]| v.iter().map(Run::of_json).collect::<Option<Vec<Run>>>();
    match (runs(dst), runs(src)) {
        (Some(d), Some(s)) => {
            d.iter().chain(&s).any(Run::is_unlimited) || pair_dims(&s, &d).is_some()
        }
        _ => true,
    }
}

/// Most mappings [`pair_runs`] makes of one pair of selections.
pub const MAX_PAIRED_MAPPINGS: usize = 100_000;

/// A regular mapping: the virtual runs and the source runs, per dimension.
pub type RunPair = (Vec<Run>, Vec<Run>);

/// A selection as elements (one side of a pairing): the dataspace's
/// extent, and runs `(offset, length)` of elements in iteration order
/// (offsets in C order of the extent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElementRuns {
    pub dims: Vec<u64>,
    pub runs: Vec<(u64, u64)>,
}

impl ElementRuns {
    /// The elements of the bounded regular hyperslab `runs`, over an
    /// extent just large enough to hold it; `None` past
    /// [`MAX_PAIRED_MAPPINGS`] runs.
    pub fn of_runs(runs: &[Run]) -> Option<ElementRuns> {
        if runs.iter().any(Run::is_unlimited) {
            return None;
        }
        let dims: Vec<u64> = runs.iter().map(Run::reach).collect();
        let (lead, last) = runs.split_at(runs.len().saturating_sub(1));
        let rows: u64 = lead.iter().map(Run::len).product();
        let per_row = last
            .first()
            .map_or(1, |r| if r.step == 1 { 1 } else { r.count });
        if rows.saturating_mul(per_row) > MAX_PAIRED_MAPPINGS as u64 {
            return None;
        }
        let mut out = Vec::new();
        let mut at = vec![0u64; lead.len()];
        for _ in 0..rows {
            let mut off = 0u64;
            for (d, (r, &k)) in lead.iter().zip(&at).enumerate() {
                off = off * dims[d] + r.coord(k);
            }
            let row = dims.last().copied().unwrap_or(1);
            off *= if last.is_empty() { 1 } else { row };
            match last.first() {
                None => out.push((off, 1)),
                Some(r) if r.step == 1 => out.push((off + r.start, r.count)),
                Some(r) => {
                    for c in 0..r.count {
                        out.push((off + r.start + c * r.step, r.block));
                    }
                }
            }
            for d in (0..lead.len()).rev() {
                at[d] += 1;
                if at[d] < lead[d].len() {
                    break;
                }
                at[d] = 0;
            }
        }
        Some(ElementRuns { dims, runs: out })
    }

    /// Its runs cut where rows of the extent end: `(offset, length)`, each
    /// within one row (one index of every dimension but the last).
    fn rows(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let row = self.dims.last().copied().unwrap_or(1).max(1);
        self.runs.iter().flat_map(move |&(off, len)| {
            let mut at = off;
            let end = off + len;
            std::iter::from_fn(move || {
                (at < end).then(|| {
                    let n = (row - at % row).min(end - at);
                    let piece = (at, n);
                    at += n;
                    piece
                })
            })
        })
    }

    fn coords(&self, mut off: u64) -> Vec<u64> {
        let mut c = vec![0; self.dims.len()];
        for d in (0..self.dims.len()).rev() {
            let n = self.dims[d].max(1);
            c[d] = off % n;
            off /= n;
        }
        c
    }
}

/// Regular mappings `(virtual runs, source runs)` that map the elements
/// of `dst` onto those of `src` one for one in iteration order, as HDF5
/// pairs a virtual selection with its source selection whatever their
/// shapes: irregular hyperslabs (unions of regular ones) and point
/// selections included. Each side is cut into pieces of rows, cut again
/// where the other side's end, and consecutive pieces evenly spaced along
/// one dimension on both sides are joined into one regular mapping.
///
/// # Errors
/// Sides of different numbers of elements; more than
/// [`MAX_PAIRED_MAPPINGS`] mappings needed.
pub fn pair_runs(
    dst: &ElementRuns,
    src: &ElementRuns,
) -> std::result::Result<Vec<RunPair>, String> {
    let count = |side: &ElementRuns| side.runs.iter().map(|r| r.1).sum::<u64>();
    let (nd, ns) = (count(dst), count(src));
    if nd != ns {
        return Err(format!(
            "the virtual selection has {nd} elements and the source selection {ns}"
        ));
    }
    let mut out = Vec::new();
    let mut group: Option<Group> = None;
    let (mut a, mut b) = (dst.rows(), src.rows());
    let (mut pa, mut pb) = (a.next(), b.next());
    while let (Some((oa, la)), Some((ob, lb))) = (pa, pb) {
        let n = la.min(lb);
        let piece = Piece {
            dst: dst.coords(oa),
            src: src.coords(ob),
            len: n,
        };
        let joined = group.as_mut().is_some_and(|g| g.extend(&piece));
        if !joined {
            if let Some(g) = group.replace(Group::of(piece)) {
                if out.len() == MAX_PAIRED_MAPPINGS {
                    return Err(format!(
                        "the selections pair up in more than {MAX_PAIRED_MAPPINGS} regular \
                         pieces; map them as fewer regular hyperslabs"
                    ));
                }
                out.push(g.runs());
            }
        }
        pa = if la > n {
            Some((oa + n, la - n))
        } else {
            a.next()
        };
        pb = if lb > n {
            Some((ob + n, lb - n))
        } else {
            b.next()
        };
    }
    if let Some(g) = group {
        out.push(g.runs());
    }
    Ok(out)
}

/// A piece of a row on each side, of `len` elements along the last
/// dimension, starting at `dst` and `src`.
struct Piece {
    dst: Vec<u64>,
    src: Vec<u64>,
    len: u64,
}

/// `count` pieces of one length, each `dst_step` (`src_step`) on from the
/// one before along one dimension of each side: a regular hyperslab on
/// each.
struct Group {
    first: Piece,
    last_dst: Vec<u64>,
    last_src: Vec<u64>,
    count: u64,
    /// (dimension, step) of each side, once there are two pieces.
    steps: Option<((usize, u64), (usize, u64))>,
}

impl Group {
    fn of(p: Piece) -> Group {
        Group {
            last_dst: p.dst.clone(),
            last_src: p.src.clone(),
            first: p,
            count: 1,
            steps: None,
        }
    }

    /// Joins `p` if it goes on evenly from the pieces before.
    fn extend(&mut self, p: &Piece) -> bool {
        if p.len != self.first.len {
            return false;
        }
        // The one dimension `to` is on from `from` along, and by how much;
        // along the last, a step of at least the pieces' length.
        let along = |from: &[u64], to: &[u64]| -> Option<(usize, u64)> {
            let mut moved = from.iter().zip(to).enumerate().filter(|(_, (a, b))| a != b);
            let (d, (&a, &b)) = moved.next()?;
            if moved.next().is_some() || b < a {
                return None;
            }
            let step = b - a;
            (d + 1 < from.len() || step >= p.len).then_some((d, step))
        };
        let (Some(sd), Some(ss)) = (along(&self.last_dst, &p.dst), along(&self.last_src, &p.src))
        else {
            return false;
        };
        match self.steps {
            Some(steps) if steps != (sd, ss) => return false,
            Some(_) => {}
            None => {
                // Both sides of one shape: pieces of more than one element
                // stacked along a leading dimension on one side and laid
                // end to end along the last on the other are not.
                let along_last = |d: usize, at: &[u64]| d + 1 == at.len();
                if p.len > 1 && along_last(sd.0, &p.dst) != along_last(ss.0, &p.src) {
                    return false;
                }
                self.steps = Some((sd, ss));
            }
        }
        self.last_dst.clone_from(&p.dst);
        self.last_src.clone_from(&p.src);
        self.count += 1;
        true
    }

    fn runs(&self) -> (Vec<Run>, Vec<Run>) {
        let side = |start: &[u64], step: Option<(usize, u64)>| -> Vec<Run> {
            let last = start.len().saturating_sub(1);
            (0..start.len())
                .map(|d| {
                    let len = if d == last { self.first.len } else { 1 };
                    let made = match step {
                        Some((g, s)) if g == d => Run::new(start[d], s, self.count, len),
                        _ => Run::new(start[d], 1, len, 1),
                    };
                    // (Valid by construction: steps are at least a piece.)
                    made.expect("a regular piece")
                })
                .collect()
        };
        (
            side(&self.first.dst, self.steps.map(|s| s.0)),
            side(&self.first.src, self.steps.map(|s| s.1)),
        )
    }
}

/// A source name as the layout stores it → the name: HDF5 reserves `%`
/// (`%b` is a block number in unlimited mappings; `%%` a percent sign).
pub fn source_name(name: &str) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars();
    while let Some(c) = chars.next() {
        if c == '%' {
            match chars.next() {
                Some('%') => out.push('%'),
                _ => {
                    return Err(format!(
                        "{name}: a printf-style source name (h5lake maps sources named one by one)"
                    ))
                }
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// A name → as the layout stores it.
pub fn stored_source_name(name: &str) -> String {
    name.replace('%', "%%")
}

/// One mapping: the hyperslab `src` of the dataset at `path` in `store`
/// (this store when `None`) is the hyperslab `dst` of the virtual dataset.
/// A source in an HDF5 `file` is linked into this store when the mapping
/// is made (an anonymous dataset, `id`; `None` if the file or dataset was
/// missing then).
#[derive(Clone, Debug)]
pub struct Mapping {
    pub store: Option<String>,
    pub path: String,
    pub file: Option<String>,
    /// The source file's name as the mapping was given it (relative names
    /// are kept, as HDF5 keeps them), when that is not `file` itself.
    pub file_name: Option<String>,
    pub id: Option<String>,
    /// Why a source in an HDF5 file could not be linked when the mapping
    /// was made (no `id`), when that was known.
    pub why: Option<String>,
    pub src: Vec<Run>,
    pub dst: Vec<Run>,
    /// For each virtual dimension, the source dimension it runs along
    /// (`None` where the virtual run holds one index).
    pairs: Vec<Option<usize>>,
    /// Of an unlimited mapping, its unlimited virtual and source
    /// dimensions: it reaches as far along them as the source's extent.
    unlimited: Option<(usize, usize)>,
    /// Of a mapping over a series of sources named printf-style.
    pub printf: Option<Printf>,
}

/// A mapping whose source names hold HDF5's `%b` (printf-style): its
/// virtual selection is blocks without end along `dim` (`len` indices
/// each, `stride` apart, the first at `start`), and block `b` is the
/// source selection of the source whose names have `b` for `%b`. Stored
/// with `"printf": true` and the names as HDF5 states them (`%%` for `%`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Printf {
    pub dim: usize,
    pub start: u64,
    pub stride: u64,
    pub len: u64,
    /// `None` for the series as stored; the block of one mapping of it.
    pub block: Option<u64>,
}

/// Blocks of one printf-style mapping looked for at most.
pub const MAX_PRINTF_BLOCKS: u64 = 100_000;

/// A printf-style name with block `b`: `%b` is the number, `%%` a `%`.
pub fn printf_name(name: &str, b: u64) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut chars = name.chars();
    while let Some(c) = chars.next() {
        match (c, c == '%') {
            (_, true) => match chars.next() {
                Some('b') => out.push_str(&b.to_string()),
                Some(other) => out.push(other),
                None => out.push('%'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

/// The stored virtual selection of a printf-style series from HDF5's
/// regular hyperslab `(start, stride, count, block)` (one value per
/// dimension each): blocks without end along exactly one dimension, every
/// dimension kept as stated (HDF5 gives them back so).
///
/// # Errors
/// No unlimited dimension, or more than one; overlapping blocks.
pub fn printf_selection(
    start: &[u64],
    stride: &[u64],
    count: &[u64],
    block: &[u64],
) -> std::result::Result<Vec<Value>, String> {
    if count.iter().filter(|&&c| c == Run::UNLIMITED).count() != 1 {
        return Err("the virtual selection is not unlimited along exactly one dimension".into());
    }
    (0..start.len())
        .map(|d| {
            let c = if count[d] == Run::UNLIMITED {
                Value::Null
            } else {
                json!(count[d])
            };
            let stated = json!([start[d], stride[d], c, block[d]]);
            Run::of_json(&stated).map(|_| stated)
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| "an overlapping hyperslab".to_string())
}

/// Whether a name as HDF5 states it is printf-style (holds `%b`).
pub fn is_printf_name(name: &str) -> bool {
    source_name(name).is_err()
}

impl Mapping {
    /// Block `b` of a printf-style mapping: an ordinary mapping of the
    /// source named with `b`.
    /// A block of another shape than its source selection (of as many
    /// elements) is several mappings, paired element for element.
    fn printf_block(&self, p: Printf, b: u64) -> Option<Vec<Mapping>> {
        let mut m = self.clone();
        let start = p.start.checked_add(b.checked_mul(p.stride)?)?;
        m.dst[p.dim] = Run::new(start, 1, p.len, 1)?;
        m.printf = Some(Printf {
            block: Some(b),
            ..p
        });
        let name = |s: &Option<String>| s.as_deref().map(|s| printf_name(s, b));
        m.store = name(&self.store);
        m.file = name(&self.file);
        m.file_name = name(&self.file_name);
        m.path = printf_name(&self.path, b);
        if let Some(pairs) = pair_dims(&m.src, &m.dst) {
            m.pairs = pairs;
            return Some(vec![m]);
        }
        let pieces = pair_runs(
            &ElementRuns::of_runs(&m.dst)?,
            &ElementRuns::of_runs(&m.src)?,
        );
        pieces
            .ok()?
            .into_iter()
            .map(|(dst, src)| {
                let mut piece = m.clone();
                piece.pairs = pair_dims(&src, &dst)?;
                (piece.dst, piece.src) = (dst, src);
                Some(piece)
            })
            .collect()
    }

    /// Whether this is a printf-style series, not yet one block of it.
    fn is_printf_series(&self) -> bool {
        self.printf.is_some_and(|p| p.block.is_none())
    }
}

impl Mapping {
    /// Per dimension, the elements of the selection `sels` this mapping
    /// covers, with the source indices they pair with; `None` when it
    /// covers none.
    fn hits(&self, sels: &[DimSel]) -> Option<Vec<Hits>> {
        sels.iter()
            .zip(&self.dst)
            .zip(&self.pairs)
            .map(|((s, &r), p)| dim_hits(s, r, p.map(|q| self.src[q])))
            .collect()
    }

    /// `hits` less what lies past the extent `dims` of the source (none of
    /// it when a single index it maps is past it): what the source holds.
    fn clip_to(&self, hits: &mut [Hits], dims: &[u64]) {
        for (d, h) in hits.iter_mut().enumerate() {
            if let Some(q) = self.pairs[d] {
                *h = std::mem::replace(
                    h,
                    Hits::Listed {
                        out: vec![],
                        src: vec![],
                    },
                )
                .clip(dims[q]);
            }
        }
        let unpaired_outside = self
            .src
            .iter()
            .enumerate()
            .any(|(q, r)| r.len() == 1 && !self.pairs.contains(&Some(q)) && r.start >= dims[q]);
        if unpaired_outside {
            hits.iter_mut().for_each(|h| *h = h.clone().clip(0));
        }
    }

    /// The selection of the source `hits` pair with.
    fn source_selection(&self, hits: &[Hits]) -> Selection {
        Selection::Orthogonal(
            self.src
                .iter()
                .enumerate()
                .map(
                    |(q, r)| match self.pairs.iter().position(|&x| x == Some(q)) {
                        Some(d) => hits[d].src_sel(),
                        None => DimSel::Slice {
                            start: r.start,
                            count: 1,
                            step: 1,
                        },
                    },
                )
                .collect(),
        )
    }
}

/// The mappings of a virtual dataset.
#[derive(Debug)]
pub struct VirtualMap {
    pub mappings: Vec<Mapping>,
    /// Whether no two mappings' boxes overlap (reads may then run at once).
    disjoint: bool,
    /// Whether some mapping is unlimited: the extent then follows the
    /// sources' extents, and reads take the map [`VirtualMap::resolve`]s to.
    pub unlimited: bool,
    /// How the dataset was opened (HDF5's dataset access list).
    pub access: VirtualAccess,
}

/// What a dataset access list says of a virtual dataset's sources.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct VirtualAccess {
    /// Where sources named by relative paths are looked for before beside
    /// this store (`H5Pset_virtual_prefix`; `${ORIGIN}` is this store's
    /// directory).
    pub prefix: Option<String>,
    /// How many missing sources in a row a printf-style series may have
    /// before it ends (`H5Pset_virtual_printf_gap`; 0: the first missing
    /// one ends it).
    pub printf_gap: u64,
}

impl VirtualMap {
    /// The mappings a dataset document declares, checked against its
    /// extent `dims`; `None` for a dataset that is not virtual.
    ///
    /// # Errors
    /// Malformed mappings, selections outside the extent, or source and
    /// virtual selections of different shapes.
    pub fn of_doc(doc: &Value, dims: &[u64]) -> Result<Option<Arc<Self>>> {
        let Some(v) = doc.pointer(VIRTUAL_KEY) else {
            return Ok(None);
        };
        let bad = |m: String| EngineError::Invalid(format!("virtual dataset: {m}"));
        let list = v
            .as_array()
            .ok_or_else(|| bad("the mappings are a list".into()))?;
        let mut mappings = Vec::with_capacity(list.len());
        for (i, mp) in list.iter().enumerate() {
            let runs = |key: &str| -> Result<Vec<Run>> {
                mp.get(key)
                    .and_then(Value::as_array)
                    .and_then(|a| a.iter().map(Run::of_json).collect::<Option<Vec<_>>>())
                    .filter(|r| !r.is_empty())
                    .ok_or_else(|| {
                        bad(format!(
                            "mapping {i}: {key} is a list of [start, step, count] or \
                             [start, step, count, block] per dimension (each at least 1; \
                             blocks do not overlap)"
                        ))
                    })
            };
            let (src, mut dst) = (runs("src")?, runs("dst")?);
            let printf = match mp.get("printf") {
                Some(Value::Bool(true)) => {
                    Some(printf_of(mp, &dst, &src).map_err(|e| bad(format!("mapping {i}: {e}")))?)
                }
                None | Some(Value::Bool(false)) | Some(Value::Null) => None,
                Some(other) => return Err(bad(format!("mapping {i}: printf {other}"))),
            };
            if let Some(p) = printf {
                // (Checked as its first block: the shapes must pair.)
                dst[p.dim] = Run::new(p.start, 1, p.len, 1)
                    .ok_or_else(|| bad(format!("mapping {i}: a printf-style block of nothing")))?;
            }
            let path = mp
                .get("path")
                .and_then(Value::as_str)
                .filter(|p| p.starts_with('/'))
                .ok_or_else(|| bad(format!("mapping {i}: path is the source's absolute path")))?;
            let store = match mp.get("store") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
                Some(other) => return Err(bad(format!("mapping {i}: store {other}"))),
            };
            if dst.len() != dims.len() {
                return Err(bad(format!(
                    "mapping {i} selects {} dimensions of a dataset of {}",
                    dst.len(),
                    dims.len()
                )));
            }
            let unlimited_dim = |runs: &[Run], side: &str| -> Result<Option<usize>> {
                let mut found = runs.iter().enumerate().filter(|(_, r)| r.is_unlimited());
                let first = found.next().map(|(q, _)| q);
                if found.next().is_some() {
                    return Err(bad(format!(
                        "mapping {i}: the {side} selection is unlimited along more than one \
                         dimension"
                    )));
                }
                Ok(first)
            };
            let unlimited = match (
                unlimited_dim(&dst, "virtual")?,
                unlimited_dim(&src, "source")?,
            ) {
                (None, None) => None,
                (Some(d), Some(q)) => Some((d, q)),
                (Some(_), None) => {
                    return Err(bad(format!(
                        "mapping {i}: an unlimited virtual selection needs an unlimited source \
                         selection (printf-style source names are not supported)"
                    )))
                }
                (None, Some(_)) => {
                    return Err(bad(format!(
                        "mapping {i}: an unlimited source selection needs an unlimited virtual \
                         selection"
                    )))
                }
            };
            if let Some((d, r)) = dst.iter().enumerate().find(|(d, r)| {
                // (A printf-style series grows the extent as found.)
                !r.is_unlimited() && r.last() >= dims[*d] && printf.is_none_or(|p| p.dim != *d)
            }) {
                return Err(bad(format!(
                    "mapping {i} reaches index {} of dimension {d}, of extent {}",
                    r.last(),
                    dims[d]
                )));
            }
            let shape = |r: &[Run]| r.iter().map(Run::len).collect::<Vec<_>>();
            let elements = |r: &[Run]| r.iter().map(Run::len).product::<u64>();
            // (A printf-style block of another shape than its source
            // selection is paired element for element when read.)
            let paired = pair_dims(&src, &dst).or_else(|| {
                (printf.is_some() && elements(&src) == elements(&dst))
                    .then(|| vec![None; dst.len()])
            });
            let mut pairs = paired.ok_or_else(|| {
                bad(format!(
                    "mapping {i}: the source selection {:?} and the virtual selection {:?} \
                     differ in shape (dimensions of one index aside)",
                    shape(&src),
                    shape(&dst)
                ))
            })?;
            let text = |key: &str| -> Result<Option<String>> {
                match mp.get(key) {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
                    Some(other) => Err(bad(format!("mapping {i}: {key} {other}"))),
                }
            };
            let (file, id) = (text("file")?, text("id")?);
            if id.is_some() && (file.is_none() || store.is_some() || printf.is_some()) {
                return Err(bad(format!(
                    "mapping {i}: an id names the link to an HDF5 file's dataset in this store"
                )));
            }
            if let Some(p) = printf {
                // The series as stored: blocks without end.
                dst[p.dim] = Run::new(p.start, p.stride, Run::UNLIMITED, p.len)
                    .ok_or_else(|| bad(format!("mapping {i}: printf-style blocks overlap")))?;
                pairs[p.dim] = None;
            }
            mappings.push(Mapping {
                store,
                file,
                file_name: text("file_name")?,
                id,
                why: text("why")?,
                path: path.to_string(),
                src,
                dst,
                pairs,
                unlimited,
                printf,
            });
        }
        Ok(Some(Arc::new(VirtualMap::new(mappings))))
    }

    fn new(mappings: Vec<Mapping>) -> Self {
        let unlimited = mappings
            .iter()
            .any(|m| m.unlimited.is_some() || m.is_printf_series());
        let disjoint = !unlimited
            && mappings.len() <= MAX_OVERLAP_CHECK
            && mappings.iter().enumerate().all(|(i, a)| {
                mappings[i + 1..].iter().all(|b| {
                    a.dst
                        .iter()
                        .zip(&b.dst)
                        .any(|(x, y)| x.last() < y.start || y.last() < x.start)
                })
            });
        VirtualMap {
            mappings,
            disjoint,
            unlimited,
            access: VirtualAccess::default(),
        }
    }

    /// The same map, read as `access` says.
    pub fn with_access(&self, access: &VirtualAccess) -> VirtualMap {
        VirtualMap {
            mappings: self.mappings.clone(),
            disjoint: self.disjoint,
            unlimited: self.unlimited,
            access: access.clone(),
        }
    }

    /// The extent and the bounded mappings of a map with unlimited ones,
    /// given the extents of their sources (`None`: missing), as HDF5 makes
    /// them under its default view (the last available element): an
    /// unlimited mapping reaches as far as its source's extent holds
    /// elements, and the virtual extent along an unlimited dimension is the
    /// farthest such reach — but at least what the bounded mappings need.
    /// Other dimensions keep `dims`.
    pub fn resolve(&self, dims: &[u64], sources: &[Option<Vec<u64>>]) -> (Vec<u64>, VirtualMap) {
        let mut need = vec![0u64; dims.len()];
        let mut reach: Vec<Option<u64>> = vec![None; dims.len()];
        let mut out = Vec::with_capacity(self.mappings.len());
        for (i, mp) in self.mappings.iter().enumerate() {
            // A printf-style series reaches as far as the blocks found of
            // it (given as mappings of their own, after it).
            if let Some(p) = mp.printf {
                let far = match p.block {
                    None => 0,
                    Some(_) => mp.dst[p.dim].last() + 1,
                };
                reach[p.dim] = Some(reach[p.dim].map_or(far, |x| x.max(far)));
                if p.block.is_none() {
                    continue;
                }
            }
            for (d, r) in mp.dst.iter().enumerate() {
                if !r.is_unlimited() {
                    need[d] = need[d].max(r.last() + 1);
                }
            }
            let Some((d, q)) = mp.unlimited else {
                out.push(mp.clone());
                continue;
            };
            let n = sources
                .get(i)
                .and_then(Option::as_ref)
                .and_then(|s| s.get(q))
                .map_or(0, |&e| mp.src[q].len_below(e));
            let far = if n == 0 {
                0
            } else {
                mp.dst[d].coord(n - 1) + 1
            };
            reach[d] = Some(reach[d].map_or(far, |x| x.max(far)));
            for (v, s) in mp.dst[d].first(&mp.src[q], n) {
                let mut m = mp.clone();
                m.dst[d] = v;
                m.src[q] = s;
                m.unlimited = None;
                // (Equal lengths by construction: the pairing stands.)
                m.pairs = pair_dims(&m.src, &m.dst).unwrap_or_else(|| mp.pairs.clone());
                out.push(m);
            }
        }
        let dims = (0..dims.len())
            .map(|d| reach[d].map_or(dims[d], |r| r.max(need[d])))
            .collect();
        let mut map = VirtualMap::new(out);
        map.access.clone_from(&self.access);
        (dims, map)
    }

    /// The mappings as stored.
    pub fn to_json(&self) -> Value {
        Value::Array(
            self.mappings
                .iter()
                .map(|m| {
                    let mut dst: Vec<Value> = m.dst.iter().map(|r| r.to_json()).collect();
                    if let Some(p) = m.printf.filter(|p| p.block.is_none()) {
                        dst[p.dim] = json!([p.start, p.stride, null, p.len]);
                    }
                    let mut out = json!({
                        "store": m.store,
                        "path": m.path,
                        "file": m.file,
                        "file_name": m.file_name,
                        "id": m.id,
                        "why": m.why,
                        "src": m.src.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
                        "dst": dst,
                    });
                    if m.is_printf_series() {
                        out["printf"] = json!(true);
                    }
                    out
                })
                .collect(),
        )
    }
}

/// The printf-style series a stored mapping `mp` declares: its virtual
/// selection `dst` unlimited along one dimension (read from the stored
/// `[start, stride, null, len]` as given: a block's length is not
/// normalised away), its source selection `src` bounded.
fn printf_of(mp: &Value, dst: &[Run], src: &[Run]) -> std::result::Result<Printf, String> {
    let mut found = dst.iter().enumerate().filter(|(_, r)| r.is_unlimited());
    let (Some((dim, _)), None) = (found.next(), found.next()) else {
        return Err("a printf-style mapping is unlimited along one virtual dimension".into());
    };
    if src.iter().any(Run::is_unlimited) {
        return Err("a printf-style mapping has a bounded source selection".into());
    }
    let raw = &mp["dst"][dim];
    let at = |k: usize| raw.get(k).and_then(Value::as_u64);
    let (start, stride, len) = (at(0), at(1), at(3).or(Some(1)));
    match (start, stride, len) {
        (Some(start), Some(stride), Some(len)) if len >= 1 && stride >= len => Ok(Printf {
            dim,
            start,
            stride,
            len,
            block: None,
        }),
        _ => Err(format!("a printf-style virtual selection {raw}")),
    }
}

/// Pairs the virtual dimensions of more than one index with the source's,
/// in order; `None` when their counts differ.
fn pair_dims(src: &[Run], dst: &[Run]) -> Option<Vec<Option<usize>>> {
    let s: Vec<usize> = (0..src.len()).filter(|&q| src[q].len() > 1).collect();
    let d: Vec<usize> = (0..dst.len()).filter(|&q| dst[q].len() > 1).collect();
    if s.len() != d.len()
        || s.iter()
            .zip(&d)
            .any(|(&a, &b)| src[a].len() != dst[b].len())
    {
        return None;
    }
    let mut pairs = vec![None; dst.len()];
    for (&a, &b) in s.iter().zip(&d) {
        pairs[b] = Some(a);
    }
    Some(pairs)
}

/// The part of one dimension of a read that one mapping serves: output
/// positions and the source coordinates they come from.
#[derive(Clone, Debug, PartialEq)]
enum Hits {
    /// Outputs `out..out + count`, from `src, src + step, …`.
    Regular {
        out: u64,
        src: u64,
        step: u64,
        count: u64,
    },
    Listed {
        out: Vec<u64>,
        src: Vec<u64>,
    },
}

impl Hits {
    fn len(&self) -> u64 {
        match self {
            Hits::Regular { count, .. } => *count,
            Hits::Listed { out, .. } => out.len() as u64,
        }
    }

    /// Lists as a regular run where they are one.
    fn compact(out: Vec<u64>, src: Vec<u64>) -> Self {
        let regular = out.windows(2).all(|w| w[1] == w[0] + 1)
            && src.len() >= 2
            && src.windows(2).all(|w| w[1] - w[0] == src[1] - src[0]);
        match (regular, out.first(), src.first()) {
            (true, Some(&o), Some(&s)) => Hits::Regular {
                out: o,
                src: s,
                step: src[1] - src[0],
                count: out.len() as u64,
            },
            _ => Hits::Listed { out, src },
        }
    }

    /// Keeps the hits whose source coordinate is below `extent`.
    fn clip(self, extent: u64) -> Self {
        match self {
            Hits::Regular {
                out,
                src,
                step,
                count,
            } => Hits::Regular {
                out,
                src,
                step,
                count: if src >= extent {
                    0
                } else {
                    count.min((extent - 1 - src) / step + 1)
                },
            },
            Hits::Listed { mut out, mut src } => {
                let keep = src.partition_point(|&s| s < extent);
                out.truncate(keep);
                src.truncate(keep);
                Hits::Listed { out, src }
            }
        }
    }

    fn src_sel(&self) -> DimSel {
        match self {
            Hits::Regular {
                src, step, count, ..
            } => DimSel::Slice {
                start: *src,
                count: *count,
                step: *step,
            },
            Hits::Listed { src, .. } => DimSel::Indices(src.clone()),
        }
    }

    /// The output positions, as a contiguous range when they are one.
    fn out_range(&self) -> Option<(u64, u64)> {
        match self {
            Hits::Regular { out, count, .. } => Some((*out, *count)),
            Hits::Listed { out, .. } => {
                let first = *out.first()?;
                out.windows(2)
                    .all(|w| w[1] == w[0] + 1)
                    .then_some((first, out.len() as u64))
            }
        }
    }

    fn out_at(&self, j: u64) -> u64 {
        match self {
            Hits::Regular { out, .. } => out + j,
            Hits::Listed { out, .. } => out[j as usize],
        }
    }
}

/// What one mapping serves of a selection `sel_d` of dimension `d`:
/// `run` is the mapping's virtual run there, `src` its paired source run.
fn dim_hits(sel_d: &DimSel, run: Run, src: Option<Run>) -> Option<Hits> {
    let coord = |k: u64| src.map_or(0, |p| p.coord(k));
    // (A source of gapped blocks has no single step: listed below.)
    let src_step = src.map_or(Some(1), |p| (p.block == 1).then_some(p.step));
    let index_of = |x: u64| run.index_of(x);
    let hits = match sel_d {
        DimSel::Slice { start, count, step } if *count > 0 => {
            let (s0, st, c) = (*start, *step, *count);
            let last = s0 + (c - 1) * st;
            if last < run.start || s0 > run.last() {
                return None;
            }
            // The selection's indices inside the run's bounds.
            let lo = if run.start > s0 {
                (run.start - s0).div_ceil(st)
            } else {
                0
            };
            let hi = ((run.last() - s0) / st).min(c - 1);
            if lo > hi {
                return None;
            }
            if let (1, 1, Some(src_step)) = (run.step, run.block, src_step) {
                let k0 = s0 + lo * st - run.start;
                Hits::Regular {
                    out: lo,
                    src: coord(k0),
                    step: st * src_step,
                    count: hi - lo + 1,
                }
            } else {
                let (mut out, mut srcs) = (Vec::new(), Vec::new());
                for i in lo..=hi {
                    if let Some(k) = index_of(s0 + i * st) {
                        out.push(i);
                        srcs.push(coord(k));
                    }
                }
                Hits::compact(out, srcs)
            }
        }
        DimSel::Slice { .. } => return None,
        DimSel::Indices(ix) => {
            let from = ix.partition_point(|&x| x < run.start);
            let (mut out, mut srcs) = (Vec::new(), Vec::new());
            for (i, &x) in ix.iter().enumerate().skip(from) {
                if x > run.last() {
                    break;
                }
                if let Some(k) = index_of(x) {
                    out.push(i as u64);
                    srcs.push(coord(k));
                }
            }
            Hits::compact(out, srcs)
        }
    };
    (hits.len() > 0).then_some(hits)
}

/// A mapping's source, resolved: the domain holding it (`None`: this one)
/// and the dataset.
type Source = (Option<Arc<Domain>>, Arc<DatasetMeta>);

/// A point written through a virtual dataset: its index among the points
/// written, the source it goes to and its coordinates there.
type PointTarget = (usize, Arc<DatasetMeta>, Vec<u64>);

/// What a write through a virtual dataset sends one source: its points'
/// coordinates (one after another) and their values (bytes, or elements).
type SourcePoints<T> = (Arc<DatasetMeta>, Vec<u64>, Vec<T>);

/// Other stores opened for virtual datasets' sources, by location.
#[derive(Default)]
pub(crate) struct SourceStores(Mutex<HashMap<String, Arc<Domain>>>);

/// The blocks of each printf-style series found so far, by dataset,
/// mapping and access: a block found stays found (as libhdf5 keeps a source
/// it opened), and the series is looked for again only past them — not
/// from block 0 at every read.
#[derive(Default)]
pub(crate) struct PrintfSeen(Mutex<HashMap<(String, usize, VirtualAccess), SeenBlocks>>);

/// The blocks of a series found so far: their mappings, and the number of
/// the last.
#[derive(Clone, Default)]
struct SeenBlocks {
    mappings: Vec<Mapping>,
    last: Option<u64>,
    count: u64,
}

/// Why a mapping's source gives less than its selection, for
/// [`Domain::virtual_problems`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceProblem {
    pub mapping: usize,
    pub store: Option<String>,
    pub path: String,
    pub problem: String,
}

impl Domain {
    /// The source of `mp`: `Ok(None)` when its store or dataset is missing
    /// (it then reads as fill, as in HDF5); the problem, as text, in `why`.
    fn virtual_source(
        &self,
        m: &DatasetMeta,
        mp: &Mapping,
        why: &mut String,
    ) -> Result<Option<Source>> {
        let prefix = m
            .virtual_map
            .as_ref()
            .and_then(|v| v.access.prefix.as_deref());
        let dom = match &mp.store {
            None => None,
            Some(given) => {
                let loc = &self.source_location_with(given, prefix);
                let open = self
                    .virtual_stores
                    .0
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(loc)
                    .cloned();
                match open {
                    Some(d) => Some(d),
                    None => {
                        // The same rule as links to files: refused, not opened.
                        self.link_policy().check(loc, None)?;
                        let opts = DomainOptions {
                            link_policy: Some(self.link_policy().clone()),
                            ..DomainOptions::default()
                        };
                        match Domain::open_url_with(loc, OpenMode::Read, &opts) {
                            Ok(d) => {
                                let d = Arc::new(d);
                                self.virtual_stores
                                    .0
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .insert(loc.to_string(), d.clone());
                                Some(d)
                            }
                            Err(EngineError::StoreNotFound(e) | EngineError::NotAStore(e)) => {
                                *why = format!("no store: {e}");
                                return Ok(None);
                            }
                            Err(e) => return Err(e),
                        }
                    }
                }
            }
        };
        let home = dom.as_deref().unwrap_or(self);
        let (dom, src) = match (&mp.file, &mp.id) {
            (Some(made), id) => {
                // (An HDF5 file's dataset, linked into this store: read as
                // the file is now, as libhdf5 reads it. A name given
                // relative is looked for again, as libhdf5 looks for it
                // at each read: a file found elsewhere now is linked anew.)
                let file = match mp.file_name.as_deref() {
                    // ("." is the file of the virtual dataset itself.)
                    Some(given) if given != "." && !std::path::Path::new(given).is_absolute() => {
                        // (Where libhdf5 looks: under $HDF5_VDS_PREFIX,
                        // beside the store, then from the working
                        // directory; found nowhere, it reads as fill, also
                        // when the file the mapping was made with is
                        // still where it was then.)
                        let now = self.source_location_with(given, prefix);
                        let from_cwd = std::path::absolute(given)
                            .map(|p| p.to_string_lossy().into_owned())
                            .unwrap_or_else(|_| now.clone());
                        let found = [now.clone(), from_cwd]
                            .into_iter()
                            .find(|p| std::path::Path::new(p).is_file());
                        match found {
                            Some(p) if same_file(&p, made) => made.clone(),
                            Some(p) => {
                                if let Err(e) = self.linked_files.target(&p) {
                                    *why = format!("{p}: {e}");
                                    return Ok(None);
                                }
                                p
                            }
                            None => now,
                        }
                    }
                    _ => made.clone(),
                };
                let file = &file;
                let stored = match id {
                    Some(id) if file == made => Some(home.dataset(id)?),
                    _ => None,
                };
                match self.hdf5_source_now(file, &mp.path, stored.as_deref())? {
                    Current::Stored => match stored {
                        Some(src) => (dom, src),
                        None => {
                            *why = match &mp.why {
                                Some(reason) => format!("{file}: {reason}"),
                                None if !std::path::Path::new(file).exists() => {
                                    format!("{file}: no such file")
                                }
                                None => format!(
                                    "{file} had no dataset {} when the mapping was made",
                                    mp.path
                                ),
                            };
                            return Ok(None);
                        }
                    },
                    Current::Missing(reason) => {
                        *why = reason;
                        return Ok(None);
                    }
                    Current::Unlinkable(reason) => {
                        *why = reason;
                        return Ok(None);
                    }
                    Current::Relinked(d, src) => (Some(d), src),
                }
            }
            (None, _) => {
                let Some(id) = home.resolve_path(&mp.path)? else {
                    *why = format!("no dataset {}", mp.path);
                    return Ok(None);
                };
                if dom.is_none() && id == m.id {
                    return Err(EngineError::Invalid(format!(
                        "virtual dataset {} maps itself",
                        m.id
                    )));
                }
                let src = home.dataset(&id)?;
                // A source whose values stay in a file deleted since the
                // mapping was made reads as fill, as libhdf5 reads a
                // missing source file.
                if let Some(link) = &src.link {
                    if let Ok(crate::link_policy::LinkTarget::Local(path)) =
                        home.linked_files.target(&link.file_uri)
                    {
                        if !path.exists() {
                            *why = format!("{} is missing", path.display());
                            return Ok(None);
                        }
                    }
                }
                (dom, src)
            }
        };
        if src.dtype != m.dtype && read_conversion(&src.dtype, &m.dtype).is_none() {
            return Err(EngineError::WrongType(format!(
                "virtual dataset {}: source {} has type {}, the virtual dataset {} \
                 (h5lake converts between numeric types only)",
                m.id,
                mp.path,
                src.dtype.to_json(),
                m.dtype.to_json()
            )));
        }
        if src.dims.len() != mp.src.len() {
            return Err(EngineError::Invalid(format!(
                "virtual dataset {}: source {} has {} dimensions, its selection {}",
                m.id,
                mp.path,
                src.dims.len(),
                mp.src.len()
            )));
        }
        if let Some((q, r)) = mp
            .src
            .iter()
            .enumerate()
            .find(|(q, r)| !r.is_unlimited() && r.last() >= src.dims[*q])
        {
            *why = format!(
                "{} has extent {} along dimension {q}, the mapping reads up to index {}",
                mp.path,
                src.dims[q],
                r.last()
            );
        }
        Ok(Some((dom, src)))
    }

    /// Where the store a mapping names is, found as libhdf5 finds a
    /// virtual dataset's source file (less the working directory, which a
    /// server's is not the user's): a URL or an absolute path as it is; a
    /// relative path under a directory of `$HDF5_VDS_PREFIX` (`:`-separated)
    /// holding it, else beside this store — so that a directory of stores
    /// mapped by relative names can be moved whole.
    pub fn source_location(&self, given: &str) -> String {
        self.source_location_with(given, None)
    }

    /// [`Domain::source_location`], looking under the dataset access
    /// list's virtual `prefix` too: after `$HDF5_VDS_PREFIX`, before
    /// beside this store, as libhdf5 looks.
    pub fn source_location_with(&self, given: &str, prefix: Option<&str>) -> String {
        if given.starts_with("s3://") || std::path::Path::new(given).is_absolute() {
            return given.to_string();
        }
        let here = self.location();
        let rel = given.trim_start_matches("./");
        if here.starts_with("s3://") {
            return match here.trim_end_matches('/').rsplit_once('/') {
                Some((dir, _)) => format!("{dir}/{rel}"),
                None => given.to_string(),
            };
        }
        let here = std::path::Path::new(here.trim_end_matches('/'));
        let here = std::path::absolute(here).unwrap_or_else(|_| here.to_path_buf());
        let origin = here.parent().unwrap_or(std::path::Path::new("/"));
        // (`${ORIGIN}` stands for the directory of the virtual dataset's
        // store, as for the directory of its file in libhdf5.)
        // (A relative prefix is taken from the working directory, as
        // libhdf5 takes it.)
        let under = |p: &str| {
            let dir = std::path::PathBuf::from(p.replace("${ORIGIN}", &origin.to_string_lossy()));
            std::path::absolute(&dir).unwrap_or(dir).join(rel)
        };
        let env = std::env::var("HDF5_VDS_PREFIX").unwrap_or_default();
        let found = env
            .split(':')
            .filter(|p| !p.is_empty())
            .map(under)
            .chain(prefix.filter(|p| !p.is_empty()).map(under))
            .find(|p| p.exists());
        match found {
            Some(p) => p.to_string_lossy().into_owned(),
            None => origin.join(rel).to_string_lossy().into_owned(),
        }
    }

    /// The id of the object at the absolute `path`, following hard and
    /// soft links; `None` when nothing is there.
    ///
    /// # Errors
    /// I/O trouble; an external link on the way (not followed here).
    pub fn resolve_path(&self, path: &str) -> Result<Option<String>> {
        self.resolve_path_from(self.root_id(), path)
    }

    /// The id of the object at `path`, absolute or relative to the group
    /// `start`, following hard and soft links; `None` when nothing is there
    /// (a cycle of soft links included).
    ///
    /// # Errors
    /// I/O trouble; an external link on the way (not followed here).
    pub fn resolve_path_from(&self, start: &str, path: &str) -> Result<Option<String>> {
        match self.walk_path(start, path, true)? {
            crate::PathEnd::Found(id) => Ok(Some(id)),
            crate::PathEnd::ExternalLink { .. } => Err(EngineError::Invalid(format!(
                "{path}: an external link on the way (not followed here)"
            ))),
            _ => Ok(None),
        }
    }

    /// Why mappings of the virtual dataset `id` read (partly) as fill:
    /// missing stores or datasets, sources smaller than their selections.
    ///
    /// # Errors
    /// Unknown or non-virtual dataset; sources that cannot be mapped at
    /// all (another type, refused by the link policy).
    pub fn virtual_problems(&self, id: &str) -> Result<Vec<SourceProblem>> {
        // (The mappings as made, not as resolved: numbered as the user made
        // them, and an unlimited one whose source is missing is named too.)
        let _level = nesting::deeper(id)?;
        let m = self.stored_dataset(id)?;
        let vm = m
            .virtual_map
            .clone()
            .ok_or_else(|| EngineError::WrongType(format!("{id} is not a virtual dataset")))?;
        let found = Mutex::new(Vec::new());
        nesting::tasks(vm.mappings.len(), |i| {
            let mp = &vm.mappings[i];
            if mp.is_printf_series() {
                // (Its blocks are looked for until one is missing: that
                // one ends it, it is not a problem.)
                return Ok(());
            }
            let mut why = String::new();
            self.virtual_source(&m, mp, &mut why)?;
            if !why.is_empty() {
                found
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(SourceProblem {
                        mapping: i,
                        store: mp.store.clone(),
                        path: mp.path.clone(),
                        problem: why,
                    });
            }
            Ok(())
        })?;
        let mut found = found.into_inner().unwrap_or_else(|e| e.into_inner());
        found.sort_by_key(|p| p.mapping);
        Ok(found)
    }

    /// The dataset `m` (virtual, with unlimited mappings) as it stands
    /// now: its extent and mappings resolved against its sources' current
    /// extents.
    ///
    /// # Errors
    /// Sources that cannot be mapped at all (another type, refused by the
    /// link policy); I/O trouble.
    pub(crate) fn live_virtual(&self, m: &DatasetMeta, vm: &VirtualMap) -> Result<DatasetMeta> {
        let _level = nesting::deeper(&m.id)?;
        let with_blocks;
        let vm = if vm.mappings.iter().any(Mapping::is_printf_series) {
            with_blocks = self.printf_blocks(m, vm)?;
            &with_blocks
        } else {
            vm
        };
        let extents = Mutex::new(vec![None; vm.mappings.len()]);
        let unlimited: Vec<usize> = (0..vm.mappings.len())
            .filter(|&i| vm.mappings[i].unlimited.is_some())
            .collect();
        nesting::tasks(unlimited.len(), |k| {
            let i = unlimited[k];
            let mut why = String::new();
            if let Some((_, src)) = self.virtual_source(m, &vm.mappings[i], &mut why)? {
                extents.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(src.dims.clone());
            }
            Ok(())
        })?;
        let extents = extents.into_inner().unwrap_or_else(|e| e.into_inner());
        let (dims, map) = vm.resolve(&m.dims, &extents);
        let mut live = m.clone();
        if let h5lake_types::Shape::Simple { dims: d, .. } = &mut live.shape {
            d.clone_from(&dims);
        }
        live.dims = dims;
        live.virtual_map = Some(Arc::new(map));
        Ok(live)
    }

    /// `vm` with the blocks of its printf-style series that are there now
    /// added after them, each as a mapping of its own: blocks `0, 1, …`
    /// looked for until more than the access list's printf gap are missing
    /// in a row (HDF5's last available view).
    ///
    /// # Errors
    /// More than [`MAX_PRINTF_BLOCKS`] blocks of one series; sources that
    /// cannot be mapped at all.
    fn printf_blocks(&self, m: &DatasetMeta, vm: &VirtualMap) -> Result<VirtualMap> {
        let mut out = vm.mappings.clone();
        for (i, mp) in vm.mappings.iter().enumerate() {
            let Some(p) = mp.printf.filter(|p| p.block.is_none()) else {
                continue;
            };
            let key = (m.id.clone(), i, vm.access.clone());
            let mut seen = self
                .printf_seen
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&key)
                .cloned()
                .unwrap_or_default();
            let mut missing = 0;
            let mut b = seen.last.map_or(0, |b| b + 1);
            loop {
                let Some(block) = self.printf_block(mp, p, b, &vm.access) else {
                    break;
                };
                let mut why = String::new();
                if self.virtual_source(m, &block[0], &mut why)?.is_none() {
                    missing += 1;
                    if missing > vm.access.printf_gap {
                        break;
                    }
                } else {
                    if seen.count == MAX_PRINTF_BLOCKS {
                        return Err(EngineError::Invalid(format!(
                            "virtual dataset {}: more than {MAX_PRINTF_BLOCKS} sources of the \
                             printf-style series {}",
                            m.id,
                            mp.file_name
                                .as_deref()
                                .or(mp.store.as_deref())
                                .unwrap_or(&mp.path)
                        )));
                    }
                    missing = 0;
                    seen.mappings.extend(block);
                    seen.last = Some(b);
                    seen.count += 1;
                }
                b += 1;
            }
            out.extend(seen.mappings.iter().cloned());
            self.printf_seen
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key, seen);
        }
        let mut map = VirtualMap::new(out);
        map.access.clone_from(&vm.access);
        Ok(map)
    }

    /// Block `b` of the printf-style series `mp` (one mapping or more, of
    /// one source), its source an HDF5 file or a store, whichever is there
    /// now under the block's name (a program may make either, before or
    /// after the series).
    fn printf_block(
        &self,
        mp: &Mapping,
        p: Printf,
        b: u64,
        access: &VirtualAccess,
    ) -> Option<Vec<Mapping>> {
        let mut pieces = mp.printf_block(p, b)?;
        let m = pieces.first()?;
        // (The series of the virtual dataset's own datasets, "d%b": none.)
        let Some(given) = m.file_name.clone().or(m.store.clone()).or(m.file.clone()) else {
            return Some(pieces);
        };
        if given.starts_with("s3://") {
            return Some(pieces);
        }
        let near = self.source_location_with(&given, access.prefix.as_deref());
        let from_cwd = std::path::absolute(&given).ok();
        let relative = !std::path::Path::new(&given).is_absolute();
        let file = [Some(std::path::PathBuf::from(&near)), from_cwd]
            .into_iter()
            .flatten()
            .find(|f| f.is_file());
        let is_file = m.file.is_some();
        for m in &mut pieces {
            match &file {
                Some(f) => {
                    m.store = None;
                    m.file = Some(f.to_string_lossy().into_owned());
                    m.file_name = relative.then(|| given.clone());
                }
                None if is_file && std::path::Path::new(&near).is_dir() => {
                    m.store = Some(given.clone());
                    m.file = None;
                    m.file_name = None;
                }
                None => {}
            }
        }
        Some(pieces)
    }

    /// Checks a new virtual dataset's mappings before it is stored: their
    /// shapes against its extent, and every store they name against the
    /// link policy.
    pub(crate) fn check_new_virtual(&self, doc: &Value, dims: &[u64]) -> Result<()> {
        if let Some(vm) = VirtualMap::of_doc(doc, dims)? {
            for mp in &vm.mappings {
                if let Some(loc) = &mp.store {
                    self.link_policy().check(&self.source_location(loc), None)?;
                }
                if let Some(file) = &mp.file {
                    self.linked_files.check(file)?;
                }
            }
        }
        Ok(())
    }

    /// Reads `sel` of the virtual dataset `m` (members `fields` of each
    /// element when given) into `out`.
    pub(crate) fn read_virtual(
        &self,
        m: &DatasetMeta,
        vm: &VirtualMap,
        sel: &Selection,
        fields: Option<&[String]>,
        out: &mut [u8],
    ) -> Result<()> {
        let _level = nesting::deeper(&m.id)?;
        let proj = Projection::new(&m.dtype, fields)?;
        let es = proj.out_size;
        let mut fill = Vec::with_capacity(es);
        proj.append(&m.fill, &mut fill);
        let fill_all = |out: &mut [u8]| {
            if fill.iter().all(|&b| b == 0) {
                out.fill(0);
            } else if es > 0 {
                for e in out.chunks_exact_mut(es) {
                    e.copy_from_slice(&fill);
                }
            }
        };
        let sels = match sel {
            Selection::Orthogonal(sels) => sels,
            Selection::Points { rank, coords } => {
                fill_all(out);
                return self.read_virtual_points(m, vm, *rank, coords, fields, es, out);
            }
        };
        let shape: Vec<u64> = sels.iter().map(DimSel::len).collect();
        let total: u64 = shape.iter().product();
        if (out.len() as u64) != total * es as u64 {
            return Err(EngineError::Invalid(format!(
                "a buffer of {} bytes for {total} elements of {es}",
                out.len()
            )));
        }
        // Each mapping's part of the read, with its source.
        struct Part {
            mapping: usize,
            hits: Vec<Hits>,
            source: Option<Source>,
        }
        let parts = Mutex::new(Vec::new());
        let short = std::sync::atomic::AtomicBool::new(false);
        nesting::tasks(vm.mappings.len(), |i| {
            let mp = &vm.mappings[i];
            let Some(mut hits) = mp.hits(sels) else {
                return Ok(());
            };
            let mut why = String::new();
            let source = self.virtual_source(m, mp, &mut why)?;
            if let Some((_, src)) = &source {
                // Past a source's extent: fill, as HDF5 reads it.
                mp.clip_to(&mut hits, &src.dims);
            }
            if !why.is_empty() {
                short.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            parts.lock().unwrap_or_else(|e| e.into_inner()).push(Part {
                mapping: i,
                hits,
                source,
            });
            Ok(())
        })?;
        let mut parts = parts.into_inner().unwrap_or_else(|e| e.into_inner());
        parts.sort_by_key(|p| p.mapping);
        let covered: u64 = parts
            .iter()
            .filter(|p| p.source.is_some())
            .map(|p| p.hits.iter().map(Hits::len).product::<u64>())
            .sum();
        if !(vm.disjoint && covered == total && !short.load(std::sync::atomic::Ordering::Relaxed)) {
            fill_all(out);
        }
        let strides: Vec<u64> = (0..shape.len())
            .map(|d| shape[d + 1..].iter().product())
            .collect();
        let ptr = OutPtr(out.as_mut_ptr());
        let read_part = |p: &Part| -> Result<()> {
            let Some((dom, src)) = &p.source else {
                return Ok(());
            };
            let n: u64 = p.hits.iter().map(Hits::len).product();
            if n == 0 {
                return Ok(());
            }
            let src_sel = vm.mappings[p.mapping].source_selection(&p.hits);
            let home = dom.as_deref().unwrap_or(self);
            let bytes = n as usize * es;
            if let Some(at) = contiguous_block(&p.hits, &shape, &strides) {
                // SAFETY: the block lies inside `out` (positions come from
                // the selection's shape) and no other part writes it (the
                // mappings are disjoint, or parts run one at a time).
                let dst =
                    unsafe { std::slice::from_raw_parts_mut(ptr.at(at as usize * es), bytes) };
                return read_source(home, m, src, &src_sel, fields, dst);
            }
            let mut tmp = vec![0u8; bytes];
            read_source(home, m, src, &src_sel, fields, &mut tmp)?;
            scatter(&tmp, &p.hits, &strides, es, ptr);
            Ok(())
        };
        if vm.disjoint {
            nesting::tasks(parts.len(), |k| read_part(&parts[k]))
        } else {
            parts.iter().try_for_each(read_part)
        }
    }

    /// The variable-length elements `sel` selects of the virtual dataset
    /// `m` (strings, sequences), as [`Domain::read_vlen_within`] reads a
    /// dataset's: each from the source a mapping pairs it with (the last
    /// mapping that covers it), the fill value where none does or its
    /// source is missing. Sources hold the same type (any character set
    /// of a string); elements past `limit` bytes in all give up.
    ///
    /// # Errors
    /// A source of another type; as [`Domain::read_vlen_within`].
    pub(crate) fn read_virtual_vlen(
        &self,
        m: &DatasetMeta,
        vm: &VirtualMap,
        sel: &Selection,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>> {
        let _level = nesting::deeper(&m.id)?;
        let sels = match sel {
            Selection::Orthogonal(sels) => sels,
            Selection::Points { rank, coords } => {
                // (Each point as a selection of its own.)
                let rank = (*rank).max(1);
                let mut out = Vec::with_capacity(coords.len() / rank);
                for pt in coords.chunks(rank) {
                    let one = Selection::Orthogonal(one_point(pt));
                    let held: usize = out.iter().map(Vec::len).sum();
                    out.extend(self.read_virtual_vlen(m, vm, &one, limit.saturating_sub(held))?);
                }
                return Ok(out);
            }
        };
        let shape: Vec<u64> = sels.iter().map(DimSel::len).collect();
        let total = usize::try_from(shape.iter().product::<u64>())
            .map_err(|_| EngineError::TooLarge("a selection of too many elements".into()))?;
        let strides: Vec<u64> = (0..shape.len())
            .map(|d| shape[d + 1..].iter().product())
            .collect();
        let mut out = vec![m.fill.clone(); total];
        let mut held = 0usize;
        for mp in &vm.mappings {
            let Some(mut hits) = mp.hits(sels) else {
                continue;
            };
            let mut why = String::new();
            let Some((dom, src)) = self.virtual_source(m, mp, &mut why)? else {
                continue;
            };
            mp.clip_to(&mut hits, &src.dims);
            if hits.iter().map(Hits::len).product::<u64>() == 0 {
                continue;
            }
            check_vlen_source(m, &src)?;
            let home = dom.as_deref().unwrap_or(self);
            let values =
                home.read_vlen_within(&src.id, &mp.source_selection(&hits), limit - held)?;
            held += values.iter().map(Vec::len).sum::<usize>();
            each_hit_run(&hits, &strides, |at, first, n| {
                for j in 0..n {
                    out[first as usize + j].clone_from(&values[at + j]);
                }
            });
        }
        Ok(out)
    }

    /// Writes `data` (elements of `m`'s type) to `sel` of the virtual
    /// dataset `m` as libhdf5 writes a virtual dataset: each element goes
    /// to the source element every mapping that covers it pairs it with;
    /// elements no mapping covers are dropped. Sources must be datasets of
    /// this store that hold their values: h5lake never writes another
    /// store through a mapping, nor an HDF5 file.
    ///
    /// # Errors
    /// A point selection; a source elsewhere, linked, or missing where the
    /// selection reaches it; sources of a type the elements cannot convert
    /// to; as [`Domain::write`].
    pub(crate) fn write_virtual(
        &self,
        m: &DatasetMeta,
        vm: &VirtualMap,
        sel: &Selection,
        data: &[u8],
    ) -> Result<()> {
        let _level = nesting::deeper(&m.id)?;
        let es = m.elem_size();
        let sels = match sel {
            Selection::Orthogonal(sels) => sels,
            Selection::Points { rank, coords } => {
                return self.write_virtual_points(m, vm, *rank, coords, data);
            }
        };
        let shape: Vec<u64> = sels.iter().map(DimSel::len).collect();
        if data.len() as u64 != shape.iter().product::<u64>() * es as u64 {
            return Err(EngineError::Invalid(format!(
                "{} bytes for a selection of {shape:?} elements of {es} bytes",
                data.len()
            )));
        }
        let strides: Vec<u64> = (0..shape.len())
            .map(|d| shape[d + 1..].iter().product())
            .collect();
        // Every mapping's part first, so that nothing is written when any
        // part is refused.
        let mut parts = Vec::new();
        for mp in &vm.mappings {
            let Some(mut hits) = mp.hits(sels) else {
                continue;
            };
            if hits.iter().any(|h| h.len() == 0) {
                continue;
            }
            let mut why = String::new();
            let refused = |what: &str| {
                EngineError::ReadOnly(format!(
                    "virtual dataset {}: its source {} {what}; write to the source instead",
                    m.id, mp.path
                ))
            };
            let Some((dom, src)) = self.virtual_source(m, mp, &mut why)? else {
                return Err(refused(&format!("cannot be written ({why})")));
            };
            if dom.is_some() || mp.store.is_some() {
                return Err(refused(
                    "is in another store or file, which h5lake does not write through a mapping",
                ));
            }
            if src.link.is_some() {
                return Err(refused("holds values of another file (linked)"));
            }
            if src.dtype != m.dtype && NumericConversion::new(&m.dtype, &src.dtype).is_none() {
                return Err(EngineError::WrongType(format!(
                    "virtual dataset {}: its elements do not convert to source {}'s type",
                    m.id, mp.path
                )));
            }
            // Past a source's extent: not mapped to anything.
            mp.clip_to(&mut hits, &src.dims);
            if hits.iter().any(|h| h.len() == 0) {
                continue;
            }
            let src_sel = mp.source_selection(&hits);
            parts.push((hits, src, src_sel));
        }
        // As libhdf5: a write must reach each element it selects through
        // exactly one mapping (libhdf5 compares the count of elements the
        // mappings reach with the count selected), else it is refused whole.
        let total: u64 = shape.iter().product();
        let (unmapped, twice) = if vm.disjoint {
            let reached: u64 = parts
                .iter()
                .map(|(hits, _, _)| hits.iter().map(Hits::len).product::<u64>())
                .sum();
            (reached != total, false)
        } else {
            let mut seen = vec![0u8; total as usize];
            for (hits, _, _) in &parts {
                each_hit_run(hits, &strides, |_, first, n| {
                    for s in &mut seen[first as usize..first as usize + n] {
                        *s = s.saturating_add(1);
                    }
                });
            }
            (seen.contains(&0), seen.iter().any(|&x| x > 1))
        };
        if unmapped || twice {
            return Err(refused_write(m, twice));
        }
        for (hits, src, src_sel) in &parts {
            let part = gather(data, hits, &strides, es);
            match NumericConversion::new(&m.dtype, &src.dtype) {
                Some(conv) if src.dtype != m.dtype => {
                    let mut converted = vec![0u8; part.len() / es.max(1) * src.elem_size()];
                    conv.convert(&part, &mut converted);
                    self.write_with(src, src_sel, &converted)?;
                }
                _ => self.write_with(src, src_sel, &part)?,
            }
        }
        Ok(())
    }

    /// Where each of the points `coords` (of rank `rank`) of the virtual
    /// dataset `m` is written: `(point, source, coordinates in it)` for
    /// every mapping that covers it, found before anything is written.
    ///
    /// # Errors
    /// A point no mapping covers (libhdf5 refuses the whole write); a
    /// source elsewhere, linked or missing.
    fn virtual_point_targets(
        &self,
        m: &DatasetMeta,
        vm: &VirtualMap,
        rank: usize,
        coords: &[u64],
    ) -> Result<Vec<PointTarget>> {
        let rank = rank.max(1);
        if rank != m.dims.len() || coords.len() % rank != 0 {
            return Err(EngineError::Invalid(
                "points of another rank than the dataset's".into(),
            ));
        }
        let mut out = Vec::new();
        for (i, pt) in coords.chunks(rank).enumerate() {
            let one = one_point(pt);
            let mut covered = 0;
            for mp in &vm.mappings {
                let Some(mut hits) = mp.hits(&one) else {
                    continue;
                };
                let refused = |what: &str| {
                    EngineError::ReadOnly(format!(
                        "virtual dataset {}: its source {} {what}; write to the source instead",
                        m.id, mp.path
                    ))
                };
                let mut why = String::new();
                let Some((dom, src)) = self.virtual_source(m, mp, &mut why)? else {
                    return Err(refused(&format!("cannot be written ({why})")));
                };
                if dom.is_some() || mp.store.is_some() {
                    return Err(refused(
                        "is in another store or file, which h5lake does not write through a \
                         mapping",
                    ));
                }
                if src.link.is_some() {
                    return Err(refused("holds values of another file (linked)"));
                }
                mp.clip_to(&mut hits, &src.dims);
                if hits.iter().any(|h| h.len() == 0) {
                    continue;
                }
                let Selection::Orthogonal(at) = mp.source_selection(&hits) else {
                    continue;
                };
                let at: Vec<u64> = at
                    .iter()
                    .map(|d| match d {
                        DimSel::Slice { start, .. } => *start,
                        DimSel::Indices(ix) => ix.first().copied().unwrap_or(0),
                    })
                    .collect();
                covered += 1;
                out.push((i, src, at));
            }
            if covered != 1 {
                return Err(refused_write(m, covered > 1));
            }
        }
        Ok(out)
    }

    /// Writes points of the virtual dataset `m` (elements of its type in
    /// `data`, one per point) as [`Domain::write_virtual`] writes a
    /// selection: each to the source element of every mapping covering it,
    /// the whole write refused when a point is covered by none.
    fn write_virtual_points(
        &self,
        m: &DatasetMeta,
        vm: &VirtualMap,
        rank: usize,
        coords: &[u64],
        data: &[u8],
    ) -> Result<()> {
        let es = m.elem_size();
        let n = coords.len() / rank.max(1);
        if data.len() != n * es {
            return Err(EngineError::Invalid(format!(
                "{} bytes for {n} points of elements of {es} bytes",
                data.len()
            )));
        }
        let mut per_source: Vec<SourcePoints<u8>> = Vec::new();
        for (i, src, at) in self.virtual_point_targets(m, vm, rank, coords)? {
            let elem = &data[i * es..(i + 1) * es];
            let value = if src.dtype == m.dtype {
                elem.to_vec()
            } else {
                let conv = NumericConversion::new(&m.dtype, &src.dtype).ok_or_else(|| {
                    EngineError::WrongType(format!(
                        "virtual dataset {}: its elements do not convert to source {}'s type",
                        m.id, src.id
                    ))
                })?;
                let mut out = vec![0u8; src.elem_size()];
                conv.convert(elem, &mut out);
                out
            };
            match per_source.iter_mut().find(|(s, _, _)| s.id == src.id) {
                Some((_, c, v)) => {
                    c.extend(at);
                    v.extend(value);
                }
                None => per_source.push((src, at, value)),
            }
        }
        for (src, at, values) in per_source {
            let sel = Selection::Points {
                rank: src.dims.len(),
                coords: at,
            };
            self.write_with(&src, &sel, &values)?;
        }
        Ok(())
    }

    /// Writes variable-length `values` (one per element of `sel`, C
    /// order) through the virtual dataset `m`, as
    /// [`Domain::write_virtual`] writes fixed-size ones: each to the
    /// source element of every mapping covering it (sources of the same
    /// type), the whole write refused when one is covered by none.
    ///
    /// # Errors
    /// As [`Domain::write_virtual`]; a source of another type.
    pub(crate) fn write_virtual_vlen(
        &self,
        m: &DatasetMeta,
        vm: &VirtualMap,
        sel: &Selection,
        values: &[Vec<u8>],
    ) -> Result<()> {
        let _level = nesting::deeper(&m.id)?;
        let (rank, coords) = match sel {
            Selection::Points { rank, coords } => (*rank, coords.clone()),
            Selection::Orthogonal(sels) => (sels.len(), element_coords(sels)),
        };
        let mut per_source: Vec<SourcePoints<Vec<u8>>> = Vec::new();
        for (i, src, at) in self.virtual_point_targets(m, vm, rank, &coords)? {
            check_vlen_source(m, &src)?;
            let value = values.get(i).cloned().unwrap_or_default();
            match per_source.iter_mut().find(|(s, _, _)| s.id == src.id) {
                Some((_, c, v)) => {
                    c.extend(at);
                    v.push(value);
                }
                None => per_source.push((src, at, vec![value])),
            }
        }
        for (src, at, values) in per_source {
            let sel = Selection::Points {
                rank: src.dims.len(),
                coords: at,
            };
            self.write_vlen(&src.id, &sel, &values)?;
        }
        Ok(())
    }

    /// Points of a virtual dataset: each read from the last mapping that
    /// covers it (fill elsewhere; `out` holds fill on entry).
    #[allow(clippy::too_many_arguments)]
    fn read_virtual_points(
        &self,
        m: &DatasetMeta,
        vm: &VirtualMap,
        rank: usize,
        coords: &[u64],
        fields: Option<&[String]>,
        es: usize,
        out: &mut [u8],
    ) -> Result<()> {
        if rank != m.dims.len() || coords.len() % rank.max(1) != 0 {
            return Err(EngineError::Invalid(
                "points of another rank than the dataset's".into(),
            ));
        }
        let n = coords.len() / rank.max(1);
        // Per mapping: (output index, source coordinates).
        let mut per: Vec<(Vec<u64>, Vec<u64>)> = vec![(Vec::new(), Vec::new()); vm.mappings.len()];
        for i in 0..n {
            let pt = &coords[i * rank..(i + 1) * rank];
            let hit = vm.mappings.iter().enumerate().rev().find_map(|(k, mp)| {
                let ks: Option<Vec<u64>> = pt
                    .iter()
                    .zip(&mp.dst)
                    .map(|(&x, r)| r.index_of(x))
                    .collect();
                ks.map(|ks| (k, ks))
            });
            if let Some((k, ks)) = hit {
                let mp = &vm.mappings[k];
                per[k].0.push(i as u64);
                for (q, r) in mp.src.iter().enumerate() {
                    let j = mp
                        .pairs
                        .iter()
                        .position(|&x| x == Some(q))
                        .map_or(0, |d| ks[d]);
                    per[k].1.push(r.coord(j));
                }
            }
        }
        let ptr = OutPtr(out.as_mut_ptr());
        nesting::tasks(per.len(), |k| {
            let (outs, src_coords) = &per[k];
            if outs.is_empty() {
                return Ok(());
            }
            let mp = &vm.mappings[k];
            let mut why = String::new();
            let Some((dom, src)) = self.virtual_source(m, mp, &mut why)? else {
                return Ok(());
            };
            let srank = mp.src.len();
            // Points past the source's extent stay fill.
            let inside: Vec<usize> = (0..outs.len())
                .filter(|&j| {
                    src_coords[j * srank..(j + 1) * srank]
                        .iter()
                        .zip(&src.dims)
                        .all(|(c, d)| c < d)
                })
                .collect();
            let pts: Vec<u64> = inside
                .iter()
                .flat_map(|&j| src_coords[j * srank..(j + 1) * srank].iter().copied())
                .collect();
            let mut tmp = vec![0u8; inside.len() * es];
            let home = dom.as_deref().unwrap_or(self);
            read_source(
                home,
                m,
                &src,
                &Selection::Points {
                    rank: srank,
                    coords: pts,
                },
                fields,
                &mut tmp,
            )?;
            for (t, &j) in inside.iter().enumerate() {
                // SAFETY: output element outs[j] < n lies in `out`; each
                // point belongs to one mapping, so tasks write apart.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        tmp.as_ptr().add(t * es),
                        ptr.at(outs[j] as usize * es),
                        es,
                    );
                }
            }
            Ok(())
        })
    }
}

/// The selection of the one element at `pt`.
fn one_point(pt: &[u64]) -> Vec<DimSel> {
    pt.iter()
        .map(|&x| DimSel::Slice {
            start: x,
            count: 1,
            step: 1,
        })
        .collect()
}

/// The coordinates of every element an orthogonal selection selects, in
/// C order, one after another.
fn element_coords(sels: &[DimSel]) -> Vec<u64> {
    let axes: Vec<Vec<u64>> = sels
        .iter()
        .map(|d| match d {
            DimSel::Slice { start, count, step } => (0..*count).map(|k| start + k * step).collect(),
            DimSel::Indices(ix) => ix.clone(),
        })
        .collect();
    let total: usize = axes.iter().map(Vec::len).product();
    let mut out = Vec::with_capacity(total * axes.len());
    let mut idx = vec![0usize; axes.len()];
    for _ in 0..total {
        out.extend(idx.iter().zip(&axes).map(|(&i, a)| a[i]));
        for d in (0..axes.len()).rev() {
            idx[d] += 1;
            if idx[d] < axes[d].len() {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// Refuses a source of the variable-length virtual dataset `m` whose
/// elements are not of its type (see [`same_vlen_type`]).
fn check_vlen_source(m: &DatasetMeta, src: &DatasetMeta) -> Result<()> {
    if same_vlen_type(&src.dtype, &m.dtype) {
        return Ok(());
    }
    Err(EngineError::WrongType(format!(
        "virtual dataset {}: its source {} holds {}, not {}",
        m.id,
        src.id,
        src.dtype.to_json(),
        m.dtype.to_json()
    )))
}

/// Whether a variable-length source of type `src` reads as elements of
/// `dst`: the same type, or strings of another character set or padding.
fn same_vlen_type(src: &h5lake_types::Datatype, dst: &h5lake_types::Datatype) -> bool {
    match (src, dst) {
        (
            h5lake_types::Datatype::String { length: None, .. },
            h5lake_types::Datatype::String { length: None, .. },
        ) => true,
        _ => src == dst,
    }
}

/// Reads `sel` of the source `src` (of `home`) into `out` as elements of
/// the virtual dataset `m`'s type: converted, as HDF5 converts them, when
/// the source is of another numeric type.
fn read_source(
    home: &Domain,
    m: &DatasetMeta,
    src: &DatasetMeta,
    sel: &Selection,
    fields: Option<&[String]>,
    out: &mut [u8],
) -> Result<()> {
    if src.dtype == m.dtype {
        return home.read_with(src, sel, fields, out, false);
    }
    let conv = read_conversion(&src.dtype, &m.dtype)
        .ok_or_else(|| EngineError::WrongType(format!("source {} cannot be converted", src.id)))?;
    let mut raw = vec![0u8; sel.num_elements() as usize * conv.from_size()];
    home.read_with(src, sel, None, &mut raw, false)?;
    conv.convert(&raw, out);
    Ok(())
}

/// How values of a source of type `from` read as the virtual dataset's
/// `to`: between numeric types, and from an enum (h5py's booleans among
/// them) as its integers, as libhdf5 converts them.
fn read_conversion(
    from: &h5lake_types::Datatype,
    to: &h5lake_types::Datatype,
) -> Option<NumericConversion> {
    NumericConversion::new(from, to).or_else(|| match from {
        h5lake_types::Datatype::Enum { base, .. } => NumericConversion::new(base, to),
        _ => None,
    })
}

/// Where the elements `hits` select lie in one piece of the output, in the
/// same order (C order of their positions): the first one's index.
fn contiguous_block(hits: &[Hits], shape: &[u64], strides: &[u64]) -> Option<u64> {
    let ranges: Vec<(u64, u64)> = hits.iter().map(Hits::out_range).collect::<Option<_>>()?;
    // Single indices, then one partial dimension, then whole ones.
    let j = ranges
        .iter()
        .position(|&(_, len)| len != 1)
        .unwrap_or(ranges.len());
    let whole_after = ranges
        .iter()
        .zip(shape)
        .skip(j + 1)
        .all(|(&(first, len), &d)| first == 0 && len == d);
    whole_after.then(|| {
        ranges
            .iter()
            .zip(strides)
            .map(|(&(first, _), s)| first * s)
            .sum()
    })
}

/// Calls `f(at, first, n)` for each run of the elements `hits` select, in
/// C order: `n` elements from element `at` of a buffer holding just them
/// (in that order) are the elements from `first` on of the selection's
/// output (of `strides`).
fn each_hit_run(hits: &[Hits], strides: &[u64], mut f: impl FnMut(usize, u64, usize)) {
    let rank = hits.len();
    let counts: Vec<u64> = hits.iter().map(Hits::len).collect();
    let last = rank - 1;
    let inner = counts[last] as usize;
    let run = hits[last].out_range();
    let mut idx = vec![0u64; last];
    let mut at = 0usize;
    loop {
        let base: u64 = idx
            .iter()
            .enumerate()
            .map(|(d, &j)| hits[d].out_at(j) * strides[d])
            .sum();
        match run {
            Some((first, len)) => f(at, base + first, len as usize),
            None => {
                for j in 0..inner {
                    f(at + j, base + hits[last].out_at(j as u64), 1);
                }
            }
        }
        at += inner;
        // The next index of the outer dimensions, C order.
        let mut d = last;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < counts[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Places the elements `hits` select, packed in `tmp`, in the output.
fn scatter(tmp: &[u8], hits: &[Hits], strides: &[u64], es: usize, ptr: OutPtr) {
    each_hit_run(hits, strides, |at, first, n| {
        // SAFETY: positions inside the output (see `read_virtual`), and
        // `tmp` holds every element `hits` selects.
        unsafe {
            std::ptr::copy_nonoverlapping(
                tmp.as_ptr().add(at * es),
                ptr.at(first as usize * es),
                n * es,
            );
        }
    });
}

/// The elements `hits` select of the selection's elements in `data`,
/// packed in C order (what [`scatter`] places back).
fn gather(data: &[u8], hits: &[Hits], strides: &[u64], es: usize) -> Vec<u8> {
    let n: u64 = hits.iter().map(Hits::len).product();
    let mut out = vec![0u8; n as usize * es];
    each_hit_run(hits, strides, |at, first, n| {
        let from = first as usize * es;
        out[at * es..(at + n) * es].copy_from_slice(&data[from..from + n * es]);
    });
    out
}

/// The refusal of a write through the virtual dataset `m` that reaches an
/// element through no mapping, or (`twice`) through more than one.
fn refused_write(m: &DatasetMeta, twice: bool) -> EngineError {
    let what = if twice {
        "elements more than one mapping covers"
    } else {
        "elements no mapping covers"
    };
    EngineError::ReadOnly(format!(
        "virtual dataset {}: the write reaches {what}; nothing was written (libhdf5: write \
         requested to an unmapped portion of the virtual dataset)",
        m.id
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(start: u64, step: u64, count: u64) -> Run {
        Run::new(start, step, count, 1).unwrap()
    }

    #[test]
    fn hits_of_slices_against_runs_equal_a_plain_walk() {
        for (sel, r, p) in [
            ((0, 10, 1), run(3, 1, 4), run(100, 2, 4)),
            ((1, 7, 3), run(3, 1, 12), run(0, 1, 12)),
            ((0, 30, 1), run(2, 3, 5), run(10, 1, 5)),
            ((5, 4, 2), run(2, 3, 5), run(10, 1, 5)),
            ((0, 3, 1), run(10, 1, 2), run(0, 1, 2)),
            // Gapped blocks, on either side.
            ((0, 40, 1), Run::new(1, 5, 4, 2).unwrap(), run(0, 1, 8)),
            ((3, 12, 3), Run::new(1, 5, 4, 2).unwrap(), run(7, 3, 8)),
            ((0, 9, 1), run(1, 1, 8), Run::new(0, 4, 4, 2).unwrap()),
            (
                (2, 30, 1),
                Run::new(0, 4, 4, 3).unwrap(),
                Run::new(1, 5, 3, 4).unwrap(),
            ),
        ] {
            let s = DimSel::Slice {
                start: sel.0,
                count: sel.1,
                step: sel.2,
            };
            let got = dim_hits(&s, r, Some(p));
            let (mut out, mut src) = (vec![], vec![]);
            for i in 0..sel.1 {
                let x = sel.0 + i * sel.2;
                // Element k of the run is the k-th index of its blocks.
                let k = (0..r.count)
                    .flat_map(|b| (0..r.block).map(move |j| r.start + b * r.step + j))
                    .position(|y| y == x);
                if let Some(k) = k {
                    let k = k as u64;
                    out.push(i);
                    src.push(p.start + (k / p.block) * p.step + k % p.block);
                }
            }
            let want = (!out.is_empty()).then(|| Hits::compact(out, src));
            assert_eq!(got, want, "{sel:?} {r:?} {p:?}");
        }
    }

    #[test]
    fn blocks_are_contiguous_only_when_whole_trailing_dimensions_follow() {
        let h = |out, count| Hits::Regular {
            out,
            src: 0,
            step: 1,
            count,
        };
        let shape = [4, 5];
        let strides = [5, 1];
        assert_eq!(
            contiguous_block(&[h(1, 2), h(0, 5)], &shape, &strides),
            Some(5)
        );
        assert_eq!(
            contiguous_block(&[h(1, 1), h(2, 3)], &shape, &strides),
            Some(7)
        );
        assert_eq!(
            contiguous_block(&[h(1, 2), h(0, 4)], &shape, &strides),
            None
        );
    }

    #[test]
    fn hdf5_runs_are_normalised() {
        // One block, or blocks end to end, is one plain run.
        assert_eq!(Run::new(3, 7, 1, 5), Some(run(3, 1, 5)));
        assert_eq!(Run::new(3, 2, 4, 2), Some(run(3, 1, 8)));
        let gapped = Run::new(3, 5, 4, 2).unwrap();
        assert_eq!((gapped.len(), gapped.last()), (8, 19));
        assert_eq!(Run::of_json(&gapped.to_json()), Some(gapped));
        // Overlapping blocks and empty runs are not runs.
        assert_eq!(Run::new(0, 1, 3, 2), None);
        assert_eq!(Run::new(0, 1, 0, 1), None);
        assert_eq!(Run::new(u64::MAX - 1, 1, 1, 3), None);
    }

    /// The indices of an unlimited run below `limit`, walked one by one.
    fn walk(r: &Run, limit: u64) -> Vec<u64> {
        (0..)
            .map(|k| r.coord(k))
            .take_while(|&x| x < limit)
            .collect()
    }

    #[test]
    fn unlimited_runs_resolve_element_for_element() {
        let unlimited = |start, step, block| Run::new(start, step, Run::UNLIMITED, block).unwrap();
        // Blocks end to end are one contiguous unlimited run.
        assert_eq!(unlimited(2, 3, 3), unlimited(2, 1, 1));
        let r = unlimited(1, 5, 2);
        assert!(r.is_unlimited() && r.len() == u64::MAX);
        assert_eq!(Run::of_json(&r.to_json()), Some(r));
        assert_eq!(r.to_json(), json!([1, 5, null, 2]));
        let runs = [
            unlimited(0, 1, 1),
            unlimited(3, 1, 1),
            unlimited(1, 4, 1),
            unlimited(1, 5, 2),
            unlimited(0, 7, 3),
            unlimited(2, 4, 3),
        ];
        for a in &runs {
            for extent in 0..40 {
                assert_eq!(
                    a.len_below(extent),
                    walk(a, extent).len() as u64,
                    "{a:?} {extent}"
                );
            }
            for b in &runs {
                for n in 0..30 {
                    let pieces = a.first(b, n);
                    let got: Vec<(u64, u64)> = pieces
                        .iter()
                        .flat_map(|(p, q)| {
                            assert_eq!(p.len(), q.len(), "{a:?} {b:?} {n}");
                            (0..p.len()).map(|k| (p.coord(k), q.coord(k)))
                        })
                        .collect();
                    let want: Vec<(u64, u64)> = (0..n).map(|k| (a.coord(k), b.coord(k))).collect();
                    assert_eq!(got, want, "{a:?} {b:?} {n}");
                    // Whole blocks of both come as one piece; the rest is
                    // shorter than both blocks' least common multiple (6).
                    assert!(pieces.len() <= 1 + 6, "{a:?} {b:?} {n}: {pieces:?}");
                }
            }
        }
    }

    #[test]
    fn an_unlimited_extent_follows_the_sources() {
        let doc = json!({"h5lake": {"virtual": [
            {"path": "/a", "src": [[0, 1, null]], "dst": [[0, 2, null]]},
            {"path": "/b", "src": [[2, 1, null]], "dst": [[1, 2, null]]},
            {"path": "/c", "src": [[0, 1, 3]], "dst": [[20, 1, 3]]},
        ]}});
        let vm = VirtualMap::of_doc(&doc, &[23]).unwrap().unwrap();
        assert!(vm.unlimited);
        // /a holds 5, /b 10 (8 from index 2): interleaved, b reaches 2*7+1+1.
        let (dims, map) = vm.resolve(&[23], &[Some(vec![5]), Some(vec![10]), Some(vec![3])]);
        assert_eq!(dims, vec![23]);
        assert!(!map.unlimited);
        assert_eq!(map.mappings[0].dst, vec![Run::new(0, 2, 5, 1).unwrap()]);
        assert_eq!(map.mappings[1].src, vec![Run::new(2, 1, 8, 1).unwrap()]);
        let (dims, _) = vm.resolve(&[23], &[Some(vec![40]), None, Some(vec![3])]);
        assert_eq!(dims, vec![79]);
        // A missing source maps nothing; the bounded mapping still needs 23.
        let (dims, map) = vm.resolve(&[23], &[None, None, None]);
        assert_eq!((dims, map.mappings.len()), (vec![23], 1));
        let bad = json!({"h5lake": {"virtual": [
            {"path": "/a", "src": [[0, 1, 4]], "dst": [[0, 1, null]]}]}});
        assert!(VirtualMap::of_doc(&bad, &[4]).is_err());
    }

    /// Every (virtual, source) element pair the mappings make, in order;
    /// each mapping's two sides of one shape (as stored mappings must be).
    fn pairs_of(maps: &[(Vec<Run>, Vec<Run>)], dd: &[u64], sd: &[u64]) -> Vec<(u64, u64)> {
        for (d, s) in maps {
            assert!(pair_dims(s, d).is_some(), "shapes differ: {d:?} {s:?}");
        }
        let flat = |runs: &[Run], dims: &[u64]| -> Vec<u64> {
            let mut out = vec![0u64];
            for (r, &n) in runs.iter().zip(dims) {
                out = out
                    .iter()
                    .flat_map(|&o| (0..r.len()).map(move |k| o * n + r.coord(k)))
                    .collect();
            }
            out
        };
        maps.iter()
            .flat_map(|(d, s)| flat(d, dd).into_iter().zip(flat(s, sd)))
            .collect()
    }

    fn side(dims: &[u64], runs: &[(u64, u64)]) -> ElementRuns {
        ElementRuns {
            dims: dims.to_vec(),
            runs: runs.to_vec(),
        }
    }

    #[test]
    fn regular_runs_as_elements_are_their_elements_in_order() {
        let runs = [
            Run::new(1, 2, 3, 1).unwrap(),
            Run::new(0, 1, 2, 1).unwrap(),
            Run::new(2, 5, 3, 2).unwrap(),
        ];
        let e = ElementRuns::of_runs(&runs).unwrap();
        let got: Vec<Vec<u64>> = e
            .runs
            .iter()
            .flat_map(|&(o, l)| o..o + l)
            .map(|o| e.coords(o))
            .collect();
        let mut want = Vec::new();
        for i in 0..runs[0].len() {
            for j in 0..runs[1].len() {
                for k in 0..runs[2].len() {
                    want.push(vec![runs[0].coord(i), runs[1].coord(j), runs[2].coord(k)]);
                }
            }
        }
        assert_eq!(got, want);
    }

    #[test]
    fn irregular_selections_pair_element_for_element() {
        // h5py's test_index_layout: 10 scattered indices of 100 ← all of 10.
        let inds = [3u64, 6, 20, 25, 33, 47, 70, 75, 96, 98];
        let dst: Vec<(u64, u64)> = inds.iter().map(|&i| (i, 1)).collect();
        let maps = pair_runs(&side(&[100], &dst), &side(&[10], &[(0, 10)])).unwrap();
        let want: Vec<(u64, u64)> = inds.iter().copied().zip(0..).collect();
        assert_eq!(pairs_of(&maps, &[100], &[10]), want);
        assert!(
            maps.len() < inds.len(),
            "evenly spaced pieces join: {maps:?}"
        );

        // 2-D: an irregular union of two boxes of a 6 x 8 extent ← rows of
        // a 4 x 5 source, cut across its rows.
        let mut dst = Vec::new();
        for r in 0..6u64 {
            if r < 3 {
                dst.push((r * 8 + 1, 2));
            }
            if r >= 2 {
                dst.push((r * 8 + 5, 3));
            }
        }
        let n: u64 = dst.iter().map(|r| r.1).sum();
        let src = [(0u64, n)];
        let maps = pair_runs(&side(&[6, 8], &dst), &side(&[4, 5], &src)).unwrap();
        let want: Vec<(u64, u64)> = dst.iter().flat_map(|&(o, l)| o..o + l).zip(0..n).collect();
        assert_eq!(pairs_of(&maps, &[6, 8], &[4, 5]), want);

        // A union of boxes over rows, from a 1-D source (HDF5 pairs the
        // rows' pieces end to end).
        let dst = [(0u64, 3u64), (7, 3), (11, 2), (18, 2), (25, 2)];
        let maps = pair_runs(&side(&[4, 7], &dst), &side(&[12], &[(0, 12)])).unwrap();
        let want: Vec<(u64, u64)> = dst.iter().flat_map(|&(o, l)| o..o + l).zip(0..12).collect();
        assert_eq!(pairs_of(&maps, &[4, 7], &[12]), want);

        // Points out of order pair in the order given.
        let pts = [(9u64, 1u64), (2, 1), (5, 1)];
        let maps = pair_runs(&side(&[10], &pts), &side(&[3], &[(0, 3)])).unwrap();
        assert_eq!(pairs_of(&maps, &[10], &[3]), vec![(9, 0), (2, 1), (5, 2)]);

        // Whole rows of a column pair as one mapping.
        let col: Vec<(u64, u64)> = (0..50u64).map(|r| (r * 4 + 2, 1)).collect();
        let maps = pair_runs(&side(&[50, 4], &col), &side(&[50], &[(0, 50)])).unwrap();
        assert_eq!(maps.len(), 1, "{maps:?}");
        assert_eq!(pairs_of(&maps, &[50, 4], &[50]).len(), 50);

        assert!(pair_runs(&side(&[10], &[(0, 4)]), &side(&[10], &[(0, 5)]),).is_err());
    }

    #[test]
    fn shapes_must_agree_up_to_single_indices() {
        assert!(pair_dims(&[run(0, 1, 10)], &[run(2, 1, 1), run(0, 1, 10)]).is_some());
        assert!(pair_dims(&[run(0, 1, 10)], &[run(0, 1, 2), run(0, 1, 5)]).is_none());
    }
}
