//! Elements of one numeric type as another, the way HDF5 converts them when
//! a read asks for another type than the stored one (a virtual dataset's
//! source of another type than the virtual dataset, say): integers that do
//! not fit are clamped to the nearest value the target holds, floats become
//! integers by truncation (clamped; NaN as the processor casts it: see
//! `nan_as_integer`), and integers and wider floats become floats rounded
//! to nearest (beyond the range: infinity).

use crate::datatype::{ByteOrder, Datatype};
use crate::value::f16_to_f64;

/// A numeric type as the conversion sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Num {
    Int {
        size: usize,
        signed: bool,
        order: ByteOrder,
    },
    Float {
        size: usize,
        order: ByteOrder,
    },
}

impl Num {
    fn of(t: &Datatype) -> Option<Num> {
        match *t {
            Datatype::Integer {
                size,
                signed,
                order,
            } if matches!(size, 1 | 2 | 4 | 8) => Some(Num::Int {
                size,
                signed,
                order,
            }),
            Datatype::Float { size, order } if matches!(size, 2 | 4 | 8) => {
                Some(Num::Float { size, order })
            }
            _ => None,
        }
    }

    fn size(self) -> usize {
        match self {
            Num::Int { size, .. } | Num::Float { size, .. } => size,
        }
    }
}

/// A value on its way between two types.
#[derive(Clone, Copy)]
enum Val {
    Int(i128),
    Float(f64),
}

/// Converts elements of one numeric type (integers of 1–8 bytes, IEEE
/// floats of 2, 4 or 8 bytes, either byte order) to another.
#[derive(Clone, Copy, Debug)]
pub struct NumericConversion {
    from: Num,
    to: Num,
}

impl NumericConversion {
    /// The conversion from `from` to `to`; `None` unless both are numeric
    /// types it knows.
    pub fn new(from: &Datatype, to: &Datatype) -> Option<Self> {
        Some(NumericConversion {
            from: Num::of(from)?,
            to: Num::of(to)?,
        })
    }

    /// Bytes of one element of the source type.
    pub fn from_size(&self) -> usize {
        self.from.size()
    }

    /// Converts the elements of `input` into `out` (as many elements of the
    /// target type).
    ///
    /// # Panics
    /// When `input` and `out` do not hold the same number of elements.
    pub fn convert(&self, input: &[u8], out: &mut [u8]) {
        let (a, b) = (self.from.size(), self.to.size());
        assert_eq!(input.len() / a, out.len() / b, "element counts differ");
        // (libhdf5 converts between types of the machine's own byte order
        // with a C cast, whose NaN is the processor's; others with its own
        // code, which makes NaN 0.)
        let native = |t: Num| match t {
            Num::Int { order, .. } | Num::Float { order, .. } => {
                order == ByteOrder::Little && cfg!(target_endian = "little")
                    || order == ByteOrder::Big && cfg!(target_endian = "big")
            }
        };
        let cast = native(self.from) && native(self.to) || matches!(self.to, Num::Float { .. });
        for (x, y) in input.chunks_exact(a).zip(out.chunks_exact_mut(b)) {
            let v = match get(self.from, x) {
                Val::Float(f) if f.is_nan() && !cast => Val::Int(0),
                v => v,
            };
            put(self.to, v, y);
        }
    }
}

fn bytes_le<const N: usize>(b: &[u8], order: ByteOrder) -> [u8; N] {
    let mut a = [0u8; N];
    a[..b.len()].copy_from_slice(b);
    if order == ByteOrder::Big {
        a[..b.len()].reverse();
    }
    a
}

fn get(t: Num, b: &[u8]) -> Val {
    match t {
        Num::Int {
            size,
            signed,
            order,
        } => {
            let raw = u64::from_le_bytes(bytes_le::<8>(b, order));
            let bits = 8 * size as u32;
            let v = if signed && bits < 64 && (raw >> (bits - 1)) & 1 == 1 {
                i128::from(raw) - (1i128 << bits)
            } else if signed && bits == 64 {
                i128::from(raw as i64)
            } else {
                i128::from(raw)
            };
            Val::Int(v)
        }
        Num::Float { size, order } => Val::Float(match size {
            2 => f16_to_f64(u16::from_le_bytes(bytes_le::<2>(b, order))),
            4 => f64::from(f32::from_le_bytes(bytes_le::<4>(b, order))),
            _ => f64::from_le_bytes(bytes_le::<8>(b, order)),
        }),
    }
}

/// What libhdf5 makes of a NaN converted to an integer of `size` bytes
/// between types of the machine's byte order: the C cast it ends in, i.e.
/// what the processor's conversion gives. On
/// x86-64 that is the "integer indefinite" value of the 32- or 64-bit
/// conversion used (cut to the target's width: 0 for 1 and 2 bytes and
/// for 32-bit unsigned, which go through a wider signed conversion);
/// elsewhere (AArch64) 0.
fn nan_as_integer(size: usize, signed: bool) -> i128 {
    if !cfg!(target_arch = "x86_64") {
        return 0;
    }
    match (size, signed) {
        (4, true) => i128::from(i32::MIN),
        (8, true) => i128::from(i64::MIN),
        (8, false) => 1i128 << 63,
        _ => 0,
    }
}

fn put(t: Num, v: Val, out: &mut [u8]) {
    let le: Vec<u8> = match t {
        Num::Int { size, signed, .. } => {
            let bits = 8 * size as u32;
            let (lo, hi) = if signed {
                (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
            } else {
                (0, (1i128 << bits) - 1)
            };
            // (`as` from a float truncates and saturates.)
            let x = match v {
                Val::Int(i) => i,
                Val::Float(f) if f.is_nan() => nan_as_integer(size, signed),
                Val::Float(f) => f as i128,
            };
            x.clamp(lo, hi).to_le_bytes()[..size].to_vec()
        }
        Num::Float { size: 2, .. } => {
            let f = match v {
                Val::Int(i) => i as f32,
                Val::Float(f) => f as f32,
            };
            crate::value::f16_bits(f).to_le_bytes().to_vec()
        }
        Num::Float { size: 4, .. } => match v {
            Val::Int(i) => (i as f32).to_le_bytes().to_vec(),
            Val::Float(f) => (f as f32).to_le_bytes().to_vec(),
        },
        Num::Float { .. } => match v {
            Val::Int(i) => (i as f64).to_le_bytes().to_vec(),
            Val::Float(f) => f.to_le_bytes().to_vec(),
        },
    };
    out.copy_from_slice(&le);
    let order = match t {
        Num::Int { order, .. } | Num::Float { order, .. } => order,
    };
    if order == ByteOrder::Big {
        out.reverse();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn nan_becomes_what_libhdf5_gives_on_this_processor() {
        // (h5py's `astype` of a float64 NaN, through libhdf5, on x86-64.)
        let want: [(usize, bool, i128); 8] = [
            (1, true, 0),
            (1, false, 0),
            (2, true, 0),
            (2, false, 0),
            (4, true, i128::from(i32::MIN)),
            (4, false, 0),
            (8, true, i128::from(i64::MIN)),
            (8, false, 1 << 63),
        ];
        for (size, signed, v) in want {
            assert_eq!(nan_as_integer(size, signed), v, "{size} {signed}");
        }
    }

    fn int(size: usize, signed: bool) -> Datatype {
        Datatype::Integer {
            size,
            signed,
            order: ByteOrder::Little,
        }
    }

    fn float(size: usize, order: ByteOrder) -> Datatype {
        Datatype::Float { size, order }
    }

    #[test]
    fn integers_clamp_floats_truncate_and_byte_orders_swap() {
        let c = NumericConversion::new(&int(8, true), &int(1, false)).unwrap();
        let input: Vec<u8> = [-5i64, 7, 300]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mut out = [0u8; 3];
        c.convert(&input, &mut out);
        assert_eq!(out, [0, 7, 255]);

        let c = NumericConversion::new(&float(8, ByteOrder::Little), &int(2, true)).unwrap();
        let input: Vec<u8> = [-2.9f64, 1e9, f64::NAN, 3.99]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mut out = [0u8; 8];
        c.convert(&input, &mut out);
        let got: Vec<i16> = out
            .chunks(2)
            .map(|b| i16::from_le_bytes([b[0], b[1]]))
            .collect();
        assert_eq!(got, [-2, i16::MAX, 0, 3]);

        let c = NumericConversion::new(&int(4, false), &float(4, ByteOrder::Big)).unwrap();
        let mut out = [0u8; 4];
        c.convert(&u32::MAX.to_le_bytes(), &mut out);
        assert_eq!(f32::from_be_bytes(out), 4294967296.0);

        let c = NumericConversion::new(&float(2, ByteOrder::Little), &float(8, ByteOrder::Little))
            .unwrap();
        let mut out = [0u8; 8];
        c.convert(&0x3c00u16.to_le_bytes(), &mut out); // 1.0 in binary16
        assert_eq!(f64::from_le_bytes(out), 1.0);

        assert!(NumericConversion::new(&int(16, true), &int(4, true)).is_none());
    }
}
