//! Zstandard (filter 32015): the chunk is one plain zstd frame, as the HDF5
//! zstd plugin writes it (`ZSTD_compress`), so the frame header carries the
//! decoded size.

use std::cell::RefCell;

use zstd::bulk::{Compressor, Decompressor};

use crate::{alloc_zeroed, corrupt, CodecError, Result};

thread_local! {
    static COMPRESSOR: RefCell<Option<(i32, Compressor<'static>)>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<Decompressor<'static>>> = const { RefCell::new(None) };
}

/// HDF5 chunks are at most 4 GiB; a frame claiming more is corrupt.
const MAX_DECODED: u64 = 1 << 32;

fn io_err(e: std::io::Error) -> CodecError {
    corrupt("zstd", e.to_string())
}

/// Compresses to one frame (level 0 = zstd's default level).
pub fn compress(data: &[u8], level: i32) -> Result<Vec<u8>> {
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().map(|(l, _)| *l) != Some(level) {
            *slot = Some((level, Compressor::new(level).map_err(io_err)?));
        }
        slot.as_mut()
            .expect("just set")
            .1
            .compress(data)
            .map_err(io_err)
    })
}

/// Decodes one frame into exactly `out` (used inside Blosc blocks).
pub fn decompress_into(data: &[u8], out: &mut [u8]) -> Result<usize> {
    with_decompressor(|d| d.decompress_to_buffer(data, out).map_err(io_err))
}

fn with_decompressor<T>(f: impl FnOnce(&mut Decompressor<'static>) -> Result<T>) -> Result<T> {
    DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(Decompressor::new().map_err(io_err)?);
        }
        f(slot.as_mut().expect("just set"))
    })
}

/// Decodes a zstd chunk; frames without a recorded size fall back to streaming.
pub fn decompress(data: &[u8], hint: Option<usize>) -> Result<Vec<u8>> {
    let size = zstd::zstd_safe::get_frame_content_size(data)
        .map_err(|_| corrupt("zstd", "not a zstd frame"))?;
    match size {
        Some(n) if n > MAX_DECODED => Err(corrupt("zstd", format!("frame claims {n} bytes"))),
        Some(n) => {
            let n = n as usize;
            let mut out = alloc_zeroed(0, "zstd")?;
            out.try_reserve_exact(n)
                .map_err(|_| corrupt("zstd", format!("cannot allocate {n} bytes")))?;
            let got =
                with_decompressor(|d| d.decompress_to_buffer(data, &mut out).map_err(io_err))?;
            if got != n {
                return Err(corrupt(
                    "zstd",
                    format!("decoded {got} bytes, frame says {n}"),
                ));
            }
            Ok(out)
        }
        None => {
            let mut out = Vec::with_capacity(hint.unwrap_or(0).min(MAX_DECODED as usize));
            let mut dec = zstd::stream::read::Decoder::new(data).map_err(io_err)?;
            std::io::copy(&mut dec, &mut out).map_err(io_err)?;
            Ok(out)
        }
    }
}
