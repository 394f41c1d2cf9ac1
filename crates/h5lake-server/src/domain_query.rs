//! HSDS's domain query (`GET /domains?query=...`, `hsls --query`): a
//! condition over each domain's root-group attributes, in the language of
//! dataset queries. Of the attributes, the scalar numbers and strings are
//! fields of a one-row table the condition is evaluated on; a domain that
//! lacks a field the condition names does not match, nor does a folder.

use h5lake_query::{eval, expr, QueryError};
use h5lake_types::{Datatype, Field, Shape, StrPad};
use serde_json::{Map, Value};

use crate::error::{Result, ServerError};

/// A parsed-once check of the text: a syntax error is the request's fault
/// whatever the domains hold.
pub(crate) fn check_syntax(text: &str) -> Result<()> {
    expr::check_syntax(text).map_err(|e| bad_query(text, &e))
}

fn bad_query(text: &str, e: &QueryError) -> ServerError {
    ServerError::BadRequest(format!("invalid query {text:?}: {e}"))
}

/// Whether the root group's `attributes` (its document's map) satisfy
/// `text`: not when they lack a field it names or their types do not fit
/// it (another domain's may).
///
/// # Errors
/// A syntax error (400).
pub(crate) fn matches(text: &str, attributes: &Map<String, Value>) -> Result<bool> {
    let Some((dtype, row)) = root_row(attributes) else {
        return Ok(false);
    };
    let leaves = h5lake_query::leaves(&dtype);
    let node = match expr::parse_condition(text, &leaves) {
        Ok(node) => node,
        Err(e @ QueryError::Syntax { .. }) => return Err(bad_query(text, &e)),
        Err(_) => return Ok(false),
    };
    let runs = [(0, 1)];
    let rows = eval::Rows {
        data: &row,
        size: row.len(),
        runs: &runs,
    };
    Ok(eval::mask(&node, &leaves, rows).first() == Some(&true))
}

/// The queryable attributes as one compound element: its type and bytes.
/// Strings become fixed-length fields as long as their value.
fn root_row(attributes: &Map<String, Value>) -> Option<(Datatype, Vec<u8>)> {
    let mut fields = Vec::new();
    let mut row = Vec::new();
    for (name, attr) in attributes {
        let scalar = Shape::from_json(&attr["shape"]).is_ok_and(|s| matches!(s, Shape::Scalar));
        let Ok(t) = Datatype::from_json(&attr["type"]) else {
            continue;
        };
        if !scalar {
            continue;
        }
        let v = attr.get("value").unwrap_or(&Value::Null);
        let (t, bytes) = match &t {
            Datatype::Integer { .. } | Datatype::Float { .. } => {
                let Ok(b) = h5lake_types::json_to_element(&t, v) else {
                    continue;
                };
                (t, b)
            }
            Datatype::String { charset, .. } => {
                let Some(text) = h5lake_types::bytes_of(v) else {
                    continue;
                };
                let cut = text.iter().position(|&b| b == 0).unwrap_or(text.len());
                let t = Datatype::String {
                    length: Some(cut.max(1)),
                    charset: *charset,
                    pad: StrPad::NullPad,
                };
                let mut b = text[..cut].to_vec();
                b.resize(cut.max(1), 0);
                (t, b)
            }
            _ => continue,
        };
        fields.push(Field {
            name: name.clone(),
            dtype: t,
            offset: row.len(),
        });
        row.extend_from_slice(&bytes);
    }
    if fields.is_empty() {
        return None;
    }
    let size = row.len();
    Some((Datatype::Compound { fields, size }, row))
}
