//! Evaluating an expression on the elements of a chunk, and deciding from
//! a chunk's statistics whether any of its elements can match.

use crate::expr::{ArOp, CmpOp, Func, Node};
use crate::leaf::{Kind, Leaf};
use crate::stats::{LeafStats, Num};

/// A value of an expression over `n` elements: a column, or one value for
/// all of them.
#[derive(Clone, Debug)]
pub enum Val {
    Bools(Vec<bool>),
    Ints(Vec<i128>),
    Floats(Vec<f64>),
    /// Text values (up to their first NUL); only ever compared.
    Texts(Vec<Vec<u8>>),
    Bool(bool),
    Int(i128),
    Float(f64),
    Text(Vec<u8>),
}

impl Val {
    #[inline]
    fn f(&self, i: usize) -> f64 {
        match self {
            Val::Floats(v) => v[i],
            Val::Ints(v) => v[i] as f64,
            Val::Bools(v) => f64::from(u8::from(v[i])),
            Val::Float(f) => *f,
            Val::Int(x) => *x as f64,
            Val::Bool(b) => f64::from(u8::from(*b)),
            // (Text is only compared as text: the parser sees to that.)
            Val::Texts(_) | Val::Text(_) => f64::NAN,
        }
    }

    #[inline]
    fn i(&self, i: usize) -> i128 {
        match self {
            Val::Ints(v) => v[i],
            Val::Bools(v) => i128::from(v[i]),
            Val::Int(x) => *x,
            Val::Bool(b) => i128::from(*b),
            Val::Floats(v) => v[i] as i128,
            Val::Float(f) => *f as i128,
            Val::Texts(_) | Val::Text(_) => 0,
        }
    }

    #[inline]
    fn b(&self, i: usize) -> bool {
        match self {
            Val::Bools(v) => v[i],
            Val::Bool(b) => *b,
            other => other.f(i) != 0.0,
        }
    }

    fn is_float(&self) -> bool {
        matches!(self, Val::Floats(_) | Val::Float(_))
    }

    fn is_scalar(&self) -> bool {
        matches!(
            self,
            Val::Bool(_) | Val::Int(_) | Val::Float(_) | Val::Text(_)
        )
    }

    fn is_text(&self) -> bool {
        matches!(self, Val::Texts(_) | Val::Text(_))
    }

    /// Element `i` as text.
    #[inline]
    fn t(&self, i: usize) -> &[u8] {
        match self {
            Val::Texts(v) => &v[i],
            Val::Text(t) => t,
            _ => &[],
        }
    }

    /// As a mask of `n` elements.
    pub fn into_mask(self, n: usize) -> Vec<bool> {
        match self {
            Val::Bools(v) => v,
            other => (0..n)
                .map(|i| other.b(if other.is_scalar() { 0 } else { i }))
                .collect(),
        }
    }

    /// Element `i` as a number (floats as floats).
    pub fn num(&self, i: usize) -> Num {
        let i = if self.is_scalar() { 0 } else { i };
        if self.is_float() {
            Num::Float(self.f(i))
        } else {
            Num::Int(self.i(i))
        }
    }
}

/// The elements an expression is evaluated on: `runs` ((first, count)
/// pairs) of the elements of `data` (elements of `size` bytes).
#[derive(Clone, Copy)]
pub struct Rows<'a> {
    pub data: &'a [u8],
    pub size: usize,
    pub runs: &'a [(usize, usize)],
}

impl Rows<'_> {
    pub fn len(&self) -> usize {
        self.runs.iter().map(|r| r.1).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The runs cut into blocks of at most `max` rows, in order.
    fn blocks(&self, max: usize) -> Vec<Vec<(usize, usize)>> {
        let mut out = vec![Vec::new()];
        let mut room = max;
        for &(mut first, mut count) in self.runs {
            while count > 0 {
                if room == 0 {
                    out.push(Vec::new());
                    room = max;
                }
                let take = count.min(room);
                out.last_mut().expect("never empty").push((first, take));
                (first, count, room) = (first + take, count - take, room - take);
            }
        }
        out
    }

    /// Runs `f` on the rows a block of at most [`BLOCK_ROWS`] at a time.
    pub fn each_block(&self, mut f: impl FnMut(Rows<'_>)) {
        for runs in self.blocks(BLOCK_ROWS) {
            f(Rows {
                data: self.data,
                size: self.size,
                runs: &runs,
            });
        }
    }

    fn each(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.runs.iter().flat_map(move |&(first, count)| {
            self.data[first * self.size..(first + count) * self.size].chunks_exact(self.size)
        })
    }

    fn column(&self, leaf: &Leaf) -> Val {
        match leaf.kind {
            Kind::Text { .. } => Val::Texts(
                self.each()
                    .map(|e| leaf.text_at(e).unwrap_or_default().to_vec())
                    .collect(),
            ),
            Kind::Float { .. } => Val::Floats(map_values(leaf, *self, |i| i as f64, |f| f)),
            Kind::Bool => Val::Bools(map_values(leaf, *self, |i| i != 0, |f| f != 0.0)),
            Kind::Int { .. } => Val::Ints(map_values(leaf, *self, |i| i, |f| f as i128)),
        }
    }
}

/// `leaf`'s value in each element of `rows`, through `int` (integers,
/// bools as 0/1) or `float`: one loop per stored type, so that reading a
/// column is a typed strided load, not a dispatch per element.
fn map_values<R>(
    leaf: &Leaf,
    rows: Rows<'_>,
    int: impl Fn(i128) -> R,
    float: impl Fn(f64) -> R,
) -> Vec<R> {
    let mut out = Vec::with_capacity(rows.len());
    let (off, size) = (leaf.offset, rows.size);
    macro_rules! go {
        ($t:ty, $big:expr, $conv:expr) => {{
            const W: usize = std::mem::size_of::<$t>();
            for &(first, count) in rows.runs {
                let bytes = &rows.data[first * size..(first + count) * size];
                out.extend(bytes.chunks_exact(size).map(|e| {
                    let mut a = [0u8; W];
                    a.copy_from_slice(&e[off..off + W]);
                    let v = if $big {
                        <$t>::from_be_bytes(a)
                    } else {
                        <$t>::from_le_bytes(a)
                    };
                    $conv(v)
                }));
            }
        }};
    }
    match leaf.kind {
        Kind::Bool => go!(u8, false, |v: u8| int(i128::from(v != 0))),
        Kind::Int {
            size: 1,
            signed: true,
            big,
        } => go!(i8, big, |v: i8| int(v.into())),
        Kind::Int { size: 1, big, .. } => go!(u8, big, |v: u8| int(v.into())),
        Kind::Int {
            size: 2,
            signed: true,
            big,
        } => go!(i16, big, |v: i16| int(v.into())),
        Kind::Int { size: 2, big, .. } => go!(u16, big, |v: u16| int(v.into())),
        Kind::Int {
            size: 4,
            signed: true,
            big,
        } => go!(i32, big, |v: i32| int(v.into())),
        Kind::Int { size: 4, big, .. } => go!(u32, big, |v: u32| int(v.into())),
        Kind::Int {
            size: 8,
            signed: true,
            big,
        } => go!(i64, big, |v: i64| int(v.into())),
        Kind::Int { big, .. } => go!(u64, big, |v: u64| int(v.into())),
        Kind::Float { size: 4, big } => go!(f32, big, |v: f32| float(v.into())),
        Kind::Float { size: 8, big } => go!(f64, big, |v: f64| float(v)),
        Kind::Float { .. } => out.extend(rows.each().map(|e| float(leaf.float_at(e)))),
        Kind::Text { .. } => unreachable!("text is read by Rows::column, never as a number"),
    }
    out
}

/// A comparison of a leaf with a number, straight from the elements'
/// bytes (the common case of a query: `t >= 1000`); `None` for others.
fn compare_leaf(op: CmpOp, a: &Node, b: &Node, leaves: &[Leaf], rows: Rows<'_>) -> Option<Val> {
    let (i, lit, op) = match (a, b) {
        (Node::Leaf(i, _), Node::Lit(x)) => (*i, *x, op),
        (Node::Lit(x), Node::Leaf(i, _)) => (
            *i,
            *x,
            match op {
                CmpOp::Lt => CmpOp::Gt,
                CmpOp::Le => CmpOp::Ge,
                CmpOp::Gt => CmpOp::Lt,
                CmpOp::Ge => CmpOp::Le,
                same => same,
            },
        ),
        _ => return None,
    };
    let leaf = &leaves[i];
    macro_rules! by_op {
        ($int:expr, $float:expr, $x:expr, $y:expr) => {
            match op {
                CmpOp::Lt => map_values(leaf, rows, |v| $int(v) < $x, |v| $float(v) < $y),
                CmpOp::Le => map_values(leaf, rows, |v| $int(v) <= $x, |v| $float(v) <= $y),
                CmpOp::Gt => map_values(leaf, rows, |v| $int(v) > $x, |v| $float(v) > $y),
                CmpOp::Ge => map_values(leaf, rows, |v| $int(v) >= $x, |v| $float(v) >= $y),
                CmpOp::Eq => map_values(leaf, rows, |v| $int(v) == $x, |v| $float(v) == $y),
                CmpOp::Ne => map_values(leaf, rows, |v| $int(v) != $x, |v| $float(v) != $y),
            }
        };
    }
    // As the general path: floats when either side is one, else exact.
    Some(Val::Bools(match lit {
        Num::Float(x) => by_op!(|v: i128| v as f64, |v: f64| v, x, x),
        Num::Int(x) if leaf.is_float() => {
            let y = x as f64;
            by_op!(|v: i128| v as f64, |v: f64| v, y, y)
        }
        Num::Int(x) => by_op!(|v: i128| v, |v: f64| v as i128, x, x),
    }))
}

/// Rows an expression is evaluated on at once ([`mask`],
/// [`Rows::each_block`]): each node of it holds a value of up to 16 bytes
/// per row, so memory stays bounded whatever the chunk's size.
pub const BLOCK_ROWS: usize = 1 << 15;

/// Whether the condition `node` holds, for each row of `rows`, evaluated
/// [`BLOCK_ROWS`] at a time.
pub fn mask(node: &Node, leaves: &[Leaf], rows: Rows<'_>) -> Vec<bool> {
    let mut out = Vec::with_capacity(rows.len());
    rows.each_block(|block| out.extend(eval(node, leaves, block).into_mask(block.len())));
    out
}

/// Evaluates `node` on `rows` (all at once: see [`mask`]).
pub fn eval(node: &Node, leaves: &[Leaf], rows: Rows<'_>) -> Val {
    let n = rows.len();
    match node {
        Node::Lit(Num::Int(i)) => Val::Int(*i),
        Node::Lit(Num::Float(f)) => Val::Float(*f),
        Node::BoolLit(b) => Val::Bool(*b),
        Node::Text(t) => Val::Text(t.clone()),
        Node::Leaf(i, _) => rows.column(&leaves[*i]),
        Node::Neg(a) => {
            let a = eval(a, leaves, rows);
            map1(&a, n, |x| -x, |x| x.wrapping_neg())
        }
        Node::Not(a) => match eval(a, leaves, rows) {
            Val::Bools(mut v) => {
                v.iter_mut().for_each(|b| *b = !*b);
                Val::Bools(v)
            }
            a => bools(&a, n, |v, i| !v.b(i)),
        },
        Node::Func(f, a) => {
            let a = eval(a, leaves, rows);
            match f {
                Func::Abs => map1(&a, n, f64::abs, i128::wrapping_abs),
                Func::Sqrt => floats(&a, n, |v, i| v.f(i).sqrt()),
                Func::Log => floats(&a, n, |v, i| v.f(i).ln()),
                Func::Exp => floats(&a, n, |v, i| v.f(i).exp()),
            }
        }
        Node::And(a, b) => {
            let (a, b) = (eval(a, leaves, rows), eval(b, leaves, rows));
            logic(a, b, n, |x, y| x && y)
        }
        Node::Or(a, b) => {
            let (a, b) = (eval(a, leaves, rows), eval(b, leaves, rows));
            logic(a, b, n, |x, y| x || y)
        }
        Node::Cmp(op, a, b) => {
            if let Some(v) = compare_leaf(*op, a, b, leaves, rows) {
                return v;
            }
            let (a, b) = (eval(a, leaves, rows), eval(b, leaves, rows));
            let op = *op;
            if a.is_text() || b.is_text() {
                let at = |v: &Val, i: usize| if v.is_scalar() { 0 } else { i };
                if a.is_scalar() && b.is_scalar() {
                    return Val::Bool(cmp(op, a.t(0), b.t(0)));
                }
                return Val::Bools(
                    (0..n)
                        .map(|i| cmp(op, a.t(at(&a, i)), b.t(at(&b, i))))
                        .collect(),
                );
            }
            if a.is_float() || b.is_float() {
                bools2(&a, &b, n, move |x, y, i| cmp(op, x.f(i), y.f(i)))
            } else {
                bools2(&a, &b, n, move |x, y, i| cmp(op, x.i(i), y.i(i)))
            }
        }
        Node::Arith(op, a, b, ty) => {
            let (a, b) = (eval(a, leaves, rows), eval(b, leaves, rows));
            let op = *op;
            // Integers are exact up to i128; past it (an overflow here, or
            // below) the values go on as floats, never wrapped.
            if *ty == crate::expr::Ty::Float || a.is_float() || b.is_float() {
                return floats2(&a, &b, n, move |x, y| float_op(op, x, y));
            }
            ints2(&a, &b, n, move |x, y| int_op(op, x, y))
                .unwrap_or_else(|| floats2(&a, &b, n, move |x, y| float_op(op, x, y)))
        }
    }
}

#[inline]
fn cmp<T: PartialOrd>(op: CmpOp, a: T, b: T) -> bool {
    match op {
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
    }
}

fn float_op(op: ArOp, a: f64, b: f64) -> f64 {
    match op {
        ArOp::Add => a + b,
        ArOp::Sub => a - b,
        ArOp::Mul => a * b,
        ArOp::Div => a / b,
        // Python's and numpy's: the result (a zero too) takes the
        // divisor's sign.
        ArOp::Mod => {
            let r = a % b;
            if r == 0.0 {
                0f64.copysign(b)
            } else if (r < 0.0) != (b < 0.0) {
                r + b
            } else {
                r
            }
        }
        // (numpy takes x ** 0.5 as the square root: NaN for -inf, where
        // C's pow gives inf.)
        ArOp::Pow if b == 0.5 => a.sqrt(),
        ArOp::Pow => a.powf(b),
    }
}

/// `None` past i128.
fn int_op(op: ArOp, a: i128, b: i128) -> Option<i128> {
    match op {
        ArOp::Add => a.checked_add(b),
        ArOp::Sub => a.checked_sub(b),
        ArOp::Mul => a.checked_mul(b),
        // (Division is always a float: see `arith`.)
        ArOp::Div => Some(0),
        // numpy gives 0 for x % 0.
        ArOp::Mod if b == 0 => Some(0),
        ArOp::Mod => {
            let r = a.checked_rem_euclid(b)?;
            Some(if b < 0 && r != 0 { r + b } else { r })
        }
        ArOp::Pow if b < 0 => Some(0),
        ArOp::Pow => a.checked_pow(u32::try_from(b).ok()?),
    }
}

fn map1(a: &Val, n: usize, f: impl Fn(f64) -> f64, g: impl Fn(i128) -> i128) -> Val {
    match a {
        Val::Float(x) => Val::Float(f(*x)),
        Val::Int(x) => Val::Int(g(*x)),
        Val::Bool(b) => Val::Int(g(i128::from(*b))),
        Val::Floats(v) => Val::Floats(v.iter().map(|&x| f(x)).collect()),
        other => Val::Ints((0..n).map(|i| g(other.i(i))).collect()),
    }
}

/// `&` or `|` of two conditions, in place when both are columns.
fn logic(a: Val, b: Val, n: usize, f: impl Fn(bool, bool) -> bool) -> Val {
    match (a, b) {
        (Val::Bools(mut x), Val::Bools(y)) => {
            x.iter_mut().zip(&y).for_each(|(p, q)| *p = f(*p, *q));
            Val::Bools(x)
        }
        (a, b) => bools2(&a, &b, n, |x, y, i| f(x.b(i), y.b(i))),
    }
}

fn floats(a: &Val, n: usize, f: impl Fn(&Val, usize) -> f64) -> Val {
    if a.is_scalar() {
        return Val::Float(f(a, 0));
    }
    Val::Floats((0..n).map(|i| f(a, i)).collect())
}

fn bools(a: &Val, n: usize, f: impl Fn(&Val, usize) -> bool) -> Val {
    if a.is_scalar() {
        return Val::Bool(f(a, 0));
    }
    Val::Bools((0..n).map(|i| f(a, i)).collect())
}

/// Applies `f` element by element to two values, either of which may be
/// one value for all elements.
fn pairwise<T>(
    a: &Val,
    b: &Val,
    n: usize,
    f: impl Fn(&Val, &Val, usize, usize) -> T,
) -> Option<Vec<T>> {
    match (a.is_scalar(), b.is_scalar()) {
        (true, true) => None,
        (true, false) => Some((0..n).map(|i| f(a, b, 0, i)).collect()),
        (false, true) => Some((0..n).map(|i| f(a, b, i, 0)).collect()),
        (false, false) => Some((0..n).map(|i| f(a, b, i, i)).collect()),
    }
}

fn bools2(a: &Val, b: &Val, n: usize, f: impl Fn(&Val, &Val, usize) -> bool) -> Val {
    // (Comparisons take one index for both sides: spread scalars first.)
    match pairwise(a, b, n, |x, y, i, j| {
        let (x, y) = (spread(x, i), spread(y, j));
        f(&x, &y, 0)
    }) {
        None => Val::Bool(f(a, b, 0)),
        Some(v) => Val::Bools(v),
    }
}

/// Element `i` of `v` as a one-value [`Val`].
#[inline]
fn spread(v: &Val, i: usize) -> Val {
    match v {
        Val::Floats(x) => Val::Float(x[i]),
        Val::Ints(x) => Val::Int(x[i]),
        Val::Bools(x) => Val::Bool(x[i]),
        Val::Texts(x) => Val::Text(x[i].clone()),
        s => s.clone(),
    }
}

fn floats2(a: &Val, b: &Val, n: usize, f: impl Fn(f64, f64) -> f64) -> Val {
    match pairwise(a, b, n, |x, y, i, j| f(x.f(i), y.f(j))) {
        None => Val::Float(f(a.f(0), b.f(0))),
        Some(v) => Val::Floats(v),
    }
}

/// `None` if `f` is `None` for any element.
fn ints2(a: &Val, b: &Val, n: usize, f: impl Fn(i128, i128) -> Option<i128>) -> Option<Val> {
    match pairwise(a, b, n, |x, y, i, j| f(x.i(i), y.i(j))) {
        None => f(a.i(0), b.i(0)).map(Val::Int),
        Some(v) => v.into_iter().collect::<Option<Vec<_>>>().map(Val::Ints),
    }
}

/// What statistics say an expression's values can be over a chunk.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// Every value other than NaN lies in `lo..=hi` (`lo > hi`: there is
    /// none); `nan`: some may be NaN.
    Num { lo: f64, hi: f64, nan: bool },
    /// Whether some element can be true, and whether some can be false.
    Truth { t: bool, f: bool },
}

const ANY: Bound = Bound::Num {
    lo: f64::NEG_INFINITY,
    hi: f64::INFINITY,
    nan: true,
};

fn down(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return x;
    }
    if x == 0.0 {
        return -f64::from_bits(1);
    }
    let b = x.to_bits();
    f64::from_bits(if x > 0.0 { b - 1 } else { b + 1 })
}

fn up(x: f64) -> f64 {
    -down(-x)
}

/// `x` as floats below and above it (exact when it is one).
fn int_bounds(x: i128) -> (f64, f64) {
    let f = x as f64;
    if f as i128 == x && f.is_finite() {
        (f, f)
    } else {
        (down(f), up(f))
    }
}

fn num_bounds(lo: Option<Num>, hi: Option<Num>) -> (f64, f64) {
    let l = match lo {
        Some(Num::Int(i)) => int_bounds(i).0,
        Some(Num::Float(f)) => f,
        None => f64::INFINITY,
    };
    let h = match hi {
        Some(Num::Int(i)) => int_bounds(i).1,
        Some(Num::Float(f)) => f,
        None => f64::NEG_INFINITY,
    };
    (l, h)
}

/// Whether `a op b` can be true, and whether it can be false, for values
/// `a` within `(lo, hi)` and `b` within theirs.
fn order_truth<T: PartialOrd>(op: CmpOp, (al, ah): (T, T), (bl, bh): (T, T)) -> (bool, bool) {
    let single = al == ah && bl == bh && al == bl;
    let overlap = al <= bh && bl <= ah;
    match op {
        CmpOp::Lt => (al < bh, ah >= bl),
        CmpOp::Le => (al <= bh, ah > bl),
        CmpOp::Gt => (ah > bl, al <= bh),
        CmpOp::Ge => (ah >= bl, al < bh),
        CmpOp::Eq => (overlap, !single),
        CmpOp::Ne => (!single, overlap),
    }
}

/// One end of a range of text: a value, or above every value (a bound
/// that could not be kept short). Ordered as the variants are listed.
#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum TextEnd<'a> {
    At(&'a [u8]),
    Above,
}

/// The range of a text operand over a chunk: a literal's one value, or a
/// text leaf's bounds; `None` when nothing is known.
fn text_bound<'a>(
    node: &'a Node,
    stats: &[Option<&'a LeafStats>],
) -> Option<(TextEnd<'a>, TextEnd<'a>)> {
    match node {
        Node::Text(t) => Some((TextEnd::At(t), TextEnd::At(t))),
        Node::Leaf(i, _) => {
            let b = stats.get(*i).copied().flatten()?.text.as_ref()?;
            Some((
                TextEnd::At(&b.lo),
                b.hi.as_deref().map_or(TextEnd::Above, TextEnd::At),
            ))
        }
        _ => None,
    }
}

/// Bounds of `node` over a chunk whose leaves have `stats` (`None`: no
/// statistics for that leaf, anything is possible).
pub fn bound(node: &Node, leaves: &[Leaf], stats: &[Option<&LeafStats>]) -> Bound {
    match node {
        Node::Lit(Num::Int(i)) => {
            let (lo, hi) = int_bounds(*i);
            Bound::Num { lo, hi, nan: false }
        }
        Node::Lit(Num::Float(f)) if f.is_nan() => Bound::Num {
            lo: f64::INFINITY,
            hi: f64::NEG_INFINITY,
            nan: true,
        },
        Node::Lit(Num::Float(f)) => Bound::Num {
            lo: *f,
            hi: *f,
            nan: false,
        },
        Node::BoolLit(b) => Bound::Truth { t: *b, f: !*b },
        // (Text is compared only, and bounded where it is: above.)
        Node::Text(_) => ANY,
        Node::Leaf(i, _) => {
            let Some(s) = stats.get(*i).copied().flatten() else {
                return if leaves[*i].kind == Kind::Bool {
                    Bound::Truth { t: true, f: true }
                } else {
                    ANY
                };
            };
            let (lo, hi) = num_bounds(s.min, s.max);
            if leaves[*i].kind == Kind::Bool {
                return Bound::Truth {
                    t: hi >= 1.0,
                    f: lo <= 0.0,
                };
            }
            Bound::Num {
                lo,
                hi,
                nan: s.nan_count > 0,
            }
        }
        Node::Not(a) => match bound(a, leaves, stats) {
            Bound::Truth { t, f } => Bound::Truth { t: f, f: t },
            _ => Bound::Truth { t: true, f: true },
        },
        Node::And(a, b) => {
            let (ta, fa) = truth(bound(a, leaves, stats));
            let (tb, fb) = truth(bound(b, leaves, stats));
            Bound::Truth {
                t: ta && tb,
                f: fa || fb,
            }
        }
        Node::Or(a, b) => {
            let (ta, fa) = truth(bound(a, leaves, stats));
            let (tb, fb) = truth(bound(b, leaves, stats));
            Bound::Truth {
                t: ta || tb,
                f: fa && fb,
            }
        }
        Node::Cmp(op, a, b) if a.ty() == crate::expr::Ty::Text => {
            match (text_bound(a, stats), text_bound(b, stats)) {
                (Some(x), Some(y)) => {
                    let (t, f) = order_truth(*op, x, y);
                    Bound::Truth { t, f }
                }
                _ => Bound::Truth { t: true, f: true },
            }
        }
        Node::Cmp(op, a, b) => {
            let (al, ah, an) = numeric(bound(a, leaves, stats));
            let (bl, bh, bn) = numeric(bound(b, leaves, stats));
            let nan = an || bn;
            if al > ah || bl > bh {
                // One side holds nothing but NaN (or nothing at all).
                return Bound::Truth {
                    t: *op == CmpOp::Ne && nan,
                    f: *op != CmpOp::Ne && nan,
                };
            }
            let (t, f) = order_truth(*op, (al, ah), (bl, bh));
            // A NaN compares false, except under !=.
            if *op == CmpOp::Ne {
                Bound::Truth { t: t || nan, f }
            } else {
                Bound::Truth { t, f: f || nan }
            }
        }
        Node::Neg(a) => {
            let (lo, hi, nan) = numeric(bound(a, leaves, stats));
            Bound::Num {
                lo: -hi,
                hi: -lo,
                nan,
            }
        }
        Node::Func(f, a) => {
            let (lo, hi, nan) = numeric(bound(a, leaves, stats));
            if lo > hi {
                return Bound::Num { lo, hi, nan };
            }
            match f {
                Func::Abs if lo >= 0.0 => Bound::Num { lo, hi, nan },
                Func::Abs if hi <= 0.0 => Bound::Num {
                    lo: -hi,
                    hi: -lo,
                    nan,
                },
                Func::Abs => Bound::Num {
                    lo: 0.0,
                    hi: hi.max(-lo),
                    nan,
                },
                Func::Sqrt => monotone(lo.max(0.0), hi, nan || lo < 0.0, f64::sqrt),
                Func::Log => monotone(lo.max(0.0), hi, nan || lo < 0.0, f64::ln),
                Func::Exp => monotone(lo, hi, nan, f64::exp),
            }
        }
        Node::Arith(op, a, b, _) => {
            let (al, ah, an) = numeric(bound(a, leaves, stats));
            let (bl, bh, bn) = numeric(bound(b, leaves, stats));
            // (Before the test below: a power of NaN need not be NaN, as
            // nan ** 0 and 1 ** nan are 1.)
            if matches!(op, ArOp::Mod | ArOp::Pow) {
                return ANY;
            }
            if al > ah || bl > bh {
                return Bound::Num {
                    lo: f64::INFINITY,
                    hi: f64::NEG_INFINITY,
                    nan: an || bn,
                };
            }
            let corners = |f: fn(f64, f64) -> f64| {
                let c = [f(al, bl), f(al, bh), f(ah, bl), f(ah, bh)];
                if c.iter().any(|x| x.is_nan()) {
                    return ANY;
                }
                let lo = c.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = c.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                Bound::Num {
                    lo: down(lo),
                    hi: up(hi),
                    nan: an || bn,
                }
            };
            match op {
                ArOp::Add => corners(|x, y| x + y),
                ArOp::Sub => corners(|x, y| x - y),
                ArOp::Mul => corners(|x, y| x * y),
                ArOp::Div if bl <= 0.0 && bh >= 0.0 => ANY,
                ArOp::Div => corners(|x, y| x / y),
                ArOp::Mod | ArOp::Pow => unreachable!("answered above"),
            }
        }
    }
}

fn monotone(lo: f64, hi: f64, nan: bool, f: fn(f64) -> f64) -> Bound {
    if lo > hi {
        return Bound::Num { lo, hi, nan };
    }
    Bound::Num {
        lo: down(f(lo)),
        hi: up(f(hi)),
        nan,
    }
}

fn truth(b: Bound) -> (bool, bool) {
    match b {
        Bound::Truth { t, f } => (t, f),
        // A number used as a condition: anything.
        Bound::Num { .. } => (true, true),
    }
}

fn numeric(b: Bound) -> (f64, f64, bool) {
    match b {
        Bound::Num { lo, hi, nan } => (lo, hi, nan),
        Bound::Truth { t, f } => (if f { 0.0 } else { 1.0 }, if t { 1.0 } else { 0.0 }, false),
    }
}

/// Whether some element of a chunk with these statistics can satisfy the
/// condition `node`.
pub fn may_match(node: &Node, leaves: &[Leaf], stats: &[Option<&LeafStats>]) -> bool {
    truth(bound(node, leaves, stats)).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::parse_condition;
    use crate::leaf::leaves;
    use crate::stats::compute;
    use h5lake_types::Datatype;
    use proptest::prelude::*;
    use serde_json::json;

    fn dtype() -> Datatype {
        Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "t", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_I64LE"}},
            {"name": "x", "type": {"class": "H5T_FLOAT", "base": "H5T_IEEE_F32LE"}},
            {"name": "u", "type": {"class": "H5T_INTEGER", "base": "H5T_STD_U8BE"}},
        ]}))
        .unwrap()
    }

    fn rows_of(vals: &[(i64, f32, u8)]) -> Vec<u8> {
        vals.iter()
            .flat_map(|(t, x, u)| {
                let mut e = t.to_le_bytes().to_vec();
                e.extend(x.to_le_bytes());
                e.push(*u);
                e
            })
            .collect()
    }

    const EXPRS: [&str; 12] = [
        "t > 5",
        "(x > 0.5) & (t < 1000)",
        "x * 2 - 1 >= t",
        "~(u == 3) | (x != x)",
        "abs(x) < 0.25",
        "sqrt(u) > 2",
        "t / (u + 1) > 3",
        "exp(x) <= 2 | log(u) > 1",
        "-t < -10 and not (x < 0)",
        "t % 7 == 3",
        "x ** 0 == 1",
        "(1 ** x == 1) & (x ** (u - u) > 0)",
    ];

    proptest! {
        #[test]
        fn pruning_never_drops_a_match(
            vals in prop::collection::vec(
                (-50i64..50, prop_oneof![Just(f32::NAN), -2.0f32..2.0], 0u8..10), 1..40),
            k in 0usize..EXPRS.len(),
        ) {
            let l = leaves(&dtype());
            let data = rows_of(&vals);
            let runs = [(0, vals.len())];
            let rows = Rows { data: &data, size: 13, runs: &runs };
            let node = parse_condition(EXPRS[k], &l).unwrap();
            let mask = eval(&node, &l, rows).into_mask(vals.len());
            // Against a plain evaluation, element by element.
            for (i, &(t, x, u)) in vals.iter().enumerate() {
                let x = f64::from(x);
                let (t, u) = (t as f64, f64::from(u));
                let want = match k {
                    0 => t > 5.0,
                    1 => x > 0.5 && t < 1000.0,
                    2 => x * 2.0 - 1.0 >= t,
                    3 => u != 3.0 || x.is_nan(),
                    4 => x.abs() < 0.25,
                    5 => u.sqrt() > 2.0,
                    6 => t / (u + 1.0) > 3.0,
                    7 => x.exp() <= 2.0 || u.ln() > 1.0,
                    8 => -t < -10.0 && (x >= 0.0 || x.is_nan()),
                    9 => (t as i64).rem_euclid(7) == 3,
                    // (NaN ** 0 and 1 ** NaN are 1.)
                    10 => x.powf(0.0) == 1.0,
                    _ => 1f64.powf(x) == 1.0 && x.powf(u - u) > 0.0,
                };
                prop_assert_eq!(mask[i], want, "element {} of {}", i, EXPRS[k]);
            }
            let stats = compute(&l, &data, 13, &runs);
            let refs: Vec<Option<&LeafStats>> = stats.iter().map(Some).collect();
            if mask.iter().any(|&m| m) {
                prop_assert!(may_match(&node, &l, &refs));
            }
            // A chunk of nothing but NaN in x: still kept where it matches.
            let all_nan: Vec<(i64, f32, u8)> = vals.iter().map(|&(t, _, u)| (t, f32::NAN, u)).collect();
            let data = rows_of(&all_nan);
            let mask = eval(&node, &l, Rows { data: &data, size: 13, runs: &runs }).into_mask(vals.len());
            let stats = compute(&l, &data, 13, &runs);
            let refs: Vec<Option<&LeafStats>> = stats.iter().map(Some).collect();
            if mask.iter().any(|&m| m) {
                prop_assert!(may_match(&node, &l, &refs), "all-NaN chunk of {}", EXPRS[k]);
            }
        }
    }

    proptest! {
        #[test]
        fn pruning_on_text_never_drops_a_match(
            texts in prop::collection::vec(
                prop::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(0u8), Just(0xFFu8)], 0..80),
                1..30),
            lit in prop::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(0xFFu8)], 0..70),
            op in 0usize..6,
            negate: bool,
        ) {
            let t = Datatype::from_json(&json!({"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                                               "strPad": "H5T_STR_NULLPAD", "length": 80})).unwrap();
            let l = leaves(&t);
            let mut data = vec![0u8; texts.len() * 80];
            for (v, e) in texts.iter().zip(data.chunks_exact_mut(80)) {
                e[..v.len()].copy_from_slice(v);
            }
            let lit: String = lit.iter().map(|&b| format!("\\x{b:02x}")).collect();
            let ops = ["==", "!=", "<", "<=", ">", ">="];
            let cond = format!("value {} b'{lit}'", ops[op]);
            let cond = if negate { format!("~({cond})") } else { cond };
            let node = parse_condition(&cond, &l).unwrap();
            let runs = [(0, texts.len())];
            let mask = eval(&node, &l, Rows { data: &data, size: 80, runs: &runs }).into_mask(texts.len());
            let stats = compute(&l, &data, 80, &runs);
            let refs: Vec<Option<&LeafStats>> = stats.iter().map(Some).collect();
            if mask.iter().any(|&m| m) {
                prop_assert!(may_match(&node, &l, &refs), "{}", cond);
            }
        }
    }

    #[test]
    fn operators_mean_what_numexpr_and_numpy_make_them() {
        let t = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "n", "type": "H5T_STD_I32LE"},
            {"name": "u", "type": "H5T_STD_U8LE"},
            {"name": "flag", "type": {"class": "H5T_ENUM", "base": "H5T_STD_I8LE",
                                      "mapping": {"FALSE": 0, "TRUE": 1}}},
            {"name": "x", "type": "H5T_IEEE_F64LE"},
            {"name": "s", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                                    "strPad": "H5T_STR_NULLPAD", "length": 2}}]}))
        .unwrap();
        let l = leaves(&t);
        let mut data = Vec::new();
        let rows: [(i32, u8, u8, f64, &[u8]); 5] = [
            (-3, 5, 1, -2.0, b"b\0"),
            (-1, 0, 0, f64::NEG_INFINITY, b"a\0"),
            (0, 255, 1, 2.0, b"bb"),
            (2, 250, 0, 4.0, b"\0\0"),
            (5, 1, 1, -4.0, b"b\0"),
        ];
        for (n, u, f, x, s) in rows {
            data.extend(n.to_le_bytes());
            data.extend([u, f]);
            data.extend(x.to_le_bytes());
            data.extend(s);
        }
        let runs = [(0, 5)];
        let rows = Rows {
            data: &data,
            size: 16,
            runs: &runs,
        };
        let m = |e: &str| eval(&parse_condition(e, &l).unwrap(), &l, rows).into_mask(5);
        let at = |mask: Vec<bool>| -> Vec<usize> { (0..5).filter(|&i| mask[i]).collect() };
        // ~ binds before comparisons: a bitwise NOT of integers (numpy's
        // `~n > 0`), keeping an unsigned member's type; `not` binds after.
        assert_eq!(at(m("~n > 0")), [0]);
        assert_eq!(at(m("~n == 2")), [0]);
        assert_eq!(at(m("not n > 0")), [0, 1, 2]);
        assert_eq!(at(m("~u == 250")), [0]);
        assert_eq!(at(m("~u == 0")), [2]);
        assert_eq!(at(m("~flag")), [1, 3]);
        assert_eq!(at(m("~(x > 0) & (n < 0)")), [0, 1]);
        assert!(parse_condition("~x > 0", &l).is_err());
        // booleans added are or-ed, multiplied and-ed (numpy's bools)
        assert_eq!(at(m("flag + flag == 2")), Vec::<usize>::new());
        assert_eq!(at(m("flag * (x > 0)")), [2]);
        assert!(parse_condition("flag - flag", &l).is_err());
        // a literal's trailing NULs are padding, as in numpy
        assert_eq!(at(m(r"s == b'b\x00'")), [0, 4]);
        // a zero remainder takes the divisor's sign (1/(-0.0) < 0)
        assert_eq!(at(m("1 / (x % 2) < 0")), Vec::<usize>::new());
        assert_eq!(at(m("1 / (x % -2) < 0")), [0, 2, 3, 4]);
        // numpy's x ** 0.5 is the square root: NaN for -inf
        assert_eq!(at(m("x ** 0.5 == inf")), Vec::<usize>::new());
    }

    #[test]
    fn text_compares_up_to_its_first_nul() {
        let t = Datatype::from_json(&json!({"class": "H5T_COMPOUND", "fields": [
            {"name": "n", "type": "H5T_STD_I32LE"},
            {"name": "station", "type": {"class": "H5T_STRING", "charSet": "H5T_CSET_ASCII",
                                          "strPad": "H5T_STR_NULLPAD", "length": 4}}]}))
        .unwrap();
        let l = leaves(&t);
        let mut data = Vec::new();
        for (n, st) in [(3i32, &b"KSEA"[..]), (4, b"KPD\0"), (3, b"AB\0\0")] {
            data.extend(n.to_le_bytes());
            data.extend(st);
        }
        let runs = [(0, 3)];
        let rows = Rows {
            data: &data,
            size: 8,
            runs: &runs,
        };
        let m = |e: &str| eval(&parse_condition(e, &l).unwrap(), &l, rows).into_mask(3);
        assert_eq!(m("station == b'KSEA'"), [true, false, false]);
        assert_eq!(m("'KPD' == station"), [false, true, false]);
        assert_eq!(m("station < \"KPE\""), [false, true, true]);
        assert_eq!(
            m("(n >= 3) AND NOT (n > 3) AND station != 'AB'"),
            [true, false, false]
        );
        assert_eq!(m("n == 3 or FALSE"), [true, false, true]);
        for bad in [
            "station > 1",
            "station + 1",
            "abs(station) > 0",
            "-station == 'x'",
            "station",
        ] {
            assert!(parse_condition(bad, &l).is_err(), "{bad}");
        }
        let stats = compute(&l, &data, 8, &runs);
        assert_eq!(stats[1].count, 3);
        let refs: Vec<Option<&LeafStats>> = stats.iter().map(Some).collect();
        // Text is bounded too (from "AB" to "KSEA"), as bytes compare.
        let may = |e: &str| may_match(&parse_condition(e, &l).unwrap(), &l, &refs);
        assert!(!may("station == 'ZZZ'"));
        assert!(!may("station < 'AB'") && may("station <= 'AB'"));
        assert!(may("station == 'KPD'") && may("station != 'KPD'"));
        assert!(!may("station > 'KSEA'") && !may("'KSEA' < station"));
        assert!(!may("~(station >= 'AB')"), "every value is at least AB");
        assert!(!may_match(
            &parse_condition("(station == 'ZZZ') & (n > 4)", &l).unwrap(),
            &l,
            &refs
        ));
    }

    #[test]
    fn statistics_rule_chunks_out() {
        let l = leaves(&dtype());
        let data = rows_of(&[(10, 0.5, 1), (20, 0.75, 2)]);
        let stats = compute(&l, &data, 13, &[(0, 2)]);
        let refs: Vec<Option<&LeafStats>> = stats.iter().map(Some).collect();
        let m = |e: &str| may_match(&parse_condition(e, &l).unwrap(), &l, &refs);
        assert!(!m("t > 20"));
        assert!(m("t >= 20"));
        assert!(!m("(x > 0.9) | (u == 0)"));
        assert!(m("~(t == 10)"));
        assert!(!m("t * 2 > 100"));
        assert!(m("t * 2 > 30"));
        let none: Vec<Option<&LeafStats>> = vec![None; 3];
        assert!(may_match(
            &parse_condition("t > 20", &l).unwrap(),
            &l,
            &none
        ));
    }
}
