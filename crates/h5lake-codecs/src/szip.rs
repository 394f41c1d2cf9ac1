//! HDF5's szip filter (id 4), byte-compatible with libhdf5 built on libaec.
//!
//! A stored chunk is the decoded length as a 4-byte little-endian integer,
//! then a CCSDS 121.0 adaptive entropy coded stream. libhdf5 reaches that
//! coder through libaec's szip compatibility layer, which reshapes the
//! samples first: 32- and 64-bit pixels are split into byte planes (coded
//! as 8-bit samples) and every scanline is padded to whole blocks,
//! repeating its last pixel when the nearest-neighbour preprocessor is on.
//! The coder itself is [`crate::aec`].
//!
//! The client data is what libhdf5's `set_local` leaves in the dataset's
//! filter message: options mask, pixels per block, bits per pixel, pixels
//! per scanline ([`local_parameters`] computes it for a new dataset).

use crate::aec;
use crate::{corrupt, CodecError, Result};

/// szip option-mask bits (`szlib.h`, mirrored by `H5_SZIP_*_OPTION_MASK`).
pub const ALLOW_K13: u32 = 1;
pub const CHIP: u32 = 2;
pub const EC: u32 = 4;
pub const LSB: u32 = 8;
pub const MSB: u32 = 16;
pub const NN: u32 = 32;
pub const RAW: u32 = 128;

const MAX_PIXELS_PER_BLOCK: u32 = 32;
const MAX_BLOCKS_PER_SCANLINE: u64 = 128;
const MAX_PIXELS_PER_SCANLINE: u64 = MAX_PIXELS_PER_BLOCK as u64 * MAX_BLOCKS_PER_SCANLINE;

/// The four parameters the filter runs with.
#[derive(Clone, Copy, Debug)]
struct Params {
    mask: u32,
    pixels_per_block: u32,
    bits_per_pixel: u32,
    pixels_per_scanline: u32,
}

impl Params {
    fn from_cd(cd: &[u32]) -> Result<Params> {
        let [mask, pixels_per_block, bits_per_pixel, pixels_per_scanline] = *cd else {
            return Err(CodecError::Invalid(format!(
                "szip needs 4 parameters (options mask, pixels per block, bits per pixel, \
                 pixels per scanline), got {cd:?}"
            )));
        };
        let p = Params {
            mask,
            pixels_per_block,
            bits_per_pixel,
            pixels_per_scanline,
        };
        check_pixels_per_block(pixels_per_block)?;
        if pixels_per_scanline == 0 || u64::from(pixels_per_scanline) > MAX_PIXELS_PER_SCANLINE {
            return Err(CodecError::Invalid(format!(
                "szip pixels per scanline {pixels_per_scanline} is outside \
                 1..={MAX_PIXELS_PER_SCANLINE}"
            )));
        }
        match bits_per_pixel {
            1..=24 | 32 | 64 => Ok(p),
            _ => Err(CodecError::Invalid(format!(
                "szip bits per pixel {bits_per_pixel} is not 1..=24, 32 or 64"
            ))),
        }
    }

    /// Byte planes instead of pixels: how libaec codes 32- and 64-bit data.
    fn planes(&self) -> bool {
        matches!(self.bits_per_pixel, 32 | 64)
    }

    fn aec(&self) -> aec::Params {
        let mut flags = aec::NOT_ENFORCE;
        if self.mask & MSB != 0 {
            flags |= aec::DATA_MSB;
        }
        if self.mask & NN != 0 {
            flags |= aec::DATA_PREPROCESS;
        }
        aec::Params {
            bits_per_sample: if self.planes() {
                8
            } else {
                self.bits_per_pixel
            },
            block_size: self.pixels_per_block,
            rsi: self.pixels_per_scanline.div_ceil(self.pixels_per_block),
            flags,
        }
    }

    /// Bytes one coded sample takes in the buffers.
    fn sample_bytes(&self) -> usize {
        match self.aec().bits_per_sample {
            0..=8 => 1,
            9..=16 => 2,
            _ => 4,
        }
    }

    fn line_bytes(&self) -> usize {
        self.pixels_per_scanline as usize * self.sample_bytes()
    }

    /// A scanline's bytes once padded to whole blocks.
    fn padded_line_bytes(&self) -> usize {
        let a = self.aec();
        (a.rsi * a.block_size) as usize * self.sample_bytes()
    }
}

fn check_pixels_per_block(pixels_per_block: u32) -> Result<()> {
    if pixels_per_block == 0 || pixels_per_block & 1 != 0 || pixels_per_block > MAX_PIXELS_PER_BLOCK
    {
        return Err(CodecError::Invalid(format!(
            "szip pixels per block must be even and at most {MAX_PIXELS_PER_BLOCK}, \
             got {pixels_per_block}"
        )));
    }
    Ok(())
}

/// The client data libhdf5's `set_local` makes of `H5Pset_szip(options_mask,
/// pixels_per_block)` for elements of `precision` bits (of `size_bits`,
/// starting at bit `offset`), `big_endian` or not, in chunks of `chunk`.
///
/// # Errors
/// [`CodecError::Invalid`] for settings libhdf5 refuses (pixels per block
/// odd, above 32, or above the chunk's element count).
pub fn local_parameters(
    options_mask: u32,
    pixels_per_block: u32,
    size_bits: u32,
    precision: u32,
    offset: u32,
    big_endian: bool,
    chunk: &[u64],
) -> Result<Vec<u32>> {
    check_pixels_per_block(pixels_per_block)?;
    let mut bits = if precision < size_bits && offset != 0 {
        size_bits
    } else {
        precision
    };
    if bits > 24 {
        bits = if bits <= 32 { 32 } else { 64 };
    }
    let ppb = u64::from(pixels_per_block);
    let fastest = chunk.last().copied().unwrap_or(1);
    let scanline = if fastest < ppb {
        let npoints: u64 = chunk.iter().product();
        if npoints < ppb {
            return Err(CodecError::Invalid(format!(
                "szip pixels per block ({pixels_per_block}) exceeds the {npoints} elements of a chunk"
            )));
        }
        (ppb * MAX_BLOCKS_PER_SCANLINE).min(npoints)
    } else if fastest <= MAX_PIXELS_PER_SCANLINE {
        (ppb * MAX_BLOCKS_PER_SCANLINE).min(fastest)
    } else {
        ppb * MAX_BLOCKS_PER_SCANLINE
    };
    // What H5Pset_szip stores, then the byte order set_local adds.
    let mut mask = (options_mask & !CHIP) | ALLOW_K13 | RAW;
    mask &= !(LSB | MSB);
    mask |= if big_endian { MSB } else { LSB };
    Ok(vec![mask, pixels_per_block, bits, scanline as u32])
}

/// Encodes a chunk as libhdf5's szip filter does.
///
/// # Errors
/// [`CodecError::Invalid`] for bad parameters or a chunk over 4 GiB.
pub fn encode(raw: &[u8], cd: &[u32]) -> Result<Vec<u8>> {
    let p = Params::from_cd(cd)?;
    let len = u32::try_from(raw.len())
        .map_err(|_| CodecError::Invalid("szip chunks are limited to 4 GiB".into()))?;
    let planes;
    let samples: &[u8] = if p.planes() {
        planes = split_planes(raw, p.bits_per_pixel as usize / 8);
        &planes
    } else {
        raw
    };
    let padded = pad_lines(samples, &p);
    let coded = aec::encode(&padded, &p.aec())?;
    let mut out = Vec::with_capacity(4 + coded.len());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&coded);
    Ok(out)
}

/// Decodes a chunk libhdf5's szip filter (or [`encode`]) wrote.
///
/// # Errors
/// [`CodecError::Corrupt`] for a damaged chunk, [`CodecError::Invalid`] for
/// bad parameters.
pub fn decode(stored: &[u8], cd: &[u32]) -> Result<Vec<u8>> {
    let p = Params::from_cd(cd)?;
    let Some((head, coded)) = stored.split_first_chunk::<4>() else {
        return Err(corrupt("szip", "shorter than its 4-byte length header"));
    };
    let len = u32::from_le_bytes(*head) as usize;
    let line = p.line_bytes();
    let padded_line = p.padded_line_bytes();
    let lines = (len / p.sample_bytes()).div_ceil(p.pixels_per_scanline as usize);
    let padded_len = lines
        .checked_mul(padded_line)
        .ok_or_else(|| corrupt("szip", "decoded size overflows"))?;
    // A corrupt header must not make us allocate without bound: the
    // densest code, a run of zero blocks, spends a byte on at most a
    // segment (64 blocks) of samples; allow twice that.
    let ceiling = (coded.len() + 1)
        .saturating_mul(128 * p.pixels_per_block as usize * p.sample_bytes())
        .saturating_add(padded_line);
    if padded_len > ceiling {
        return Err(corrupt(
            "szip",
            format!("header claims {len} bytes from {} coded bytes", coded.len()),
        ));
    }
    let mut samples = aec::decode(coded, padded_len, &p.aec())?;
    if padded_line != line {
        let mut w = 0;
        for r in (0..samples.len()).step_by(padded_line) {
            let n = line.min(samples.len() - r);
            samples.copy_within(r..r + n, w);
            w += n;
        }
        samples.truncate(w);
    }
    if samples.len() < len {
        return Err(corrupt(
            "szip",
            format!("decoded {} bytes, expected {len}", samples.len()),
        ));
    }
    samples.truncate(len);
    Ok(if p.planes() {
        join_planes(&samples, p.bits_per_pixel as usize / 8)
    } else {
        samples
    })
}

/// Pads every scanline to whole blocks (the last, partial line too),
/// repeating the line's last pixel when the preprocessor predicts from
/// neighbours, zeros otherwise.
fn pad_lines(samples: &[u8], p: &Params) -> Vec<u8> {
    let (line, padded_line, width) = (p.line_bytes(), p.padded_line_bytes(), p.sample_bytes());
    let lines = (samples.len() / width).div_ceil(p.pixels_per_scanline as usize);
    if padded_line == line && samples.len() == lines * line {
        return samples.to_vec();
    }
    let nn = p.mask & NN != 0;
    let mut out = Vec::with_capacity(lines * padded_line);
    for chunk in samples.chunks(line) {
        out.extend_from_slice(chunk);
        let pad = padded_line - chunk.len();
        if nn && chunk.len() >= width {
            let last = &chunk[chunk.len() - width..];
            for _ in 0..pad / width {
                out.extend_from_slice(last);
            }
        } else {
            out.resize(out.len() + pad, 0);
        }
    }
    out
}

/// Byte `j` of every `width`-byte pixel together, plane after plane.
/// Bytes after the last whole pixel (a checksum a filter before szip
/// appended) stay at the end; libaec leaves them undefined instead.
fn split_planes(raw: &[u8], width: usize) -> Vec<u8> {
    let n = raw.len() / width;
    let mut out = vec![0u8; raw.len()];
    for (i, px) in raw.chunks_exact(width).enumerate() {
        for (j, &b) in px.iter().enumerate() {
            out[j * n + i] = b;
        }
    }
    out[n * width..].copy_from_slice(&raw[n * width..]);
    out
}

fn join_planes(planes: &[u8], width: usize) -> Vec<u8> {
    let n = planes.len() / width;
    let mut out = vec![0u8; planes.len()];
    for (i, px) in out.chunks_exact_mut(width).enumerate() {
        for (j, b) in px.iter_mut().enumerate() {
            *b = planes[j * n + i];
        }
    }
    out[n * width..].copy_from_slice(&planes[n * width..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints<const N: usize>(n: usize, f: impl Fn(usize) -> [u8; N]) -> Vec<u8> {
        (0..n).flat_map(f).collect()
    }

    #[test]
    fn round_trips_every_pixel_width_and_padding() {
        let cases: Vec<(Vec<u8>, u32, bool, Vec<u64>)> = vec![
            (ints(1000, |i| [(i % 7) as u8]), 8, false, vec![1000]),
            (
                ints(999, |i| ((i * 3) as u16).to_le_bytes()),
                16,
                false,
                vec![27, 37],
            ),
            (
                ints(999, |i| ((i * 3) as u16).to_be_bytes()),
                16,
                true,
                vec![999],
            ),
            (
                ints(500, |i| ((i as f32).sin()).to_le_bytes()),
                32,
                false,
                vec![10, 50],
            ),
            (
                ints(333, |i| (i as f64 * 0.5).to_be_bytes()),
                64,
                true,
                vec![333],
            ),
            (
                ints(7000, |i| ((i / 3) as i32).to_le_bytes()),
                32,
                false,
                vec![7000],
            ),
        ];
        for (raw, bits, be, chunk) in cases {
            for (mask, ppb) in [(NN, 32), (EC, 8), (NN, 10)] {
                let cd = local_parameters(mask, ppb, bits, bits, 0, be, &chunk).unwrap();
                let enc = encode(&raw, &cd).unwrap();
                assert_eq!(decode(&enc, &cd).unwrap(), raw, "bits {bits} cd {cd:?}");
            }
        }
    }

    #[test]
    fn matches_libhdf5_parameters() {
        // h5py: create_dataset(shape, dtype, chunks, compression="szip",
        // compression_opts=(mask, ppb)); get_create_plist().get_filter(0)[2].
        let cd = local_parameters(NN, 8, 64, 64, 0, false, &[100]).unwrap();
        assert_eq!(cd, vec![169, 8, 64, 100]);
        let cd = local_parameters(EC, 32, 16, 16, 0, true, &[4, 5000]).unwrap();
        assert_eq!(cd, vec![149, 32, 16, 4096]);
        let cd = local_parameters(NN, 16, 32, 32, 0, false, &[40, 4]).unwrap();
        assert_eq!(cd, vec![169, 16, 32, 160]);
        assert!(local_parameters(NN, 16, 32, 32, 0, false, &[3, 4]).is_err());
        assert!(local_parameters(NN, 7, 32, 32, 0, false, &[100]).is_err());
    }

    #[test]
    fn same_bytes_as_libhdf5() {
        // h5py 3.16 (libaec 1.1.4): int16 arange(0, 300, 3) in one chunk of
        // 100, compression="szip", compression_opts=("nn", 8);
        // dset.id.read_direct_chunk((0,)).
        const LIBHDF5: [u8; 64] = [
            200, 0, 0, 0, 48, 0, 10, 170, 245, 84, 106, 170, 181, 85, 70, 170, 171, 85, 84, 106,
            170, 181, 85, 70, 170, 171, 85, 84, 106, 170, 181, 85, 70, 170, 171, 85, 84, 106, 170,
            181, 85, 70, 170, 171, 85, 84, 106, 170, 181, 85, 70, 170, 171, 85, 84, 106, 170, 181,
            85, 70, 171, 245, 64, 0,
        ];
        let raw = ints(100, |i| ((i * 3) as i16).to_le_bytes());
        let cd = [169, 8, 16, 100];
        assert_eq!(decode(&LIBHDF5, &cd).unwrap(), raw);
        assert_eq!(encode(&raw, &cd).unwrap(), LIBHDF5);
    }

    #[test]
    fn bytes_past_the_last_pixel_survive() {
        // fletcher32 before szip (h5pyd's order) leaves 4 bytes that are no
        // whole 8-byte pixel.
        let mut raw = ints(2500, |i| ((i * i) as f64).to_le_bytes());
        raw.extend_from_slice(&[1, 2, 3, 4]);
        let cd = [169, 8, 64, 50];
        assert_eq!(decode(&encode(&raw, &cd).unwrap(), &cd).unwrap(), raw);
    }

    #[test]
    fn corrupt_chunks_fail_cleanly() {
        let cd = [169, 8, 16, 100];
        let raw = ints(100, |i| ((i * 3) as i16).to_le_bytes());
        let enc = encode(&raw, &cd).unwrap();
        assert!(decode(&enc[..2], &cd).is_err());
        assert!(decode(&enc[..enc.len() / 2], &cd).is_err());
        let mut huge = enc.clone();
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&huge, &cd).is_err());
        assert!(decode(&enc, &[169, 8, 16]).is_err());
        assert!(decode(&enc, &[169, 8, 20, 100]).is_err());
    }
}
