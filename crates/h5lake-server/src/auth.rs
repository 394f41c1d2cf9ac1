//! HTTP Basic authentication against an HSDS `passwd.txt`, and HSDS's ACL
//! rules: the admin user may do anything; otherwise the user's own ACL entry
//! decides (a `false` there is final), then the `default` entry.

use std::collections::HashMap;
use std::path::Path;

use axum::http::HeaderMap;
use base64::Engine;
use serde_json::Value;

use crate::error::{Result, ServerError};

/// The user name anonymous requests act as (when allowed), and the ACL entry
/// that applies to everyone without one of their own.
pub const DEFAULT_USER: &str = "default";

/// The six permissions of an HSDS ACL entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Create,
    Read,
    Update,
    Delete,
    ReadAcl,
    UpdateAcl,
}

impl Action {
    pub fn key(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Read => "read",
            Action::Update => "update",
            Action::Delete => "delete",
            Action::ReadAcl => "readACL",
            Action::UpdateAcl => "updateACL",
        }
    }

    pub const ALL: [Action; 6] = [
        Action::Create,
        Action::Read,
        Action::Update,
        Action::Delete,
        Action::ReadAcl,
        Action::UpdateAcl,
    ];
}

/// Parses HSDS's password file format: `user:password` lines; blank lines
/// and `#` comments are ignored.
///
/// # Errors
/// An unreadable file, or a line without `:`.
pub fn load_passwords(path: &Path) -> Result<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ServerError::Startup(format!("cannot read password file {}: {e}", path.display()))
    })?;
    parse_passwords(&text)
}

pub(crate) fn parse_passwords(text: &str) -> Result<HashMap<String, String>> {
    let mut users = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (user, pass) = line.split_once(':').ok_or_else(|| {
            ServerError::Startup(format!(
                "password file line {}: expected user:password",
                n + 1
            ))
        })?;
        users.insert(user.trim().to_string(), pass.trim().to_string());
    }
    Ok(users)
}

/// The `user:password` of a Basic `Authorization` header, if there is one.
///
/// # Errors
/// A header that is present but not valid Basic credentials.
pub fn basic_credentials(headers: &HeaderMap) -> Result<Option<(String, String)>> {
    let Some(value) = headers.get(axum::http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    let bad = || ServerError::Unauthorized("malformed Authorization header".into());
    let value = value.to_str().map_err(|_| bad())?;
    let (scheme, token) = value.trim().split_once(' ').ok_or_else(bad)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(ServerError::Unauthorized(format!(
            "unsupported authorization scheme {scheme:?} (use HTTP Basic)"
        )));
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(token.trim())
        .map_err(|_| bad())?;
    let text = String::from_utf8(decoded).map_err(|_| bad())?;
    let (user, pass) = text.split_once(':').ok_or_else(bad)?;
    Ok(Some((user.to_string(), pass.to_string())))
}

/// Compares without stopping at the first difference, so that response
/// times do not reveal how much of a password was right.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Who sent the request: an authenticated user name, or [`DEFAULT_USER`]
/// for anonymous requests when the server allows them.
///
/// # Errors
/// [`ServerError::Unauthorized`] for missing (unless allowed) or wrong credentials.
pub fn authenticate(
    headers: &HeaderMap,
    users: &HashMap<String, String>,
    allow_noauth: bool,
) -> Result<String> {
    match basic_credentials(headers)? {
        Some((user, pass)) => match users.get(&user) {
            Some(expected) if same(expected, &pass) => Ok(user),
            _ => Err(ServerError::Unauthorized(
                "invalid user name or password".into(),
            )),
        },
        None if allow_noauth => Ok(DEFAULT_USER.to_string()),
        None => Err(ServerError::Unauthorized(
            "authentication required (HTTP Basic)".into(),
        )),
    }
}

/// Checks `action` for `user` against a domain (or folder) document's ACLs.
///
/// # Errors
/// [`ServerError::Forbidden`] when the ACLs do not grant it.
pub fn acl_check(domain_doc: &Value, action: Action, user: &str, admin: &str) -> Result<()> {
    if user == admin {
        return Ok(());
    }
    let acls = domain_doc.get("acls");
    let allowed = |name: &str| {
        acls.and_then(|a| a.get(name))
            .map(|acl| acl.get(action.key()).and_then(Value::as_bool) == Some(true))
    };
    let ok = match allowed(user) {
        Some(decided) => decided,
        None => allowed(DEFAULT_USER).unwrap_or(false),
    };
    if ok {
        Ok(())
    } else {
        Err(ServerError::Forbidden(format!(
            "action {} not permitted for user {user}",
            action.key()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn password_file() {
        let u = parse_passwords("# comment\n\nadmin:admin\n test_user1 : test \n").unwrap();
        assert_eq!(u["admin"], "admin");
        assert_eq!(u["test_user1"], "test");
        assert!(parse_passwords("nocolon\n").is_err());
    }

    #[test]
    fn acls() {
        let d = json!({"acls": {
            "u1": {"read": true, "update": false},
            "default": {"read": true, "update": true}}});
        assert!(acl_check(&d, Action::Read, "u1", "admin").is_ok());
        // the user's own "false" is final, even when default allows it
        assert!(acl_check(&d, Action::Update, "u1", "admin").is_err());
        assert!(acl_check(&d, Action::Update, "u2", "admin").is_ok());
        assert!(acl_check(&d, Action::Delete, "u2", "admin").is_err());
        assert!(acl_check(&d, Action::Delete, "admin", "admin").is_ok());
    }

    #[test]
    fn basic_header() {
        let mut h = HeaderMap::new();
        h.insert("authorization", "Basic dTE6cHc=".parse().unwrap());
        assert_eq!(
            basic_credentials(&h).unwrap(),
            Some(("u1".into(), "pw".into()))
        );
        h.insert("authorization", "Basic !!!".parse().unwrap());
        assert!(basic_credentials(&h).is_err());
    }
}
