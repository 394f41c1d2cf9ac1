//! Read buffers reused from chunk to chunk on each thread: fresh memory
//! costs a page fault a page, on every chunk read.

/// A read buffer that goes back to its thread's pool when dropped (on
/// whichever thread drops it, also as the owner of `Bytes` sliced from
/// it), so that the next read of about its size reuses pages already
/// faulted in.
pub(crate) struct PooledBuf(pub(crate) Vec<u8>);

thread_local! {
    static POOL: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl PooledBuf {
    /// The pool's buffer as it is (its length and contents are the last
    /// read's: whoever fills it sizes it).
    pub(crate) fn kept() -> Self {
        PooledBuf(crate::scratch::take(&POOL))
    }

    /// `len` bytes (their contents are whatever the pool held: to be
    /// overwritten whole).
    pub(crate) fn take(len: usize) -> Self {
        let mut buf = Self::kept();
        // Only growth is zeroed.
        buf.0.resize(len.max(buf.0.len()), 0);
        buf.0.truncate(len);
        buf
    }
}

impl AsRef<[u8]> for PooledBuf {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for PooledBuf {
    fn drop(&mut self) {
        crate::scratch::give_back(&POOL, std::mem::take(&mut self.0));
    }
}
