//! 410 Gone for what was deleted. HSDS answers a request for a domain,
//! object, link or attribute deleted through it with 410, not 404 (it
//! remembers deletions in memory, so after a restart they are 404 again);
//! clients tell "deleted" from "never there" by it. This server does the
//! same: each deletion is remembered (the latest [`CAPACITY`], so that no
//! stream of deletions grows memory past a bound), and a 404 answer to a
//! request about one of them becomes 410.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ServerError;
use crate::App;

/// Deletions remembered at most (oldest forgotten first).
pub(crate) const CAPACITY: usize = 100_000;

/// What was deleted, as digests of keys from [`Deleted`]: 16 bytes each
/// whatever the length of a name, so that the bound on their number bounds
/// their memory.
#[derive(Default)]
pub(crate) struct Tombstones(Mutex<(HashSet<u128>, VecDeque<u128>)>);

/// A 128-bit digest of `key` (two keyed SipHashes; a collision would only
/// turn one 404 into a 410).
fn digest(key: &str) -> u128 {
    use std::hash::{Hash, Hasher};
    let half = |salt: u8| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        salt.hash(&mut h);
        key.hash(&mut h);
        h.finish()
    };
    (u128::from(half(1)) << 64) | u128::from(half(2))
}

/// The key of one deleted thing.
pub(crate) enum Deleted<'a> {
    Domain(&'a str),
    Object(&'a str),
    /// A link (`"links"`) or attribute (`"attributes"`) of an object.
    Member(&'a str, &'a str, &'a str),
}

impl Deleted<'_> {
    fn key(&self) -> String {
        match self {
            Deleted::Domain(d) => format!("d {d}"),
            Deleted::Object(id) => format!("o {id}"),
            Deleted::Member(id, kind, name) => format!("m {id}/{kind}/{name}"),
        }
    }
}

impl Tombstones {
    pub fn note(&self, what: Deleted<'_>) {
        let key = digest(&what.key());
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (set, order) = &mut *g;
        if set.insert(key) {
            order.push_back(key);
            while order.len() > CAPACITY {
                if let Some(old) = order.pop_front() {
                    set.remove(&old);
                }
            }
        }
    }

    /// Forgets a deletion: the thing was made again.
    pub fn forget(&self, what: Deleted<'_>) {
        let key = digest(&what.key());
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (set, order) = &mut *g;
        if set.remove(&key) {
            order.retain(|k| *k != key);
        }
    }

    fn holds(&self, key: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .contains(&digest(key))
    }
}

/// The keys a request is about: its domain, and the object, link or
/// attribute its path names.
fn keys_of(path: &str, query: &str, headers: &HeaderMap) -> Vec<String> {
    let mut keys = Vec::new();
    let domain = query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == "domain" || *k == "host")
        .map(|(_, v)| decode(&v.replace('+', " ")))
        .or_else(|| {
            headers
                .get("x-hdf-domain")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        });
    if let Some(d) = domain.and_then(|d| crate::request::domain_path(&d).ok()) {
        keys.push(Deleted::Domain(&d).key());
    }
    let parts: Vec<String> = path
        .split('/')
        .filter(|p| !p.is_empty())
        .map(decode)
        .collect();
    if let [coll, id, rest @ ..] = parts.as_slice() {
        if matches!(coll.as_str(), "groups" | "datasets" | "datatypes") {
            keys.push(Deleted::Object(id).key());
            if let [kind, name, ..] = rest {
                if kind == "links" || kind == "attributes" {
                    keys.push(Deleted::Member(id, kind, name).key());
                }
            }
        }
    }
    keys
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// Middleware: a 404 about something deleted through this server is 410.
pub(crate) async fn gone_for_deleted(
    State(app): State<Arc<App>>,
    req: Request,
    next: Next,
) -> Response {
    // (Reads and deletions; a write that finds nothing is not about what
    // was deleted, and one that re-creates it succeeds.)
    let asks = matches!(*req.method(), Method::GET | Method::HEAD | Method::DELETE);
    let keys = if asks {
        keys_of(
            req.uri().path(),
            req.uri().query().unwrap_or(""),
            req.headers(),
        )
    } else {
        Vec::new()
    };
    let rsp = next.run(req).await;
    if rsp.status() == StatusCode::NOT_FOUND && keys.iter().any(|k| app.gone.holds(k)) {
        return ServerError::Gone("it was deleted".into()).into_response();
    }
    rsp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_name_their_domain_object_and_member() {
        let keys = keys_of(
            "/groups/g-1/links/a%20b",
            "domain=%2Fhome%2Fu%2Ff.h5&x=1",
            &HeaderMap::new(),
        );
        assert_eq!(keys, ["d /home/u/f.h5", "o g-1", "m g-1/links/a b"]);
        let t = Tombstones::default();
        for i in 0..CAPACITY + 5 {
            t.note(Deleted::Object(&i.to_string()));
        }
        assert!(!t.holds("o 0") && t.holds(&format!("o {}", CAPACITY + 4)));
    }
}
