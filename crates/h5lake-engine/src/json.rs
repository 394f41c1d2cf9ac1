//! Reading stored JSON documents.
//!
//! HSDS is written in Python, whose `json` module writes non-finite floats as
//! the bare tokens `NaN`, `Infinity` and `-Infinity` (a fill value of NaN is
//! common). Strict JSON parsers reject them, so documents that fail to parse
//! are retried with those tokens turned into the strings h5lake itself uses
//! for non-finite values (`"NaN"`, `"Infinity"`, `"-Infinity"`).

use serde_json::Value;

use crate::{EngineError, Result};

/// Parses a stored document, tolerating Python's non-finite float tokens.
///
/// # Errors
/// [`EngineError::Corrupt`] naming `key` when the bytes are not JSON.
pub fn parse_doc(bytes: &[u8], key: &str) -> Result<Value> {
    match serde_json::from_slice(bytes) {
        Ok(v) => Ok(v),
        Err(first) => {
            let fixed = quote_non_finite(bytes);
            serde_json::from_slice(&fixed)
                .map_err(|_| EngineError::Corrupt(format!("{key}: {first}")))
        }
    }
}

fn quote_non_finite(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len() + 16);
    let mut i = 0;
    let mut in_str = false;
    while i < src.len() {
        let c = src[i];
        if in_str {
            out.push(c);
            if c == b'\\' && i + 1 < src.len() {
                out.push(src[i + 1]);
                i += 2;
                continue;
            }
            if c == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        if c == b'"' {
            in_str = true;
            out.push(c);
            i += 1;
            continue;
        }
        let rest = &src[i..];
        let token = [&b"-Infinity"[..], b"Infinity", b"NaN"]
            .into_iter()
            .find(|t| rest.starts_with(t));
        match token {
            Some(t) => {
                out.push(b'"');
                out.extend_from_slice(t);
                out.push(b'"');
                i += t.len();
            }
            None => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_python_non_finite_tokens() {
        let v = parse_doc(
            br#"{"fillValue": NaN, "s": "NaN and Infinity", "l": [-Infinity, Infinity, 1.5]}"#,
            "k",
        )
        .unwrap();
        assert_eq!(v["fillValue"], "NaN");
        assert_eq!(v["s"], "NaN and Infinity");
        assert_eq!(v["l"][0], "-Infinity");
        assert_eq!(v["l"][2], 1.5);
        assert!(parse_doc(b"{not json", "k").is_err());
    }
}
