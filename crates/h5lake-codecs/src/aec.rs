//! CCSDS 121.0-B adaptive entropy coding (Rice coding with the low-entropy
//! options), stream-compatible with libaec 1.1.4's `aec_buffer_encode` and
//! `aec_buffer_decode`.
//!
//! A stream is a sequence of coded data sets (CDS), one per block of
//! `block_size` samples (a zero-block CDS may stand for several blocks).
//! Blocks are grouped into reference sample intervals (RSI) of `rsi` blocks;
//! with the preprocessor on, the first sample of each RSI is sent verbatim as
//! the reference and every other sample as its mapped difference to its
//! predecessor.
//!
//! The encoder reproduces libaec's output bit for bit: the same option
//! choices (including libaec's splitting-position search, which starts from
//! the previous block's position, and its tie-breaks), the same zero-block
//! run handling, and the same treatment of a final partial RSI. The decoder
//! mirrors libaec's arithmetic, so it also reproduces what libaec decodes
//! from streams the standard would call malformed.

use crate::{alloc_zeroed, corrupt, CodecError, Result};

/// Samples are two's complement numbers of `bits_per_sample` bits.
pub const DATA_SIGNED: u32 = 1;
/// Samples of 17..=24 bits take 3 bytes instead of 4.
pub const DATA_3BYTE: u32 = 2;
/// Multi-byte samples are big-endian.
pub const DATA_MSB: u32 = 4;
/// Code mapped differences to the previous sample (unit-delay predictor).
pub const DATA_PREPROCESS: u32 = 8;
/// Restricted option set for samples of at most 4 bits. Same value as
/// libaec's `AEC_RESTRICTED`.
pub const RESTRICTED: u32 = 16;
/// Decoder only: each RSI after the first starts on a byte boundary. As in
/// libaec 1.1.4 (built without `ENABLE_RSI_PADDING`), the encoder ignores it.
pub const PAD_RSI: u32 = 32;
/// Allow any even block size, not just 8, 16, 32 and 64.
pub const NOT_ENFORCE: u32 = 64;

/// Coder parameters, as in libaec's `struct aec_stream`.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub bits_per_sample: u32,
    pub block_size: u32,
    /// Blocks per reference sample interval (1..=4096).
    pub rsi: u32,
    pub flags: u32,
}

const FILTER: &str = "szip";

/// Largest RSI libaec accepts, in blocks.
const MAX_RSI: u32 = 4096;

/// Zero-block runs never cross a segment of this many blocks: libaec's
/// "remainder of segment" code refers to its end.
const SEGMENT: usize = 64;

/// The run-length code that means "to the end of the segment or RSI".
const ROS_CODE: u32 = 4;

/// Largest second-extension symbol libaec's decoder accepts (pair sums up
/// to 12); larger ones are an error even though its encoder may emit them.
const SE_MAX_SYMBOL: u32 = 90;

/// Validated parameters.
#[derive(Clone, Copy, Debug)]
struct Config {
    bits: u32,
    bytes: usize,
    id_len: u32,
    block: usize,
    rsi: usize,
    msb: bool,
    signed: bool,
    pp: bool,
    pad_rsi: bool,
}

impl Config {
    fn new(p: &Params) -> Result<Config> {
        let bits = p.bits_per_sample;
        if !(1..=32).contains(&bits) {
            return Err(invalid(format!("bits per sample {bits} is not 1..=32")));
        }
        let bs = p.block_size;
        if p.flags & NOT_ENFORCE != 0 {
            // libaec takes 0 too, then misbehaves.
            if bs == 0 || bs & 1 != 0 {
                return Err(invalid(format!(
                    "block size {bs} is not a positive even number"
                )));
            }
        } else if !matches!(bs, 8 | 16 | 32 | 64) {
            return Err(invalid(format!("block size {bs} is not 8, 16, 32 or 64")));
        }
        // libaec takes an RSI of 0 and then crashes.
        if !(1..=MAX_RSI).contains(&p.rsi) {
            return Err(invalid(format!("rsi {} is not 1..={MAX_RSI}", p.rsi)));
        }
        let (bytes, id_len) = match bits {
            17..=24 if p.flags & DATA_3BYTE != 0 => (3, 5),
            17.. => (4, 5),
            9..=16 => (2, 4),
            _ if p.flags & RESTRICTED == 0 => (1, 3),
            1..=2 => (1, 1),
            3..=4 => (1, 2),
            _ => {
                return Err(invalid(format!(
                    "the restricted option set needs at most 4 bits per sample, got {bits}"
                )))
            }
        };
        Ok(Config {
            bits,
            bytes,
            id_len,
            block: bs as usize,
            rsi: p.rsi as usize,
            msb: p.flags & DATA_MSB != 0,
            signed: p.flags & DATA_SIGNED != 0,
            pp: p.flags & DATA_PREPROCESS != 0,
            pad_rsi: p.flags & PAD_RSI != 0,
        })
    }

    fn sample_mask(&self) -> u32 {
        u32::MAX >> (32 - self.bits)
    }

    /// Largest sample value (as libaec keeps it: the signed maximum for
    /// signed data).
    fn xmax(&self) -> u32 {
        if self.signed {
            self.sample_mask() >> 1
        } else {
            self.sample_mask()
        }
    }

    /// Identifier of the uncompressed option; 0 is the low-entropy one and
    /// everything in between is splitting with k = id - 1.
    fn uncomp_id(&self) -> u32 {
        (1 << self.id_len) - 1
    }
}

fn invalid(msg: String) -> CodecError {
    CodecError::Invalid(format!("aec: {msg}"))
}

/// Reads `dst.len()` samples from `src` (which holds at least that many).
fn load(src: &[u8], dst: &mut [u32], bytes: usize, msb: bool) {
    match (bytes, msb) {
        (1, _) => dst
            .iter_mut()
            .zip(src)
            .for_each(|(d, &s)| *d = u32::from(s)),
        (2, false) => dst
            .iter_mut()
            .zip(src.chunks_exact(2))
            .for_each(|(d, c)| *d = u32::from(u16::from_le_bytes([c[0], c[1]]))),
        (2, true) => dst
            .iter_mut()
            .zip(src.chunks_exact(2))
            .for_each(|(d, c)| *d = u32::from(u16::from_be_bytes([c[0], c[1]]))),
        (3, false) => dst
            .iter_mut()
            .zip(src.chunks_exact(3))
            .for_each(|(d, c)| *d = u32::from_le_bytes([c[0], c[1], c[2], 0])),
        (3, true) => dst
            .iter_mut()
            .zip(src.chunks_exact(3))
            .for_each(|(d, c)| *d = u32::from_be_bytes([0, c[0], c[1], c[2]])),
        (_, false) => dst
            .iter_mut()
            .zip(src.chunks_exact(4))
            .for_each(|(d, c)| *d = u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        (_, true) => dst
            .iter_mut()
            .zip(src.chunks_exact(4))
            .for_each(|(d, c)| *d = u32::from_be_bytes([c[0], c[1], c[2], c[3]])),
    }
}

/// Writes `f(v)` for each value of `vals` into `dst` (exactly
/// `vals.len() * bytes` long), low bytes only, as libaec does.
fn store(dst: &mut [u8], vals: &[u32], bytes: usize, msb: bool, mut f: impl FnMut(u32) -> u32) {
    match (bytes, msb) {
        (1, _) => dst.iter_mut().zip(vals).for_each(|(o, &v)| *o = f(v) as u8),
        (2, false) => dst
            .chunks_exact_mut(2)
            .zip(vals)
            .for_each(|(o, &v)| o.copy_from_slice(&(f(v) as u16).to_le_bytes())),
        (2, true) => dst
            .chunks_exact_mut(2)
            .zip(vals)
            .for_each(|(o, &v)| o.copy_from_slice(&(f(v) as u16).to_be_bytes())),
        (3, false) => dst
            .chunks_exact_mut(3)
            .zip(vals)
            .for_each(|(o, &v)| o.copy_from_slice(&f(v).to_le_bytes()[..3])),
        (3, true) => dst
            .chunks_exact_mut(3)
            .zip(vals)
            .for_each(|(o, &v)| o.copy_from_slice(&f(v).to_be_bytes()[1..])),
        (_, false) => dst
            .chunks_exact_mut(4)
            .zip(vals)
            .for_each(|(o, &v)| o.copy_from_slice(&f(v).to_le_bytes())),
        (_, true) => dst
            .chunks_exact_mut(4)
            .zip(vals)
            .for_each(|(o, &v)| o.copy_from_slice(&f(v).to_be_bytes())),
    }
}

// ---------------------------------------------------------------- encoder

/// MSB-first bit sink. Pending bits sit in the low `n` bits of `acc`
/// (`n < 32` between calls); whatever lies above them is stale.
struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl BitWriter {
    /// Appends the low `len` (0..=32) bits of `v`.
    #[inline]
    fn put(&mut self, v: u32, len: u32) {
        if len == 0 {
            return;
        }
        self.acc = (self.acc << len) | (u64::from(v) & (u64::MAX >> (64 - len)));
        self.n += len;
        if self.n >= 32 {
            self.n -= 32;
            self.out
                .extend_from_slice(&((self.acc >> self.n) as u32).to_be_bytes());
        }
    }

    /// Appends a reference sample of `len` bits. libaec writes it without
    /// masking: bits of `v` above `len` are added (without carry out) to
    /// the bits already in the byte being filled, or to the last byte when
    /// none is partly filled. Only samples with stray high bits notice.
    fn put_reference(&mut self, v: u32, len: u32) {
        let extra = u64::from(v) >> len;
        let written = self.out.len() as u64 * 8 + u64::from(self.n);
        if extra != 0 && written > 0 {
            let used = match self.n % 8 {
                0 => 8,
                u => u,
            };
            let mask = (1u64 << used) - 1;
            if self.n >= used {
                let low = self.acc.wrapping_add(extra) & mask;
                self.acc = (self.acc & !mask) | low;
            } else if let Some(last) = self.out.last_mut() {
                *last = last.wrapping_add(extra as u8);
            }
        }
        self.put(v, len);
    }

    /// A fundamental sequence: `zeros` 0 bits, then a 1.
    #[inline]
    fn put_fs(&mut self, mut zeros: u32) {
        while zeros >= 32 {
            self.put(0, 32);
            zeros -= 32;
        }
        self.put(1, zeros + 1);
    }

    /// Pads the last byte with zeros. libaec always hands out the byte it
    /// is filling, so even an empty stream is one (zero) byte long.
    fn finish(mut self) -> Vec<u8> {
        let pad = (8 - self.n % 8) % 8;
        self.put(0, pad);
        while self.n > 0 {
            self.n -= 8;
            self.out.push((self.acc >> self.n) as u8);
        }
        if self.out.is_empty() {
            self.out.push(0);
        }
        self.out
    }
}

struct Encoder {
    cfg: Config,
    w: BitWriter,
    /// Splitting position of the last assessed block: libaec's search for
    /// the best k starts there, which decides ties and local minima.
    k: u32,
    kmax: u32,
    /// Zero blocks seen but not yet coded.
    zero_run: u32,
    /// Reference sample of the run's first block, if it had one.
    zero_ref: Option<u32>,
}

/// Encodes `samples` (whole samples of `bits_per_sample` bits in 1, 2, 3 or
/// 4 bytes, see [`Params`]) as libaec does.
///
/// A trailing partial sample is ignored. A final partial RSI is coded as
/// libaec does it: only the blocks holding input, the last one padded by
/// repeating the last sample. Samples with bits set above
/// `bits_per_sample` are coded as libaec codes them, which does not always
/// decode back (libaec does not reject them either).
///
/// # Errors
/// [`CodecError::Invalid`] for parameters libaec rejects (or crashes on).
pub fn encode(samples: &[u8], p: &Params) -> Result<Vec<u8>> {
    let cfg = Config::new(p)?;
    let mut block = Vec::new();
    block
        .try_reserve_exact(cfg.block)
        .map_err(|_| invalid(format!("block size {} is too large", cfg.block)))?;
    block.resize(cfg.block, 0u32);
    let mut enc = Encoder {
        cfg,
        w: BitWriter {
            out: Vec::with_capacity(samples.len() / 2 + 16),
            acc: 0,
            n: 0,
        },
        k: 0,
        kmax: (1u32 << cfg.id_len).saturating_sub(3),
        zero_run: 0,
        zero_ref: None,
    };
    let n = samples.len() / cfg.bytes;
    let per_rsi = cfg.rsi * cfg.block;
    let mut start = 0;
    while start < n {
        let len = per_rsi.min(n - start);
        let rsi = &samples[start * cfg.bytes..(start + len) * cfg.bytes];
        enc.rsi(rsi, len, &mut block);
        start += len;
    }
    Ok(enc.w.finish())
}

impl Encoder {
    /// Codes one RSI of `len` samples (the last RSI may be short).
    fn rsi(&mut self, src: &[u8], len: usize, block: &mut [u32]) {
        let cfg = self.cfg;
        let bs = cfg.block;
        let blocks = len.div_ceil(bs);
        let predictor = Predictor::new(&cfg);
        let mut prev = 0;
        let mut reference = None;
        for j in 0..blocks {
            let first = j * bs;
            let have = bs.min(len - first);
            load(
                &src[first * cfg.bytes..(first + have) * cfg.bytes],
                &mut block[..have],
                cfg.bytes,
                cfg.msb,
            );
            // libaec fills the RSI up with the last sample it got.
            let last = block[have - 1];
            block[have..].fill(last);
            if cfg.pp {
                let mut from = 0;
                if j == 0 {
                    reference = Some(block[0]);
                    prev = predictor.value(block[0]);
                    block[0] = 0;
                    from = 1;
                } else {
                    reference = None;
                }
                for v in &mut block[from..] {
                    let x = predictor.value(*v);
                    *v = predictor.residual(prev, x);
                    prev = x;
                }
            }
            let rsi_end = j + 1 == blocks;
            let segment_end = (j + 1) % SEGMENT == 0;
            self.block(block, reference, rsi_end || segment_end);
        }
    }

    fn block(&mut self, block: &[u32], reference: Option<u32>, run_ends: bool) {
        if block.iter().all(|&v| v == 0) {
            if self.zero_run == 0 {
                self.zero_ref = reference;
            }
            self.zero_run += 1;
            if run_ends {
                self.flush_zero_run(true);
            }
            return;
        }
        if self.zero_run > 0 {
            self.flush_zero_run(false);
        }
        self.nonzero_block(block, reference);
    }

    fn flush_zero_run(&mut self, at_end: bool) {
        let cfg = self.cfg;
        self.w.put(0, cfg.id_len + 1);
        if let Some(r) = self.zero_ref {
            self.w.put_reference(r, cfg.bits);
        }
        let n = self.zero_run;
        // Runs of 1..=4 are coded as n - 1, longer ones as n (skipping the
        // remainder-of-segment code) unless they reach the end of the
        // segment or RSI, which libaec always codes as ROS.
        let code = match n {
            5.. if at_end => ROS_CODE,
            5.. => n,
            _ => n - 1,
        };
        self.w.put_fs(code);
        self.zero_run = 0;
    }

    fn nonzero_block(&mut self, block: &[u32], reference: Option<u32>) {
        let cfg = self.cfg;
        let skip = usize::from(reference.is_some());
        // libaec compares against the bits of the samples after the
        // reference: the reference itself and the identifier are left out
        // of every candidate's length.
        let uncomp_len = (cfg.block - skip) as u64 * u64::from(cfg.bits);
        let split_len = if cfg.id_len > 1 {
            self.best_split(block, skip)
        } else {
            u64::MAX
        };
        let se_len = second_extension_len(block, uncomp_len);
        let use_se = if split_len < uncomp_len {
            split_len >= se_len
        } else {
            uncomp_len > se_len
        };
        if use_se {
            self.w.put(1, cfg.id_len + 1);
            if let Some(r) = reference {
                self.w.put_reference(r, cfg.bits);
            }
            // The reference block pairs its slot 0 (a zero) like any sample.
            for pair in block.chunks_exact(2) {
                let d = pair[0].wrapping_add(pair[1]);
                let sym = (d.wrapping_mul(d.wrapping_add(1)) / 2).wrapping_add(pair[1]);
                self.w.put_fs(sym);
            }
        } else if split_len < uncomp_len {
            let k = self.k;
            self.w.put(k + 1, cfg.id_len);
            if let Some(r) = reference {
                self.w.put_reference(r, cfg.bits);
            }
            for &v in &block[skip..] {
                self.w.put_fs(v >> k);
            }
            if k > 0 {
                for &v in &block[skip..] {
                    self.w.put(v, k);
                }
            }
        } else {
            self.w.put(cfg.uncomp_id(), cfg.id_len);
            // Here libaec masks the reference like any other sample.
            if let Some(r) = reference {
                self.w.put(r, cfg.bits);
            }
            for &v in &block[skip..] {
                self.w.put(v, cfg.bits);
            }
        }
    }

    /// Coded length (without identifier and reference) of the block with
    /// the best splitting position, which becomes `self.k`.
    ///
    /// libaec does not try every k: it walks from the previous block's k
    /// upwards while the length shrinks, then (if the first step up did not
    /// help) downwards, and stops early where the fundamental sequences
    /// show that a further step cannot win. The walk is reproduced exactly
    /// because it picks the k among equal lengths.
    fn best_split(&mut self, block: &[u32], skip: usize) -> u64 {
        let n = (block.len() - skip) as u64;
        let start = self.k;
        let length = |k: u32| {
            let fs: u64 = block.iter().map(|&v| u64::from(v >> k)).sum();
            (fs, fs + n * u64::from(k + 1))
        };
        let (fs, mut best) = length(start);
        let mut best_k = start;
        // Going up is worth it while the fundamental sequences are at
        // least one bit per sample (each step up costs n binary bits).
        let mut k = start;
        let mut improved = false;
        if fs >= n && start < self.kmax {
            loop {
                k += 1;
                let (fs, len) = length(k);
                if len >= best {
                    break;
                }
                improved = true;
                best = len;
                best_k = k;
                if fs < n || k >= self.kmax {
                    break;
                }
            }
        }
        if !improved && start > 0 {
            // Going down only pays while the sequences stay shorter than
            // one bit per sample.
            let mut k = start;
            loop {
                k -= 1;
                let (fs, len) = length(k);
                if len >= best {
                    break;
                }
                best = len;
                best_k = k;
                if fs >= n || k == 0 {
                    break;
                }
            }
        }
        self.k = best_k;
        best
    }
}

/// libaec's preprocessor: the mapping of a sample after its predecessor to
/// a non-negative residual.
///
/// Samples are not masked to `bits_per_sample` first, and the arithmetic
/// wraps as libaec's does, so that samples with stray high bits (which
/// libaec does not reject) come out as libaec codes them. For samples in
/// range this is the standard's mapping.
struct Predictor {
    signed: bool,
    sign: u32,
    xmin: u32,
    xmax: u32,
}

impl Predictor {
    fn new(cfg: &Config) -> Predictor {
        let xmax = cfg.xmax();
        Predictor {
            signed: cfg.signed,
            sign: 1 << (cfg.bits - 1),
            xmin: if cfg.signed { !xmax } else { 0 },
            xmax,
        }
    }

    /// The sample as a (sign-extended) 32-bit number.
    #[inline]
    fn value(&self, raw: u32) -> u32 {
        if self.signed {
            (raw ^ self.sign).wrapping_sub(self.sign)
        } else {
            raw
        }
    }

    #[inline]
    fn residual(&self, prev: u32, x: u32) -> u32 {
        let down = if self.signed {
            (x as i32) < (prev as i32)
        } else {
            x < prev
        };
        if down {
            let d = prev.wrapping_sub(x);
            if d <= self.xmax.wrapping_sub(prev) {
                d.wrapping_mul(2).wrapping_sub(1)
            } else {
                self.xmax.wrapping_sub(x)
            }
        } else {
            let d = x.wrapping_sub(prev);
            if d <= prev.wrapping_sub(self.xmin) {
                d.wrapping_mul(2)
            } else {
                x.wrapping_sub(self.xmin)
            }
        }
    }
}

/// Length of the second-extension CDS (without identifier and reference,
/// plus the extra option bit), or `u64::MAX` once it exceeds `limit`. The
/// arithmetic wraps exactly like libaec's.
fn second_extension_len(block: &[u32], limit: u64) -> u64 {
    let mut len = 1u64;
    for pair in block.chunks_exact(2) {
        let d = u64::from(pair[0]) + u64::from(pair[1]);
        len = len
            .wrapping_add(d.wrapping_mul(d + 1) / 2)
            .wrapping_add(u64::from(pair[1]))
            .wrapping_add(1);
        if len > limit {
            return u64::MAX;
        }
    }
    len
}

// ---------------------------------------------------------------- decoder

/// MSB-first bit source. The low `avail` bits of `acc` are unread.
struct BitReader<'a> {
    data: &'a [u8],
    pos: usize,
    acc: u64,
    avail: u32,
}

impl<'a> BitReader<'a> {
    #[inline]
    fn refill(&mut self) {
        while self.avail <= 56 {
            let Some(&b) = self.data.get(self.pos) else {
                return;
            };
            self.acc = (self.acc << 8) | u64::from(b);
            self.pos += 1;
            self.avail += 8;
        }
    }

    /// The next `n` (0..=32) bits.
    #[inline]
    fn get(&mut self, n: u32) -> Result<u32> {
        if self.avail < n {
            self.refill();
            if self.avail < n {
                return Err(short());
            }
        }
        self.avail -= n;
        if n == 0 {
            return Ok(0);
        }
        Ok(((self.acc >> self.avail) & (u64::MAX >> (64 - n))) as u32)
    }

    /// Length of the next fundamental sequence (its 0 bits); consumes the
    /// closing 1 too.
    #[inline]
    fn fs(&mut self) -> Result<u64> {
        let mut zeros = 0u64;
        loop {
            if self.avail == 0 {
                self.refill();
                if self.avail == 0 {
                    return Err(short());
                }
            }
            let live = self.acc & (u64::MAX >> (64 - self.avail));
            if live == 0 {
                zeros += u64::from(self.avail);
                self.avail = 0;
                continue;
            }
            let top = 63 - live.leading_zeros();
            zeros += u64::from(self.avail - 1 - top);
            self.avail = top;
            return Ok(zeros);
        }
    }

    /// Skips to the next byte boundary of the stream.
    fn align(&mut self) {
        self.avail -= self.avail % 8;
    }
}

fn short() -> CodecError {
    corrupt(FILTER, "coded stream ends early")
}

/// libaec's inverse of [`Predictor::residual`], with its exact wrapping
/// arithmetic (which matters only for streams no encoder would write).
#[derive(Clone, Copy)]
struct Post {
    signed: bool,
    bits: u32,
    xmax: u32,
    last: u32,
}

impl Post {
    #[inline]
    fn reference(&mut self, v: u32) -> u32 {
        self.last = if self.signed {
            let m = 1u32 << (self.bits - 1);
            (v ^ m).wrapping_sub(m)
        } else {
            v
        };
        self.last
    }

    #[inline]
    fn next(&mut self, d: u32) -> u32 {
        let data = self.last;
        let half = (d >> 1) + (d & 1);
        let step = if d & 1 == 0 { d >> 1 } else { !(d >> 1) };
        let xmax = self.xmax;
        self.last = if !self.signed {
            // Distance to the nearer end of the range, tested on the top
            // bit as libaec does.
            let flip = if data & (xmax / 2 + 1) != 0 { xmax } else { 0 };
            if half <= flip ^ data {
                data.wrapping_add(step)
            } else {
                flip ^ d
            }
        } else if (data as i32) < 0 {
            if half <= xmax.wrapping_add(data).wrapping_add(1) {
                data.wrapping_add(step)
            } else {
                d.wrapping_sub(xmax).wrapping_sub(1)
            }
        } else if half <= xmax.wrapping_sub(data) {
            data.wrapping_add(step)
        } else {
            xmax.wrapping_sub(d)
        };
        self.last
    }
}

/// Where decoded samples go: post-processed and serialised into `out`.
struct Sink {
    out: Vec<u8>,
    at: usize,
    bytes: usize,
    msb: bool,
    post: Option<Post>,
}

impl Sink {
    fn room(&self) -> usize {
        (self.out.len() - self.at) / self.bytes
    }

    /// Stores as many of `vals` as fit; the first is a reference sample if
    /// `reference` is set.
    fn put(&mut self, vals: &[u32], reference: bool) {
        let n = vals.len().min(self.room());
        let (vals, bytes, msb) = (&vals[..n], self.bytes, self.msb);
        let dst = &mut self.out[self.at..self.at + n * bytes];
        self.at += n * bytes;
        match &mut self.post {
            None => store(dst, vals, bytes, msb, |v| v),
            Some(post) => {
                let (mut dst, mut vals) = (dst, vals);
                if reference && !vals.is_empty() {
                    let (d0, rest) = dst.split_at_mut(bytes);
                    store(d0, &vals[..1], bytes, msb, |v| post.reference(v));
                    dst = rest;
                    vals = &vals[1..];
                }
                store(dst, vals, bytes, msb, |d| post.next(d));
            }
        }
    }

    /// Stores up to `n` zero residuals (repeats of the last sample after
    /// post-processing).
    fn zeros(&mut self, n: usize, scratch: &mut [u32]) {
        let mut left = n.min(self.room());
        scratch.fill(0);
        while left > 0 {
            let m = left.min(scratch.len());
            self.put(&scratch[..m], false);
            left -= m;
        }
    }
}

/// Which options a stream used (for tests that check coverage).
#[cfg(test)]
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    zero: u32,
    zero_ros: u32,
    zero_long: u32,
    se_ref: u32,
    se: u32,
    uncomp: u32,
    /// Bit k set when splitting with k was used.
    split_k: u32,
}

#[derive(Clone, Copy)]
#[cfg_attr(not(test), allow(dead_code))]
enum Opt {
    Zero { ros: bool, long: bool },
    SecondExtension { reference: bool },
    Split(u32),
    Uncompressed,
}

struct Decoder<'a> {
    cfg: Config,
    r: BitReader<'a>,
    sink: Sink,
    /// One block's samples, but never more than the output still needs.
    scratch: Vec<u32>,
    #[cfg(test)]
    tally: Tally,
}

/// Decodes `coded` until `out_len` bytes (whole samples) are produced,
/// as libaec does with `avail_out = out_len`.
///
/// Parameters are checked as for [`encode`] (libaec's decoder checks only
/// the sample size). Unlike libaec, which reports success with less output
/// when the stream runs out, a short stream is an error; and decoding stops
/// at `out_len`, where libaec may still read (and reject) the next CDS.
///
/// # Errors
/// [`CodecError::Invalid`] for bad parameters or an `out_len` that is not a
/// whole number of samples; [`CodecError::Corrupt`] when the stream ends
/// before `out_len` bytes or is malformed.
pub fn decode(coded: &[u8], out_len: usize, p: &Params) -> Result<Vec<u8>> {
    decoder(coded, out_len, p)?.run()
}

fn decoder<'a>(coded: &'a [u8], out_len: usize, p: &Params) -> Result<Decoder<'a>> {
    let cfg = Config::new(p)?;
    let samples = out_len / cfg.bytes;
    if samples * cfg.bytes != out_len {
        return Err(invalid(format!(
            "output length {out_len} is not a whole number of {}-byte samples",
            cfg.bytes
        )));
    }
    // The densest CDS, a remainder-of-segment zero block, takes id_len + 6
    // bits for at most 64 blocks: refuse before allocating what the stream
    // cannot possibly fill.
    let cds_max = (coded.len() as u64 * 8) / u64::from(cfg.id_len + 6) + 1;
    let reach = cds_max
        .saturating_mul((SEGMENT * cfg.block) as u64)
        .saturating_add(1);
    if samples as u64 > reach {
        return Err(corrupt(
            FILTER,
            format!("{} coded bytes cannot hold {out_len} bytes", coded.len()),
        ));
    }
    let out = alloc_zeroed(out_len, FILTER)?;
    let scratch = vec![0u32; cfg.block.min(samples)];
    let post = cfg.pp.then_some(Post {
        signed: cfg.signed,
        bits: cfg.bits,
        xmax: cfg.xmax(),
        last: 0,
    });
    Ok(Decoder {
        cfg,
        r: BitReader {
            data: coded,
            pos: 0,
            acc: 0,
            avail: 0,
        },
        sink: Sink {
            out,
            at: 0,
            bytes: cfg.bytes,
            msb: cfg.msb,
            post,
        },
        scratch,
        #[cfg(test)]
        tally: Tally::default(),
    })
}

impl Decoder<'_> {
    fn run(mut self) -> Result<Vec<u8>> {
        self.decode_all()?;
        Ok(self.sink.out)
    }

    #[inline]
    fn note(&mut self, _opt: Opt) {
        #[cfg(test)]
        {
            let t = &mut self.tally;
            match _opt {
                Opt::Zero { ros, long } => {
                    t.zero += 1;
                    t.zero_ros += u32::from(ros);
                    t.zero_long += u32::from(long);
                }
                Opt::SecondExtension { reference: true } => t.se_ref += 1,
                Opt::SecondExtension { reference: false } => t.se += 1,
                Opt::Split(k) => t.split_k |= 1 << k,
                Opt::Uncompressed => t.uncomp += 1,
            }
        }
    }

    fn decode_all(&mut self) -> Result<()> {
        let rsi_len = self.cfg.rsi * self.cfg.block;
        let mut first = true;
        while self.sink.room() > 0 {
            if !first && self.cfg.pad_rsi {
                self.r.align();
            }
            first = false;
            let mut used = 0;
            while used < rsi_len && self.sink.room() > 0 {
                used += self.cds(used, rsi_len)?;
            }
        }
        Ok(())
    }

    /// Decodes one CDS starting `used` samples into the RSI; returns the
    /// number of samples it stands for.
    fn cds(&mut self, used: usize, rsi_len: usize) -> Result<usize> {
        let cfg = self.cfg;
        let bs = cfg.block;
        let has_ref = cfg.pp && used == 0;
        let id = self.r.get(cfg.id_len)?;
        if id == cfg.uncomp_id() {
            self.note(Opt::Uncompressed);
            // The reference, if any, is simply the block's first sample.
            let want = bs.min(self.sink.room());
            for i in 0..want {
                self.scratch[i] = self.r.get(cfg.bits)?;
            }
            self.sink.put(&self.scratch[..want], has_ref);
            return Ok(bs);
        }
        let low_entropy = id == 0;
        let second_extension = low_entropy && self.r.get(1)? == 1;
        let skip = usize::from(has_ref);
        if has_ref {
            let r = self.r.get(cfg.bits)?;
            self.sink.put(&[r], true);
            if self.sink.room() == 0 {
                return Ok(bs);
            }
        }
        let want = (bs - skip).min(self.sink.room());
        if second_extension {
            self.note(Opt::SecondExtension { reference: has_ref });
            self.second_extension(skip, want)?;
            Ok(bs)
        } else if low_entropy {
            self.zero_blocks(used, rsi_len, skip)
        } else {
            let k = id - 1;
            self.note(Opt::Split(k));
            let n = bs - skip;
            for i in 0..n {
                let fs = self.r.fs()? as u32;
                if i < want {
                    self.scratch[i] = fs.wrapping_shl(k);
                }
            }
            for v in &mut self.scratch[..want] {
                *v = v.wrapping_add(self.r.get(k)?);
            }
            self.sink.put(&self.scratch[..want], false);
            Ok(bs)
        }
    }

    /// Pairs of residuals from triangular-number symbols. In a reference
    /// block the first pair's first member is the reference's slot: it is
    /// decoded from the symbol but not output.
    fn second_extension(&mut self, skip: usize, want: usize) -> Result<()> {
        let mut i = skip;
        let mut got = 0;
        while got < want {
            let m = self.r.fs()?;
            if m > u64::from(SE_MAX_SYMBOL) {
                return Err(corrupt(FILTER, "second extension symbol out of range"));
            }
            let m = m as u32;
            let (beta, base) = triangle(m);
            let second = m - base;
            if i & 1 == 0 {
                self.scratch[got] = beta - second;
                got += 1;
                i += 1;
                if got == want {
                    break;
                }
            }
            self.scratch[got] = second;
            got += 1;
            i += 1;
        }
        self.sink.put(&self.scratch[..want], false);
        Ok(())
    }

    fn zero_blocks(&mut self, used: usize, rsi_len: usize, skip: usize) -> Result<usize> {
        let bs = self.cfg.block;
        let code = self.r.fs()?;
        let ros = u64::from(ROS_CODE);
        let blocks = if code == ros {
            let b = used / bs;
            (self.cfg.rsi - b).min(SEGMENT - b % SEGMENT) as u64
        } else if code < ros {
            code + 1
        } else {
            code
        };
        self.note(Opt::Zero {
            ros: code == ros,
            long: code > ros,
        });
        let samples = blocks
            .checked_mul(bs as u64)
            .and_then(|s| usize::try_from(s).ok())
            .filter(|&s| s <= rsi_len - used)
            .ok_or_else(|| corrupt(FILTER, "zero block run beyond the reference interval"))?;
        self.sink.zeros(samples - skip, &mut self.scratch);
        Ok(samples)
    }
}

/// For a second-extension symbol `m`: the pair sum `beta` with
/// `beta (beta + 1) / 2 <= m` maximal, and that triangular number.
fn triangle(m: u32) -> (u32, u32) {
    let mut beta = 0;
    while (beta + 1) * (beta + 2) / 2 <= m {
        beta += 1;
    }
    (beta, beta * (beta + 1) / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    fn to_hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    struct Vector {
        name: &'static str,
        params: Params,
        input: &'static str,
        /// libaec 1.1.4's `aec_buffer_encode` of `input`.
        coded: &'static str,
        /// What libaec's `aec_buffer_decode` makes of `coded`.
        decoded: Back,
        /// False for a stream put together from libaec output by hand.
        libaec_encoded: bool,
    }

    enum Back {
        /// The input's whole samples.
        Input,
        /// Something else (libaec sign-extends preprocessed signed samples).
        Bytes(&'static str),
        /// libaec cannot decode the stream (its own encoder spoilt it).
        Error,
    }

    impl Vector {
        fn decoded(&self) -> Option<Vec<u8>> {
            match self.decoded {
                Back::Input => {
                    let input = hex(self.input);
                    let width = Config::new(&self.params).unwrap().bytes;
                    Some(input[..input.len() / width * width].to_vec())
                }
                Back::Bytes(b) => Some(hex(b)),
                Back::Error => None,
            }
        }

        fn out_len(&self) -> usize {
            let width = Config::new(&self.params).unwrap().bytes;
            hex(self.input).len() / width * width
        }
    }

    // Made with libaec 1.1.4 (h5py's bundled libaec.so) through ctypes.
    const VECTORS: &[Vector] = &[
        // 8-bit ramp with noise, preprocessed: splitting with small k
        Vector {
            name: "u8_ramp_pp",
            params: Params {
                bits_per_sample: 8,
                block_size: 8,
                rsi: 16,
                flags: DATA_PREPROCESS,
            },
            input:
                "0000060707080e0e1314171519181e2122222326292c2d2c2f33363539373e41434046494a4a4e51\
         53545257565d5c5b6361666668676e706e75737677797f7c7f82848589888f8e8e909198969d99a1\
         9fa5a5a5ababafb0b0b3b1b5bbbcbdc1bec0c4c5c6c8cbced1d5d6d4d7dadddddfe4e6e6ebe8eef0\
         f3f5f2f5f6fbfefb",
            coded:
                "40116818066cc5ab127d5e2aa5a598b1274d45ca2504dcc72e65619b14e061c6d17ba05ab31d10cb\
         b18a10aec71c678004ec8e4b0a1a9d5428a69d5c5d434b28a4120d56561aa0",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // 8-bit noise without preprocessing: uncompressed blocks
        Vector {
            name: "u8_noise_raw",
            params: Params {
                bits_per_sample: 8,
                block_size: 16,
                rsi: 4,
                flags: 0,
            },
            input:
                "3258024de078b3752964917aec86f6dfd466249a9a8e458033fd6f64c65a72a3b517c1253c751c40\
         6b2c5878f954522c40350f375ca1003e8f0e5d1f356b6a61",
            coded:
                "e64b0049bc0f166ea52c922f5d90dedbff5198926a6a391600cff5bd931969ca8fda8be0929e3a8e\
         2035962c3c7caa291662d20d0cd111055f7e041e7bbbfaad41",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // 8-bit, nearly constant: second extension in reference and other blocks
        Vector {
            name: "u8_low_entropy_pp",
            params: Params {
                bits_per_sample: 8,
                block_size: 16,
                rsi: 4,
                flags: DATA_PREPROCESS,
            },
            input:
                "64646464646464646464646464646465656565656565656565656565656565656564656565656565\
         65656565646565656565656466656565656565656565656664656565646565656566656565656565\
         65656565656565656565656565656565646565656565656565656565656564656565656565656566\
         6565656565656565",
            coded: "164fe08448f8067a17fe4b21d3cbf094fffa4782f0",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // block size 2: zero runs of 2..9 blocks, ended by data, by the segment end (ROS) and by the RSI end (ROS); partial last RSI
        Vector {
            name: "u8_zero_runs_bs2",
            params: Params {
                bits_per_sample: 8,
                block_size: 2,
                rsi: 100,
                flags: NOT_ENFORCE,
            },
            input:
                "7bba00000000000000000000f80f99c0b22000000000c2441ad89da53126c3820985ac60f2de2b62\
         b7f1d48812ec2033988922c5c9323a782b97a746d2c5b037fa4257d355aa8d78068e624792882c83\
         3843b4dbbe612142ad76410ca438fcd888d709f3288db7b877b14bf6e4e500000000000000000000\
         0000000000000000e910af9100000000000030c40000000000000000a7fda4b881f85e501189335d\
         71ee5403253a6d194929b62aacf5776b8777aca0a89a7d96951cae6c000000000000000000000000\
         adf20000000000000000000000000000b77d00",
            coded:
                "ef77400ff80ff3381ec8801f8489c6b63ced2e589be1c170985f58c1fcb7b95b17b7f1fa911c4bb3\
         2827e62279162fc932e74f1cae5fd3a37d2c5f606ffe90babe9f55aaf1af1c1a3bb123f9288e5907\
         9381fb4dbf7cc392117ad76c6167a438ff9b1e235f84f9f288df6f71ddec7a5fb7e4e500fe910f5f\
         2207986200fa7fdf4971e07e3af2871189c99f7b8f763a0f297586dce2a53ed8abd67af776bf0eef\
         eb283d44d77d96f2a39eb9b003eb7c8007dbbe84",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // signed 16-bit big-endian random walks with growing steps, preprocessed, block 32
        Vector {
            name: "i16_walk_pp_msb",
            params: Params {
                bits_per_sample: 16,
                block_size: 32,
                rsi: 4,
                flags: DATA_SIGNED | DATA_MSB | DATA_PREPROCESS,
            },
            input:
                "fffe0000fffffffefffdfffafff8fff9fffafffdfffefffdfffcfffbfff9fff6fff5fff2fff3fff2\
         fff5fff4fff2fff0ffeffff2fff2fff3fff0ffeeffebffee00000015fffafff0ffbaffb2ff8fffaa\
         ff7fff54ff46ff0bff08fefaff1eff17ff4eff31ff04fef3ff24ff36ff33ff20fee4ff06ff20ff30\
         ff5eff89ff8fff87023303b30661066604800200052b02940321050c04cd053f04e6055b057607c3\
         060302d9061e083108440b780d3b0ed50f85128a0fa10e41113113c4112f10a015cf4a19540c7fff\
         73a4420a315568987fff7fff7fff7fff7fff7fff7fff7fff7fff7fff687f7fff79847fff7fff756d\
         7ae97fff66577fff53b81b7e00e03433",
            coded:
                "2fffe3caa2f4cb1ac6948be1fd78e65632931cc528b44a9391559ade5b56bba97686bb39088852dc\
         94072cc7d14d226fca2262b12927588057015cb7f95a5b1aeb1f5c8b1750d9357f29a284c263461a\
         6960057457fe0934a63bb02831204ffd3fa240881a5e8943e67e6c5bdf5169e86ece000000000000\
         000000000000000780f0067bcf6000a92af8a2c9a8350c4748153b6a60",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // 16-bit noise of rising amplitude, no preprocessing, block 16: k from 0 to 13 and uncompressed
        Vector {
            name: "u16_noise_levels",
            params: Params {
                bits_per_sample: 16,
                block_size: 16,
                rsi: 2,
                flags: 0,
            },
            input:
                "03000100010001000000000002000000000002000100010001000200000001000200100016000500\
         2100170023000a0006001700100000002400200022001b00e4003d0181017c00900112005a018b01\
         48008601bc01b400880017010100eb00810f7917131cb5034c09600d84155704d3076d1d22057e05\
         ac0e2f002205580afeee816b5d655d7627f133d11e28d0d594c450887b49247cdab84d646f4fb3f5\
         46213d28a331673a532fe53b8539182aac381938773c8e274931c0306929dc340000000000000000\
         000000000000000000000000000000000000000000000000940296048f023104e6016201c7014f03\
         37001304ae031c04ee025a0071024d01",
            coded:
                "11573954d5aca759252065173a6700402b9adad77e43d817c90125a8b4886bcb4881701ebc48d4e3\
         bbe07bcc1376a532b05848aff4eb6d22afdab017d224b1fddfcd702cabaecbbe24fa266503daba18\
         92910a092f6f84971b4c89a9edfeb67caaaaaaaa14641ec68f4cef53df2e6154318acc0cf1dcf1d1\
         4986025a69b80d253d94b6944b23c63e6b171e9e3709eb838ee2d1c69a",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // 24-bit samples in 3 bytes, preprocessed, 5 blocks of 16 in RSIs of 3 (partial last RSI)
        Vector {
            name: "u24_3byte_pp",
            params: Params {
                bits_per_sample: 24,
                block_size: 16,
                rsi: 3,
                flags: DATA_3BYTE | DATA_PREPROCESS,
            },
            input:
                "5c0a801a1180250e80cd09801b0580920b80841480a11e805c25809e2780f82f800233805632803c\
         3780de4180e83880e43b802e45802d4a80124880224780f03b80fd4380b33e803a4280023d80e045\
         803043807a45806c4780264c801943800a3c80c83f80e94880124f80bf50809e4e80894b80e44f80\
         73e4803ac57d48a57bec157a42d67608e87a56217fd2107be66e7e9e597d93647ba95279f51576e8\
         a175ca6e77014675614279cece79e1357ad6dd7ac1c07b080c7f30727d37eb7f10327f65d6806577\
         83e82680a2ce8358ec7fdff57b0e027eb4fd7df8197cffc87a2def76bc1674fdc071a97d70ec346d",
            coded:
                "640052e35496749af97a4579639dc7921d5769082d30a157399510f5b25c969e9bf0a50ff4353bf9\
         8c0d293e1c9bcde55f928f90ba21997fc4a210841c3a077c09210314806b404410314822da523c3e\
         711ff1c7adcfea6238c394e0841e4fcddcca4691f148aa3fd42a23d33cb3ba06733885191fc60463\
         699c4d4feae2eb25a3a675ef20e9eaabd5ab926e9154a100541f3a7ba78927f678830bc0459f8eef\
         50f8f6746d870956fb4353d22f20",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // signed 24-bit in 4 big-endian bytes, preprocessed: libaec decodes sign-extended to 32 bits
        Vector {
            name: "i24_in_4byte_msb_pp",
            params: Params {
                bits_per_sample: 24,
                block_size: 8,
                rsi: 5,
                flags: DATA_SIGNED | DATA_MSB | DATA_PREPROCESS,
            },
            input:
                "00fe716300fc56a700fa1b2600f9c2c900f6d5fe00f9957700f75a4f00f8c43900f792ea00f9499d\
         00fb1a1500fc2a7b00fccc0300fb489e00fc0c6e00fa9a4a00f7a4e000f7083a00f9d95100f99e87\
         00f9aab200f8db5b00f608d500f39a1500f67ffe00f793cb00fa17e600fd13cb00fd996800fd835a\
         00fd006a00fd348900fe7c6f00fd091900fd9e4d00fbc22600f9732a00f8b24c00fb9a7200fddbbd\
         00fbce5900fa100e00fc65d500febb5100fd78f600ff63c800ff3f8b00006c0b00ff580800ff78d8\
         00fdc29a00fd8a1b0000840500ff2fca00fd2ff600fd37c200ff84ef00022f8b00ffb8cb00fe24dd",
            coded:
                "97f38b19324a35773b80ac2e7b32b7ef23b27b4f524ab698a76dacda0f0106650c420d9387a07223\
         c8cf27d5a7394bd1171d64c30ad9eadd285b75fe4527f97a4279a841b7df2a16742c1b82ef9a0fa4\
         b4c947e639aae54d1b84d4efbe06efa098829697de72ca4adbe4aaae3955f084b5ead2121e4b2012\
         6cac500a41a0b63d9c3f7e7a8a875ffd383e624497d34b5553876bfc9f6c000000000000000000",
            decoded: Back::Bytes(
                "fffe7163fffc56a7fffa1b26fff9c2c9fff6d5fefff99577fff75a4ffff8c439fff792eafff9499d\
         fffb1a15fffc2a7bfffccc03fffb489efffc0c6efffa9a4afff7a4e0fff7083afff9d951fff99e87\
         fff9aab2fff8db5bfff608d5fff39a15fff67ffefff793cbfffa17e6fffd13cbfffd9968fffd835a\
         fffd006afffd3489fffe7c6ffffd0919fffd9e4dfffbc226fff9732afff8b24cfffb9a72fffddbbd\
         fffbce59fffa100efffc65d5fffebb51fffd78f6ffff63c8ffff3f8b00006c0bffff5808ffff78d8\
         fffdc29afffd8a1b00008405ffff2fcafffd2ff6fffd37c2ffff84ef00022f8bffffb8cbfffe24dd",
            ),
            libaec_encoded: true,
        },
        // 32-bit random walk with huge steps, preprocessed: large k and uncompressed
        Vector {
            name: "u32_walk_pp",
            params: Params {
                bits_per_sample: 32,
                block_size: 8,
                rsi: 8,
                flags: DATA_PREPROCESS,
            },
            input:
                "36c4d67f0a0f7b71fb08ad741bb5bc6b3de1b86bec22887bf4e84f815826488c4c28138a9318407d\
         300512713af8987218ed7e707f659e74e5bd3281a909227f4feca96f3d487f6ebc8ae163c66e4e63\
         80a2dc72b6a218732616fa816ea0147d10049884f7fb157842d77c6a7b3e5a77a1cfa18178341086\
         03a9fd917bce2e9bcaee2e8f95fb5784ab78627f64408083d3c36584829dc57cb43117738accb17a\
         7493858a03fa2b89d9d1467a357da0821a07447e21695d8611ac568ebed9338732ed187b574bb383\
         0f6f627f7aca7b8664299b7ba70bf77943d81c79b198d57a01ae7d739c3509779c877b672dc33f76\
         1520077e855dd98939ecce94b1bbaf9b",
            coded:
                "e3feb621b0cc532dda95f31f9f11e0a7bf00f4f77e7a0d79c7c6085f07ac8e447471a7f05cd30fb8\
         85c26c561bcc290d0590c1f7867128b0cc842d0efc198c5de07566955208e9dbd8092637ebe38cee\
         81e001b2e173701caeb6fed56be0d8e89208206366492d33759ce491e44991b9935cfb5d22c4c495\
         e1c25697ffdfb0dade6693d60ba60ee3dc8e5836f7404ca16b9af37cd4d6b3ad6ff4f1ba856665c3\
         b94a0a6166ad71171d86a065881dfe50bc1c8b494bc12a7835d9172697894286e23f195b6b5c1422\
         b69076f26d19b1db8c06e775afabf557dc5c3cdbc6d6fff621dc8be3ae741e91eb817ac75a37067b\
         c0",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // signed 32-bit small values without preprocessing: negative values force uncompressed
        Vector {
            name: "i32_small_raw",
            params: Params {
                bits_per_sample: 32,
                block_size: 8,
                rsi: 8,
                flags: DATA_SIGNED,
            },
            input:
                "13000000efffffffecfffffffdffffffeeffffff0b000000effffffff8ffffff0d000000f8ffffff\
         13000000fbffffff0c0000000a000000f7ffffff110000000c000000ecfffffff0fffffff2ffffff\
         edfffffff3ffffff0b000000efffffff12000000fffffffffeffffff040000001200000013000000\
         efffffff0c00000013000000130100003c0000007e00000024010000d0000000240000001c000000\
         20000000af0000002a0000003100000010000000da00000082000000280000003700000025010000\
         db0000000201000016000000f5000000f3000000ed00000038000000c3000000c400000008010000\
         4800000060000000c20000005a000000",
            coded:
                "f80000009fffffff7fffffff67ffffffefffffff700000005fffffff7fffffffc7c00000037fffff\
         fe00000004fffffffec000000300000002bffffffdc00000047e00000019ffffffd9ffffffe1ffff\
         ffe5ffffffdbffffffe600000017ffffffdff00000012fffffffffffffffe0000000400000012000\
         00013ffffffef0000000c3c3423a69f9f48848e1e789c17d58a0d054225355ba5b608b75e7b5153b\
         710e208918215a",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // 12-bit in 2 bytes, NOT_ENFORCE block 10, RSI 3: 75 samples, last block and RSI partial
        Vector {
            name: "u12_bs10_rsi3",
            params: Params {
                bits_per_sample: 12,
                block_size: 10,
                rsi: 3,
                flags: DATA_PREPROCESS | NOT_ENFORCE,
            },
            input:
                "050814082b083608260819080d08f707f007f707f107f1070608ee07f107ef070508ed07f8070508\
         0b08f507dc07d507d007bf07bd07b107b4079c078b0785079807a0079307a107a10799078d07a307\
         a6079a078f079507ab07ba07a307ba07a1078e078e079b07af079907ab07920794078a077c077307\
         750782078807a107a3079a07840797079a078307740781078c0799079d07",
            coded:
                "58054aa9fb9be5ef79727256c2bd8f3da96473672c7644ddbd5e2e55d36c1381ef8b594912ceb99d\
         bc2ab4923542a2d050ec55dd58d266b0906d9b50448bfab2000000",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // 2-bit restricted option set (1-bit identifiers: no splitting)
        Vector {
            name: "restricted_2bit",
            params: Params {
                bits_per_sample: 2,
                block_size: 16,
                rsi: 4,
                flags: DATA_PREPROCESS | RESTRICTED,
            },
            input:
                "01030002020101000201000101010101010101010101010103010201020300010200010201010101\
         01010101010101010200010201020000000203010101010101010101010101010201000000000001\
         01030100010101010101010101010101",
            coded: "bf08ca8040003a6b76c800001b66c2a005f016500405f8",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // 4-bit restricted option set (2-bit identifiers: k 0 and 1)
        Vector {
            name: "restricted_4bit",
            params: Params {
                bits_per_sample: 4,
                block_size: 8,
                rsi: 3,
                flags: RESTRICTED,
            },
            input:
                "01000202030b0001060808000d0f030d0f0a0b070e0d030e00000300030001010101010002000103\
         00000300030002020302020103030100010202020303020100000000000000000000000000000000",
            coded: "b541e376880df3dfeadfb4f9c635559a2e31932b5e7aaaae3444",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // 16-bit with a stray trailing byte, which libaec ignores
        Vector {
            name: "u16_trailing_byte",
            params: Params {
                bits_per_sample: 16,
                block_size: 8,
                rsi: 2,
                flags: DATA_PREPROCESS,
            },
            input:
                "04800180fd7f00800180fc7ffb7ffe7fff7ffb7ff77ff67ff87ff37ff87ff97ffd7f018002800280\
         7f",
            coded: "38004566bd2c75a4ef4685fff4027e",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // no samples: libaec still writes one byte
        Vector {
            name: "empty",
            params: Params {
                bits_per_sample: 8,
                block_size: 8,
                rsi: 1,
                flags: 0,
            },
            input: "",
            coded: "00",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // 1-bit samples, preprocessed
        Vector {
            name: "u1_pp",
            params: Params {
                bits_per_sample: 1,
                block_size: 8,
                rsi: 2,
                flags: DATA_PREPROCESS,
            },
            input:
                "00000100000100010101010001010101010100010001000001010000000100010101010101010101\
         010101010101010101010101010101010101010101010101",
            coded: "e6fc63df7a70a140",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // constant 8-bit data: zero blocks with a reference, ROS at the segment end (64 blocks) and at the RSI end
        Vector {
            name: "u8_constant_pp",
            params: Params {
                bits_per_sample: 8,
                block_size: 2,
                rsi: 70,
                flags: DATA_PREPROCESS | NOT_ENFORCE,
            },
            input:
                "4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d\
         4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d\
         4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d\
         4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4e4e4e4e4e4e4e4e4e4e",
            coded: "04d080413820",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // 12-bit samples with padding bits set above bit 11: libaec adds them to the bits before each reference sample, which spoils its own stream
        Vector {
            name: "u12_stray_high_bits",
            params: Params {
                bits_per_sample: 12,
                block_size: 8,
                rsi: 2,
                flags: DATA_PREPROCESS,
            },
            input:
                "00f8fef7faf7fdf7fcf7f8f7f9f7f8f7f7f7f9f7faf7fbf7f7f7faf7fdf701f804f806f802f800f8\
         fff7fbf7fef7fff7fdf7fdf7f9f7faf7faf7faf7f8f7f6f7f7f7f8f7f7f7f5f7f8f7f4f7f1f7eef7",
            coded: "2800adfe793baa52ba4a011759ef44c5d68c9fdfaacf6a",
            decoded: Back::Error,
            libaec_encoded: true,
        },
        // signed 8-bit random walk, preprocessed, block 64
        Vector {
            name: "i8_walk_pp_bs64",
            params: Params {
                bits_per_sample: 8,
                block_size: 64,
                rsi: 1,
                flags: DATA_SIGNED | DATA_PREPROCESS,
            },
            input:
                "f8f2f4f5fafff9fbfbf6fafef6f1f8f1fafb0304fbf8f3ede6e2e6e0e7ebebe3ddddd6d4d5d5cec6\
         bfc8c2babab3aea6adb3b9b6bdb7b9b0aea9a9a29c9c9b9ea7a69fa79e9f9c95959c969b949ba1a1\
         9ca49c9f979c9b9e9ba4a6aaa2a9a5a59ca4aaa5a9afb4bcc4cac5ccc6c7c6bebbc3bdbabec0c8cb\
         c2b9b3b6b5b7bdb8",
            coded:
                "9f0eaeaaa999ab55adea95aaad66d7b892701039d5208d2ef0f01d8ad0bea7c53f49738591583a53\
         d276aab4b5e6ae4aaa4aaecb664bd4d055a33574047dd1d541f7044222021cd1f43a20c4bc6420",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // 16-bit big-endian, preprocessed, block 8: zero blocks, second extension, splitting
        Vector {
            name: "u16_msb_mixed",
            params: Params {
                bits_per_sample: 16,
                block_size: 8,
                rsi: 16,
                flags: DATA_MSB | DATA_PREPROCESS,
            },
            input:
                "13881388138813881388138813881388138813881388138813881388138813881388138813881388\
         13881388138813881388138813881388138813881388138913881388138913881389138813881389\
         13881389138813891388138813891388138813881388138913891388138813891388138813881388\
         138813881388138881ae895b843d7ef183ac8cf592d292e79c2898e9a18ca8309e5d950c8c4b92ff\
         994aa1cca4db9b8c9d87a546ab65a7eba19a992d90f7920c9b3fa5259cbca39a9c81970098869609\
         91e990cf8f2086be85788b0d8561848b87ee80de795e831e83948d57826e81897d41799b76086b53\
         73b977e174ac706e6e5664335a0c5fdb",
            coded:
                "009c410f04594b2294b28f3642fd00fb8d77ad51dd4bcbb1495dd015619492a82cfa51aa43a55426\
         06b46266b92c4130f29d7eddfa1f6f3c4992594236435a2a4ccf3068dbcb134e18c701c30f90fe33\
         d74c3caea545b2a6ae6af6361fdfee0324dc8ec70d744e488fe97c96b4e16c9466050cd21ee17c45\
         89ae78",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // 32-bit samples of 30 bits: splitting at the largest k, 29
        Vector {
            name: "u32_kmax",
            params: Params {
                bits_per_sample: 32,
                block_size: 8,
                rsi: 2,
                flags: 0,
            },
            input:
                "41cea53c197e3c2d7f19d1223f625226fe5a032bd285622a3e317a21271af3209ccf552aeab2563a\
         8d386326e2653e2b93686c32530e5620e5d92231aa6a9d36",
            coded:
                "f2aaaf2973905a78fc322d1197f329311fac0d6bf94c50ba417a313e0798d13f955554ab9f39a56b\
         2ea3319c46acf9978a4d8d1260560e538916cf2da75aaa80",
            decoded: Back::Input,
            libaec_encoded: true,
        },
        // NOT_ENFORCE block 256: libaec picks the second extension for a pair summing to 13, which its decoder refuses
        Vector {
            name: "se_symbol_beyond_decoder_table",
            params: Params {
                bits_per_sample: 8,
                block_size: 256,
                rsi: 1,
                flags: NOT_ENFORCE,
            },
            input:
                "0d000000000000000000000000000000000000000000000000000000000000000000000000000000\
         00000000000000000000000000000000000000000000000000000000000000000000000000000000\
         00000000000000000000000000000000000000000000000000000000000000000000000000000000\
         00000000000000000000000000000000000000000000000000000000000000000000000000000000\
         00000000000000000000000000000000000000000000000000000000000000000000000000000000\
         00000000000000000000000000000000000000000000000000000000000000000000000000000000\
         00000000000000000000000000000000",
            coded: "100000000000000000000001fffffffffffffffffffffffffffffffe",
            decoded: Back::Error,
            libaec_encoded: true,
        },
        // PAD_RSI (decoder only): RSIs start on byte boundaries
        Vector {
            name: "pad_rsi_decode",
            params: Params {
                bits_per_sample: 8,
                block_size: 8,
                rsi: 4,
                flags: DATA_PREPROCESS | PAD_RSI,
            },
            input:
                "8584868a85888c8e89878b8686898a8585888b8d93999b9a95969296989a9b9fa0a1a5aaa4a7a29f\
         9b989ea4a6a0a59fa09b9797919591908f938d9092938f8b8e8a8c8784807a7f837d7e7f7d7d8280\
         7b808686898b8d93948f8c8e8d928e8e",
            coded:
                "70b494a8303326cb894baa22ca0059a565b02074124a58b966b57d9234dcb25ce66b92b54e2f71ca\
         549c5f993e6759715f4a83491cacb946c0",
            decoded: Back::Input,
            libaec_encoded: false,
        },
    ];

    fn decode_tallied(coded: &[u8], out_len: usize, p: &Params) -> Result<(Vec<u8>, Tally)> {
        let mut d = decoder(coded, out_len, p)?;
        d.decode_all()?;
        Ok((d.sink.out, d.tally))
    }

    #[test]
    fn encoder_matches_libaec() {
        for v in VECTORS.iter().filter(|v| v.libaec_encoded) {
            let got = encode(&hex(v.input), &v.params).unwrap();
            assert_eq!(to_hex(&got), v.coded, "{}", v.name);
        }
    }

    #[test]
    fn decoder_matches_libaec() {
        for v in VECTORS {
            let got = decode(&hex(v.coded), v.out_len(), &v.params);
            match v.decoded() {
                Some(want) => assert_eq!(to_hex(&got.unwrap()), to_hex(&want), "{}", v.name),
                None => assert!(got.is_err(), "{}", v.name),
            }
        }
    }

    #[test]
    fn decoder_stops_at_the_requested_length() {
        for v in VECTORS {
            let Some(full) = v.decoded() else { continue };
            let width = Config::new(&v.params).unwrap().bytes;
            for n in [0, 1, 7, 33] {
                let len = (n * width).min(full.len());
                let got = decode(&hex(v.coded), len, &v.params).unwrap();
                assert_eq!(got, full[..len], "{} {len}", v.name);
            }
        }
    }

    #[test]
    fn vectors_cover_every_option() {
        let mut all = Tally::default();
        for v in VECTORS.iter().filter(|v| v.decoded().is_some()) {
            let (_, t) = decode_tallied(&hex(v.coded), v.out_len(), &v.params).unwrap();
            all.zero += t.zero;
            all.zero_ros += t.zero_ros;
            all.zero_long += t.zero_long;
            all.se_ref += t.se_ref;
            all.se += t.se;
            all.uncomp += t.uncomp;
            all.split_k |= t.split_k;
        }
        assert!(all.zero > all.zero_ros + all.zero_long, "{all:?}");
        assert!(all.zero_ros >= 3 && all.zero_long >= 1, "{all:?}");
        assert!(all.se_ref >= 1 && all.se >= 1 && all.uncomp >= 1, "{all:?}");
        for k in (0..=13).chain([17, 29]) {
            assert!(all.split_k & (1 << k) != 0, "k = {k} unused: {all:?}");
        }
    }

    #[test]
    fn reference_block_second_extension() {
        // The case other coders get wrong: libaec pairs the whole reference
        // block, the reference's slot counting as a 0 residual.
        let v = VECTORS
            .iter()
            .find(|v| v.name == "u8_low_entropy_pp")
            .unwrap();
        let (_, t) = decode_tallied(&hex(v.coded), 128, &v.params).unwrap();
        assert!(t.se_ref > 0);
    }

    #[test]
    fn round_trips() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for case in 0..300 {
            let bits = 1 + (next() % 32) as u32;
            let mut flags = (next() % 16) as u32;
            if bits <= 4 && next() % 2 == 0 {
                flags |= RESTRICTED;
            }
            let block_size = if next() % 3 == 0 {
                flags |= NOT_ENFORCE;
                2 * (1 + (next() % 40) as u32)
            } else {
                8 << (next() % 4)
            };
            let p = Params {
                bits_per_sample: bits,
                block_size,
                rsi: 1 + (next() % 70) as u32,
                flags,
            };
            let width = Config::new(&p).unwrap().bytes;
            let n = (next() % 700) as usize;
            let mask = u32::MAX >> (32 - bits);
            let mut x = (next() as u32) & mask;
            let step = 1 + (next() as u32 % mask.max(1)) / (1 + (next() % 1000) as u32);
            let (mut input, mut want) = (Vec::new(), Vec::new());
            let put = |buf: &mut Vec<u8>, v: u32| {
                if flags & DATA_MSB != 0 {
                    buf.extend_from_slice(&v.to_be_bytes()[4 - width..]);
                } else {
                    buf.extend_from_slice(&v.to_le_bytes()[..width]);
                }
            };
            for _ in 0..n {
                match next() % 8 {
                    0 => x = next() as u32,
                    1..=3 => {}
                    _ => x = x.wrapping_add((next() as u32 % step).wrapping_sub(step / 2)),
                }
                x &= mask;
                put(&mut input, x);
                // libaec gives preprocessed signed samples back sign-extended.
                let m = 1u32 << (bits - 1);
                let signed_pp = DATA_SIGNED | DATA_PREPROCESS;
                put(
                    &mut want,
                    if flags & signed_pp == signed_pp {
                        (x ^ m).wrapping_sub(m)
                    } else {
                        x
                    },
                );
            }
            let coded = encode(&input, &p).unwrap();
            let back = decode(&coded, input.len(), &p).unwrap();
            assert_eq!(back, want, "case {case} {p:?}");
        }
    }

    #[test]
    fn bad_parameters() {
        let p = |bits_per_sample, block_size, rsi, flags| Params {
            bits_per_sample,
            block_size,
            rsi,
            flags,
        };
        for bad in [
            p(0, 8, 1, 0),
            p(33, 8, 1, 0),
            p(8, 12, 1, 0),
            p(8, 0, 1, NOT_ENFORCE),
            p(8, 11, 1, NOT_ENFORCE),
            p(8, 8, 0, 0),
            p(8, 8, 4097, 0),
            p(5, 8, 1, RESTRICTED),
        ] {
            assert!(
                matches!(encode(&[1, 2, 3], &bad), Err(CodecError::Invalid(_))),
                "{bad:?}"
            );
            assert!(
                matches!(decode(&[0], 1, &bad), Err(CodecError::Invalid(_))),
                "{bad:?}"
            );
        }
        // Restricted only concerns samples of up to 8 bits.
        assert!(encode(&[1, 2], &p(9, 8, 1, RESTRICTED)).is_ok());
        assert!(encode(&[1, 2], &p(8, 10, 4096, NOT_ENFORCE)).is_ok());
        // Only whole samples can be asked for.
        assert!(matches!(
            decode(&[0], 3, &p(16, 8, 1, 0)),
            Err(CodecError::Invalid(_))
        ));
    }

    #[test]
    fn truncated_streams_fail() {
        for v in VECTORS.iter().filter(|v| v.coded.len() > 8) {
            let coded = hex(v.coded);
            // The tail may hold only bits of samples that pad the last block.
            for cut in [0, 1, coded.len() / 4, coded.len() / 2] {
                let r = decode(&coded[..cut], v.out_len(), &v.params);
                assert!(
                    matches!(r, Err(CodecError::Corrupt { .. })),
                    "{} cut at {cut}: {r:?}",
                    v.name
                );
            }
        }
    }

    #[test]
    fn impossible_lengths_fail_before_allocating() {
        let p = Params {
            bits_per_sample: 8,
            block_size: 8,
            rsi: 64,
            flags: 0,
        };
        let r = decode(&[0; 4], usize::MAX, &p);
        assert!(matches!(r, Err(CodecError::Corrupt { .. })), "{r:?}");
        let r = decode(&[0; 4], 1 << 40, &p);
        assert!(matches!(r, Err(CodecError::Corrupt { .. })), "{r:?}");
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_streams_never_panic(
            coded in proptest::collection::vec(proptest::num::u8::ANY, 0..300),
            bits in 1u32..=32,
            bs in 1u32..=40,
            rsi in 1u32..=80,
            flags in 0u32..128,
            out in 0usize..3000,
        ) {
            let p = Params { bits_per_sample: bits, block_size: bs * 2, rsi, flags: flags | NOT_ENFORCE };
            if let Ok(cfg) = Config::new(&p) {
                let out_len = out / cfg.bytes * cfg.bytes;
                if let Ok(o) = decode(&coded, out_len, &p) {
                    proptest::prop_assert_eq!(o.len(), out_len);
                }
            }
        }

        #[test]
        fn damaged_streams_never_panic(
            seed in proptest::collection::vec(proptest::num::u8::ANY, 1..400),
            flips in proptest::collection::vec((0usize..10_000, 0u8..8), 1..6),
            cut in 0usize..10_000,
            flags in 0u32..64,
        ) {
            let p = Params { bits_per_sample: 8, block_size: 16, rsi: 8, flags: flags & !RESTRICTED };
            let mut coded = encode(&seed, &p).unwrap();
            for (i, b) in flips {
                let n = coded.len();
                coded[i % n] ^= 1 << b;
            }
            coded.truncate(cut % (coded.len() + 1));
            let _ = decode(&coded, seed.len(), &p);
        }
    }
}
