//! HSDS object ids and the keys they map to (object-store schema v2).
//!
//! An id is `<c>-<h8>-<h8>-<h4>-<h6>-<h6>` (`c` = `g`, `d` or `t`). All objects
//! of one domain share the first 16 hex digits, which name the domain's
//! directory `db/<h8>-<h8>/`; the root group's last 16 digits are the first 16
//! each rotated by 8, which is how HSDS tells a root group from the others.

use rand::RngCore;

use crate::{EngineError, Result};

/// The kind of object an id names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjKind {
    Group,
    Dataset,
    Datatype,
}

impl ObjKind {
    fn letter(self) -> char {
        match self {
            ObjKind::Group => 'g',
            ObjKind::Dataset => 'd',
            ObjKind::Datatype => 't',
        }
    }

    fn doc_name(self) -> &'static str {
        match self {
            ObjKind::Group => ".group.json",
            ObjKind::Dataset => ".dataset.json",
            ObjKind::Datatype => ".datatype.json",
        }
    }
}

/// `n` random hex digits, from the operating system each time: a
/// generator kept by the thread would hand a process forked after its
/// parent made ids the parent's next ones (two objects, one id).
fn hex(n: usize) -> String {
    let mut bytes = vec![0u8; n.div_ceil(2)];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    bytes
        .iter()
        .flat_map(|b| [b >> 4, b & 15])
        .take(n)
        .map(|d| std::char::from_digit(u32::from(d), 16).unwrap())
        .collect()
}

fn rotate8(s: &str) -> String {
    s.chars()
        .map(|c| std::char::from_digit((c.to_digit(16).unwrap_or(0) + 8) % 16, 16).unwrap())
        .collect()
}

fn dash(s: &str, parts: &[usize]) -> String {
    let mut out = String::new();
    let mut i = 0;
    for (k, &n) in parts.iter().enumerate() {
        if k > 0 {
            out.push('-');
        }
        out.push_str(&s[i..i + n]);
        i += n;
    }
    out
}

/// A fresh root-group id (and so a fresh domain directory).
pub fn new_root_id() -> String {
    let first = hex(16);
    format!(
        "g-{}-{}",
        dash(&first, &[8, 8]),
        dash(&rotate8(&first), &[4, 6, 6])
    )
}

/// A fresh id of `kind` in the domain of `root_id`.
pub fn new_id(kind: ObjKind, root_id: &str) -> String {
    let first16 = &root_id[2..19];
    format!(
        "{}-{}-{}",
        kind.letter(),
        first16,
        dash(&hex(16), &[4, 6, 6])
    )
}

/// Parsed view of an id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjId<'a> {
    pub kind: ObjKind,
    /// `h8-h8`: the domain directory.
    pub domain_part: &'a str,
    /// `h4-h6-h6`.
    pub rest: &'a str,
}

/// Parses and checks an id.
///
/// # Errors
/// [`EngineError::NotFound`] for anything that is not a well-formed id, so
/// that bad ids from clients read as "no such object".
pub fn parse_id(id: &str) -> Result<ObjId<'_>> {
    let bad = || EngineError::NotFound(format!("invalid object id {id:?}"));
    if id.len() != 38 || !id.is_ascii() {
        return Err(bad());
    }
    let kind = match &id[..2] {
        "g-" => ObjKind::Group,
        "d-" => ObjKind::Dataset,
        "t-" => ObjKind::Datatype,
        _ => return Err(bad()),
    };
    let body = &id[2..];
    let groups: Vec<&str> = body.split('-').collect();
    let lens: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    if lens != [8, 8, 4, 6, 6]
        || !groups
            .iter()
            .all(|g| g.chars().all(|c| c.is_ascii_hexdigit()))
    {
        return Err(bad());
    }
    Ok(ObjId {
        kind,
        domain_part: &body[..17],
        rest: &body[18..],
    })
}

/// Whether `id` is a root-group id (last 16 digits = first 16 rotated by 8).
pub fn is_root_id(id: &str) -> bool {
    parse_id(id).is_ok_and(|p| {
        p.kind == ObjKind::Group
            && rotate8(&p.domain_part.replace('-', "")) == p.rest.replace('-', "")
    })
}

/// `db/<h8>-<h8>/` for an object of that domain.
pub fn domain_db_prefix(root_id: &str) -> Result<String> {
    Ok(format!("db/{}/", parse_id(root_id)?.domain_part))
}

/// Key of the object's JSON document.
///
/// # Errors
/// Malformed ids.
pub fn doc_key(id: &str) -> Result<String> {
    let p = parse_id(id)?;
    if is_root_id(id) {
        return Ok(format!("db/{}/.group.json", p.domain_part));
    }
    Ok(format!(
        "db/{}/{}/{}/{}",
        p.domain_part,
        p.kind.letter(),
        p.rest,
        p.kind.doc_name()
    ))
}

/// Directory prefix holding a (non-root) object's document and chunks.
///
/// # Errors
/// Malformed ids.
pub fn object_prefix(id: &str) -> Result<String> {
    let p = parse_id(id)?;
    Ok(format!(
        "db/{}/{}/{}/",
        p.domain_part,
        p.kind.letter(),
        p.rest
    ))
}

/// Key of one chunk: chunk coordinates joined by `_`.
pub fn chunk_key(prefix: &str, coords: &[u64]) -> String {
    let mut k = String::with_capacity(prefix.len() + coords.len() * 4);
    k.push_str(prefix);
    for (i, c) in coords.iter().enumerate() {
        if i > 0 {
            k.push('_');
        }
        k.push_str(&c.to_string());
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hsds_fixture_ids_map_to_fixture_keys() {
        let root = "g-e5c9a50a-2435de48-6d41-2d82ac-bd56c0";
        assert!(is_root_id(root));
        assert_eq!(doc_key(root).unwrap(), "db/e5c9a50a-2435de48/.group.json");
        let d = "d-e5c9a50a-2435de48-61fa-880598-32c3b3";
        assert!(!is_root_id(d));
        assert_eq!(
            doc_key(d).unwrap(),
            "db/e5c9a50a-2435de48/d/61fa-880598-32c3b3/.dataset.json"
        );
        assert_eq!(
            chunk_key(&object_prefix(d).unwrap(), &[0, 1, 1]),
            "db/e5c9a50a-2435de48/d/61fa-880598-32c3b3/0_1_1"
        );
    }

    #[test]
    fn fresh_ids_are_well_formed() {
        let root = new_root_id();
        assert!(is_root_id(&root), "{root}");
        let d = new_id(ObjKind::Dataset, &root);
        assert_eq!(
            parse_id(&d).unwrap().domain_part,
            parse_id(&root).unwrap().domain_part
        );
        assert!(!is_root_id(&d));
        assert!(parse_id("g-zz").is_err());
        assert!(parse_id("x-e5c9a50a-2435de48-6d41-2d82ac-bd56c0").is_err());
    }
}
