//! HDF5's scale-offset filter (`H5Z_FILTER_SCALEOFFSET`, id 6), byte for byte
//! as libhdf5 (2.0) codes it.
//!
//! A coded chunk is a 21-byte header and a payload:
//!
//! | bytes    | content                                                     |
//! |----------|-------------------------------------------------------------|
//! | `0..4`   | `minbits`, little-endian                                    |
//! | `4`      | width of `minval` in bytes (libhdf5 writes 8)               |
//! | `5..13`  | `minval`, little-endian: the chunk's minimum (integers sign-extended, floats as their bit pattern) |
//! | `13..21` | zero                                                        |
//!
//! Every element becomes its offset from the minimum, and the offsets are
//! packed `minbits` bits each, most significant bit first, into one bit
//! stream. When the dataset has a fill value, elements equal to it are coded
//! as the all-ones `minbits` value instead, so the chunk's range needs one
//! more value. Floats (the D-scale method) are made integers first:
//! `x·10^D − min·10^D`, rounded half away from zero, in the element's own
//! precision.
//!
//! Three shapes depart from that: `minbits == 0` (no fill value and all
//! elements equal) has no payload; `minbits` equal to the element width
//! stores the elements unchanged, little-endian (libhdf5 writes its host's
//! order there without recording it; like libhdf5 on a little-endian host,
//! this module takes such chunks to come from one); an integer chunk whose
//! given minimum-bits is the element width is not touched at all (no header).
//! The coded length is `22 + ⌊n·minbits/8⌋` (`21 + n·size` at full width):
//! libhdf5 keeps the spare byte it allocates, so incompressible data grows.

use crate::{alloc_zeroed, corrupt, CodecError, Result};

const FILTER: &str = "scaleoffset";

/// `H5Z_SO_FLOAT_DSCALE`: floats, scale factor = decimal digits kept.
pub const SO_FLOAT_DSCALE: u32 = 0;
/// `H5Z_SO_FLOAT_ESCALE`: declared by HDF5, implemented by no one.
pub const SO_FLOAT_ESCALE: u32 = 1;
/// `H5Z_SO_INT`: integers, scale factor = bits per element (0 = as needed).
pub const SO_INT: u32 = 2;

const NPARMS: usize = 20;
const HEADER_LEN: usize = 21;
const MINVAL_WIDTH: u8 = 8;

/// The element type a scale-offset filter codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElemKind {
    pub float: bool,
    /// Bytes per element.
    pub size: usize,
    /// Two's complement (integers only; ignored for floats).
    pub signed: bool,
    pub big_endian: bool,
}

/// The 20 client data values libhdf5's `set_local` leaves for a dataset:
/// the user's `scale_type` and `scale_factor`, then the chunk's element
/// count, the element type, and the fill value.
///
/// `fill` is the dataset's fill value as element bytes in the dataset's
/// byte order, or `None` when it is undefined (`H5Pset_fill_value(..,
/// NULL)`). A dataset without an explicit fill value has libhdf5's default
/// one, which counts as defined: pass zeros for it.
///
/// # Errors
/// [`CodecError::Invalid`] for what libhdf5 refuses (when setting the filter
/// or at the first write): element types other than 1/2/4/8-byte integers
/// and 4/8-byte floats, a scale type that does not fit the class, a negative
/// scale factor, more bits than the integer has, chunks of 0 or more than
/// `u32::MAX` elements (the count is a 32-bit parameter, which release builds
/// of libhdf5 silently truncate); [`CodecError::Unsupported`] for
/// `H5Z_SO_FLOAT_ESCALE`.
pub fn local_parameters(
    scale_type: u32,
    scale_factor: i32,
    elem: ElemKind,
    chunk_elems: u64,
    fill: Option<&[u8]>,
) -> Result<Vec<u32>> {
    let invalid = |m: String| Err(CodecError::Invalid(format!("scaleoffset: {m}")));
    if scale_factor < 0 {
        return invalid(format!("scale factor must be >= 0, got {scale_factor}"));
    }
    if elem.float && ![4, 8].contains(&elem.size) {
        return invalid(format!("{}-byte floats are not supported", elem.size));
    }
    if !elem.float && ![1, 2, 4, 8].contains(&elem.size) {
        return invalid(format!("{}-byte integers are not supported", elem.size));
    }
    match (scale_type, elem.float) {
        (SO_FLOAT_ESCALE, _) => {
            return Err(CodecError::Unsupported(
                "scaleoffset E-scale method (H5Z_SO_FLOAT_ESCALE): libhdf5 does not implement it"
                    .into(),
            ))
        }
        (SO_FLOAT_DSCALE, true) | (SO_INT, false) => {}
        (SO_FLOAT_DSCALE, false) => {
            return invalid("integer data needs scale type H5Z_SO_INT".into())
        }
        (SO_INT, true) => {
            return invalid("floating-point data needs scale type H5Z_SO_FLOAT_DSCALE".into())
        }
        (t, _) => return invalid(format!("unknown scale type {t}")),
    }
    let bits = elem.size * 8;
    if !elem.float && scale_factor as usize > bits {
        return invalid(format!(
            "{scale_factor} bits per element exceed the {bits}-bit integer"
        ));
    }
    if chunk_elems == 0 {
        return invalid("empty chunk".into());
    }
    let Ok(nelmts) = u32::try_from(chunk_elems) else {
        return invalid(format!(
            "chunks of {chunk_elems} elements exceed the filter's 32-bit element count"
        ));
    };
    let mut cd = vec![0u32; NPARMS];
    cd[0] = scale_type;
    cd[1] = scale_factor as u32;
    cd[2] = nelmts;
    cd[3] = u32::from(elem.float);
    cd[4] = elem.size as u32;
    cd[5] = u32::from(elem.signed && !elem.float);
    cd[6] = u32::from(elem.big_endian);
    if let Some(fill) = fill {
        if fill.len() != elem.size {
            return invalid(format!(
                "fill value of {} bytes for {}-byte elements",
                fill.len(),
                elem.size
            ));
        }
        let v = load(fill, elem.big_endian);
        cd[7] = 1;
        cd[8] = v as u32;
        cd[9] = (v >> 32) as u32;
    }
    Ok(cd)
}

/// Codes one chunk (`raw`: all of the chunk's elements, in the dataset's byte
/// order) exactly as libhdf5 would.
///
/// One input is coded differently from libhdf5, which mishandles it: an
/// `f32` chunk whose extremes make libhdf5 compute more bits than the type
/// has (a NaN first element and no fill value, or both infinities) is
/// stored at full precision, which libhdf5 reads back exactly, where
/// libhdf5 itself writes a chunk it then refuses to read.
///
/// # Errors
/// [`CodecError::Invalid`] for malformed client data or a `raw` that is not
/// the chunk's size; [`CodecError::Unsupported`] for the E-scale method.
pub fn encode(raw: &[u8], cd: &[u32]) -> Result<Vec<u8>> {
    let p = Params::parse(cd)?;
    let nbytes = p.nbytes()?;
    if raw.len() != nbytes {
        return Err(CodecError::Invalid(format!(
            "scaleoffset: chunk of {} bytes, expected {} elements of {} bytes",
            raw.len(),
            p.nelmts,
            p.size
        )));
    }
    let (minbits, minval, values) = match p.method {
        Method::Identity => return Ok(raw.to_vec()),
        Method::Int { minbits } => {
            let mut values = p.load_all(raw)?;
            let (m, v) = offsets_int(&p, minbits, &mut values);
            (m, v, values)
        }
        Method::DScale { d } => {
            let mut values = p.load_all(raw)?;
            let (m, v) = if p.size == 4 {
                offsets_float::<f32>(&p, d, &mut values)
            } else {
                offsets_float::<f64>(&p, d, &mut values)
            };
            (m, v, values)
        }
    };

    let mut out = if minbits == p.bits() {
        let mut out = alloc_zeroed(HEADER_LEN + nbytes, FILTER)?;
        for (v, dst) in values
            .iter()
            .zip(out[HEADER_LEN..].chunks_exact_mut(p.size))
        {
            store(*v, dst, false);
        }
        out
    } else {
        let payload = p.nelmts as u64 * u64::from(minbits) / 8 + 1;
        let len = usize::try_from(payload)
            .ok()
            .and_then(|n| n.checked_add(HEADER_LEN))
            .ok_or_else(|| CodecError::Invalid("scaleoffset: coded chunk too large".into()))?;
        let mut out = alloc_zeroed(len, FILTER)?;
        pack(&values, minbits, &mut out[HEADER_LEN..]);
        out
    };
    out[0..4].copy_from_slice(&minbits.to_le_bytes());
    out[4] = MINVAL_WIDTH;
    out[5..13].copy_from_slice(&minval.to_le_bytes());
    Ok(out)
}

/// Decodes a stored chunk into the chunk's elements, in the dataset's byte
/// order.
///
/// # Errors
/// [`CodecError::Corrupt`] for a truncated chunk or a header libhdf5 would
/// refuse; [`CodecError::Invalid`] / [`CodecError::Unsupported`] for client
/// data that libhdf5 refuses.
pub fn decode(stored: &[u8], cd: &[u32]) -> Result<Vec<u8>> {
    let p = Params::parse(cd)?;
    let nbytes = p.nbytes()?;
    if let Method::Identity = p.method {
        if stored.len() != nbytes {
            return Err(corrupt(
                FILTER,
                format!(
                    "unfiltered chunk of {} bytes, expected {nbytes}",
                    stored.len()
                ),
            ));
        }
        return Ok(stored.to_vec());
    }
    let bits = p.bits();
    let truncated = || corrupt(FILTER, format!("chunk truncated ({} bytes)", stored.len()));
    let head = stored.get(..5).ok_or_else(truncated)?;
    let minbits = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    if minbits > bits {
        return Err(corrupt(
            FILTER,
            format!("{minbits} bits per element exceed the {bits}-bit type"),
        ));
    }
    let width = usize::from(head[4].min(MINVAL_WIDTH));
    let minval = stored
        .get(5..5 + width)
        .ok_or_else(truncated)?
        .iter()
        .rev()
        .fold(0u64, |acc, &b| acc << 8 | u64::from(b));

    if minbits == bits {
        let payload = stored
            .get(HEADER_LEN..HEADER_LEN + nbytes)
            .ok_or_else(truncated)?;
        let mut out = alloc_zeroed(nbytes, FILTER)?;
        for (src, dst) in payload
            .chunks_exact(p.size)
            .zip(out.chunks_exact_mut(p.size))
        {
            store(load(src, false), dst, p.big_endian);
        }
        return Ok(out);
    }

    let payload_len = usize::try_from((p.nelmts as u64 * u64::from(minbits)).div_ceil(8))
        .map_err(|_| truncated())?;
    // Without a payload libhdf5 does not look past the minimum either.
    let payload = if payload_len == 0 {
        &[][..]
    } else {
        stored
            .get(HEADER_LEN..HEADER_LEN + payload_len)
            .ok_or_else(truncated)?
    };
    let mut out = alloc_zeroed(nbytes, FILTER)?;
    let offsets = BitReader::new(payload, minbits);
    match p.method {
        Method::Int { .. } => restore(&p, &mut out, offsets, restore_int(&p, minbits, minval)),
        Method::DScale { d } if p.size == 4 => restore(
            &p,
            &mut out,
            offsets,
            restore_float::<f32>(&p, d, minbits, minval),
        ),
        Method::DScale { d } => restore(
            &p,
            &mut out,
            offsets,
            restore_float::<f64>(&p, d, minbits, minval),
        ),
        Method::Identity => unreachable!("returned above"),
    }
    Ok(out)
}

fn restore(p: &Params, out: &mut [u8], mut offsets: BitReader, value: impl Fn(u64) -> u64) {
    for dst in out.chunks_exact_mut(p.size) {
        store(value(offsets.next()), dst, p.big_endian);
    }
}

#[derive(Clone, Copy, Debug)]
enum Method {
    /// `minbits == 0`: as many bits as the chunk's range needs.
    Int {
        minbits: u32,
    },
    DScale {
        d: i32,
    },
    /// An integer minimum-bits equal to the element width: libhdf5 passes
    /// the chunk through untouched in both directions.
    Identity,
}

#[derive(Debug)]
struct Params {
    nelmts: usize,
    size: usize,
    signed: bool,
    big_endian: bool,
    /// Bit pattern of the fill value, when the dataset defines one.
    fill: Option<u64>,
    method: Method,
}

impl Params {
    fn parse(cd: &[u32]) -> Result<Params> {
        let invalid = |m: String| Err(CodecError::Invalid(format!("scaleoffset: {m}")));
        if cd.len() != NPARMS {
            return invalid(format!(
                "{} client data values, expected {NPARMS} (set_local's)",
                cd.len()
            ));
        }
        let float = match cd[3] {
            0 => false,
            1 => true,
            c => return invalid(format!("unknown datatype class {c}")),
        };
        let size = cd[4] as usize;
        let sizes: &[usize] = if float { &[4, 8] } else { &[1, 2, 4, 8] };
        if !sizes.contains(&size) {
            let class = if float { "float" } else { "integer" };
            return invalid(format!("{size}-byte {class} elements are not supported"));
        }
        let signed = match (float, cd[5]) {
            (true, _) | (false, 0) => false,
            (false, 1) => true,
            (false, s) => return invalid(format!("unknown integer sign {s}")),
        };
        let big_endian = match cd[6] {
            0 => false,
            1 => true,
            o => return invalid(format!("unknown byte order {o}")),
        };
        let factor = cd[1] as i32;
        let bits = size as u32 * 8;
        let method = match (float, cd[0]) {
            (true, SO_FLOAT_DSCALE) => Method::DScale { d: factor },
            (true, SO_FLOAT_ESCALE) => {
                return Err(CodecError::Unsupported(
                    "scaleoffset E-scale method (H5Z_SO_FLOAT_ESCALE)".into(),
                ))
            }
            // libhdf5 reads a negative minimum-bits as "as many as needed".
            (false, SO_INT) => match factor.max(0) as u32 {
                m if m > bits => {
                    return invalid(format!("{m} bits per element exceed the {bits}-bit type"))
                }
                m if m == bits => Method::Identity,
                m => Method::Int { minbits: m },
            },
            (_, t) => {
                let class = if float { "floating-point" } else { "integer" };
                return invalid(format!("scale type {t} does not apply to {class} data"));
            }
        };
        let fill =
            (cd[7] == 1).then(|| (u64::from(cd[9]) << 32 | u64::from(cd[8])) & low_mask(bits));
        Ok(Params {
            nelmts: cd[2] as usize,
            size,
            signed,
            big_endian,
            fill,
            method,
        })
    }

    fn bits(&self) -> u32 {
        self.size as u32 * 8
    }

    fn nbytes(&self) -> Result<usize> {
        self.nelmts.checked_mul(self.size).ok_or_else(|| {
            CodecError::Invalid(format!("scaleoffset: {} elements overflow", self.nelmts))
        })
    }

    fn load_all(&self, raw: &[u8]) -> Result<Vec<u64>> {
        let mut values = Vec::new();
        values
            .try_reserve_exact(self.nelmts)
            .map_err(|_| corrupt(FILTER, format!("cannot allocate {} elements", self.nelmts)))?;
        values.extend(
            raw.chunks_exact(self.size)
                .map(|e| load(e, self.big_endian)),
        );
        Ok(values)
    }
}

/// Turns integer elements (bit patterns) into offsets in place; returns
/// `minbits` and the header's `minval`. Elements are left as they are when
/// `minbits` comes out as the full width.
fn offsets_int(p: &Params, given_minbits: u32, values: &mut [u64]) -> (u32, u64) {
    let bits = p.bits();
    let mask = low_mask(bits);
    let key = |v: u64| -> i128 {
        if p.signed {
            i128::from(sign_extend(v, bits))
        } else {
            i128::from(v)
        }
    };
    let is_fill = |v: u64| p.fill == Some(v);
    let mut kept = values.iter().copied().filter(|&v| !is_fill(v)).map(key);
    let (min, max) = match kept.next() {
        Some(first) => kept.fold((first, first), |(lo, hi), k| (lo.min(k), hi.max(k))),
        None => (0, 0),
    };
    let minbits = if given_minbits != 0 {
        given_minbits
    } else {
        let range = (max - min) as u64;
        if range > mask - 2 {
            // libhdf5 leaves this path before it records the minimum, except
            // in its separate code for signed chars without a fill value.
            let minval = if p.size == 1 && p.signed && p.fill.is_none() {
                min as u64
            } else {
                0
            };
            return (bits, minval);
        }
        let span = range + 1;
        // The fill value's code takes the value past the range.
        ceil_log2(if p.fill.is_some() { span + 1 } else { span })
    };
    let min_bits = min as u64;
    if minbits != bits {
        let marker = low_mask(minbits);
        for v in values.iter_mut() {
            *v = if is_fill(*v) {
                marker
            } else {
                v.wrapping_sub(min_bits) & mask
            };
        }
    }
    (minbits, min_bits)
}

fn restore_int(p: &Params, minbits: u32, minval: u64) -> impl Fn(u64) -> u64 {
    let mask = low_mask(p.bits());
    let marker = low_mask(minbits);
    let fill = p.fill;
    move |v| match fill {
        Some(f) if v == marker => f,
        _ => v.wrapping_add(minval) & mask,
    }
}

/// The float types the D-scale method codes, with the C library functions
/// libhdf5 calls on them (`powf`/`pow`, `fabsf`/`fabs`, ...).
trait Real:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    /// `2^(bits-1)`: libhdf5's limit on a chunk's scaled range.
    const HALF_RANGE: Self;
    fn from_bits64(v: u64) -> Self;
    fn to_bits64(self) -> u64;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    /// An offset as libhdf5 reads it back: the element's slot as a signed
    /// integer of the float's width, converted.
    fn from_offset(v: u64) -> Self;
    fn pow(self, e: Self) -> Self;
    fn abs(self) -> Self;
    fn round(self) -> Self;
}

impl Real for f32 {
    const HALF_RANGE: f32 = 2_147_483_648.0;
    fn from_bits64(v: u64) -> f32 {
        f32::from_bits(v as u32)
    }
    fn to_bits64(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_offset(v: u64) -> f32 {
        v as u32 as i32 as f32
    }
    fn pow(self, e: f32) -> f32 {
        self.powf(e)
    }
    fn abs(self) -> f32 {
        f32::abs(self)
    }
    fn round(self) -> f32 {
        f32::round(self)
    }
}

impl Real for f64 {
    const HALF_RANGE: f64 = 9_223_372_036_854_775_808.0;
    fn from_bits64(v: u64) -> f64 {
        f64::from_bits(v)
    }
    fn to_bits64(self) -> u64 {
        self.to_bits()
    }
    fn from_f64(v: f64) -> f64 {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn from_offset(v: u64) -> f64 {
        v as i64 as f64
    }
    fn pow(self, e: f64) -> f64 {
        self.powf(e)
    }
    fn abs(self) -> f64 {
        f64::abs(self)
    }
    fn round(self) -> f64 {
        f64::round(self)
    }
}

/// D-scale counterpart of [`offsets_int`]. Every operation is the one
/// libhdf5 performs, in the same precision and order, since the rounded
/// offsets (and so the bytes) depend on it.
fn offsets_float<T: Real>(p: &Params, d: i32, values: &mut [u64]) -> (u32, u64) {
    let bits = p.bits();
    let d = f64::from(d);
    let scale = T::from_f64(10.0).pow(T::from_f64(d));
    let fill = p.fill.map(T::from_bits64);
    // Which elements count as fill is decided twice in libhdf5, with this
    // double-precision threshold for the range and the element-precision one
    // below for the codes; they can disagree for floats, and must here too.
    let range_tolerance = 10f64.powf(-d);
    let code_tolerance = T::from_f64(10.0).pow(T::from_f64(-d));

    let near_fill = |x: T| fill.is_some_and(|f| (x - f).to_f64().abs() < range_tolerance);
    let mut kept = values
        .iter()
        .map(|&v| T::from_bits64(v))
        .filter(|&x| !near_fill(x));
    // Comparisons in libhdf5's order, so that a NaN behaves as it does there.
    let (mut min, mut max) = match kept.next() {
        Some(first) => (first, first),
        None => (T::from_f64(0.0), T::from_f64(0.0)),
    };
    for x in kept {
        if x > max {
            max = x;
        }
        if x < min {
            min = x;
        }
    }

    let scaled_range = max * scale - min * scale;
    if scaled_range.round() > T::HALF_RANGE {
        return (bits, 0);
    }
    let span = (c_llround(scaled_range.to_f64()) as u64).wrapping_add(1);
    let minbits = ceil_log2(if fill.is_some() {
        span.wrapping_add(1)
    } else {
        span
    });
    // Only a NaN or infinite extreme gets here with more bits than the
    // type has (f32); libhdf5 then writes a chunk it cannot read back.
    let minbits = minbits.min(bits);
    if minbits != bits {
        let marker = low_mask(minbits);
        for v in values.iter_mut() {
            let x = T::from_bits64(*v);
            *v = match fill {
                Some(f) if (x - f).abs() < code_tolerance => marker,
                _ => c_llround((x * scale - min * scale).to_f64()) as u64,
            };
        }
    }
    (minbits, min.to_bits64())
}

fn restore_float<T: Real>(p: &Params, d: i32, minbits: u32, minval: u64) -> impl Fn(u64) -> u64 {
    let min = T::from_bits64(minval);
    let scale = T::from_f64(10.0).pow(T::from_f64(f64::from(d)));
    let marker = low_mask(minbits);
    let fill = p.fill;
    move |v| match fill {
        Some(f) if v == marker => f,
        _ => (T::from_offset(v) / scale + min).to_bits64(),
    }
}

/// `llround` as libhdf5 gets it from glibc on x86-64: halves away from zero,
/// and `i64::MIN` (the conversion's "integer indefinite") for NaN and for
/// results out of range, where Rust's `as` would saturate instead.
fn c_llround(x: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    let r = x.round();
    if (-LIMIT..LIMIT).contains(&r) {
        r as i64
    } else {
        i64::MIN
    }
}

/// `⌈log2 n⌉`, except that 0 gives 1 as in libhdf5 (where only a wrapped-
/// around float span can reach it).
fn ceil_log2(n: u64) -> u32 {
    match n {
        0 => 1,
        1 => 0,
        n => 64 - (n - 1).leading_zeros(),
    }
}

fn low_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

fn sign_extend(v: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((v << shift) as i64) >> shift
}

fn load(bytes: &[u8], big_endian: bool) -> u64 {
    let fold = |acc: u64, b: &u8| acc << 8 | u64::from(*b);
    if big_endian {
        bytes.iter().fold(0, fold)
    } else {
        bytes.iter().rev().fold(0, fold)
    }
}

fn store(v: u64, out: &mut [u8], big_endian: bool) {
    let n = out.len();
    for (i, byte) in v.to_le_bytes().into_iter().take(n).enumerate() {
        out[if big_endian { n - 1 - i } else { i }] = byte;
    }
}

/// Writes the low `bits` bits of each value, most significant first, into
/// `out` (zeroed, long enough).
fn pack(values: &[u64], bits: u32, out: &mut [u8]) {
    if bits == 0 {
        return;
    }
    let mask = low_mask(bits);
    // At most 7 pending bits plus 63 new ones: u128 holds them.
    let (mut acc, mut pending, mut pos) = (0u128, 0u32, 0usize);
    for &v in values {
        acc = acc << bits | u128::from(v & mask);
        pending += bits;
        while pending >= 8 {
            pending -= 8;
            out[pos] = (acc >> pending) as u8;
            pos += 1;
        }
        acc &= (1u128 << pending) - 1;
    }
    if pending > 0 {
        out[pos] = (acc << (8 - pending)) as u8;
    }
}

/// Reads back what [`pack`] wrote; `data` must hold every bit asked for
/// (callers check the payload length first).
struct BitReader<'a> {
    data: &'a [u8],
    bits: u32,
    acc: u128,
    pending: u32,
}

impl<'a> BitReader<'a> {
    fn new(data: &'a [u8], bits: u32) -> Self {
        BitReader {
            data,
            bits,
            acc: 0,
            pending: 0,
        }
    }

    fn next(&mut self) -> u64 {
        while self.pending < self.bits {
            let (&b, rest) = self.data.split_first().unwrap_or((&0, &[]));
            self.data = rest;
            self.acc = self.acc << 8 | u128::from(b);
            self.pending += 8;
        }
        self.pending -= self.bits;
        let v = (self.acc >> self.pending) as u64 & low_mask(self.bits);
        self.acc &= (1u128 << self.pending) - 1;
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny deterministic generator: the tests need varied data, not
    /// statistical quality.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            if n == 0 {
                0
            } else {
                self.next() % n
            }
        }
    }

    fn int_kinds() -> Vec<ElemKind> {
        let mut kinds = Vec::new();
        for size in [1, 2, 4, 8] {
            for signed in [false, true] {
                for big_endian in [false, true] {
                    kinds.push(ElemKind {
                        float: false,
                        size,
                        signed,
                        big_endian,
                    });
                }
            }
        }
        kinds
    }

    fn to_bytes(values: &[u64], elem: ElemKind) -> Vec<u8> {
        let mut out = vec![0; values.len() * elem.size];
        for (v, dst) in values.iter().zip(out.chunks_exact_mut(elem.size)) {
            store(*v, dst, elem.big_endian);
        }
        out
    }

    /// Maps unsigned order onto the element's order, so that ranges picked
    /// as unsigned numbers are ranges of signed elements too.
    fn unbias(elem: ElemKind, b: u64) -> u64 {
        if elem.signed {
            b ^ 1 << (elem.size * 8 - 1)
        } else {
            b
        }
    }

    fn header_minbits(stored: &[u8]) -> u32 {
        u32::from_le_bytes(stored[..4].try_into().unwrap())
    }

    fn header_minval(stored: &[u8]) -> u64 {
        u64::from_le_bytes(stored[5..13].try_into().unwrap())
    }

    /// Encodes and decodes `values` (bit patterns), checks the round trip
    /// is exact and the coded length is libhdf5's; returns the coded chunk.
    fn int_roundtrip(elem: ElemKind, minbits: i32, fill: Option<u64>, values: &[u64]) -> Vec<u8> {
        let fill = fill.map(|f| to_bytes(&[f], elem));
        let cd =
            local_parameters(SO_INT, minbits, elem, values.len() as u64, fill.as_deref()).unwrap();
        let raw = to_bytes(values, elem);
        let stored = encode(&raw, &cd).unwrap();
        assert_eq!(
            decode(&stored, &cd).unwrap(),
            raw,
            "{elem:?} minbits {minbits} fill {fill:?}"
        );
        if stored != raw {
            let m = header_minbits(&stored) as usize;
            let expect = if m == elem.size * 8 {
                21 + raw.len()
            } else {
                22 + values.len() * m / 8
            };
            assert_eq!(stored.len(), expect, "{elem:?}: length for {m} bits");
        }
        stored
    }

    #[test]
    fn integers_round_trip_with_computed_minbits() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for elem in int_kinds() {
            let bits = elem.size as u32 * 8;
            let mask = low_mask(bits);
            for width in [1, 3, bits / 2, bits - 2] {
                let span = low_mask(width);
                let base = rng.next() & mask;
                let base = base.min(mask - span);
                let biased: Vec<u64> = (0..37).map(|_| base + rng.below(span + 1)).collect();
                let absent = biased.iter().copied().max().unwrap().wrapping_add(1) & mask;
                let values: Vec<u64> = biased.iter().map(|&b| unbias(elem, b)).collect();
                for fill in [None, Some(values[5]), Some(unbias(elem, absent))] {
                    let stored = int_roundtrip(elem, 0, fill, &values);
                    assert!(
                        header_minbits(&stored) <= width + 1,
                        "{elem:?} width {width}"
                    );
                }
            }
        }
    }

    #[test]
    fn integers_all_equal_need_no_bits_without_a_fill_value() {
        for elem in int_kinds() {
            let values = vec![0x5a5a_5a5a_5a5a_5a5a & low_mask(elem.size as u32 * 8); 19];
            let stored = int_roundtrip(elem, 0, None, &values);
            assert_eq!((header_minbits(&stored), stored.len()), (0, 22));
            // With a fill value one bit tells fill from the rest.
            let stored = int_roundtrip(elem, 0, Some(3), &values);
            assert_eq!(header_minbits(&stored), 1);
            let stored = int_roundtrip(elem, 0, Some(values[0]), &values);
            assert_eq!(header_minbits(&stored), 1);
        }
    }

    #[test]
    fn integers_spanning_the_type_are_stored_at_full_width() {
        for elem in int_kinds() {
            let bits = elem.size as u32 * 8;
            let (lo, hi) = if elem.signed {
                (1u64 << (bits - 1), low_mask(bits - 1))
            } else {
                (0, low_mask(bits))
            };
            let values = [lo, hi, 1, lo, 7];
            for fill in [None, Some(0), Some(1)] {
                let stored = int_roundtrip(elem, 0, fill, &values);
                assert_eq!(header_minbits(&stored), bits, "{elem:?}");
                let payload = &stored[HEADER_LEN..];
                let le = to_bytes(
                    &values,
                    ElemKind {
                        big_endian: false,
                        ..elem
                    },
                );
                assert_eq!(payload, le, "full-width payload is little-endian");
            }
        }
    }

    #[test]
    fn integers_round_trip_with_given_minbits() {
        let mut rng = Rng(12345);
        for elem in int_kinds() {
            let bits = elem.size as u32 * 8;
            let mask = low_mask(bits);
            for minbits in [1, 2, bits / 2 + 1, bits - 1] {
                // The all-ones code is the fill value's.
                let span = low_mask(minbits) - 1;
                let base = rng.next() & mask;
                let base = base.min(mask - span);
                let mut values: Vec<u64> = (0..23)
                    .map(|_| unbias(elem, base + rng.below(span + 1)))
                    .collect();
                let fill = unbias(elem, base.wrapping_sub(1) & mask);
                values[4] = fill;
                let stored = int_roundtrip(elem, minbits as i32, Some(fill), &values);
                assert_eq!(header_minbits(&stored), minbits);
                values[4] = unbias(elem, base);
                let stored = int_roundtrip(elem, minbits as i32, None, &values);
                assert_eq!(header_minbits(&stored), minbits);
            }
            // As many bits as the type has: libhdf5 passes the chunk through.
            let values: Vec<u64> = (0..9).map(|_| rng.next() & mask).collect();
            let stored = int_roundtrip(elem, bits as i32, Some(0), &values);
            assert_eq!(stored, to_bytes(&values, elem));
        }
    }

    #[test]
    fn floats_round_trip_within_the_decimal_scale() {
        let mut rng = Rng(777);
        for size in [4, 8] {
            for big_endian in [false, true] {
                let elem = ElemKind {
                    float: true,
                    size,
                    signed: true,
                    big_endian,
                };
                let max_d = if size == 4 { 4 } else { 9 };
                for d in 0..=max_d {
                    let fill = -1.0e3;
                    let xs: Vec<f64> = (0..41)
                        .map(|i| match i % 7 {
                            3 => fill,
                            _ => (rng.below(2_000_001) as f64 - 1.0e6) / 1.0e4,
                        })
                        .collect();
                    let to = |x: f64| {
                        if size == 4 {
                            u64::from((x as f32).to_bits())
                        } else {
                            x.to_bits()
                        }
                    };
                    let from = |v: u64| {
                        if size == 4 {
                            f64::from(f32::from_bits(v as u32))
                        } else {
                            f64::from_bits(v)
                        }
                    };
                    let bits: Vec<u64> = xs.iter().map(|&x| to(x)).collect();
                    let raw = to_bytes(&bits, elem);
                    for fill in [None, Some(to_bytes(&[to(fill)], elem))] {
                        let cd = local_parameters(SO_FLOAT_DSCALE, d, elem, 41, fill.as_deref())
                            .unwrap();
                        let stored = encode(&raw, &cd).unwrap();
                        assert!(header_minbits(&stored) < elem.size as u32 * 8);
                        let back = decode(&stored, &cd).unwrap();
                        for (i, got) in back.chunks_exact(size).enumerate() {
                            let (want, got) = (from(bits[i]), from(load(got, big_endian)));
                            let tolerance = 10f64.powi(-d);
                            assert!(
                                (want - got).abs() <= tolerance,
                                "f{} d={d} fill={fill:?}: {want} came back as {got}",
                                size * 8
                            );
                            if fill.is_some() && want == -1.0e3 {
                                assert_eq!(got, want, "fill values come back exactly");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn rounding_and_log2_follow_libhdf5() {
        assert_eq!(c_llround(2.5), 3);
        assert_eq!(c_llround(-2.5), -3);
        assert_eq!(c_llround(0.49999999999999994), 0);
        assert_eq!(c_llround(f64::NAN), i64::MIN);
        assert_eq!(c_llround(1e19), i64::MIN);
        assert_eq!(c_llround(-(2f64.powi(63))), i64::MIN);
        assert_eq!(c_llround(2f64.powi(63)), i64::MIN);
        assert_eq!(
            (ceil_log2(0), ceil_log2(1), ceil_log2(2), ceil_log2(5)),
            (1, 0, 1, 3)
        );
        assert_eq!(ceil_log2(u64::MAX), 64);
    }

    #[test]
    fn float_chunks_libhdf5_cannot_code_are_stored_at_full_width() {
        // libhdf5 writes minbits 64 into an f32 chunk here and then refuses
        // to read it; full width reads back with libhdf5 (checked with
        // write_direct_chunk).
        let elem = ElemKind {
            float: true,
            size: 4,
            signed: false,
            big_endian: true,
        };
        for first in [f32::NAN, f32::INFINITY] {
            let xs = [first, 1.5, -2.0, f32::NEG_INFINITY, 3.25];
            let raw: Vec<u8> = xs.iter().flat_map(|x| x.to_be_bytes()).collect();
            let cd = local_parameters(SO_FLOAT_DSCALE, 2, elem, 5, None).unwrap();
            let stored = encode(&raw, &cd).unwrap();
            assert_eq!(header_minbits(&stored), 32);
            assert_eq!(stored.len(), 21 + raw.len());
            assert_eq!(decode(&stored, &cd).unwrap(), raw);
        }
    }

    #[test]
    fn local_parameters_refuses_what_libhdf5_refuses() {
        let int = |size, signed| ElemKind {
            float: false,
            size,
            signed,
            big_endian: false,
        };
        let float = |size| ElemKind {
            float: true,
            size,
            signed: true,
            big_endian: false,
        };
        let invalid = |r: Result<Vec<u32>>| matches!(r, Err(CodecError::Invalid(_)));
        assert!(invalid(local_parameters(SO_INT, 0, int(3, true), 10, None)));
        assert!(invalid(local_parameters(
            SO_INT,
            0,
            int(16, false),
            10,
            None
        )));
        assert!(invalid(local_parameters(
            SO_FLOAT_DSCALE,
            2,
            float(2),
            10,
            None
        )));
        assert!(invalid(local_parameters(
            SO_FLOAT_DSCALE,
            2,
            float(16),
            10,
            None
        )));
        assert!(invalid(local_parameters(SO_INT, 0, float(8), 10, None)));
        assert!(invalid(local_parameters(
            SO_FLOAT_DSCALE,
            0,
            int(4, true),
            10,
            None
        )));
        assert!(invalid(local_parameters(7, 0, int(4, true), 10, None)));
        assert!(invalid(local_parameters(
            SO_INT,
            -1,
            int(4, true),
            10,
            None
        )));
        assert!(invalid(local_parameters(
            SO_INT,
            17,
            int(2, true),
            10,
            None
        )));
        assert!(invalid(local_parameters(SO_INT, 0, int(2, true), 0, None)));
        assert!(invalid(local_parameters(
            SO_INT,
            0,
            int(2, true),
            1 << 32,
            None
        )));
        assert!(invalid(local_parameters(
            SO_INT,
            0,
            int(2, true),
            10,
            Some(&[0])
        )));
        assert!(matches!(
            local_parameters(SO_FLOAT_ESCALE, 8, float(4), 10, None),
            Err(CodecError::Unsupported(m)) if m.contains("H5Z_SO_FLOAT_ESCALE")
        ));
        let cd = local_parameters(SO_INT, 16, int(2, true), u64::from(u32::MAX), None).unwrap();
        assert_eq!(cd[2], u32::MAX);
    }

    #[test]
    fn local_parameters_packs_the_fill_value_like_libhdf5() {
        let elem = |float, size, signed, big_endian| ElemKind {
            float,
            size,
            signed,
            big_endian,
        };
        let cd =
            local_parameters(SO_INT, 0, elem(false, 1, true, false), 4, Some(&[0xff])).unwrap();
        assert_eq!(&cd[3..10], &[0, 1, 1, 0, 1, 0xff, 0]);
        let cd = local_parameters(
            SO_INT,
            0,
            elem(false, 2, true, true),
            4,
            Some(&[0xff, 0xfe]),
        )
        .unwrap();
        assert_eq!(&cd[3..10], &[0, 2, 1, 1, 1, 0xfffe, 0]);
        let fill = 1.5f64.to_be_bytes();
        let cd = local_parameters(
            SO_FLOAT_DSCALE,
            3,
            elem(true, 8, true, true),
            4,
            Some(&fill),
        )
        .unwrap();
        assert_eq!(&cd[..10], &[0, 3, 4, 1, 8, 0, 1, 1, 0, 0x3ff8_0000]);
        assert!(cd[10..].iter().all(|&v| v == 0));
    }

    #[test]
    fn bad_client_data_and_input_are_refused() {
        let cd = I16_AUTO.cd;
        assert!(matches!(encode(&[0; 199], cd), Err(CodecError::Invalid(_))));
        assert!(matches!(
            encode(&[0; 200], &cd[..19]),
            Err(CodecError::Invalid(_))
        ));
        let mut escale = F64_SCALE3.cd.to_vec();
        escale[0] = SO_FLOAT_ESCALE;
        assert!(matches!(
            encode(F64_SCALE3.raw, &escale),
            Err(CodecError::Unsupported(_))
        ));
        assert!(matches!(
            decode(F64_SCALE3.stored, &escale),
            Err(CodecError::Unsupported(_))
        ));
        let mut too_many_bits = cd.to_vec();
        too_many_bits[1] = 17;
        assert!(matches!(
            encode(I16_AUTO.raw, &too_many_bits),
            Err(CodecError::Invalid(_))
        ));
        let mut float_as_int = F64_SCALE3.cd.to_vec();
        float_as_int[0] = SO_INT;
        assert!(matches!(
            decode(F64_SCALE3.stored, &float_as_int),
            Err(CodecError::Invalid(_))
        ));
    }

    fn is_corrupt(r: Result<Vec<u8>>) -> bool {
        matches!(
            r,
            Err(CodecError::Corrupt {
                filter: "scaleoffset",
                ..
            })
        )
    }

    #[test]
    fn truncated_or_inconsistent_chunks_are_corrupt() {
        for (name, v) in VECTORS {
            if v.stored.len() == v.raw.len() && v.cd[1] as usize == v.elem.size * 8 {
                // Passed through: only the length can be wrong.
                assert!(is_corrupt(decode(&v.stored[1..], v.cd)), "{name}");
                continue;
            }
            for len in 0..13 {
                assert!(
                    is_corrupt(decode(&v.stored[..len], v.cd)),
                    "{name}: {len} bytes"
                );
            }
            let minbits = header_minbits(v.stored) as usize;
            let n = v.raw.len() / v.elem.size;
            let needed = if minbits == v.elem.size * 8 {
                21 + v.raw.len()
            } else {
                21 + (n * minbits).div_ceil(8)
            };
            // libhdf5's spare byte is not needed ...
            if minbits > 0 {
                assert!(decode(&v.stored[..needed], v.cd).is_ok(), "{name}");
                // ... the payload is.
                assert!(is_corrupt(decode(&v.stored[..needed - 1], v.cd)), "{name}");
            }
            let mut wide = v.stored.to_vec();
            wide[..4].copy_from_slice(&(v.elem.size as u32 * 8 + 1).to_le_bytes());
            assert!(is_corrupt(decode(&wide, v.cd)), "{name}: minbits > width");
            wide[..4].copy_from_slice(&u32::MAX.to_le_bytes());
            assert!(is_corrupt(decode(&wide, v.cd)), "{name}: minbits > width");
        }
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = Rng(4242);
        for (_, v) in VECTORS {
            for _ in 0..300 {
                let len = rng.below(v.stored.len() as u64 + 40) as usize;
                let mut junk: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                if len >= 4 && rng.below(2) == 0 {
                    // Plausible widths reach the payload code.
                    let m = rng.below(v.elem.size as u64 * 8 + 1) as u32;
                    junk[..4].copy_from_slice(&m.to_le_bytes());
                }
                let _ = decode(&junk, v.cd);
                let mut flipped = v.stored.to_vec();
                let i = rng.below(flipped.len() as u64) as usize;
                flipped[i] ^= 1 << rng.below(8);
                let _ = decode(&flipped, v.cd);
            }
        }
    }

    // Vectors from libhdf5 2.0.0 through h5py 3.16: one single-chunk
    // dataset each, then
    //   dcpl.set_chunk((n,)); dcpl.set_scaleoffset(h5z.SO_INT or SO_FLOAT_DSCALE, factor)
    //   fill: the default, dcpl.set_fill_value(np.array(v, dtype)), or "none" by
    //         ctypes H5Pset_fill_value(dcpl.id, tid.id, None) on h5py's libhdf5
    //   ds = h5d.create(f.id, name, h5t.py_create(dtype), h5s.create_simple((n,)), dcpl=dcpl)
    //   ds.write(h5s.ALL, h5s.ALL, data); cd = ds.get_create_plist().get_filter(0)[2]
    //   stored = ds.read_direct_chunk((0,))[1]; decoded = ds.read(h5s.ALL, h5s.ALL, out)
    // (The same harness, over 11 000 random chunks of every type, byte order,
    // fill mode and scale, agreed byte for byte in both directions, but for
    // the f32 chunks `encode` documents as coded differently.)
    struct Vector {
        scale_type: u32,
        scale_factor: i32,
        elem: ElemKind,
        fill: Option<&'static [u8]>,
        cd: &'static [u32],
        raw: &'static [u8],
        stored: &'static [u8],
        /// What libhdf5 reads back, when not `raw` (lossy settings).
        decoded: Option<&'static [u8]>,
    }

    const VECTORS: &[(&str, Vector)] = &[
        ("i16_auto", I16_AUTO),
        ("i64_fill", I64_FILL),
        ("u8_all_equal", U8_ALL_EQUAL),
        ("f64_scale3", F64_SCALE3),
        ("i32_be_fill", I32_BE_FILL),
        ("i8_full_nofill", I8_FULL_NOFILL),
        ("i16_given_neg", I16_GIVEN_NEG),
        ("u16_given_lossy_be", U16_GIVEN_LOSSY_BE),
        ("u16_identity", U16_IDENTITY),
        ("f32_be_fill", F32_BE_FILL),
        ("u32_full_computed", U32_FULL_COMPUTED),
        ("f64_halves_nofill", F64_HALVES_NOFILL),
        ("f64_nan_first_nofill", F64_NAN_FIRST_NOFILL),
        ("f32_nan_inside_nofill", F32_NAN_INSIDE_NOFILL),
    ];

    #[test]
    fn libhdf5_vectors_match_both_ways() {
        for (name, v) in VECTORS {
            let n = (v.raw.len() / v.elem.size) as u64;
            let cd = local_parameters(v.scale_type, v.scale_factor, v.elem, n, v.fill).unwrap();
            assert_eq!(cd, v.cd, "{name}: cd_values");
            assert_eq!(encode(v.raw, v.cd).unwrap(), v.stored, "{name}: encode");
            let want = v.decoded.unwrap_or(v.raw);
            assert_eq!(decode(v.stored, v.cd).unwrap(), want, "{name}: decode");
        }
    }

    #[test]
    fn libhdf5_vectors_cover_the_special_shapes() {
        // No fill value, all equal: header and one spare byte only.
        assert_eq!(header_minbits(U8_ALL_EQUAL.stored), 0);
        assert_eq!(U8_ALL_EQUAL.stored.len(), 22);
        // Range too wide: full width. libhdf5 records the minimum only in
        // its signed-char code ...
        assert_eq!(header_minbits(I8_FULL_NOFILL.stored), 8);
        assert_eq!(header_minval(I8_FULL_NOFILL.stored), -128i64 as u64);
        // ... and when the computed width happens to be the full one.
        assert_eq!(header_minbits(U32_FULL_COMPUTED.stored), 32);
        assert_eq!(header_minval(U32_FULL_COMPUTED.stored), 1);
        // minbits = the integer's width: not filtered at all.
        assert_eq!(U16_IDENTITY.stored, U16_IDENTITY.raw);
        // Given minbits too few for the range: libhdf5 keeps the low bits.
        assert!(U16_GIVEN_LOSSY_BE.decoded.is_some());
        // 0.5, 1.5, 2.5 at scale 0 round to 1, 2, 3 (not to even).
        let halves: Vec<f64> = F64_HALVES_NOFILL
            .decoded
            .unwrap_or(F64_HALVES_NOFILL.raw)
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(halves[1..6], [1.0, 2.0, 3.0, 4.0, 5.0]);
        // A NaN first element without a fill value: full width (f64), the
        // NaN as minimum.
        assert_eq!(header_minbits(F64_NAN_FIRST_NOFILL.stored), 64);
    }

    const I16_AUTO: Vector = Vector {
        scale_type: 2,
        scale_factor: 0,
        elem: ElemKind {
            float: false,
            size: 2,
            signed: true,
            big_endian: false,
        },
        fill: Some(&[0x00, 0x00]),
        cd: &[2, 0, 100, 0, 2, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        raw: &[
            0xa6, 0xff, 0xcb, 0xff, 0xf0, 0xff, 0x15, 0x00, 0x3a, 0x00, 0x5f, 0x00, 0xb1, 0xff,
            0xd6, 0xff, 0xfb, 0xff, 0x20, 0x00, 0x45, 0x00, 0x6a, 0x00, 0xbc, 0xff, 0xe1, 0xff,
            0x06, 0x00, 0x2b, 0x00, 0x50, 0x00, 0x75, 0x00, 0xc7, 0xff, 0xec, 0xff, 0x11, 0x00,
            0x36, 0x00, 0x5b, 0x00, 0xad, 0xff, 0xd2, 0xff, 0xf7, 0xff, 0x1c, 0x00, 0x41, 0x00,
            0x66, 0x00, 0xb8, 0xff, 0xdd, 0xff, 0x02, 0x00, 0x27, 0x00, 0x4c, 0x00, 0x71, 0x00,
            0xc3, 0xff, 0xe8, 0xff, 0x0d, 0x00, 0x32, 0x00, 0x57, 0x00, 0xa9, 0xff, 0xce, 0xff,
            0xf3, 0xff, 0x18, 0x00, 0x3d, 0x00, 0x62, 0x00, 0xb4, 0xff, 0xd9, 0xff, 0xfe, 0xff,
            0x23, 0x00, 0x48, 0x00, 0x6d, 0x00, 0xbf, 0xff, 0xe4, 0xff, 0x09, 0x00, 0x2e, 0x00,
            0x53, 0x00, 0x78, 0x00, 0xca, 0xff, 0xef, 0xff, 0x14, 0x00, 0x39, 0x00, 0x5e, 0x00,
            0xb0, 0xff, 0xd5, 0xff, 0xfa, 0xff, 0x1f, 0x00, 0x44, 0x00, 0x69, 0x00, 0xbb, 0xff,
            0xe0, 0xff, 0x05, 0x00, 0x2a, 0x00, 0x4f, 0x00, 0x74, 0x00, 0xc6, 0xff, 0xeb, 0xff,
            0x10, 0x00, 0x35, 0x00, 0x5a, 0x00, 0xac, 0xff, 0xd1, 0xff, 0xf6, 0xff, 0x1b, 0x00,
            0x40, 0x00, 0x65, 0x00, 0xb7, 0xff, 0xdc, 0xff, 0x01, 0x00, 0x26, 0x00, 0x4b, 0x00,
            0x70, 0x00, 0xc2, 0xff, 0xe7, 0xff, 0x0c, 0x00, 0x31, 0x00, 0x56, 0x00, 0xa8, 0xff,
            0xcd, 0xff, 0xf2, 0xff,
        ],
        stored: &[
            0x08, 0x00, 0x00, 0x00, 0x08, 0xa6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x25, 0x4a, 0x6f, 0x94, 0xb9, 0x0b,
            0x30, 0x55, 0x7a, 0x9f, 0xc4, 0x16, 0x3b, 0x60, 0x85, 0xaa, 0xcf, 0x21, 0x46, 0x6b,
            0x90, 0xb5, 0x07, 0x2c, 0x51, 0x76, 0x9b, 0xc0, 0x12, 0x37, 0x5c, 0x81, 0xa6, 0xcb,
            0x1d, 0x42, 0x67, 0x8c, 0xb1, 0x03, 0x28, 0x4d, 0x72, 0x97, 0xbc, 0x0e, 0x33, 0x58,
            0x7d, 0xa2, 0xc7, 0x19, 0x3e, 0x63, 0x88, 0xad, 0xd2, 0x24, 0x49, 0x6e, 0x93, 0xb8,
            0x0a, 0x2f, 0x54, 0x79, 0x9e, 0xc3, 0x15, 0x3a, 0x5f, 0x84, 0xa9, 0xce, 0x20, 0x45,
            0x6a, 0x8f, 0xb4, 0x06, 0x2b, 0x50, 0x75, 0x9a, 0xbf, 0x11, 0x36, 0x5b, 0x80, 0xa5,
            0xca, 0x1c, 0x41, 0x66, 0x8b, 0xb0, 0x02, 0x27, 0x4c, 0x00,
        ],
        decoded: None,
    };

    const I64_FILL: Vector = Vector {
        scale_type: 2,
        scale_factor: 0,
        elem: ElemKind {
            float: false,
            size: 8,
            signed: true,
            big_endian: false,
        },
        fill: Some(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
        cd: &[
            2, 0, 12, 0, 8, 1, 0, 1, 4294967295, 4294967295, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ],
        raw: &[
            0x00, 0x10, 0xa5, 0xd4, 0xe8, 0x00, 0x00, 0x00, 0x39, 0x40, 0xa5, 0xd4, 0xe8, 0x00,
            0x00, 0x00, 0x72, 0x70, 0xa5, 0xd4, 0xe8, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xe4, 0xd0, 0xa5, 0xd4, 0xe8, 0x00, 0x00, 0x00, 0x1d, 0x01,
            0xa6, 0xd4, 0xe8, 0x00, 0x00, 0x00, 0x56, 0x31, 0xa6, 0xd4, 0xe8, 0x00, 0x00, 0x00,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xc8, 0x91, 0xa6, 0xd4, 0xe8, 0x00,
            0x00, 0x00, 0x01, 0xc2, 0xa6, 0xd4, 0xe8, 0x00, 0x00, 0x00, 0x3a, 0xf2, 0xa6, 0xd4,
            0xe8, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ],
        stored: &[
            0x11, 0x00, 0x00, 0x00, 0x08, 0x00, 0x10, 0xa5, 0xd4, 0xe8, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0e, 0x4c, 0x0e, 0x5f,
            0xff, 0xf6, 0x07, 0x23, 0xc4, 0x76, 0x42, 0xad, 0xff, 0xff, 0xc0, 0xe4, 0x6c, 0x80,
            0x7c, 0x47, 0x5f, 0xff, 0xf0,
        ],
        decoded: None,
    };

    const U8_ALL_EQUAL: Vector = Vector {
        scale_type: 2,
        scale_factor: 0,
        elem: ElemKind {
            float: false,
            size: 1,
            signed: false,
            big_endian: false,
        },
        fill: None,
        cd: &[2, 0, 24, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        raw: &[
            0x4d, 0x4d, 0x4d, 0x4d, 0x4d, 0x4d, 0x4d, 0x4d, 0x4d, 0x4d, 0x4d, 0x4d, 0x4d, 0x4d,
            0x4d, 0x4d, 0x4d, 0x4d, 0x4d, 0x4d, 0x4d, 0x4d, 0x4d, 0x4d,
        ],
        stored: &[
            0x00, 0x00, 0x00, 0x00, 0x08, 0x4d, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        ],
        decoded: None,
    };

    const F64_SCALE3: Vector = Vector {
        scale_type: 0,
        scale_factor: 3,
        elem: ElemKind {
            float: true,
            size: 8,
            signed: false,
            big_endian: false,
        },
        fill: Some(&[0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]),
        cd: &[0, 3, 12, 1, 8, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        raw: &[
            0x2d, 0x43, 0x1c, 0xeb, 0xe2, 0x36, 0x3a, 0x3f, 0xd1, 0x45, 0x17, 0x5d, 0x74, 0xd1,
            0xf5, 0xbf, 0x3d, 0x13, 0x4f, 0x4a, 0xca, 0xb3, 0x0d, 0x40, 0xc5, 0x81, 0x19, 0xe9,
            0x64, 0x5e, 0x04, 0x40, 0x58, 0x16, 0x78, 0x65, 0x81, 0x57, 0x56, 0x3f, 0x13, 0x45,
            0x93, 0xb7, 0x9a, 0xdf, 0x61, 0xbf, 0x2e, 0xba, 0xe8, 0xa2, 0x8b, 0x2e, 0x27, 0x40,
            0x6d, 0x3a, 0x7b, 0x95, 0xb7, 0x33, 0x34, 0x40, 0xba, 0xe8, 0xa2, 0x8b, 0x2e, 0xba,
            0x14, 0xc0, 0x18, 0x5d, 0x74, 0xd1, 0x45, 0x17, 0xed, 0x3f, 0x0a, 0xf2, 0x94, 0x20,
            0x4f, 0x09, 0x20, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        ],
        stored: &[
            0x0f, 0x00, 0x00, 0x00, 0x08, 0xba, 0xe8, 0xa2, 0x8b, 0x2e, 0xba, 0x14, 0xc0, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xfe, 0x3b, 0xa9, 0x15, 0xf9, 0xe3,
            0x02, 0x87, 0xe5, 0x0f, 0x20, 0xc2, 0xe3, 0x28, 0x00, 0x00, 0x5f, 0x2d, 0x9c, 0x87,
            0xff, 0xf0,
        ],
        decoded: Some(&[
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x9e, 0x96, 0x89, 0x03, 0x33, 0xd2,
            0xf5, 0xbf, 0xb4, 0x8a, 0x49, 0xab, 0x98, 0xb4, 0x0d, 0x40, 0xf8, 0x15, 0xb6, 0x92,
            0x94, 0x5e, 0x04, 0x40, 0x00, 0xe0, 0x34, 0x9c, 0xe7, 0x5c, 0x53, 0x3f, 0x00, 0x20,
            0xa0, 0xdc, 0x01, 0xca, 0x5d, 0xbf, 0x55, 0x29, 0x1e, 0x62, 0xaf, 0x2e, 0x27, 0x40,
            0xce, 0xef, 0x08, 0x30, 0xc2, 0x33, 0x34, 0x40, 0xba, 0xe8, 0xa2, 0x8b, 0x2e, 0xba,
            0x14, 0xc0, 0xe8, 0xad, 0xe6, 0x77, 0x04, 0x18, 0xed, 0x3f, 0x09, 0xf2, 0x94, 0x20,
            0x4f, 0x09, 0x20, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        ]),
    };

    const I32_BE_FILL: Vector = Vector {
        scale_type: 2,
        scale_factor: 0,
        elem: ElemKind {
            float: false,
            size: 4,
            signed: true,
            big_endian: true,
        },
        fill: Some(&[0x00, 0x00, 0x00, 0x07]),
        cd: &[2, 0, 16, 0, 4, 1, 1, 1, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        raw: &[
            0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x03, 0xc9, 0x00, 0x00, 0x03, 0xaa, 0x00, 0x00,
            0x03, 0x8b, 0x00, 0x00, 0x03, 0x6c, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x03, 0x2e,
            0x00, 0x00, 0x03, 0x0f, 0x00, 0x00, 0x02, 0xf0, 0x00, 0x00, 0x02, 0xd1, 0x00, 0x00,
            0x00, 0x07, 0x00, 0x00, 0x02, 0x93, 0x00, 0x00, 0x02, 0x74, 0x00, 0x00, 0x02, 0x55,
            0x00, 0x00, 0x02, 0x36, 0x00, 0x00, 0x00, 0x07,
        ],
        stored: &[
            0x09, 0x00, 0x00, 0x00, 0x08, 0x36, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xe4, 0xee, 0x95, 0x59, 0xb7, 0xfd,
            0xf0, 0xd9, 0x5d, 0x26, 0xff, 0xe5, 0xd1, 0xf0, 0x7c, 0x01, 0xff, 0x00,
        ],
        decoded: None,
    };

    const I8_FULL_NOFILL: Vector = Vector {
        scale_type: 2,
        scale_factor: 0,
        elem: ElemKind {
            float: false,
            size: 1,
            signed: true,
            big_endian: false,
        },
        fill: None,
        cd: &[2, 0, 8, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        raw: &[0x80, 0x7f, 0xfb, 0x00, 0x03, 0x9c, 0x63, 0x01],
        stored: &[
            0x08, 0x00, 0x00, 0x00, 0x08, 0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x7f, 0xfb, 0x00, 0x03, 0x9c, 0x63,
            0x01,
        ],
        decoded: None,
    };

    const I16_GIVEN_NEG: Vector = Vector {
        scale_type: 2,
        scale_factor: 6,
        elem: ElemKind {
            float: false,
            size: 2,
            signed: true,
            big_endian: false,
        },
        fill: Some(&[0x00, 0x00]),
        cd: &[2, 6, 24, 0, 2, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        raw: &[
            0x18, 0xfc, 0x25, 0xfc, 0x32, 0xfc, 0x3f, 0xfc, 0x4c, 0xfc, 0x1d, 0xfc, 0x2a, 0xfc,
            0x37, 0xfc, 0x44, 0xfc, 0x51, 0xfc, 0x22, 0xfc, 0x2f, 0xfc, 0x3c, 0xfc, 0x49, 0xfc,
            0x1a, 0xfc, 0x27, 0xfc, 0x34, 0xfc, 0x41, 0xfc, 0x4e, 0xfc, 0x1f, 0xfc, 0x2c, 0xfc,
            0x39, 0xfc, 0x46, 0xfc, 0x53, 0xfc,
        ],
        stored: &[
            0x06, 0x00, 0x00, 0x00, 0x08, 0x18, 0xfc, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xd6, 0xa7, 0xd0, 0x54, 0x9f, 0xb3,
            0x92, 0x97, 0x93, 0x10, 0x8f, 0x72, 0x9d, 0x87, 0x52, 0x1b, 0xbb, 0x00,
        ],
        decoded: None,
    };

    const U16_GIVEN_LOSSY_BE: Vector = Vector {
        scale_type: 2,
        scale_factor: 5,
        elem: ElemKind {
            float: false,
            size: 2,
            signed: false,
            big_endian: true,
        },
        fill: Some(&[0x00, 0x00]),
        cd: &[2, 5, 16, 0, 2, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        raw: &[
            0x01, 0xf4, 0x01, 0xfd, 0x02, 0x06, 0x02, 0x0f, 0x02, 0x18, 0x02, 0x21, 0x02, 0x2a,
            0x02, 0x33, 0x02, 0x3c, 0x02, 0x45, 0x02, 0x4e, 0x02, 0x57, 0x02, 0x60, 0x02, 0x69,
            0x02, 0x72, 0x02, 0x7b,
        ],
        stored: &[
            0x05, 0x00, 0x00, 0x00, 0x08, 0xf4, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x65, 0xb2, 0x36, 0xdf, 0x44, 0x74,
            0x36, 0x57, 0xc7, 0x00,
        ],
        decoded: Some(&[
            0x01, 0xf4, 0x01, 0xfd, 0x02, 0x06, 0x02, 0x0f, 0x01, 0xf8, 0x02, 0x01, 0x02, 0x0a,
            0x00, 0x00, 0x01, 0xfc, 0x02, 0x05, 0x02, 0x0e, 0x01, 0xf7, 0x02, 0x00, 0x02, 0x09,
            0x02, 0x12, 0x01, 0xfb,
        ]),
    };

    const U16_IDENTITY: Vector = Vector {
        scale_type: 2,
        scale_factor: 16,
        elem: ElemKind {
            float: false,
            size: 2,
            signed: false,
            big_endian: false,
        },
        fill: Some(&[0x00, 0x00]),
        cd: &[2, 16, 12, 0, 2, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        raw: &[
            0x00, 0x00, 0xe8, 0x03, 0xd0, 0x07, 0xb8, 0x0b, 0xa0, 0x0f, 0x88, 0x13, 0x70, 0x17,
            0x58, 0x1b, 0x40, 0x1f, 0x28, 0x23, 0x10, 0x27, 0xf8, 0x2a,
        ],
        stored: &[
            0x00, 0x00, 0xe8, 0x03, 0xd0, 0x07, 0xb8, 0x0b, 0xa0, 0x0f, 0x88, 0x13, 0x70, 0x17,
            0x58, 0x1b, 0x40, 0x1f, 0x28, 0x23, 0x10, 0x27, 0xf8, 0x2a,
        ],
        decoded: None,
    };

    const F32_BE_FILL: Vector = Vector {
        scale_type: 0,
        scale_factor: 2,
        elem: ElemKind {
            float: true,
            size: 4,
            signed: false,
            big_endian: true,
        },
        fill: Some(&[0xc4, 0x79, 0xc0, 0x00]),
        cd: &[
            0, 2, 20, 1, 4, 0, 1, 1, 3296313344, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ],
        raw: &[
            0xc1, 0x15, 0xbe, 0x77, 0xc4, 0x79, 0xc0, 0x00, 0xc0, 0xd5, 0xeb, 0x85, 0xc0, 0xab,
            0x22, 0xd1, 0xc0, 0x80, 0x5a, 0x1d, 0xc4, 0x79, 0xc0, 0x00, 0xbf, 0xab, 0x22, 0xd1,
            0x00, 0x00, 0x00, 0x00, 0x3f, 0xab, 0x22, 0xd1, 0xc4, 0x79, 0xc0, 0x00, 0x40, 0x80,
            0x5a, 0x1d, 0x40, 0xab, 0x22, 0xd1, 0x40, 0xd5, 0xeb, 0x85, 0xc4, 0x79, 0xc0, 0x00,
            0x41, 0x15, 0xbe, 0x77, 0x41, 0x2b, 0x22, 0xd1, 0x41, 0x40, 0x87, 0x2b, 0xc4, 0x79,
            0xc0, 0x00, 0x41, 0x6b, 0x4f, 0xdf, 0x41, 0x80, 0x5a, 0x1d,
        ],
        stored: &[
            0x0c, 0x00, 0x00, 0x00, 0x08, 0x77, 0xbe, 0x15, 0xc1, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0f, 0xff, 0x10, 0xb1, 0x91, 0x21,
            0x7f, 0xff, 0x32, 0x23, 0xa8, 0x42, 0xef, 0xff, 0x53, 0x95, 0xbf, 0x64, 0x4f, 0xff,
            0x75, 0x07, 0xd6, 0x85, 0xbf, 0xff, 0x96, 0x79, 0xec, 0x00,
        ],
        decoded: Some(&[
            0xc1, 0x15, 0xbe, 0x77, 0xc4, 0x79, 0xc0, 0x00, 0xc0, 0xd6, 0x0c, 0x4a, 0xc0, 0xab,
            0x2b, 0x02, 0xc0, 0x80, 0x49, 0xbb, 0xc4, 0x79, 0xc0, 0x00, 0xbf, 0xab, 0x64, 0x58,
            0x3a, 0x83, 0x00, 0x00, 0x3f, 0xab, 0xa5, 0xe0, 0xc4, 0x79, 0xc0, 0x00, 0x40, 0x80,
            0x5a, 0x1c, 0x40, 0xab, 0x3b, 0x64, 0x40, 0xd5, 0xca, 0xc2, 0xc4, 0x79, 0xc0, 0x00,
            0x41, 0x15, 0xc6, 0xa7, 0x41, 0x2b, 0x37, 0x4b, 0x41, 0x40, 0x7e, 0xf9, 0xc4, 0x79,
            0xc0, 0x00, 0x41, 0x6b, 0x60, 0x41, 0x41, 0x80, 0x53, 0xf8,
        ]),
    };

    const U32_FULL_COMPUTED: Vector = Vector {
        scale_type: 2,
        scale_factor: 0,
        elem: ElemKind {
            float: false,
            size: 4,
            signed: false,
            big_endian: false,
        },
        fill: Some(&[0x00, 0x00, 0x00, 0x00]),
        cd: &[2, 0, 4, 0, 4, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        raw: &[
            0x01, 0x00, 0x00, 0x00, 0xfe, 0xff, 0xff, 0xff, 0x05, 0x00, 0x00, 0x00, 0xe8, 0x03,
            0x00, 0x00,
        ],
        stored: &[
            0x20, 0x00, 0x00, 0x00, 0x08, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0xfe, 0xff, 0xff,
            0xff, 0x05, 0x00, 0x00, 0x00, 0xe8, 0x03, 0x00, 0x00,
        ],
        decoded: None,
    };

    const F64_HALVES_NOFILL: Vector = Vector {
        scale_type: 0,
        scale_factor: 0,
        elem: ElemKind {
            float: true,
            size: 8,
            signed: false,
            big_endian: false,
        },
        fill: None,
        cd: &[0, 0, 6, 1, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        raw: &[
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0xe0, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x04, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x40, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x12, 0x40,
        ],
        stored: &[
            0x03, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x39, 0x40,
        ],
        decoded: Some(&[
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0xf0, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x08, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x40, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x14, 0x40,
        ]),
    };

    const F64_NAN_FIRST_NOFILL: Vector = Vector {
        scale_type: 0,
        scale_factor: 1,
        elem: ElemKind {
            float: true,
            size: 8,
            signed: false,
            big_endian: false,
        },
        fill: None,
        cd: &[0, 1, 4, 1, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        raw: &[
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x7f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0xf0, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x40, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x10, 0xc0,
        ],
        stored: &[
            0x40, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x7f, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8,
            0x7f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x02, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0xc0,
        ],
        decoded: None,
    };

    const F32_NAN_INSIDE_NOFILL: Vector = Vector {
        scale_type: 0,
        scale_factor: 1,
        elem: ElemKind {
            float: true,
            size: 4,
            signed: false,
            big_endian: false,
        },
        fill: None,
        cd: &[0, 1, 5, 1, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        raw: &[
            0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0xc0, 0x7f, 0x00, 0x00, 0x10, 0x40, 0x00, 0x00,
            0x80, 0xc0, 0x00, 0x00, 0x00, 0x3e,
        ],
        stored: &[
            0x06, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x80, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc8, 0x0f, 0xc0, 0xa4,
        ],
        decoded: Some(&[
            0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x80, 0xc0, 0x34, 0x33, 0x13, 0x40, 0x00, 0x00,
            0x80, 0xc0, 0xc0, 0xcc, 0xcc, 0x3d,
        ]),
    };
}
