//! Statistics of a chunk's elements, per numeric leaf: count, NaN count,
//! bounds and sum — computed as the chunk is written, kept beside it, and
//! merged into statistics of selections and whole datasets.

use serde_json::{json, Map, Value};

use crate::error::{QueryError, Result};
use crate::leaf::{Kind, Leaf};
use crate::permute_gather::PermutePlan;

/// A number as statistics keep it: integers exactly, floats as f64.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    /// The value as a float (integers rounded to nearest).
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    fn to_json(self) -> Value {
        match self {
            Num::Int(i) => match (i64::try_from(i), u64::try_from(i)) {
                (Ok(v), _) => json!(v),
                (_, Ok(v)) => json!(v),
                _ => json!(i.to_string()),
            },
            Num::Float(f) if f.is_finite() => json!(f),
            Num::Float(f) if f.is_nan() => json!("nan"),
            Num::Float(f) if f > 0.0 => json!("inf"),
            Num::Float(_) => json!("-inf"),
        }
    }

    fn from_json(v: &Value, float: bool) -> Result<Num> {
        let bad = || QueryError::Corrupt(format!("not a number: {v}"));
        if float {
            return Ok(Num::Float(match v {
                Value::String(s) => match s.as_str() {
                    "nan" => f64::NAN,
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    _ => return Err(bad()),
                },
                v => v.as_f64().ok_or_else(bad)?,
            }));
        }
        Ok(Num::Int(match v {
            Value::String(s) => s.parse().map_err(|_| bad())?,
            v => v
                .as_i64()
                .map(i128::from)
                .or_else(|| v.as_u64().map(i128::from))
                .ok_or_else(bad)?,
        }))
    }
}

/// Statistics of one leaf over some elements.
#[derive(Clone, Debug, PartialEq)]
pub struct LeafStats {
    /// Elements counted (NaNs included).
    pub count: u64,
    /// How many of them are NaN (floats only).
    pub nan_count: u64,
    /// How many of them were null in the columnar chunk holding them
    /// (they read, and are counted here, as the fill value).
    pub null_count: u64,
    /// Smallest and largest value other than NaN; `None` when every
    /// element is NaN, or there are none.
    pub min: Option<Num>,
    pub max: Option<Num>,
    /// Sum of the values other than NaN.
    pub sum: Num,
    /// Of a text leaf: bounds on its values, `None` when none are known
    /// (no elements, or a record from before text was bounded).
    pub text: Option<TextBounds>,
}

/// Bounds on the values of a text leaf, compared as NumPy compares byte
/// strings (bytes in order, trailing NULs dropped). Kept short: a long
/// value is cut to [`TEXT_BOUND_BYTES`], the upper bound then rounded up
/// so that it stays above every value (Parquet truncates its statistics
/// the same way), so a bound need not be a value of the chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextBounds {
    /// At most every value.
    pub lo: Vec<u8>,
    /// At least every value; `None`: no short bound exists (the largest
    /// value starts with [`TEXT_BOUND_BYTES`] bytes of 0xFF).
    pub hi: Option<Vec<u8>>,
}

/// The longest text bound a record keeps.
pub const TEXT_BOUND_BYTES: usize = 64;

impl TextBounds {
    /// Bounds of values from `lo` to `hi` (the smallest and largest).
    pub fn of(lo: &[u8], hi: &[u8]) -> Self {
        let keep = |t: &[u8]| t[..t.len().min(TEXT_BOUND_BYTES)].to_vec();
        let hi = if hi.len() <= TEXT_BOUND_BYTES {
            Some(hi.to_vec())
        } else {
            // Raise the last byte that can be raised: the cut value is then
            // above every value sharing the kept prefix.
            let mut cut = keep(hi);
            while cut.last() == Some(&0xFF) {
                cut.pop();
            }
            cut.last_mut().map(|b| *b += 1).map(|()| cut)
        };
        Self { lo: keep(lo), hi }
    }

    /// Bounds covering both `self`'s values and `o`'s.
    pub fn union(&self, o: &TextBounds) -> TextBounds {
        TextBounds {
            lo: self.lo.clone().min(o.lo.clone()),
            hi: match (&self.hi, &o.hi) {
                (Some(a), Some(b)) => Some(a.max(b).clone()),
                _ => None,
            },
        }
    }

    /// Whether every value is the same one, `lo`.
    pub fn single(&self) -> bool {
        self.hi.as_ref() == Some(&self.lo)
    }
}

impl LeafStats {
    /// Statistics of no elements, for a leaf of floats or not.
    pub fn empty(float: bool) -> Self {
        Self {
            count: 0,
            nan_count: 0,
            null_count: 0,
            min: None,
            max: None,
            sum: if float { Num::Float(0.0) } else { Num::Int(0) },
            text: None,
        }
    }

    /// Statistics of `n` elements that all hold `leaf`'s value in `elem`
    /// (a fill value).
    pub fn repeated(leaf: &Leaf, elem: &[u8], n: u64) -> Self {
        let mut s = Self::empty(leaf.is_float());
        if n == 0 {
            return s;
        }
        s.count = n;
        if let Some(t) = leaf.text_at(elem) {
            s.text = Some(TextBounds::of(t, t));
            return s;
        }
        match leaf.int_at(elem) {
            Some(i) => {
                s.min = Some(Num::Int(i));
                s.max = Some(Num::Int(i));
                s.sum = Num::Int(i * i128::from(n));
            }
            None => {
                let f = leaf.float_at(elem);
                if f.is_nan() {
                    s.nan_count = n;
                } else {
                    s.min = Some(Num::Float(f));
                    s.max = Some(Num::Float(f));
                    s.sum = Num::Float(f * n as f64);
                }
            }
        }
        s
    }

    /// Adds the statistics of other elements of the same leaf.
    pub fn merge(&mut self, o: &LeafStats) {
        self.text = match (self.count, o.count) {
            (_, 0) => self.text.take(),
            (0, _) => o.text.clone(),
            _ => self
                .text
                .as_ref()
                .zip(o.text.as_ref())
                .map(|(a, b)| a.union(b)),
        };
        self.count += o.count;
        self.nan_count += o.nan_count;
        self.null_count += o.null_count;
        self.min = pick(self.min, o.min, true);
        self.max = pick(self.max, o.max, false);
        self.sum = match (self.sum, o.sum) {
            (Num::Int(a), Num::Int(b)) => Num::Int(a.saturating_add(b)),
            (a, b) => Num::Float(a.as_f64() + b.as_f64()),
        };
    }

    /// The mean of the values other than NaN.
    pub fn mean(&self) -> Option<f64> {
        let n = self.count - self.nan_count;
        (n > 0).then(|| self.sum.as_f64() / n as f64)
    }

    /// As stored: `count`, `nan_count`, `null_count`, `min`, `max` (null when there
    /// is no value but NaN), `sum`; non-finite floats as "inf", "-inf",
    /// "nan", integers beyond 64 bits as strings; a text leaf's bounds as
    /// `text_min` and `text_max`, their bytes in hex (`text_max` null when
    /// there is no upper bound).
    pub fn to_json(&self) -> Value {
        let opt = |n: Option<Num>| n.map_or(Value::Null, Num::to_json);
        let mut v = json!({
            "count": self.count,
            "nan_count": self.nan_count,
            "null_count": self.null_count,
            "min": opt(self.min),
            "max": opt(self.max),
            "sum": self.sum.to_json(),
        });
        if let Some(t) = &self.text {
            v["text_min"] = json!(hex(&t.lo));
            v["text_max"] = t.hi.as_deref().map_or(Value::Null, |h| json!(hex(h)));
        }
        v
    }

    fn from_json(v: &Value, float: bool) -> Result<Self> {
        let bad = || QueryError::Corrupt(format!("leaf statistics {v}"));
        let count = |k: &str| v.get(k).and_then(Value::as_u64).ok_or_else(bad);
        let opt = |k: &str| match v.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => Num::from_json(x, float).map(Some),
        };
        Ok(Self {
            count: count("count")?,
            nan_count: count("nan_count")?,
            // (Records written before null counts were kept have none.)
            null_count: v.get("null_count").map_or(Ok(0), |_| count("null_count"))?,
            min: opt("min")?,
            max: opt("max")?,
            sum: Num::from_json(v.get("sum").ok_or_else(bad)?, float)?,
            text: match v.get("text_min") {
                None => None,
                Some(lo) => Some(TextBounds {
                    lo: lo.as_str().and_then(unhex).ok_or_else(bad)?,
                    hi: match v.get("text_max") {
                        None | Some(Value::Null) => None,
                        Some(h) => Some(h.as_str().and_then(unhex).ok_or_else(bad)?),
                    },
                }),
            },
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(2 * bytes.len()), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 2 * TEXT_BOUND_BYTES {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn pick(a: Option<Num>, b: Option<Num>, smaller: bool) -> Option<Num> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(x), Some(y)) => {
            let x_first = match (x, y) {
                (Num::Int(p), Num::Int(q)) => p <= q,
                (p, q) => p.as_f64() <= q.as_f64(),
            };
            Some(if x_first == smaller { x } else { y })
        }
    }
}

/// Elements per block of a statistics pass: every leaf reads a block
/// while it is still in the core's cache.
const BLOCK_BYTES: usize = 64 << 10;

/// Statistics of every leaf over the elements of `data` (elements of
/// `size` bytes) in `runs` ((first element, count) pairs).
pub fn compute(
    leaves: &[Leaf],
    data: &[u8],
    size: usize,
    runs: &[(usize, usize)],
) -> Vec<LeafStats> {
    let mut acc = Accumulator::new(leaves, size);
    if size > 0 {
        for &(first, count) in runs {
            acc.add(&data[first * size..(first + count) * size]);
        }
    }
    acc.finish()
}

/// Statistics built up from elements handed over a block at a time.
pub struct Accumulator<'a> {
    leaves: &'a [Leaf],
    size: usize,
    acc: Vec<Acc>,
    /// Per leaf, how byte permutes gather it (`None` for the whole: this
    /// CPU has no AVX-512 VBMI).
    permutes: Option<Vec<Option<PermutePlan>>>,
}

impl<'a> Accumulator<'a> {
    /// Statistics of no elements yet, of elements of `size` bytes.
    pub fn new(leaves: &'a [Leaf], size: usize) -> Self {
        Self {
            leaves,
            size,
            acc: leaves.iter().map(Acc::new).collect(),
            permutes: has_vbmi().then(|| leaves.iter().map(|l| permute_plan(l, size)).collect()),
        }
    }

    /// Adds the elements of `bytes` (whole elements), a cache-sized block
    /// at a time so that every leaf reads a block while it is in cache.
    pub fn add(&mut self, bytes: &[u8]) {
        if self.size == 0 {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { self.add_avx2(bytes) };
        }
        self.add_portable(bytes);
    }

    /// [`Accumulator::add`] compiled for AVX2: the gathers and reductions
    /// are inlined here and vectorised four times as wide as the default
    /// x86-64 build (SSE2) allows.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn add_avx2(&mut self, bytes: &[u8]) {
        if let Some(order) = self.eight_words() {
            return self.add_eight_words(bytes, &order);
        }
        if self
            .permutes
            .as_ref()
            .is_some_and(|p| p.iter().any(Option::is_some))
        {
            // SAFETY: plans are made only where the CPU has VBMI.
            return self.add_permuted(bytes);
        }
        self.add_portable(bytes)
    }

    /// [`Accumulator::add`] where byte permutes gather some leaves
    /// ([`PermutePlan`]): a block of rows at a time, each such leaf is
    /// gathered into a column in a few permutes per register of values,
    /// then reduced; other leaves are scanned as everywhere else.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512vbmi")]
    unsafe fn add_permuted(&mut self, bytes: &[u8]) {
        let size = self.size;
        let plans = self.permutes.as_ref().expect("checked by the caller");
        let mut column = [0u64; LANES];
        for (b, block) in bytes.chunks(size * LANES).enumerate() {
            let m = block.len() / size;
            // the permutes' loads may reach into the rows after the block
            let rows = &bytes[b * size * LANES..];
            for ((leaf, acc), plan) in self.leaves.iter().zip(self.acc.iter_mut()).zip(plans) {
                let Some(plan) = plan else {
                    acc.scan(leaf, block, size);
                    continue;
                };
                let w = plan.width();
                // SAFETY: a u64 array seen as its bytes.
                let out = std::slice::from_raw_parts_mut(column.as_mut_ptr().cast::<u8>(), m * w);
                let done = plan.gather(rows, size, m, out);
                plan.gather_rest(rows, size, (done, m), out);
                acc.reduce_column(leaf.kind, &column, m);
            }
        }
    }

    /// When the element is eight 4-byte numbers in the machine's order
    /// (one leaf at each of the offsets 0, 4, …, 28), the leaf at each
    /// offset / 4.
    fn eight_words(&self) -> Option<[usize; 8]> {
        if self.size != 32 || self.leaves.len() != 8 {
            return None;
        }
        let mut order = [usize::MAX; 8];
        for (j, leaf) in self.leaves.iter().enumerate() {
            let native = match leaf.kind {
                Kind::Int { size: 4, big, .. } | Kind::Float { size: 4, big } => {
                    big != cfg!(target_endian = "little")
                }
                _ => false,
            };
            let k = leaf.offset / 4;
            if !native || leaf.offset % 4 != 0 || k >= 8 || order[k] != usize::MAX {
                return None;
            }
            order[k] = j;
        }
        Some(order)
    }

    /// [`Accumulator::add`] of elements of eight 4-byte numbers
    /// ([`Accumulator::eight_words`]): each block of rows is turned into
    /// eight columns by 8x8 transposes in registers (one pass over the
    /// rows, not a strided pass a leaf), then each column is reduced.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn add_eight_words(&mut self, bytes: &[u8], order: &[usize; 8]) {
        use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_storeu_si256};
        let mut cols = [[0u32; LANES]; 8];
        for block in bytes.chunks(32 * LANES) {
            let m = block.len() / 32;
            let full = m / 8;
            for b in 0..full {
                let src = block.as_ptr().add(b * 256).cast::<__m256i>();
                let rows: [__m256i; 8] = std::array::from_fn(|i| _mm256_loadu_si256(src.add(i)));
                let t = h5lake_types::transpose::transpose_8x8_epi32(rows);
                for (col, v) in cols.iter_mut().zip(t) {
                    _mm256_storeu_si256(col.as_mut_ptr().add(b * 8).cast::<__m256i>(), v);
                }
            }
            for r in full * 8..m {
                for (k, col) in cols.iter_mut().enumerate() {
                    let at = r * 32 + 4 * k;
                    col[r] = u32::from_ne_bytes(block[at..at + 4].try_into().expect("4 bytes"));
                }
            }
            for (k, col) in cols.iter().enumerate() {
                let j = order[k];
                let words = &col[..m];
                match (&mut self.acc[j], self.leaves[j].kind) {
                    (Acc::Int { n, min, max, sum }, Kind::Int { signed, .. }) => {
                        *n += m as u64;
                        let acc = (min, max, sum);
                        if signed {
                            reduce_ints::<i32>(words_as(words), sum_small, acc);
                        } else {
                            reduce_ints::<u32>(words, sum_small, acc);
                        }
                    }
                    (
                        Acc::Float {
                            n,
                            nan,
                            min,
                            max,
                            sum,
                        },
                        Kind::Float { .. },
                    ) => {
                        *n += m as u64;
                        reduce_floats::<f32>(words_as(words), (nan, min, max, sum));
                    }
                    _ => unreachable!("eight_words() takes numbers of 4 bytes only"),
                }
            }
        }
    }

    #[inline(always)]
    fn add_portable(&mut self, bytes: &[u8]) {
        let block = (BLOCK_BYTES / self.size).max(1) * self.size;
        for b in bytes.chunks(block) {
            for (leaf, a) in self.leaves.iter().zip(self.acc.iter_mut()) {
                a.scan(leaf, b, self.size);
            }
        }
    }

    /// The statistics of everything added.
    pub fn finish(self) -> Vec<LeafStats> {
        self.acc.into_iter().map(Acc::finish).collect()
    }
}

/// Whether this CPU has the AVX-512 byte permutes [`PermutePlan`] uses.
fn has_vbmi() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vbmi")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// How permutes gather `leaf` from elements of `size` bytes, if they can:
/// numbers of 1, 2, 4 or 8 bytes (floats of 4 and 8).
fn permute_plan(leaf: &Leaf, size: usize) -> Option<PermutePlan> {
    let (width, big) = match leaf.kind {
        Kind::Bool => (1, false),
        Kind::Int { size, big, .. } => (size, big),
        Kind::Float { size: 4, big } => (4, big),
        Kind::Float { size: 8, big } => (8, big),
        _ => return None,
    };
    PermutePlan::new(size, leaf.offset, width, big)
}

enum Acc {
    Int {
        n: u64,
        min: i128,
        max: i128,
        sum: i128,
    },
    Float {
        n: u64,
        nan: u64,
        min: f64,
        max: f64,
        sum: f64,
    },
    /// Text: counted and bounded (the smallest and largest values, whole).
    Text { n: u64, lo: Vec<u8>, hi: Vec<u8> },
}

/// Values of one member gathered per block: the strided loads happen
/// once, into a small array the reductions then run over in vector
/// registers.
const LANES: usize = 512;

/// A number type a member is stored as.
trait Lane: Copy + PartialOrd + Default {
    const W: usize;
    /// The smallest and largest values (infinities for floats).
    const LO: Self;
    const HI: Self;
    /// The value with its bytes in the other order.
    fn swapped(self) -> Self;
}

macro_rules! lanes {
    ($($t:ty: $lo:expr, $hi:expr);*) => {$(
        impl Lane for $t {
            const W: usize = std::mem::size_of::<$t>();
            const LO: Self = $lo;
            const HI: Self = $hi;
            #[inline(always)]
            fn swapped(self) -> Self {
                let mut a = self.to_ne_bytes();
                a.reverse();
                <$t>::from_ne_bytes(a)
            }
        }
    )*};
}

lanes!(i8: i8::MIN, i8::MAX; u8: 0, u8::MAX; i16: i16::MIN, i16::MAX; u16: 0, u16::MAX;
       i32: i32::MIN, i32::MAX; u32: 0, u32::MAX; i64: i64::MIN, i64::MAX; u64: 0, u64::MAX;
       f32: f32::NEG_INFINITY, f32::INFINITY; f64: f64::NEG_INFINITY, f64::INFINITY);

/// Runs `f` on the member at `off` of the elements (`size` bytes each) of
/// `bytes`, block by block of at most [`LANES`] values.
#[inline(always)]
fn gathered<T: Lane>(bytes: &[u8], size: usize, off: usize, big: bool, mut f: impl FnMut(&[T])) {
    let mut buf = [T::default(); LANES];
    assert!(off + T::W <= size, "a member lies inside its element");
    for block in bytes.chunks(size * LANES) {
        let n = block.len() / size;
        let base = block.as_ptr();
        for (i, slot) in buf[..n].iter_mut().enumerate() {
            // SAFETY: element i (< n) spans block[i * size..(i + 1) * size]
            // and the member lies inside it (checked above); the read is
            // unaligned-safe and T is a plain number for any bit pattern.
            *slot = unsafe { base.add(i * size + off).cast::<T>().read_unaligned() };
        }
        // (Read in the machine's order; stored in the other one: swap.)
        if big == cfg!(target_endian = "little") {
            for v in &mut buf[..n] {
                *v = v.swapped();
            }
        }
        f(&buf[..n]);
    }
}

/// Smallest and largest of `vals` (NaNs never win a comparison), in
/// lanes that fill a 64-byte register: fewer lanes made the compiler split
/// and rejoin registers, or leave small types unvectorised.
#[inline(always)]
fn bounds<T: Lane>(vals: &[T]) -> (T, T) {
    match T::W {
        1 => bounds_in::<T, 64>(vals),
        2 => bounds_in::<T, 32>(vals),
        4 => bounds_in::<T, 16>(vals),
        _ => bounds_in::<T, 8>(vals),
    }
}

#[inline(always)]
fn bounds_in<T: Lane, const L: usize>(vals: &[T]) -> (T, T) {
    let mut lo = [T::HI; L];
    let mut hi = [T::LO; L];
    let quads = vals.chunks_exact(L);
    let rest = quads.remainder();
    for c in quads {
        for k in 0..L {
            lo[k] = if c[k] < lo[k] { c[k] } else { lo[k] };
            hi[k] = if c[k] > hi[k] { c[k] } else { hi[k] };
        }
    }
    for &v in rest {
        lo[0] = if v < lo[0] { v } else { lo[0] };
        hi[0] = if v > hi[0] { v } else { hi[0] };
    }
    let l = lo.into_iter().fold(T::HI, |a, v| if v < a { v } else { a });
    let h = hi.into_iter().fold(T::LO, |a, v| if v > a { v } else { a });
    (l, h)
}

/// Bounds and sum of an integer member (`block_sum` adds up one block:
/// in i64 for members of up to 32 bits, whose sums of a block fit it).
#[inline(always)]
fn scan_ints<T: Lane + Into<i128>>(
    bytes: &[u8],
    size: usize,
    off: usize,
    big: bool,
    block_sum: impl Fn(&[T]) -> i128,
    (min, max, sum): (&mut i128, &mut i128, &mut i128),
) {
    gathered::<T>(
        bytes,
        size,
        off,
        big,
        #[inline(always)]
        |vals| reduce_ints(vals, &block_sum, (&mut *min, &mut *max, &mut *sum)),
    );
}

/// Adds a block of an integer member's values to its bounds and sum.
#[inline(always)]
fn reduce_ints<T: Lane + Into<i128>>(
    vals: &[T],
    block_sum: impl Fn(&[T]) -> i128,
    (min, max, sum): (&mut i128, &mut i128, &mut i128),
) {
    if vals.is_empty() {
        return;
    }
    let (l, h) = bounds(vals);
    *min = (*min).min(l.into());
    *max = (*max).max(h.into());
    *sum = sum.saturating_add(block_sum(vals));
}

/// Adds `count` booleans of which `trues` are true to a boolean leaf's
/// count, bounds (0/1) and sum (the number of trues).
#[inline(always)]
fn add_bools(
    (n, min, max, sum): (&mut u64, &mut i128, &mut i128, &mut i128),
    count: u64,
    trues: u64,
) {
    *n += count;
    if count > 0 {
        *min = (*min).min(i128::from(trues == count));
        *max = (*max).max(i128::from(trues > 0));
    }
    *sum += i128::from(trues);
}

/// The 4-byte words of a column as the numbers they hold.
fn words_as<T: Lane>(words: &[u32]) -> &[T] {
    assert!(T::W == 4 && std::mem::align_of::<T>() <= std::mem::align_of::<u32>());
    // SAFETY: T is a plain 4-byte number (checked) for which every bit
    // pattern is a value, no more aligned than u32.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<T>(), words.len()) }
}

#[inline(always)]
fn sum_small<T: Copy + Into<i64>>(vals: &[T]) -> i128 {
    i128::from(vals.iter().map(|&v| Into::<i64>::into(v)).sum::<i64>())
}

/// The sum of a block of 64-bit integers, exact: their high and low 32
/// bits summed apart in 64-bit lanes (a block of [`LANES`] values cannot
/// overflow either), which vectorises where 128-bit additions do not.
#[inline(always)]
fn sum_i64(vals: &[i64]) -> i128 {
    let (mut hi, mut lo) = (0i64, 0u64);
    for &v in vals {
        hi += v >> 32;
        lo += v as u64 & 0xffff_ffff;
    }
    (i128::from(hi) << 32) + i128::from(lo)
}

/// As [`sum_i64`], of unsigned 64-bit integers.
#[inline(always)]
fn sum_u64(vals: &[u64]) -> i128 {
    let (mut hi, mut lo) = (0u64, 0u64);
    for &v in vals {
        hi += v >> 32;
        lo += v & 0xffff_ffff;
    }
    (i128::from(hi) << 32) + i128::from(lo)
}

/// Bounds, NaN count and sum (NaNs left out) of a float member.
#[inline(always)]
fn scan_floats<T: Lane + Into<f64>>(
    bytes: &[u8],
    size: usize,
    off: usize,
    big: bool,
    (nan, min, max, sum): (&mut u64, &mut f64, &mut f64, &mut f64),
) {
    gathered::<T>(
        bytes,
        size,
        off,
        big,
        #[inline(always)]
        |vals| reduce_floats(vals, (&mut *nan, &mut *min, &mut *max, &mut *sum)),
    );
}

/// Adds a block of a float member's values to its bounds, NaN count and
/// sum (NaNs left out).
#[inline(always)]
fn reduce_floats<T: Lane + Into<f64>>(
    vals: &[T],
    (nan, min, max, sum): (&mut u64, &mut f64, &mut f64, &mut f64),
) {
    let (l, h) = bounds(vals);
    *min = min.min(l.into());
    *max = max.max(h.into());
    let mut s = [0f64; 8];
    let mut nans = [0u64; 8];
    let quads = vals.chunks_exact(8);
    let rest = quads.remainder();
    for c in quads {
        for k in 0..8 {
            let v: f64 = c[k].into();
            let is_nan = v.is_nan();
            nans[k] += u64::from(is_nan);
            s[k] += if is_nan { 0.0 } else { v };
        }
    }
    for &v in rest {
        let v: f64 = v.into();
        let is_nan = v.is_nan();
        nans[0] += u64::from(is_nan);
        s[0] += if is_nan { 0.0 } else { v };
    }
    *nan += nans.iter().sum::<u64>();
    *sum += s.iter().sum::<f64>();
}

impl Acc {
    fn new(leaf: &Leaf) -> Self {
        if leaf.is_text() {
            Acc::Text {
                n: 0,
                lo: Vec::new(),
                hi: Vec::new(),
            }
        } else if leaf.is_float() {
            Acc::Float {
                n: 0,
                nan: 0,
                min: f64::INFINITY,
                max: f64::NEG_INFINITY,
                sum: 0.0,
            }
        } else {
            Acc::Int {
                n: 0,
                min: i128::MAX,
                max: i128::MIN,
                sum: 0,
            }
        }
    }

    /// Adds the first `m` values of a gathered column (in the machine's
    /// order, as [`permute_plan`] gathers a leaf of this `kind`).
    #[inline(always)]
    fn reduce_column(&mut self, kind: Kind, column: &[u64; LANES], m: usize) {
        fn typed<T: Lane>(column: &[u64; LANES], m: usize) -> &[T] {
            assert!(m * T::W <= LANES * 8 && std::mem::align_of::<T>() <= 8);
            // SAFETY: T is a plain number no more aligned than u64, for
            // which every bit pattern is a value; m of them fit (checked).
            unsafe { std::slice::from_raw_parts(column.as_ptr().cast::<T>(), m) }
        }
        match (self, kind) {
            (Acc::Int { n, min, max, sum }, Kind::Bool) => {
                let trues = typed::<u8>(column, m).iter().filter(|&&b| b != 0).count();
                add_bools((n, min, max, sum), m as u64, trues as u64);
            }
            (
                Acc::Int { n, min, max, sum },
                Kind::Int {
                    size: w, signed, ..
                },
            ) => {
                *n += m as u64;
                let acc = (min, max, sum);
                match (w, signed) {
                    (1, true) => reduce_ints(typed::<i8>(column, m), sum_small, acc),
                    (1, false) => reduce_ints(typed::<u8>(column, m), sum_small, acc),
                    (2, true) => reduce_ints(typed::<i16>(column, m), sum_small, acc),
                    (2, false) => reduce_ints(typed::<u16>(column, m), sum_small, acc),
                    (4, true) => reduce_ints(typed::<i32>(column, m), sum_small, acc),
                    (4, false) => reduce_ints(typed::<u32>(column, m), sum_small, acc),
                    (8, true) => reduce_ints(typed::<i64>(column, m), sum_i64, acc),
                    _ => reduce_ints(typed::<u64>(column, m), sum_u64, acc),
                }
            }
            (
                Acc::Float {
                    n,
                    nan,
                    min,
                    max,
                    sum,
                },
                Kind::Float { size: w, .. },
            ) => {
                *n += m as u64;
                let acc = (nan, min, max, sum);
                if w == 4 {
                    reduce_floats(typed::<f32>(column, m), acc);
                } else {
                    reduce_floats(typed::<f64>(column, m), acc);
                }
            }
            _ => unreachable!("permutes gather numbers and booleans only"),
        }
    }

    #[inline(always)]
    fn scan(&mut self, leaf: &Leaf, bytes: &[u8], size: usize) {
        let off = leaf.offset;
        let count = (bytes.len() / size) as u64;
        match (self, leaf.kind) {
            (Acc::Int { n, min, max, sum }, Kind::Bool) => {
                let trues = bytes.chunks_exact(size).filter(|e| e[off] != 0).count() as u64;
                add_bools((n, min, max, sum), count, trues);
            }
            (
                Acc::Int { n, min, max, sum },
                Kind::Int {
                    size: w,
                    signed,
                    big,
                },
            ) => {
                *n += count;
                let acc = (min, max, sum);
                match (w, signed) {
                    (1, true) => scan_ints::<i8>(bytes, size, off, big, sum_small, acc),
                    (1, false) => scan_ints::<u8>(bytes, size, off, big, sum_small, acc),
                    (2, true) => scan_ints::<i16>(bytes, size, off, big, sum_small, acc),
                    (2, false) => scan_ints::<u16>(bytes, size, off, big, sum_small, acc),
                    (4, true) => scan_ints::<i32>(bytes, size, off, big, sum_small, acc),
                    (4, false) => scan_ints::<u32>(bytes, size, off, big, sum_small, acc),
                    (8, true) => scan_ints::<i64>(bytes, size, off, big, sum_i64, acc),
                    _ => scan_ints::<u64>(bytes, size, off, big, sum_u64, acc),
                }
            }
            (
                Acc::Float {
                    n,
                    nan,
                    min,
                    max,
                    sum,
                },
                Kind::Float { size: w, big },
            ) => {
                *n += count;
                let acc = (nan, min, max, sum);
                match w {
                    4 => scan_floats::<f32>(bytes, size, off, big, acc),
                    8 => scan_floats::<f64>(bytes, size, off, big, acc),
                    _ => {
                        for e in bytes.chunks_exact(size) {
                            let v = leaf.float_at(e);
                            if v.is_nan() {
                                *acc.0 += 1;
                            } else {
                                *acc.1 = acc.1.min(v);
                                *acc.2 = acc.2.max(v);
                                *acc.3 += v;
                            }
                        }
                    }
                }
            }
            (Acc::Text { n, lo, hi }, Kind::Text { .. }) => {
                for e in bytes.chunks_exact(size) {
                    let t = leaf.text_at(e).expect("a text leaf");
                    if *n == 0 || t < lo.as_slice() {
                        lo.clear();
                        lo.extend_from_slice(t);
                    }
                    if *n == 0 || t > hi.as_slice() {
                        hi.clear();
                        hi.extend_from_slice(t);
                    }
                    *n += 1;
                }
            }
            _ => unreachable!("an accumulator is made for its leaf's kind"),
        }
    }

    fn finish(self) -> LeafStats {
        match self {
            Acc::Int { n, min, max, sum } => LeafStats {
                count: n,
                nan_count: 0,
                null_count: 0,
                min: (n > 0).then_some(Num::Int(min)),
                max: (n > 0).then_some(Num::Int(max)),
                sum: Num::Int(sum),
                text: None,
            },
            Acc::Text { n, lo, hi } => LeafStats {
                count: n,
                text: (n > 0).then(|| TextBounds::of(&lo, &hi)),
                ..LeafStats::empty(false)
            },
            Acc::Float {
                n,
                nan,
                min,
                max,
                sum,
            } => LeafStats {
                count: n,
                nan_count: nan,
                null_count: 0,
                min: (n > nan).then_some(Num::Float(min)),
                max: (n > nan).then_some(Num::Float(max)),
                sum: Num::Float(sum),
                text: None,
            },
        }
    }
}

/// What is kept beside a chunk: the statistics of its elements inside the
/// dataset's extent, the version of the chunk object they describe, and
/// the extent they were taken over (`live`: how many of the chunk's
/// indices along each dimension were inside it). A record whose version or
/// extent is not the chunk's current one describes other data and is not
/// used.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkRecord {
    pub version: String,
    pub live: Vec<u64>,
    /// Per leaf, in the order of the dataset's leaves.
    pub leaves: Vec<LeafStats>,
    /// Per chunk function, in the order they were declared.
    pub functions: Vec<crate::functions::FnState>,
}

impl ChunkRecord {
    /// Whether every text leaf of `leaves` that has values has bounds
    /// (records made before text was bounded only count it).
    pub fn bounds_text(&self, leaves: &[Leaf]) -> bool {
        leaves
            .iter()
            .zip(&self.leaves)
            .all(|(l, s)| !l.is_text() || s.count == 0 || s.text.is_some())
    }

    /// The record as stored (JSON, leaves and functions by name).
    pub fn to_bytes(
        &self,
        leaves: &[Leaf],
        functions: &[crate::functions::ChunkFunction],
    ) -> Vec<u8> {
        let mut fields = Map::new();
        for (l, s) in leaves.iter().zip(&self.leaves) {
            fields.insert(l.name.clone(), s.to_json());
        }
        let mut fns = Map::new();
        for (f, s) in functions.iter().zip(&self.functions) {
            fns.insert(f.name.clone(), s.to_json());
        }
        serde_json::to_vec(&json!({
            "version": self.version,
            "live": self.live,
            "fields": fields,
            "functions": fns,
        }))
        .expect("statistics serialize")
    }

    /// Reads a stored record for a dataset of `leaves` and `functions`;
    /// a record that lacks one of them (written before it was declared)
    /// is an error, which callers treat as no record.
    ///
    /// # Errors
    /// Not a record of these leaves and functions.
    pub fn from_bytes(
        bytes: &[u8],
        leaves: &[Leaf],
        functions: &[crate::functions::ChunkFunction],
    ) -> Result<Self> {
        let v: Value = serde_json::from_slice(bytes)
            .map_err(|e| QueryError::Corrupt(format!("statistics record: {e}")))?;
        Self::from_json(&v, leaves, functions)
    }

    /// [`ChunkRecord::from_bytes`] of a record already parsed (one of the
    /// many a summary holds).
    ///
    /// # Errors
    /// Not a record of these leaves and functions.
    pub fn from_json(
        v: &Value,
        leaves: &[Leaf],
        functions: &[crate::functions::ChunkFunction],
    ) -> Result<Self> {
        let bad = |what: &str| QueryError::Corrupt(format!("statistics record without {what}"));
        let version = v
            .get("version")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("version"))?;
        let live = v
            .get("live")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
            .ok_or_else(|| bad("extent"))?;
        let fields = v.get("fields").ok_or_else(|| bad("fields"))?;
        let leaf_stats = leaves
            .iter()
            .map(|l| {
                LeafStats::from_json(
                    fields.get(&l.name).ok_or_else(|| bad(&l.name))?,
                    l.is_float(),
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let fns = v.get("functions").ok_or_else(|| bad("functions"))?;
        let functions = functions
            .iter()
            .map(|f| f.state_from_json(fns.get(&f.name).ok_or_else(|| bad(&f.name))?))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            version: version.to_string(),
            live,
            leaves: leaf_stats,
            functions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leaf::leaves;
    use h5lake_types::Datatype;

    /// Rows of eight 4-byte numbers reduced through register transposes
    /// give exactly what the member-by-member pass gives (same sums, bit
    /// for bit: the same blocks in the same order), for any row count and
    /// any order of the members.
    #[test]
    fn eight_word_rows_reduce_as_the_member_by_member_pass() {
        let dt = Datatype::from_json(&serde_json::json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "i", "type": "H5T_STD_I32LE"}, {"name": "x", "type": "H5T_IEEE_F32LE"},
            {"name": "u", "type": "H5T_STD_U32LE"}, {"name": "y", "type": "H5T_IEEE_F32LE"},
            {"name": "j", "type": "H5T_STD_I32LE"}, {"name": "z", "type": "H5T_IEEE_F32LE"},
            {"name": "v", "type": "H5T_STD_U32LE"}, {"name": "w", "type": "H5T_IEEE_F32LE"}]}))
        .unwrap();
        let l = leaves(&dt);
        let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 1e30, -3.5];
        for n in [0usize, 1, 7, 8, 513, 5000] {
            let mut data = Vec::with_capacity(n * 32);
            for r in 0..n {
                for k in 0..8u32 {
                    let v = (r as u32).wrapping_mul(2_654_435_761).rotate_left(k);
                    let word = if k % 2 == 1 && r % 5 == 0 {
                        specials[(r + k as usize) % specials.len()].to_bits()
                    } else if k % 2 == 1 {
                        (v as f32 * 1e-6).to_bits()
                    } else {
                        v
                    };
                    data.extend(word.to_le_bytes());
                }
            }
            let mut fast = Accumulator::new(&l, 32);
            fast.add(&data);
            let mut plain = Accumulator::new(&l, 32);
            plain.add_portable(&data);
            let (fast, plain) = (fast.finish(), plain.finish());
            for (a, b) in fast.iter().zip(&plain) {
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "{n} rows");
            }
        }
    }

    #[test]
    fn sums_of_64_bit_integers_are_exact_at_their_ends() {
        let signed: Vec<i64> = [
            i64::MIN,
            i64::MAX,
            -1,
            0,
            1,
            i64::MIN + 1,
            -(1 << 32),
            1 << 32,
        ]
        .into_iter()
        .cycle()
        .take(LANES)
        .collect();
        assert_eq!(
            sum_i64(&signed),
            signed.iter().map(|&v| i128::from(v)).sum::<i128>()
        );
        let unsigned: Vec<u64> = [u64::MAX, 0, 1, u64::MAX - 1, 1 << 63, u64::from(u32::MAX)]
            .into_iter()
            .cycle()
            .take(LANES)
            .collect();
        assert_eq!(
            sum_u64(&unsigned),
            unsigned.iter().map(|&v| i128::from(v)).sum::<i128>()
        );
    }

    fn f32le() -> Datatype {
        Datatype::from_json(&json!({"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"})).unwrap()
    }

    #[test]
    fn floats_skip_nans_and_count_them() {
        let ls = leaves(&f32le());
        let vals = [1.5f32, f32::NAN, -3.0, 7.25];
        let data: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let s = &compute(&ls, &data, 4, &[(0, 4)])[0];
        assert_eq!((s.count, s.nan_count), (4, 1));
        assert_eq!(s.min, Some(Num::Float(-3.0)));
        assert_eq!(s.max, Some(Num::Float(7.25)));
        assert_eq!(s.sum, Num::Float(5.75));
        let only_first_two = &compute(&ls, &data, 4, &[(0, 2)])[0];
        assert_eq!(only_first_two.max, Some(Num::Float(1.5)));
    }

    proptest::proptest! {
        #[test]
        fn computed_statistics_equal_a_plain_pass(
            vals in proptest::collection::vec(
                (proptest::prelude::any::<i16>(), proptest::prelude::any::<u64>(),
                 proptest::prop_oneof![proptest::strategy::Just(f64::NAN), -1e6f64..1e6]), 0..50),
            from in 0usize..50,
        ) {
            let t = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
                {"name": "a", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_I16BE"}},
                {"name": "b", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_U64LE"}},
                {"name": "c", "type": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"}},
            ]})).unwrap();
            let ls = leaves(&t);
            let data: Vec<u8> = vals.iter().flat_map(|(a, b, c)| {
                let mut e = a.to_be_bytes().to_vec();
                e.extend(b.to_le_bytes());
                e.extend(c.to_le_bytes());
                e
            }).collect();
            let from = from.min(vals.len());
            let got = compute(&ls, &data, 18, &[(from, vals.len() - from)]);
            // The build for CPUs without AVX2 gives the same answers.
            let mut portable = Accumulator::new(&ls, 18);
            portable.add_portable(&data[from * 18..]);
            proptest::prop_assert_eq!(&portable.finish(), &got);
            let part = &vals[from..];
            let n = part.len() as u64;
            let ints = |f: &dyn Fn(&(i16, u64, f64)) -> i128| {
                let v: Vec<i128> = part.iter().map(f).collect();
                (v.iter().min().copied().map(Num::Int), v.iter().max().copied().map(Num::Int), Num::Int(v.iter().sum()))
            };
            let (lo, hi, sum) = ints(&|x| i128::from(x.0));
            proptest::prop_assert_eq!(&got[0], &LeafStats { count: n, nan_count: 0, null_count: 0, min: lo, max: hi, sum, text: None });
            let (lo, hi, sum) = ints(&|x| i128::from(x.1));
            proptest::prop_assert_eq!(&got[1], &LeafStats { count: n, nan_count: 0, null_count: 0, min: lo, max: hi, sum, text: None });
            let fin: Vec<f64> = part.iter().map(|x| x.2).filter(|v| !v.is_nan()).collect();
            proptest::prop_assert_eq!(got[2].nan_count, n - fin.len() as u64);
            proptest::prop_assert_eq!(got[2].min, fin.iter().copied().reduce(f64::min).map(Num::Float));
            proptest::prop_assert_eq!(got[2].max, fin.iter().copied().reduce(f64::max).map(Num::Float));
            let want: f64 = fin.iter().sum();
            proptest::prop_assert!((got[2].sum.as_f64() - want).abs() <= 1e-6 * want.abs().max(1.0));
        }
    }

    #[test]
    fn float_bounds_survive_the_record_exactly() {
        // (serde_json parses some floats 1 ulp off unless told to round-trip.)
        let ls = leaves(
            &Datatype::from_json(&json!({"class": "H5T_FLOAT", "base": "H5T_IEEE_F64LE"})).unwrap(),
        );
        for x in [-220969.99801330006f64, 0.1 + 0.2, 1e-310, f64::MAX, -5e-324] {
            let rec = ChunkRecord {
                version: "v".into(),
                live: vec![1],
                leaves: compute(&ls, &x.to_le_bytes(), 8, &[(0, 1)]),
                functions: vec![],
            };
            let back = ChunkRecord::from_bytes(&rec.to_bytes(&ls, &[]), &ls, &[]).unwrap();
            assert_eq!(back.leaves[0].min, Some(Num::Float(x)), "{x:e}");
        }
    }

    #[test]
    fn records_round_trip() {
        let ls = leaves(&f32le());
        let rec = ChunkRecord {
            version: "v1".into(),
            live: vec![3],
            leaves: vec![LeafStats {
                count: 3,
                nan_count: 0,
                null_count: 2,
                min: Some(Num::Float(f64::NEG_INFINITY)),
                max: Some(Num::Float(2.0)),
                sum: Num::Float(f64::NEG_INFINITY),
                text: None,
            }],
            functions: vec![],
        };
        let back = ChunkRecord::from_bytes(&rec.to_bytes(&ls, &[]), &ls, &[]).unwrap();
        assert_eq!(back, rec);
    }

    fn text_leaf(len: usize) -> Vec<Leaf> {
        leaves(
            &Datatype::from_json(&serde_json::json!({
                "class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                "strPad": "H5T_STR_NULLPAD", "length": len
            }))
            .unwrap(),
        )
    }

    #[test]
    fn long_text_bounds_are_cut_and_still_bound() {
        let cut = |lo: &[u8], hi: &[u8]| TextBounds::of(lo, hi);
        assert_eq!(cut(b"abc", b"abd").hi.as_deref(), Some(&b"abd"[..]));
        let z = vec![b'z'; 100];
        let b = cut(&z, &z);
        assert_eq!(b.lo, vec![b'z'; TEXT_BOUND_BYTES]);
        let mut want = vec![b'z'; TEXT_BOUND_BYTES - 1];
        want.push(b'{');
        assert_eq!(b.hi, Some(want));
        assert!(!b.single(), "a cut value is not known to be every value");
        let mut ff = vec![b'a'; 10];
        ff.extend([0xFF; 60]);
        assert_eq!(cut(b"", &ff).hi.as_deref(), Some(&b"aaaaaaaaab"[..]));
        assert_eq!(cut(b"", &[0xFF; 70]).hi, None);
        assert!(cut(b"same", b"same").single());
    }

    proptest::proptest! {
        #[test]
        fn text_bounds_cover_every_value_and_round_trip(
            texts in proptest::collection::vec(
                proptest::collection::vec(proptest::prop_oneof![proptest::strategy::Just(0u8), proptest::strategy::Just(0xFFu8), proptest::strategy::Just(b'a'), proptest::num::u8::ANY], 0..100),
                1..40),
            split in 0usize..40,
        ) {
            let ls = text_leaf(100);
            let mut data = vec![0u8; texts.len() * 100];
            for (t, e) in texts.iter().zip(data.chunks_exact_mut(100)) {
                e[..t.len()].copy_from_slice(t);
            }
            let n = texts.len();
            let split = split.min(n);
            let mut got = compute(&ls, &data, 100, &[(0, split)]).remove(0);
            got.merge(&compute(&ls, &data, 100, &[(split, n - split)])[0]);
            let whole = compute(&ls, &data, 100, &[(0, n)]).remove(0);
            proptest::prop_assert_eq!(&got, &whole);
            let b = got.text.clone().expect("bounds of some values");
            for e in data.chunks_exact(100) {
                let t = ls[0].text_at(e).unwrap();
                proptest::prop_assert!(b.lo.as_slice() <= t);
                if let Some(h) = &b.hi {
                    proptest::prop_assert!(t <= h.as_slice());
                }
            }
            let rec = ChunkRecord { version: "v".into(), live: vec![n as u64], leaves: vec![got], functions: vec![] };
            let back = ChunkRecord::from_bytes(&rec.to_bytes(&ls, &[]), &ls, &[]).unwrap();
            proptest::prop_assert_eq!(back, rec);
        }
    }
}
