//! HDF5 Fletcher-32 (filter 3).
//!
//! libhdf5 (`H5_checksum_fletcher32`) sums 16-bit words read big-endian
//! (first byte high), pads an odd trailing byte as the high half of a last
//! word, and the filter appends the 32-bit result little-endian
//! (`UINT32ENCODE`). On read it also accepts the value with the bytes of each
//! 16-bit half swapped: libhdf5 before 1.6.3 wrote that on little-endian hosts.
//! The golden vectors in tests/data confirm the byte orders.

use crate::{CodecError, Result};

/// The checksum libhdf5 computes over `data`.
pub fn checksum(data: &[u8]) -> u32 {
    let mut sum1: u32 = 0;
    let mut sum2: u32 = 0;
    // 360 words keep both sums below 2^32 before folding, as in libhdf5; the
    // fold order below is libhdf5's so even the 0/0xffff edge cases agree.
    let words = data.chunks_exact(2);
    let odd = words.remainder().first().copied();
    let pairs = &data[..data.len() & !1];
    for block in pairs.chunks(720) {
        for w in block.chunks_exact(2) {
            sum1 += u32::from(u16::from_be_bytes([w[0], w[1]]));
            sum2 += sum1;
        }
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    if let Some(last) = odd {
        sum1 += u32::from(last) << 8;
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    (sum2 << 16) | sum1
}

/// Appends the checksum to the chunk.
pub fn encode(mut data: Vec<u8>) -> Vec<u8> {
    let c = checksum(&data);
    data.extend_from_slice(&c.to_le_bytes());
    data
}

/// Checks and strips the trailing checksum (borrowing: no copy).
pub fn decode(stored: &[u8]) -> Result<&[u8]> {
    if stored.len() < 4 {
        return Err(CodecError::Corrupt {
            filter: "fletcher32",
            reason: format!("{} bytes is too short to hold a checksum", stored.len()),
        });
    }
    let (payload, tail) = stored.split_at(stored.len() - 4);
    if verify(payload, tail) {
        Ok(payload)
    } else {
        Err(CodecError::Checksum)
    }
}

/// Whether `tail` holds the checksum of `payload` in either accepted byte order.
pub fn verify(payload: &[u8], tail: &[u8]) -> bool {
    let stored = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    let c = checksum(payload);
    let b = c.to_le_bytes();
    let legacy = u32::from_le_bytes([b[1], b[0], b[3], b[2]]);
    stored == c || stored == legacy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_roundtrip() {
        assert_eq!(checksum(&[]), 0);
        let enc = encode(vec![1, 2, 3]);
        assert_eq!(enc.len(), 7);
        assert_eq!(decode(&enc).unwrap(), &[1, 2, 3]);
        let mut bad = enc.clone();
        bad[0] ^= 1;
        assert!(matches!(decode(&bad), Err(CodecError::Checksum)));
        assert!(decode(&[1, 2]).is_err());
    }

    #[test]
    fn long_input_folds_like_hdf5() {
        // All-0xff words push both sums through many folds.
        let data = vec![0xffu8; 100_001];
        let c = checksum(&data);
        assert_eq!(decode(&encode(data.clone())).unwrap(), &data[..]);
        assert_ne!(c, 0);
    }
}
