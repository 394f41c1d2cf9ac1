//! Floating-point layouts other than IEEE 754 binary16/32/64: x87's 80-bit
//! extended precision padded to 16 bytes (numpy's `longdouble` on x86-64),
//! or any split of sign, exponent and mantissa HDF5 can describe. Elements
//! are stored as laid out; converting them is the program's (HDF5's) work.
//! Here they only become JSON numbers and back (attribute values, fill
//! values), through `f64`: exactly when the value fits one, else as their
//! bytes.

use serde_json::{json, Value};

use crate::datatype::ByteOrder;
use crate::{Result, TypeError};

/// How HDF5's `H5Tget_norm` says the mantissa's leading bit is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Norm {
    /// Not stored: always 1 for normal numbers (IEEE 754).
    Implied,
    /// Stored, and set for normal numbers.
    MsbSet,
    /// Stored, no rule (x87 extended precision).
    None,
}

/// What HDF5 fills unused bits with (`H5T_PAD_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pad {
    Zero,
    One,
    Background,
}

/// A float's bit layout, as HDF5 describes one: positions count from the
/// least significant bit of the significant region, which begins `offset`
/// bits into the element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FloatBits {
    pub precision: usize,
    pub offset: usize,
    pub sign: usize,
    pub exp_pos: usize,
    pub exp_size: usize,
    pub mant_pos: usize,
    pub mant_size: usize,
    pub bias: u64,
    pub norm: Norm,
    /// Below the significant region, above it, and inside it.
    pub pad: [Pad; 3],
}

const NORMS: [(Norm, &str); 3] = [
    (Norm::Implied, "H5T_NORM_IMPLIED"),
    (Norm::MsbSet, "H5T_NORM_MSBSET"),
    (Norm::None, "H5T_NORM_NONE"),
];
const PADS: [(Pad, &str); 3] = [
    (Pad::Zero, "H5T_PAD_ZERO"),
    (Pad::One, "H5T_PAD_ONE"),
    (Pad::Background, "H5T_PAD_BACKGROUND"),
];

impl FloatBits {
    /// x87 extended precision: numpy's `longdouble` on x86-64 Linux.
    pub fn x87() -> Self {
        FloatBits {
            precision: 80,
            offset: 0,
            sign: 79,
            exp_pos: 64,
            exp_size: 15,
            mant_pos: 0,
            mant_size: 64,
            bias: 16383,
            norm: Norm::None,
            pad: [Pad::Zero; 3],
        }
    }

    /// The IEEE 754 layout of `size` bytes (2, 4 or 8), if it is one of those.
    pub fn ieee(size: usize) -> Option<Self> {
        let (exp_size, mant_size) = match size {
            2 => (5, 10),
            4 => (8, 23),
            8 => (11, 52),
            _ => return None,
        };
        Some(FloatBits {
            precision: size * 8,
            offset: 0,
            sign: size * 8 - 1,
            exp_pos: mant_size,
            exp_size,
            mant_pos: 0,
            mant_size,
            bias: (1 << (exp_size - 1)) - 1,
            norm: Norm::Implied,
            pad: [Pad::Zero; 3],
        })
    }

    /// Checks that the fields fit an element of `size` bytes, one apart
    /// from another, in a way numbers can be read from.
    ///
    /// # Errors
    /// [`TypeError::InvalidType`] naming what does not fit.
    pub fn check(&self, size: usize) -> Result<()> {
        let bad = |why: &str| {
            Err(TypeError::InvalidType(format!(
                "float layout {self:?}: {why}"
            )))
        };
        if size == 0 || size > 16 {
            return bad("floats of 1 to 16 bytes");
        }
        // The positions are client-sent numbers: sums are checked.
        let ends_within =
            |pos: usize, n: usize, limit: usize| pos.checked_add(n).is_some_and(|end| end <= limit);
        if !ends_within(self.offset, self.precision, size * 8) {
            return bad("the significant bits run past the element");
        }
        let fields = [
            (self.sign, 1),
            (self.exp_pos, self.exp_size),
            (self.mant_pos, self.mant_size),
        ];
        if !fields
            .iter()
            .all(|&(p, n)| ends_within(p, n, self.precision))
        {
            return bad("a field runs past the significant bits");
        }
        for (i, a) in fields.iter().enumerate() {
            for b in &fields[i + 1..] {
                if a.0 < b.0 + b.1 && b.0 < a.0 + a.1 {
                    return bad("fields overlap");
                }
            }
        }
        if !(2..=32).contains(&self.exp_size) || !(1..=112).contains(&self.mant_size) {
            return bad("exponents of 2 to 32 bits, mantissas of 1 to 112");
        }
        if self.bias > u64::from(u32::MAX) {
            return bad("an exponent bias above 2^32");
        }
        Ok(())
    }

    /// The layout's JSON, beside HSDS's `class`, `size` and `order`.
    pub fn to_json(&self) -> Value {
        json!({
            "precision": self.precision,
            "offset": self.offset,
            "sign": self.sign,
            "exponent": {"pos": self.exp_pos, "size": self.exp_size, "bias": self.bias},
            "mantissa": {"pos": self.mant_pos, "size": self.mant_size, "norm": name(self.norm, &NORMS)},
            "pad": {"lsb": name(self.pad[0], &PADS), "msb": name(self.pad[1], &PADS),
                    "internal": name(self.pad[2], &PADS)},
        })
    }

    /// Inverse of [`FloatBits::to_json`].
    ///
    /// # Errors
    /// Missing or malformed parts.
    pub fn from_json(v: &Value) -> Result<Self> {
        let bad = || TypeError::InvalidType(format!("float layout {v}"));
        let num = |p: &str| v.pointer(p).and_then(Value::as_u64).ok_or_else(bad);
        fn named<T: Copy>(v: &Value, p: &str, table: &[(T, &str)]) -> Option<T> {
            let s = v.pointer(p)?.as_str()?;
            table.iter().find(|(_, n)| *n == s).map(|(x, _)| *x)
        }
        let pick_norm = |p: &str| named(v, p, &NORMS).ok_or_else(bad);
        let pick = |p: &str| named(v, p, &PADS).ok_or_else(bad);
        Ok(FloatBits {
            precision: num("/precision")? as usize,
            offset: num("/offset")? as usize,
            sign: num("/sign")? as usize,
            exp_pos: num("/exponent/pos")? as usize,
            exp_size: num("/exponent/size")? as usize,
            mant_pos: num("/mantissa/pos")? as usize,
            mant_size: num("/mantissa/size")? as usize,
            bias: num("/exponent/bias")?,
            norm: pick_norm("/mantissa/norm")?,
            pad: [pick("/pad/lsb")?, pick("/pad/msb")?, pick("/pad/internal")?],
        })
    }

    fn field(&self, word: u128, pos: usize, n: usize) -> u128 {
        (word >> (self.offset + pos)) & mask(n)
    }

    /// The element's bits as one little-endian number.
    fn word(b: &[u8], order: ByteOrder) -> u128 {
        let mut le = [0u8; 16];
        le[..b.len()].copy_from_slice(b);
        if order == ByteOrder::Big {
            le[..b.len()].reverse();
        }
        u128::from_le_bytes(le)
    }

    /// The value of one element (`b`: its bytes), rounded to an `f64`.
    pub fn decode(&self, b: &[u8], order: ByteOrder) -> f64 {
        let w = Self::word(b, order);
        let negative = self.field(w, self.sign, 1) == 1;
        let e = self.field(w, self.exp_pos, self.exp_size) as u64;
        let m = self.field(w, self.mant_pos, self.mant_size);
        let implied = self.norm == Norm::Implied;
        let frac_bits = if implied {
            self.mant_size
        } else {
            self.mant_size - 1
        };
        let x = if e == mask(self.exp_size) as u64 {
            if m & mask(frac_bits) == 0 {
                f64::INFINITY
            } else {
                f64::NAN
            }
        } else {
            let significand = m + if implied && e > 0 {
                1u128 << self.mant_size
            } else {
                0
            };
            let scale = e.max(1) as i64 - self.bias as i64 - frac_bits as i64;
            times_pow2(significand as f64, scale)
        };
        if negative {
            -x
        } else {
            x
        }
    }

    /// One element of value `x` (rounded to nearest, ties to even).
    pub fn encode(&self, x: f64, size: usize, order: ByteOrder) -> Vec<u8> {
        let implied = self.norm == Norm::Implied;
        let frac_bits = if implied {
            self.mant_size
        } else {
            self.mant_size - 1
        };
        let emax = mask(self.exp_size) as u64;
        let lead = if implied { 0 } else { 1u128 << frac_bits };
        let (e, m): (u64, u128) = if x.is_nan() {
            (
                emax,
                lead | if frac_bits > 0 {
                    1u128 << (frac_bits - 1)
                } else {
                    0
                },
            )
        } else if x.is_infinite() {
            (emax, lead)
        } else if x == 0.0 {
            (0, 0)
        } else {
            let bits = x.abs().to_bits();
            let (fe, ff) = ((bits >> 52) as i64, u128::from(bits & ((1 << 52) - 1)));
            // |x| = int * 2^exp2, int with its leading bit at position p - 1
            let (int, exp2) = if fe == 0 {
                (ff, -1074)
            } else {
                (ff | 1 << 52, fe - 1075)
            };
            let p = 128 - i64::from(int.leading_zeros());
            // biased exponent of a normal number with the same value
            let mut e = exp2 + p - 1 + self.bias as i64;
            // significand with frac_bits below its leading bit
            let mut shift = frac_bits as i64 + 1 - p;
            if e < 1 {
                shift -= 1 - e;
                e = 0;
            }
            let mut s = shift_round(int, shift);
            if s >> (frac_bits + 1) != 0 {
                s >>= 1; // rounding carried into a new leading bit
                e += 1;
            }
            if e == 0 && s >> frac_bits != 0 {
                e = 1; // a subnormal rounded up to the smallest normal
            }
            if e >= emax as i64 {
                (emax, lead)
            } else if implied && e > 0 {
                (e as u64, s - (1u128 << frac_bits))
            } else {
                (e as u64, s)
            }
        };
        let mut w: u128 = 0;
        let o = self.offset;
        w |= u128::from(x.is_sign_negative()) << (o + self.sign);
        w |= u128::from(e) << (o + self.exp_pos);
        w |= (m & mask(self.mant_size)) << (o + self.mant_pos);
        if self.pad[0] == Pad::One {
            w |= mask(o);
        }
        if self.pad[1] == Pad::One {
            w |= mask(size * 8) & !mask(o + self.precision);
        }
        if self.pad[2] == Pad::One {
            let used = (1u128 << (o + self.sign))
                | mask(self.exp_size) << (o + self.exp_pos)
                | mask(self.mant_size) << (o + self.mant_pos);
            w |= (mask(self.precision) << o) & !used;
        }
        let mut out = w.to_le_bytes()[..size].to_vec();
        if order == ByteOrder::Big {
            out.reverse();
        }
        out
    }

    /// The JSON of one element: a number when an `f64` holds its value
    /// exactly, else `{"base64": …}` of its bytes.
    pub fn to_json_value(&self, b: &[u8], order: ByteOrder) -> Value {
        let x = self.decode(b, order);
        if self.encode(x, b.len(), order) == b {
            crate::value::float_json(x)
        } else {
            crate::value::bytes_to_json_base64(b)
        }
    }
}

fn name<T: PartialEq + Copy>(x: T, table: &[(T, &'static str)]) -> &'static str {
    table
        .iter()
        .find(|(v, _)| *v == x)
        .map(|(_, n)| *n)
        .unwrap_or_default()
}

fn mask(n: usize) -> u128 {
    if n >= 128 {
        u128::MAX
    } else {
        (1u128 << n) - 1
    }
}

/// `x * 2^k` without overflowing on the way for large `|k|`. A layout's
/// bias may put `|k|` near 2^32; a few steps take any `x` the decoder
/// makes (below 2^129) to zero or infinity, where the loops stop.
fn times_pow2(mut x: f64, mut k: i64) -> f64 {
    while k > 1000 && x.is_finite() && x != 0.0 {
        x *= 2f64.powi(1000);
        k -= 1000;
    }
    while k < -1000 && x != 0.0 {
        x *= 2f64.powi(-1000);
        k += 1000;
    }
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    x * 2f64.powi(k as i32)
}

/// `v * 2^shift`, a right shift rounding to nearest, ties to even.
fn shift_round(v: u128, shift: i64) -> u128 {
    if shift >= 0 {
        return v << shift.min(127);
    }
    let s = (-shift) as u32;
    if s >= 128 {
        return 0;
    }
    let kept = v >> s;
    let rest = v & mask(s as usize);
    let half = 1u128 << (s - 1);
    if rest > half || (rest == half && kept & 1 == 1) {
        kept + 1
    } else {
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ieee_layouts_agree_with_the_hardware() {
        let f64s = FloatBits::ieee(8).unwrap();
        let f32s = FloatBits::ieee(4).unwrap();
        for x in [
            0.0,
            -0.0,
            1.0,
            -2.5,
            1e-310,
            5e-324,
            f64::MAX,
            1.0 / 3.0,
            f64::INFINITY,
        ] {
            assert_eq!(f64s.encode(x, 8, ByteOrder::Little), x.to_le_bytes(), "{x}");
            assert_eq!(
                f64s.decode(&x.to_be_bytes(), ByteOrder::Big).to_bits(),
                x.to_bits()
            );
            let y = x as f32;
            assert_eq!(f32s.encode(x, 4, ByteOrder::Little), y.to_le_bytes(), "{x}");
            assert_eq!(
                f32s.decode(&y.to_le_bytes(), ByteOrder::Little),
                f64::from(y)
            );
        }
        assert!(f64s
            .decode(&f64::NAN.to_le_bytes(), ByteOrder::Little)
            .is_nan());
        assert!(f32s
            .decode(
                &f32s.encode(f64::NAN, 4, ByteOrder::Little),
                ByteOrder::Little
            )
            .is_nan());
        // 2^-149 (f32's smallest subnormal) and rounding into f32's range
        assert_eq!(
            f32s.encode(1.401298464324817e-45, 4, ByteOrder::Little),
            [1, 0, 0, 0]
        );
        assert_eq!(
            f32s.encode(1e39, 4, ByteOrder::Little),
            f32::INFINITY.to_le_bytes()
        );
    }

    #[test]
    fn x87_extended_precision() {
        let x = FloatBits::x87();
        x.check(16).unwrap();
        // 1.0: exponent 16383, explicit integer bit
        let one = x.encode(1.0, 16, ByteOrder::Little);
        assert_eq!(&one[..10], &[0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x3f]);
        assert_eq!(&one[10..], &[0; 6]);
        for v in [1.0, -3.25, 1e300, 1e-300, 5e-324, 0.1] {
            assert_eq!(
                x.decode(&x.encode(v, 16, ByteOrder::Little), ByteOrder::Little),
                v
            );
        }
        let inf = x.encode(f64::NEG_INFINITY, 16, ByteOrder::Little);
        assert_eq!(x.decode(&inf, ByteOrder::Little), f64::NEG_INFINITY);
        // a value f64 cannot hold exactly (1 + 2^-60) is kept as bytes
        let mut b = one.clone();
        b[0] = 0x10;
        assert!(x
            .to_json_value(&b, ByteOrder::Little)
            .get("base64")
            .is_some());
        assert_eq!(x.to_json_value(&one, ByteOrder::Little), json!(1.0));
        assert_eq!(FloatBits::from_json(&x.to_json()).unwrap(), x);
    }

    #[test]
    fn custom_small_floats_round() {
        // 2 bytes: sign 15, exponent 9..14 (6 bits, bias 31), mantissa 0..9
        let c = FloatBits {
            precision: 16,
            offset: 0,
            sign: 15,
            exp_pos: 9,
            exp_size: 6,
            mant_pos: 0,
            mant_size: 9,
            bias: 31,
            norm: Norm::Implied,
            pad: [Pad::Zero; 3],
        };
        c.check(2).unwrap();
        for v in [1.0, 0.5, -1.5, 3.0e-9, 1.0e9] {
            let got = c.decode(&c.encode(v, 2, ByteOrder::Little), ByteOrder::Little);
            assert!((got - v).abs() <= v.abs() / 256.0, "{v} -> {got}");
        }
        assert!(FloatBits {
            sign: 9,
            ..c.clone()
        }
        .check(2)
        .is_err());
        assert!(FloatBits { precision: 20, ..c }.check(2).is_err());
    }
}
