//! Object tokens: the 32 hex digits of an h5lake id are exactly the 16
//! bytes of an `H5O_token_t`; the kind (g/d/t) is found again by looking.

use h5lake_engine::Domain;

use crate::error::{Result, VolError};
use crate::sys::H5O_token_t;

/// The token of an h5lake id.
pub fn of_id(id: &str) -> Result<H5O_token_t> {
    let hex: Vec<u8> = id.bytes().skip(2).filter(|b| *b != b'-').collect();
    if hex.len() != 32 {
        return Err(VolError::Invalid(format!(
            "{id:?} is not an h5lake object id"
        )));
    }
    let mut t = H5O_token_t { __data: [0; 16] };
    for (i, pair) in hex.chunks(2).enumerate() {
        let s = std::str::from_utf8(pair).map_err(|_| VolError::Invalid(id.into()))?;
        t.__data[i] = u8::from_str_radix(s, 16).map_err(|_| VolError::Invalid(id.into()))?;
    }
    Ok(t)
}

fn hex_of(t: &H5O_token_t) -> String {
    let h: String = t.__data.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..16],
        &h[16..20],
        &h[20..26],
        &h[26..32]
    )
}

/// The id a token names in `dom`.
pub fn id_of(dom: &Domain, t: &H5O_token_t) -> Result<String> {
    let rest = hex_of(t);
    for kind in ["g", "d", "t"] {
        let id = format!("{kind}-{rest}");
        if dom.get_doc(&id).is_ok() {
            return Ok(id);
        }
    }
    Err(VolError::NotFound(format!("no object with token {rest}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_tokens() {
        let id = "g-0123abcd-89ef0123-4567-89abcd-ef0123";
        let t = of_id(id).unwrap();
        assert_eq!(t.__data[0], 0x01);
        assert_eq!(format!("g-{}", hex_of(&t)), id);
        assert!(of_id("g-123").is_err());
    }
}
