//! Reused buffers for binary value answers.
//!
//! A binary read fills a buffer of up to one slab and hands it to the HTTP
//! layer, which frees it once sent. Slabs are big enough to be mmapped
//! afresh each time (see `return_big_buffers_to_the_os`), so without reuse
//! every slab costs a page fault and a kernel page clear per 4 KiB — more
//! CPU than reading the chunks into it. The pool keeps a few slab buffers
//! and gets them back when the response body drops them.

use std::sync::{Arc, Mutex};

use bytes::Bytes;

/// At most this many idle buffers are kept: enough for a couple of
/// streaming answers in flight, few enough that idle memory stays small.
const KEEP: usize = 4;

/// Slab-sized buffers for reuse.
pub(crate) struct SlabPool {
    slab_bytes: usize,
    idle: Mutex<Vec<Vec<u8>>>,
}

impl SlabPool {
    pub fn new(slab_bytes: usize) -> Arc<Self> {
        Arc::new(SlabPool {
            slab_bytes,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// A buffer of `n` bytes whose contents are unspecified: the caller
    /// overwrites all of it before it is sent. Requests bigger than a slab,
    /// or much smaller, get a buffer of their own.
    pub fn take(self: &Arc<Self>, n: usize) -> Pooled {
        let pooled = n <= self.slab_bytes && n >= self.slab_bytes / 4;
        let reused = if pooled {
            self.idle.lock().expect("slab pool lock poisoned").pop()
        } else {
            None
        };
        let buf = match reused {
            Some(mut b) => {
                b.truncate(n);
                b.resize(n, 0);
                b
            }
            None if pooled => {
                let mut b = Vec::with_capacity(self.slab_bytes);
                b.resize(n, 0);
                b
            }
            None => vec![0u8; n],
        };
        Pooled {
            buf,
            home: pooled.then(|| self.clone()),
        }
    }
}

/// A buffer that goes back to its pool when dropped.
pub(crate) struct Pooled {
    buf: Vec<u8>,
    home: Option<Arc<SlabPool>>,
}

impl Pooled {
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// The buffer as a response body chunk; it returns to the pool once the
    /// HTTP layer has sent and dropped it.
    pub fn into_bytes(self) -> Bytes {
        Bytes::from_owner(self)
    }
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if let Some(pool) = self.home.take() {
            let mut idle = pool.idle.lock().expect("slab pool lock poisoned");
            if idle.len() < KEEP {
                idle.push(std::mem::take(&mut self.buf));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_and_are_reused() {
        let pool = SlabPool::new(1 << 20);
        let mut a = pool.take(1 << 20);
        a.as_mut_slice().fill(7);
        let ptr = a.as_ref().as_ptr();
        drop(a.into_bytes());
        let b = pool.take(600 << 10);
        assert_eq!(b.as_ref().as_ptr(), ptr, "the idle buffer is reused");
        assert_eq!(b.as_ref().len(), 600 << 10);
        // Small and oversized requests are not pooled.
        assert!(pool.take(10).home.is_none());
        assert!(pool.take(2 << 20).home.is_none());
    }

    #[test]
    fn idle_buffers_are_bounded() {
        let pool = SlabPool::new(1 << 16);
        let held: Vec<_> = (0..KEEP + 3).map(|_| pool.take(1 << 16)).collect();
        drop(held);
        assert_eq!(pool.idle.lock().unwrap().len(), KEEP);
    }
}
