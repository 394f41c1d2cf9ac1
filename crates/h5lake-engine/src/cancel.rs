//! Cooperative cancellation of long data-path calls.
//!
//! A front end that wants to stop a call (the Python bindings on Ctrl-C)
//! runs it inside [`with_cancel`]; chunk tasks check the flag before each
//! chunk and the call returns [`crate::EngineError::Interrupted`]. The flag is
//! per call (carried in a thread-local of the calling thread and handed to
//! the pool's tasks), so stopping one call never disturbs another.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

thread_local! {
    static CURRENT: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Runs `f` so that engine calls it makes stop early once `flag` is set.
pub fn with_cancel<T>(flag: Arc<AtomicBool>, f: impl FnOnce() -> T) -> T {
    within(Some(flag), f)
}

/// Runs `f` with `flag` as the thread's cancellation flag (`None`: none,
/// whatever the thread had), put back as it was when `f` ends or panics
/// (a pool thread runs tasks of many calls).
pub(crate) fn within<T>(flag: Option<Arc<AtomicBool>>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Arc<AtomicBool>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = previous);
        }
    }
    let _restore = Restore(CURRENT.with(|c| c.replace(flag)));
    f()
}

/// The calling thread's cancellation flag, if any.
pub fn current() -> Option<Arc<AtomicBool>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Whether `flag` asks to stop.
pub fn is_set(flag: &Option<Arc<AtomicBool>>) -> bool {
    flag.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
}
