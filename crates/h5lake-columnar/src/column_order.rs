//! The column orders a chunk's Parquet footer declares for its float
//! columns.
//!
//! parquet-rs 60 declares every float column's statistics to be in IEEE
//! 754 total order (the newer of Parquet's two `ColumnOrder`s). Readers
//! that predate that order, pyarrow 26 among them, then take the column's
//! min/max as unusable and prune nothing on float columns. The statistics
//! parquet-rs writes are valid in the older, type-defined order too: NaNs
//! are left out of min and max, and a zero bound is read by type-defined
//! readers as possibly either zero. So the footer is patched to declare
//! that order instead, which every reader understands — for columns
//! without NaNs only: pyarrow 26 also prunes on such bounds for filters a
//! NaN passes (`is_nan(x)`, `x != 1`), and would drop those rows.
//!
//! Both orders are empty structs in a Thrift union, so the patch changes
//! one byte per float column (the union's field id, 2 to 1) and nothing
//! else in the object moves.

use crate::error::{ColumnarError, Result};

/// Thrift compact protocol's type codes (the low nibble of a field header).
mod ty {
    pub const BOOL_TRUE: u8 = 1;
    pub const BOOL_FALSE: u8 = 2;
    pub const BYTE: u8 = 3;
    pub const I16: u8 = 4;
    pub const I32: u8 = 5;
    pub const I64: u8 = 6;
    pub const DOUBLE: u8 = 7;
    pub const BINARY: u8 = 8;
    pub const LIST: u8 = 9;
    pub const SET: u8 = 10;
    pub const MAP: u8 = 11;
    pub const STRUCT: u8 = 12;
    pub const UUID: u8 = 13;
}

/// `FileMetaData.column_orders`' field id.
const COLUMN_ORDERS: i16 = 7;
/// The union members of `ColumnOrder`: `TYPE_ORDER` and `IEEE_754_TOTAL_ORDER`.
const TYPE_ORDER: u8 = 1;
const TOTAL_ORDER: u8 = 2;
/// Nesting deeper than any Parquet footer holds is taken as corruption.
const MAX_DEPTH: usize = 64;

/// Declares the type-defined order for the float columns without NaNs of
/// the whole Parquet object `file` (as written by parquet-rs: `PAR1` … footer,
/// footer length, `PAR1`). Returns how many columns were changed.
///
/// # Errors
/// An object that does not end in a Thrift footer it can walk.
pub fn declare_type_defined_float_order(file: &mut [u8]) -> Result<usize> {
    let corrupt = |what: &str| ColumnarError::Corrupt(format!("parquet footer: {what}"));
    let n = file.len();
    if n < 12 || &file[n - 4..] != b"PAR1" {
        return Err(corrupt("no PAR1 tail"));
    }
    let len = u32::from_le_bytes(file[n - 8..n - 4].try_into().unwrap()) as usize;
    let start = (n - 8).checked_sub(len).ok_or_else(|| corrupt("length"))?;
    // Columns (leaves, in footer order) whose every chunk counted no NaN.
    let meta =
        parquet::file::metadata::ParquetMetaDataReader::decode_metadata(&file[start..n - 8])?;
    let leaves = meta.file_metadata().schema_descr().num_columns();
    let nan_free: Vec<bool> = (0..leaves)
        .map(|i| {
            meta.row_groups()
                .iter()
                .all(|rg| rg.column(i).statistics().and_then(|st| st.nan_count_opt()) == Some(0))
        })
        .collect();
    let mut c = Cursor {
        buf: &mut file[start..n - 8],
        pos: 0,
        nan_free,
    };
    c.patch_file_metadata()
        .ok_or_else(|| corrupt("cannot be walked"))
}

struct Cursor<'a> {
    buf: &'a mut [u8],
    pos: usize,
    /// Per column: whether it may be declared type-defined.
    nan_free: Vec<bool>,
}

impl Cursor<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn skip(&mut self, n: usize) -> Option<()> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len())?;
        self.pos = end;
        Some(())
    }

    /// A field header: `None` at the struct's end, else (id, type, the
    /// header's offset).
    fn field(&mut self, last: &mut i16) -> Option<Option<(i16, u8, usize)>> {
        let at = self.pos;
        let b = self.byte()?;
        if b == 0 {
            return Some(None);
        }
        let delta = b >> 4;
        let id = if delta == 0 {
            let z = self.varint()?;
            i16::try_from((z >> 1) as i64 ^ -((z & 1) as i64)).ok()?
        } else {
            last.checked_add(i16::from(delta))?
        };
        *last = id;
        Some(Some((id, b & 0x0f, at)))
    }

    fn skip_value(&mut self, t: u8, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match t {
            ty::BOOL_TRUE | ty::BOOL_FALSE => Some(()),
            ty::BYTE => self.skip(1),
            ty::I16 | ty::I32 | ty::I64 => self.varint().map(drop),
            ty::DOUBLE => self.skip(8),
            ty::UUID => self.skip(16),
            ty::BINARY => {
                let n = usize::try_from(self.varint()?).ok()?;
                self.skip(n)
            }
            ty::LIST | ty::SET => {
                let (n, et) = self.list_header()?;
                for _ in 0..n {
                    // (Booleans in a list take a byte each.)
                    if matches!(et, ty::BOOL_TRUE | ty::BOOL_FALSE) {
                        self.skip(1)?;
                    } else {
                        self.skip_value(et, depth + 1)?;
                    }
                }
                Some(())
            }
            ty::MAP => {
                let n = self.varint()?;
                if n > 0 {
                    let kv = self.byte()?;
                    for _ in 0..n {
                        self.skip_value(kv >> 4, depth + 1)?;
                        self.skip_value(kv & 0x0f, depth + 1)?;
                    }
                }
                Some(())
            }
            ty::STRUCT => {
                let mut last = 0;
                while let Some((_, ft, _)) = self.field(&mut last)? {
                    self.skip_value(ft, depth + 1)?;
                }
                Some(())
            }
            _ => None,
        }
    }

    fn list_header(&mut self) -> Option<(u64, u8)> {
        let b = self.byte()?;
        let n = if b >> 4 == 15 {
            self.varint()?
        } else {
            u64::from(b >> 4)
        };
        Some((n, b & 0x0f))
    }

    fn patch_file_metadata(&mut self) -> Option<usize> {
        let mut last = 0;
        let mut changed = 0;
        while let Some((id, t, _)) = self.field(&mut last)? {
            if id == COLUMN_ORDERS && t == ty::LIST {
                let (n, et) = self.list_header()?;
                if et != ty::STRUCT {
                    return None;
                }
                for i in 0..n {
                    let allowed = usize::try_from(i)
                        .ok()
                        .and_then(|i| self.nan_free.get(i).copied())
                        .unwrap_or(false);
                    changed += self.patch_column_order(allowed)?;
                }
            } else {
                self.skip_value(t, 0)?;
            }
        }
        Some(changed)
    }

    /// One `ColumnOrder` union; 1 if it was the total order and now is the
    /// type-defined one (only when `allowed`).
    fn patch_column_order(&mut self, allowed: bool) -> Option<usize> {
        let mut last = 0;
        let mut changed = 0;
        while let Some((id, t, at)) = self.field(&mut last)? {
            // Only the short form (id as a delta in the header byte) can
            // change in place; parquet-rs writes no other for these ids.
            if allowed
                && id == i16::from(TOTAL_ORDER)
                && t == ty::STRUCT
                && self.buf[at] >> 4 == TOTAL_ORDER
            {
                self.buf[at] = (TYPE_ORDER << 4) | ty::STRUCT;
                changed += 1;
            }
            self.skip_value(t, 1)?;
        }
        Some(changed)
    }
}
