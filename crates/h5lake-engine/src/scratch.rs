//! Per-thread buffers reused from chunk to chunk: fresh memory costs a page
//! fault a page on every chunk. A thread keeps a buffer between uses only
//! up to [`KEEP_MAX_BYTES`]: the engine's pool threads live as long as the
//! process, and a server's blocking threads run reads too, so keeping every
//! buffer would hold a chunk-sized allocation per thread per kind of use
//! long after the read that needed it (128 MiB chunks, dozens of threads).

use std::cell::RefCell;
use std::thread::LocalKey;

/// Largest buffer a thread keeps for its next use; bigger ones are freed
/// once used.
pub(crate) const KEEP_MAX_BYTES: usize = 16 << 20;

/// A per-thread buffer slot.
pub(crate) type Slot = LocalKey<RefCell<Vec<u8>>>;

/// Takes the thread's buffer from `slot` (empty when it has none).
pub(crate) fn take(slot: &'static Slot) -> Vec<u8> {
    slot.try_with(|c| std::mem::take(&mut *c.borrow_mut()))
        .unwrap_or_default()
}

/// Gives `buf` back to `slot` for the next use on this thread, unless it
/// is bigger than a thread keeps or smaller than what the slot holds.
pub(crate) fn give_back(slot: &'static Slot, buf: Vec<u8>) {
    if buf.capacity() > KEEP_MAX_BYTES {
        return;
    }
    // `try_with`: during a thread's teardown the slot may be gone.
    let _ = slot.try_with(|c| {
        let mut kept = c.borrow_mut();
        if buf.capacity() >= kept.capacity() {
            *kept = buf;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static SLOT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }

    #[test]
    fn small_buffers_are_kept_and_big_ones_freed() {
        give_back(&SLOT, vec![1u8; 1 << 10]);
        assert_eq!(take(&SLOT).len(), 1 << 10);
        give_back(&SLOT, vec![0u8; KEEP_MAX_BYTES + 1]);
        assert_eq!(take(&SLOT).capacity(), 0);
    }
}
