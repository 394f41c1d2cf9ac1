use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use h5lake_engine::EngineError;
use h5lake_store::StoreError;
use thiserror::Error;

/// Everything a request (or starting the server) can fail with, mapped once
/// to an HTTP status in [`ServerError::status`].
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ServerError {
    /// Malformed input: JSON, selections, ids, domain paths, shapes.
    #[error("{0}")]
    BadRequest(String),
    /// No or wrong credentials.
    #[error("{0}")]
    Unauthorized(String),
    /// Authenticated, but the ACLs say no.
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    /// Deleted through this server (see [`crate::gone`]).
    #[error("{0}")]
    Gone(String),
    /// The name, object or domain exists already.
    #[error("{0}")]
    Conflict(String),
    /// The path exists, not with this method.
    #[error("{0}")]
    MethodNotAllowed(String),
    /// A JSON body larger than the configured limit.
    #[error("{0}")]
    TooLarge(String),
    /// A body that is neither JSON nor binary where one of them is required.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The client stopped sending the request body.
    #[error("{0}")]
    Timeout(String),
    /// The server is busy (its memory budget is in use); try again.
    #[error("{0}")]
    Unavailable(String),
    /// A part of the HSDS API this server does not implement.
    #[error("{0}")]
    NotImplemented(String),
    #[error("{0}")]
    Internal(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Starting the server: binding the port, reading the password file.
    #[error("{0}")]
    Startup(String),
}

/// Result alias for the server.
pub type Result<T> = std::result::Result<T, ServerError>;

impl From<StoreError> for ServerError {
    fn from(e: StoreError) -> Self {
        ServerError::Engine(EngineError::Store(e))
    }
}

impl From<h5lake_types::TypeError> for ServerError {
    fn from(e: h5lake_types::TypeError) -> Self {
        ServerError::BadRequest(e.to_string())
    }
}

impl ServerError {
    /// The HTTP status HSDS answers the same condition with.
    pub fn status(&self) -> StatusCode {
        match self {
            ServerError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ServerError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ServerError::Forbidden(_) => StatusCode::FORBIDDEN,
            ServerError::NotFound(_) => StatusCode::NOT_FOUND,
            ServerError::Gone(_) => StatusCode::GONE,
            ServerError::Conflict(_) => StatusCode::CONFLICT,
            ServerError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ServerError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ServerError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ServerError::NotImplemented(_) => StatusCode::NOT_IMPLEMENTED,
            ServerError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ServerError::Timeout(_) => StatusCode::REQUEST_TIMEOUT,
            ServerError::Internal(_) | ServerError::Startup(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ServerError::Engine(e) => match e {
                EngineError::NotFound(_) | EngineError::StoreNotFound(_) => StatusCode::NOT_FOUND,
                EngineError::AlreadyExists(_) | EngineError::StoreExists(_) => StatusCode::CONFLICT,
                EngineError::Invalid(_)
                | EngineError::WrongType(_)
                | EngineError::NotAStore(_)
                | EngineError::Types(_) => StatusCode::BAD_REQUEST,
                EngineError::ReadOnly(_) | EngineError::LinkRefused(_) => StatusCode::FORBIDDEN,
                EngineError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
                EngineError::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
                // Chunks under a filter h5lake has no codec for (a served
                // HDF5 file's bzip2, say): said to the client, by name.
                EngineError::Codec(h5lake_codecs::CodecError::Unsupported(_)) => {
                    StatusCode::NOT_IMPLEMENTED
                }
                EngineError::Store(StoreError::InvalidKey { .. }) => StatusCode::BAD_REQUEST,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            },
        }
    }
}

impl IntoResponse for ServerError {
    fn into_response(self) -> Response {
        let status = self.status();
        // Messages can quote what the client sent (a value, a path, a
        // name): quoted whole, one large body would be answered twice over
        // (error and message), outside the memory budget.
        let mut msg = clipped(self.to_string(), MAX_MESSAGE_BYTES);
        let said_to_clients = [StatusCode::SERVICE_UNAVAILABLE, StatusCode::NOT_IMPLEMENTED];
        if status.is_server_error() && !said_to_clients.contains(&status) {
            // What failed inside the server (a store error naming its
            // files, a bug) is the operator's to read, not the client's: it
            // can hold paths and other details of the host. (What is busy
            // or not implemented is the server's own words, for clients.)
            let incident = incident_id();
            eprintln!("h5lake serve: request failed ({incident}): {msg}");
            msg = format!(
                "internal server error (incident {incident}; the server's log has the details)"
            );
        }
        let body = serde_json::json!({"status": status.as_u16(), "error": msg, "message": msg});
        let mut rsp = (status, body.to_string()).into_response();
        rsp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(crate::routes::JSON_CONTENT_TYPE),
        );
        if status == StatusCode::UNAUTHORIZED {
            rsp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"h5lake\""),
            );
        }
        // h5pyd reports `IOError(status, reason)`: carrying the message in
        // the reason phrase is what makes it reach the user.
        if let Ok(reason) = hyper::ext::ReasonPhrase::try_from(reason_phrase(&msg).into_bytes()) {
            rsp.extensions_mut().insert(reason);
        }
        rsp
    }
}

/// A short id that ties an answer to the server log line about it.
fn incident_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{secs:x}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A message as a valid reason phrase: visible ASCII and spaces, at most
/// 200 bytes.
fn reason_phrase(msg: &str) -> String {
    let mut s: String = msg
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .take(200)
        .collect();
    if s.trim().is_empty() {
        s = "error".into();
    }
    s
}

/// Longest error message answered or logged, in bytes.
const MAX_MESSAGE_BYTES: usize = 2048;

/// `msg` cut to at most `max` bytes (on a character boundary), saying how
/// much was left out.
fn clipped(mut msg: String, max: usize) -> String {
    if msg.len() <= max {
        return msg;
    }
    let mut end = max;
    while !msg.is_char_boundary(end) {
        end -= 1;
    }
    let left = msg.len() - end;
    msg.truncate(end);
    msg.push_str(&format!("… ({left} bytes more)"));
    msg
}

#[cfg(test)]
mod tests {
    use super::clipped;

    #[test]
    fn long_messages_are_clipped_on_a_character_boundary() {
        assert_eq!(clipped("short".into(), 10), "short");
        let long = "é".repeat(3000); // 6000 bytes
        let cut = clipped(long, 2047);
        assert!(cut.starts_with(&"é".repeat(1023)) && cut.ends_with("(3954 bytes more)"));
        assert!(cut.len() < 2100);
    }
}
