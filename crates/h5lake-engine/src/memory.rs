//! Memory a front end lets one call spend on documents.
//!
//! A document (a group's links and attributes, say) is read and parsed
//! whole, and a big one costs many times its size once parsed. A front end
//! that serves many callers at once (the REST server) bounds that memory:
//! it opens a [`Scope`] around each caller's work and, within it,
//! [`install`]s a [`Gate`] that is asked before each document is parsed or
//! used ([`hold`]). The gate may wait for memory to come free or refuse.
//! Without a gate (the Python API, the VOL connector) nothing is asked.
//!
//! The gate is per thread, like [`crate::cancel`]'s flag: installing one
//! for one caller never holds another's work.

use std::cell::RefCell;
use std::sync::Arc;

use crate::Result;

/// What one parsed JSON value costs in memory (a `serde_json::Value` with
/// its share of the map or vector holding it): what the count of values in
/// a document's text is multiplied by.
pub const JSON_VALUE_BYTES: usize = 96;

/// Asked before a call holds a document.
pub trait Gate: Send + Sync {
    /// Lets the call hold the document stored under `key`, which costs
    /// `bytes` parsed, until the call ends (asked again for a document
    /// already held: answer at once).
    ///
    /// # Errors
    /// The memory cannot be had: [`crate::EngineError::TooLarge`] when it
    /// never could, [`crate::EngineError::Busy`] when others hold it.
    fn hold(&self, key: &str, bytes: usize) -> Result<()>;

    /// [`Gate::hold`] without waiting: asked by work the call handed to
    /// the engine's pool threads, which must not block (the gate may wait
    /// for what only other pool work frees).
    ///
    /// # Errors
    /// As [`Gate::hold`]; [`crate::EngineError::Busy`] rather than a wait.
    fn hold_now(&self, key: &str, bytes: usize) -> Result<()> {
        self.hold(key, bytes)
    }
}

/// A caller's gate as its pool work asks it: never waiting.
struct NoWait(Arc<dyn Gate>);

impl Gate for NoWait {
    fn hold(&self, key: &str, bytes: usize) -> Result<()> {
        self.0.hold_now(key, bytes)
    }
}

thread_local! {
    /// `None`: no scope open; `Some(None)`: a scope without a gate.
    static GATE: RefCell<Option<Option<Arc<dyn Gate>>>> = const { RefCell::new(None) };
}

/// A caller's work on this thread: a gate installed within it is removed
/// when it ends.
pub struct Scope(Option<Option<Arc<dyn Gate>>>);

impl Scope {
    /// Opens a scope on this thread.
    #[must_use]
    pub fn open() -> Self {
        Scope(GATE.with(|g| g.replace(Some(None))))
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        let previous = self.0.take();
        GATE.with(|g| *g.borrow_mut() = previous);
    }
}

/// Installs `gate` for the rest of the scope open on this thread; `false`
/// (and nothing installed) outside any scope, so that a gate that may wait
/// is never left on a thread that must not block.
pub fn install(gate: Arc<dyn Gate>) -> bool {
    GATE.with(|g| match &mut *g.borrow_mut() {
        Some(slot) => {
            *slot = Some(gate);
            true
        }
        None => false,
    })
}

/// The gate of the scope open on this thread, for [`carried`] into work
/// it hands to other threads.
pub fn current() -> Option<Arc<dyn Gate>> {
    GATE.with(|g| g.borrow().clone().flatten())
}

/// Runs `f`, work a call handed to this thread, with the call's `gate`
/// (from [`current`]) asked, without waiting, for the documents it holds;
/// with no gate when the call had none, whatever the thread had (a pool
/// thread inside another call's work may run this one's tasks).
pub fn carried<T>(gate: &Option<Arc<dyn Gate>>, f: impl FnOnce() -> T) -> T {
    let _scope = Scope::open();
    if let Some(gate) = gate {
        install(Arc::new(NoWait(gate.clone())));
    }
    f()
}

/// Asks this thread's gate, if any, to let the call hold the document
/// `key` of `bytes` (see [`Gate::hold`]).
///
/// # Errors
/// The gate's refusal.
pub fn hold(key: &str, bytes: usize) -> Result<()> {
    match current() {
        Some(gate) => gate.hold(key, bytes),
        None => Ok(()),
    }
}

/// What the JSON `text` costs once parsed: its bytes and
/// [`JSON_VALUE_BYTES`] for each value it holds.
pub fn json_cost(text: &[u8]) -> usize {
    text.len()
        .saturating_add(count_json_values(text).saturating_mul(JSON_VALUE_BYTES))
}

/// What the parsed document `v` costs, as [`json_cost`] counts it.
pub fn value_cost(v: &serde_json::Value) -> usize {
    use serde_json::Value;
    JSON_VALUE_BYTES
        + match v {
            Value::String(s) => s.len(),
            Value::Array(a) => a.iter().map(value_cost).sum(),
            // (A key is a string value of the text too.)
            Value::Object(m) => m
                .iter()
                .map(|(k, v)| JSON_VALUE_BYTES + k.len() + value_cost(v))
                .sum(),
            _ => 0,
        }
}

/// How many JSON values `text` holds (numbers, strings, literals, arrays
/// and objects), counted without parsing it: what decides whether parsing
/// it may go ahead.
pub fn count_json_values(text: &[u8]) -> usize {
    let mut n = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut in_scalar = false;
    for &b in text {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                in_scalar = false;
                n += 1;
            }
            b'[' | b'{' => {
                in_scalar = false;
                n += 1;
            }
            b',' | b']' | b'}' | b':' => in_scalar = false,
            b if b.is_ascii_whitespace() => in_scalar = false,
            _ => {
                if !in_scalar {
                    n += 1;
                    in_scalar = true;
                }
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn counting_json_values() {
        assert_eq!(count_json_values(b""), 0);
        assert_eq!(count_json_values(b"0"), 1);
        assert_eq!(count_json_values(b"[0,0, 12 ,3.5e7]"), 5);
        assert_eq!(count_json_values(br#"{"value": [1, "a,b\"]", null]}"#), 6);
        assert_eq!(count_json_values(br#"[[1,2],[3,4]]"#), 7);
    }

    struct Counting(AtomicUsize);

    impl Gate for Counting {
        fn hold(&self, _key: &str, bytes: usize) -> Result<()> {
            self.0.fetch_add(bytes, Ordering::Relaxed);
            Ok(())
        }
    }

    #[test]
    fn a_gate_is_asked_only_within_the_scope_it_was_installed_in() {
        let gate = Arc::new(Counting(AtomicUsize::new(0)));
        assert!(!install(gate.clone()), "no scope, no gate");
        hold("k", 5).unwrap();
        {
            let _scope = Scope::open();
            assert!(install(gate.clone()));
            hold("k", 7).unwrap();
        }
        hold("k", 11).unwrap();
        assert_eq!(gate.0.load(Ordering::Relaxed), 7);
    }

    struct Waits;

    impl Gate for Waits {
        fn hold(&self, _key: &str, _bytes: usize) -> Result<()> {
            panic!("work on another thread must not wait")
        }

        fn hold_now(&self, _key: &str, bytes: usize) -> Result<()> {
            if bytes > 10 {
                return Err(crate::EngineError::Busy("held".into()));
            }
            Ok(())
        }
    }

    #[test]
    fn work_handed_to_another_thread_asks_the_callers_gate_without_waiting() {
        let _scope = Scope::open();
        assert!(install(Arc::new(Waits)));
        let gate = current();
        std::thread::spawn(move || {
            hold("k", 100).unwrap();
            carried(&gate, || {
                hold("k", 5).unwrap();
                assert!(hold("k", 100).is_err());
            });
            hold("k", 100).unwrap();
        })
        .join()
        .unwrap();
    }
}
