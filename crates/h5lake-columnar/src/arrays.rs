//! Arrow arrays from elements in row layout, and back.

use std::sync::Arc;

use arrow_array::{
    make_array, Array, ArrayRef, BinaryArray, FixedSizeBinaryArray, FixedSizeListArray, ListArray,
    StringArray, StructArray,
};
use arrow_buffer::{Buffer, OffsetBuffer};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, Fields};
use h5lake_types::{ByteOrder, CharSet, Datatype};

use crate::{ColumnarError, Result};

/// The Arrow type of one member of a columnar compound.
pub(crate) fn arrow_type(dt: &Datatype) -> Result<DataType> {
    Ok(match dt {
        Datatype::Integer { size, signed, .. } => match (size, signed) {
            (1, true) => DataType::Int8,
            (2, true) => DataType::Int16,
            (4, true) => DataType::Int32,
            (8, true) => DataType::Int64,
            (1, false) => DataType::UInt8,
            (2, false) => DataType::UInt16,
            (4, false) => DataType::UInt32,
            (8, false) => DataType::UInt64,
            _ => return Err(unsupported(dt)),
        },
        Datatype::Bitfield { size, .. } => arrow_type(&Datatype::Integer {
            size: *size,
            signed: false,
            order: ByteOrder::Little,
        })?,
        Datatype::Float { size: 2, .. } => DataType::Float16,
        Datatype::Float { size: 4, .. } => DataType::Float32,
        Datatype::Float { size: 8, .. } => DataType::Float64,
        Datatype::Enum { base, .. } => arrow_type(base)?,
        Datatype::String {
            length: Some(n), ..
        }
        | Datatype::Opaque { size: n, .. }
        | Datatype::Reference { size: n, .. }
        | Datatype::CustomFloat { size: n, .. } => DataType::FixedSizeBinary(width(*n)?),
        Datatype::Array { base, dims } => {
            let k = dims.iter().product::<u64>();
            DataType::FixedSizeList(
                Arc::new(Field::new("item", arrow_type(base)?, true)),
                width(usize::try_from(k).map_err(|_| unsupported(dt))?)?,
            )
        }
        Datatype::Compound { fields, .. } => DataType::Struct(
            fields
                .iter()
                .map(|f| Ok(Field::new(&f.name, arrow_type(&f.dtype)?, true)))
                .collect::<Result<Fields>>()?,
        ),
        Datatype::Complex { part } => DataType::Struct(Fields::from(vec![
            Field::new("r", arrow_type(part)?, true),
            Field::new("i", arrow_type(part)?, true),
        ])),
        _ => return Err(unsupported(dt)),
    })
}

fn width(n: usize) -> Result<i32> {
    i32::try_from(n).map_err(|_| ColumnarError::Unsupported(format!("a member of {n} bytes")))
}

fn unsupported(dt: &Datatype) -> ColumnarError {
    ColumnarError::Unsupported(format!(
        "a member of type {} in a columnar dataset (not yet: variable-length strings and \
         sequences inside nested compounds or arrays, sequences of variable-length elements, \
         region references, integers other than 8 to 64 bits)",
        dt.to_json()
    ))
}

/// The members of a compound, or the two parts of a complex number.
fn members(dt: &Datatype) -> Option<Vec<(usize, Datatype)>> {
    match dt {
        Datatype::Compound { fields, .. } => {
            Some(fields.iter().map(|f| (f.offset, f.dtype.clone())).collect())
        }
        Datatype::Complex { part } => {
            let s = part.fixed_size().unwrap_or(0);
            Some(vec![(0, (**part).clone()), (s, (**part).clone())])
        }
        _ => None,
    }
}

/// Whether the values of `dt` are numbers Arrow keeps little-endian.
fn big_endian_number(dt: &Datatype) -> Option<usize> {
    match dt {
        Datatype::Integer {
            size,
            order: ByteOrder::Big,
            ..
        }
        | Datatype::Float {
            size,
            order: ByteOrder::Big,
        }
        | Datatype::Bitfield {
            size,
            order: ByteOrder::Big,
        } => Some(*size),
        Datatype::Enum { base, .. } => big_endian_number(base),
        _ => None,
    }
}

fn swap_each(bytes: &mut [u8], size: usize) {
    if size > 1 {
        for v in bytes.chunks_exact_mut(size) {
            v.reverse();
        }
    }
}

/// Runs `$body` with `$w` a constant for the common member widths, so that
/// the per-row copies compile to single moves.
macro_rules! by_width {
    ($width:expr, $w:ident => $body:expr) => {
        match $width {
            1 => {
                const $w: usize = 1;
                $body
            }
            2 => {
                const $w: usize = 2;
                $body
            }
            4 => {
                const $w: usize = 4;
                $body
            }
            8 => {
                const $w: usize = 8;
                $body
            }
            _ => {
                #[allow(non_snake_case)]
                let $w = $width;
                $body
            }
        }
    };
}

/// The `width` bytes at `offset` of each of `n` records of `stride` bytes,
/// one after another.
pub(crate) fn gather(raw: &[u8], stride: usize, offset: usize, width: usize, n: usize) -> Vec<u8> {
    if offset == 0 && width == stride {
        return raw[..n * stride].to_vec();
    }
    let mut out = vec![0u8; n * width];
    by_width!(width, W => {
        for (rec, o) in raw.chunks_exact(stride).zip(out.chunks_exact_mut(W.max(1))).take(n) {
            o.copy_from_slice(&rec[offset..offset + W]);
        }
    });
    out
}

/// Rows a pass over the members takes: a block of input small enough to
/// stay in cache while each member takes its part of every row.
const BLOCK_BYTES: usize = 64 << 10;

/// [`gather`] of several members at once (`places`: (offset, width) of
/// each), block of rows by block of rows, so that the rows are read from
/// memory once, not once a member.
pub(crate) fn gather_members(
    raw: &[u8],
    stride: usize,
    places: &[(usize, usize)],
    n: usize,
) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = places
        .iter()
        .map(|&(_, w)| Vec::with_capacity(n * w))
        .collect();
    if stride == 0 {
        return out;
    }
    let mut r0 = 0;
    #[cfg(target_arch = "x86_64")]
    if let Some(order) = eight_words(stride, places) {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is present; `raw` holds `n` rows of 32 bytes
            // and each member's vector has room for `n` values of 4.
            r0 = unsafe { gather_8x4_avx2(raw, &order, &mut out, n) };
        }
    }
    let block = (BLOCK_BYTES / stride).max(1);
    while r0 < n {
        let r1 = (r0 + block).min(n);
        let rows = &raw[r0 * stride..r1 * stride];
        for (&(offset, width), member) in places.iter().zip(out.iter_mut()) {
            by_width!(width, W => {
                for rec in rows.chunks_exact(stride) {
                    member.extend_from_slice(&rec[offset..offset + W]);
                }
            });
        }
        r0 = r1;
    }
    out
}

/// When the members are eight of 4 bytes that tile rows of 32 (in any
/// order), the member at each offset (offset / 4 → index in `places`).
fn eight_words(stride: usize, places: &[(usize, usize)]) -> Option<[usize; 8]> {
    if stride != 32 || places.len() != 8 {
        return None;
    }
    let mut order = [usize::MAX; 8];
    for (j, &(offset, width)) in places.iter().enumerate() {
        if width != 4 || offset % 4 != 0 || offset >= 32 || order[offset / 4] != usize::MAX {
            return None;
        }
        order[offset / 4] = j;
    }
    Some(order)
}

/// [`gather_members`] of eight 4-byte members tiling 32-byte rows, eight
/// rows at a time as an 8x8 transpose in registers. Returns the rows done
/// (a multiple of 8; the caller gathers the rest).
///
/// # Safety
/// AVX2 must be present; `raw` holds at least `n` rows of 32 bytes and each
/// of `out` has capacity for `n` values of 4 bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gather_8x4_avx2(raw: &[u8], order: &[usize; 8], out: &mut [Vec<u8>], n: usize) -> usize {
    use std::arch::x86_64::*;
    let blocks = n / 8;
    assert!(raw.len() >= blocks * 256 && out.iter().all(|m| m.capacity() >= blocks * 32));
    let dst: [*mut u8; 8] = std::array::from_fn(|k| out[order[k]].as_mut_ptr());
    for b in 0..blocks {
        let src = raw.as_ptr().add(b * 256) as *const __m256i;
        let rows: [__m256i; 8] = std::array::from_fn(|i| _mm256_loadu_si256(src.add(i)));
        let cols = h5lake_types::transpose::transpose_8x8_epi32(rows);
        for (k, col) in cols.into_iter().enumerate() {
            _mm256_storeu_si256(dst[k].add(b * 32) as *mut __m256i, col);
        }
    }
    for m in out.iter_mut() {
        // SAFETY: the first blocks * 32 bytes were written above.
        m.set_len(blocks * 32);
    }
    blocks * 8
}

/// The inverse of [`gather`].
pub(crate) fn scatter(
    member: &[u8],
    out: &mut [u8],
    stride: usize,
    offset: usize,
    width: usize,
    n: usize,
) {
    if offset == 0 && width == stride {
        out[..n * stride].copy_from_slice(&member[..n * stride]);
        return;
    }
    by_width!(width, W => {
        for (rec, m) in out.chunks_exact_mut(stride).zip(member.chunks_exact(W.max(1))).take(n) {
            rec[offset..offset + W].copy_from_slice(m);
        }
    });
}

/// The bytes of the `arr.len()` values of a column of `dt` as they are laid
/// out in row layout, when Arrow holds them so already (little-endian
/// numbers without nulls): then they are scattered into rows straight
/// from Arrow's buffer.
pub(crate) fn plain_values(dt: &Datatype, arr: &dyn Array) -> Option<Buffer> {
    if arr.null_count() > 0 || big_endian_number(dt).is_some() || members(dt).is_some() {
        return None;
    }
    let size = dt.fixed_size()?;
    // numbers only (fixed-size bytes and lists go the general way)
    let t = arrow_type(dt).ok()?;
    if !t.is_primitive() || arr.data_type() != &t {
        return None;
    }
    let data = arr.to_data();
    let buf = data.buffers().first()?;
    let (start, len) = (data.offset() * size, arr.len() * size);
    (start + len <= buf.len()).then(|| buf.slice_with_length(start, len))
}

/// [`to_array`] taking the member's bytes: numbers and fixed-size bytes
/// become the array's buffer without a copy.
pub(crate) fn to_array_owned(dt: &Datatype, mut data: Vec<u8>, n: usize) -> Result<ArrayRef> {
    let size = dt.fixed_size().unwrap_or(0);
    if n == 0 {
        // (An empty Vec's dangling pointer is not aligned for Arrow.)
        return Ok(arrow_array::new_empty_array(&arrow_type(dt)?));
    }
    if members(dt).is_some() || matches!(dt, Datatype::Array { .. }) || data.len() != n * size {
        return to_array(dt, &data, n);
    }
    let t = arrow_type(dt)?;
    if let DataType::FixedSizeBinary(w) = t {
        return Ok(Arc::new(FixedSizeBinaryArray::try_new(
            w,
            Buffer::from_vec(data),
            None,
        )?));
    }
    if let Some(s) = big_endian_number(dt) {
        swap_each(&mut data, s);
    }
    let d = ArrayData::builder(t)
        .len(n)
        .add_buffer(Buffer::from_vec(data))
        .build()?;
    Ok(make_array(d))
}

/// An Arrow array of the `n` elements of `dt` in `data` (row layout).
pub(crate) fn to_array(dt: &Datatype, data: &[u8], n: usize) -> Result<ArrayRef> {
    let size = dt.fixed_size().unwrap_or(0);
    if let Some(parts) = members(dt) {
        let DataType::Struct(fields) = arrow_type(dt)? else {
            unreachable!("compounds are structs")
        };
        let children = parts
            .iter()
            .map(|(offset, m)| {
                let w = m.fixed_size().unwrap_or(0);
                to_array(m, &gather(data, size, *offset, w, n), n)
            })
            .collect::<Result<Vec<_>>>()?;
        return Ok(Arc::new(StructArray::try_new(fields, children, None)?));
    }
    match dt {
        Datatype::Array { base, dims } => {
            let k = dims.iter().product::<u64>() as usize;
            let child = to_array(base, data, n * k)?;
            let DataType::FixedSizeList(field, k) = arrow_type(dt)? else {
                unreachable!("arrays are fixed-size lists")
            };
            Ok(Arc::new(FixedSizeListArray::try_new(
                field, k, child, None,
            )?))
        }
        _ => to_array_owned(dt, data[..n * size].to_vec(), n),
    }
}

/// Writes the elements of `arr` (of `dt`'s Arrow type) to `out` in row
/// layout; a null element is written as `fill` (one element of `dt`).
pub(crate) fn from_array(
    dt: &Datatype,
    arr: &dyn Array,
    out: &mut [u8],
    fill: &[u8],
) -> Result<()> {
    let n = arr.len();
    let size = dt.fixed_size().unwrap_or(0);
    let expected = arrow_type(dt)?;
    // (A top-level fixed-length string comes as bytes without its padding.)
    let unpadded = matches!(
        dt,
        Datatype::String {
            length: Some(_),
            ..
        }
    ) && arr.data_type() == &DataType::Binary;
    if arr.data_type() != &expected && !unpadded {
        return Err(ColumnarError::Corrupt(format!(
            "a column of Arrow type {}, expected {expected}",
            arr.data_type()
        )));
    }
    if let Some(parts) = members(dt) {
        let s = arr
            .as_any()
            .downcast_ref::<StructArray>()
            .ok_or_else(|| ColumnarError::Corrupt("a struct column that is not one".into()))?;
        for ((offset, m), col) in parts.iter().zip(s.columns()) {
            let w = m.fixed_size().unwrap_or(0);
            let mut member = vec![0u8; n * w];
            let f = fill.get(*offset..offset + w).unwrap_or(&[]);
            from_array(m, col.as_ref(), &mut member, f)?;
            scatter(&member, out, size, *offset, w, n);
        }
    } else {
        match dt {
            Datatype::Array { base, .. } => {
                let l = arr
                    .as_any()
                    .downcast_ref::<FixedSizeListArray>()
                    .ok_or_else(|| {
                        ColumnarError::Corrupt("a list column that is not one".into())
                    })?;
                let bw = base.fixed_size().unwrap_or(0);
                let k = l.value_length() as usize;
                let values = l.values().slice(l.offset() * k, n * k);
                let base_fill = fill.get(..bw).unwrap_or(&[]);
                from_array(base, values.as_ref(), out, base_fill)?;
            }
            _ => {
                if let Some(b) = arr.as_any().downcast_ref::<FixedSizeBinaryArray>() {
                    for i in 0..n {
                        out[i * size..(i + 1) * size].copy_from_slice(b.value(i));
                    }
                } else if let Some(b) = arr.as_any().downcast_ref::<BinaryArray>() {
                    // A fixed-length string stored without its padding.
                    for i in 0..n {
                        let v = b.value(i);
                        let k = v.len().min(size);
                        let slot = &mut out[i * size..(i + 1) * size];
                        slot[..k].copy_from_slice(&v[..k]);
                        slot[k..].fill(0);
                    }
                } else {
                    let d = arr.to_data();
                    let buf = d.buffers().first().ok_or_else(|| {
                        ColumnarError::Corrupt("a numeric column without values".into())
                    })?;
                    let start = d.offset() * size;
                    out[..n * size].copy_from_slice(&buf.as_slice()[start..start + n * size]);
                    if let Some(s) = big_endian_number(dt) {
                        swap_each(&mut out[..n * size], s);
                    }
                }
            }
        }
    }
    if let Some(nulls) = arr.nulls() {
        if fill.len() == size {
            for i in (0..n).filter(|&i| nulls.is_null(i)) {
                out[i * size..(i + 1) * size].copy_from_slice(fill);
            }
        } else {
            for i in (0..n).filter(|&i| nulls.is_null(i)) {
                out[i * size..(i + 1) * size].fill(0);
            }
        }
    }
    Ok(())
}

/// The Arrow type of a member of the top-level compound: as
/// [`arrow_type`], and variable-length strings and sequences of fixed-size
/// elements (which nested compounds and arrays cannot hold yet).
pub(crate) fn member_type(dt: &Datatype) -> Result<DataType> {
    Ok(match dt {
        // A fixed-length string member is stored without its trailing NULs
        // (as NumPy shows the value), so that other tools' filters compare
        // the text itself; reads pad it again.
        Datatype::String {
            length: Some(_), ..
        } => DataType::Binary,
        Datatype::String {
            length: None,
            charset,
            ..
        } => match charset {
            CharSet::Utf8 => DataType::Utf8,
            CharSet::Ascii => DataType::Binary,
        },
        Datatype::Vlen { base } if base.fixed_size().is_some() => {
            DataType::List(Arc::new(Field::new("item", arrow_type(base)?, true)))
        }
        _ => arrow_type(dt)?,
    })
}

/// The Arrow array of the member `dt` of a top-level compound, from its
/// `n` values packed in `data` (see [`member_type`]).
pub(crate) fn member_array(dt: &Datatype, data: Vec<u8>, n: usize) -> Result<ArrayRef> {
    if let Datatype::String {
        length: Some(w), ..
    } = dt
    {
        let w = (*w).max(1);
        let values: BinaryArray = data
            .chunks_exact(w)
            .take(n)
            .map(|v| Some(&v[..v.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1)]))
            .collect();
        return Ok(Arc::new(values));
    }
    to_array_owned(dt, data, n)
}

/// Whether `dt` is a variable-length member a columnar compound holds at its
/// top level.
pub(crate) fn is_vlen_member(dt: &Datatype) -> bool {
    matches!(dt, Datatype::String { length: None, .. })
        || matches!(dt, Datatype::Vlen { base } if base.fixed_size().is_some())
}

/// The Arrow array of a variable-length member, given each row's part in
/// HSDS's serialized form (a 4-byte count and the bytes).
pub(crate) fn vlen_column(dt: &Datatype, parts: &[&[u8]]) -> Result<ArrayRef> {
    let bodies: Vec<&[u8]> = parts.iter().map(|p| p.get(4..).unwrap_or(&[])).collect();
    match dt {
        Datatype::String {
            charset: CharSet::Utf8,
            ..
        } => {
            let texts = bodies
                .iter()
                .map(|b| {
                    std::str::from_utf8(b).map_err(|_| {
                        ColumnarError::Unsupported(
                            "a UTF-8 string member holding bytes that are not UTF-8".into(),
                        )
                    })
                })
                .collect::<Result<Vec<&str>>>()?;
            Ok(Arc::new(StringArray::from(texts)))
        }
        Datatype::String { .. } => Ok(Arc::new(BinaryArray::from(bodies))),
        Datatype::Vlen { base } => {
            let es = base.fixed_size().unwrap_or(0).max(1);
            let lens: Vec<usize> = bodies.iter().map(|b| b.len() / es).collect();
            let values = bodies.concat();
            let child = to_array(base, &values, values.len() / es)?;
            let DataType::List(field) = member_type(dt)? else {
                unreachable!("sequences are lists")
            };
            Ok(Arc::new(ListArray::try_new(
                field,
                OffsetBuffer::from_lengths(lens),
                child,
                None,
            )?))
        }
        _ => Err(unsupported(dt)),
    }
}

/// Row `i` of a variable-length member's column, serialized (a 4-byte
/// count and the bytes); a null is `fill` (the member's serialized fill).
pub(crate) fn vlen_part(
    dt: &Datatype,
    arr: &dyn Array,
    i: usize,
    fill: &[u8],
    out: &mut Vec<u8>,
) -> Result<()> {
    if arr.is_null(i) {
        out.extend_from_slice(if fill.len() >= 4 { fill } else { &[0, 0, 0, 0] });
        return Ok(());
    }
    let mut counted = |body: &[u8]| {
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(body);
    };
    if let Some(s) = arr.as_any().downcast_ref::<StringArray>() {
        counted(s.value(i).as_bytes());
    } else if let Some(b) = arr.as_any().downcast_ref::<BinaryArray>() {
        counted(b.value(i));
    } else if let (Datatype::Vlen { base }, Some(l)) =
        (dt, arr.as_any().downcast_ref::<ListArray>())
    {
        let items = l.value(i);
        let es = base.fixed_size().unwrap_or(0);
        let mut body = vec![0u8; items.len() * es];
        from_array(base, items.as_ref(), &mut body, &[])?;
        counted(&body);
    } else {
        return Err(ColumnarError::Corrupt(format!(
            "a column of Arrow type {} for member type {}",
            arr.data_type(),
            dt.to_json()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{gather, gather_members};

    /// Members gathered together (eight 4-byte ones tiling the row: in
    /// registers) are each what a gather of that member alone gives.
    #[test]
    fn members_gathered_together_equal_each_gathered_alone() {
        let n = 1003;
        for (stride, places) in [
            (
                32,
                vec![
                    (28, 4),
                    (0, 4),
                    (4, 4),
                    (24, 4),
                    (8, 4),
                    (12, 4),
                    (16, 4),
                    (20, 4),
                ],
            ),
            (32, vec![(0, 8), (8, 8), (16, 4), (20, 4), (24, 8)]),
            (13, vec![(0, 8), (8, 4), (12, 1)]),
        ] {
            let raw: Vec<u8> = (0..n * stride).map(|i| (i * 31 % 251) as u8).collect();
            let together = gather_members(&raw, stride, &places, n);
            for (&(offset, width), got) in places.iter().zip(&together) {
                assert_eq!(
                    got,
                    &gather(&raw, stride, offset, width, n),
                    "{offset}/{width}"
                );
            }
        }
    }
}
