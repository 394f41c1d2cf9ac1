//! Connection-level bounds, checked over raw sockets the way a hostile
//! client would use them: silent and half-sent requests, idle keep-alive
//! connections, and too many connections from one address.

use std::net::SocketAddr;
use std::time::Duration;

use h5lake_server::{Server, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::{timeout, Instant};

/// Longest any single wait in these tests may take: far above the
/// timeouts under test, far below "forever".
const BOUND: Duration = Duration::from_secs(3);

struct Running {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    served: JoinHandle<h5lake_server::Result<()>>,
    _root: tempfile::TempDir,
    _passwords: tempfile::NamedTempFile,
}

/// `admin:secret`, as a Basic `Authorization` header.
const ADMIN: &str = "Authorization: Basic YWRtaW46c2VjcmV0\r\n";

async fn start(cfg: ServerConfig) -> Running {
    let root = tempfile::tempdir().unwrap();
    let passwords = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(passwords.path(), "admin:secret\n").unwrap();
    let cfg = ServerConfig {
        root: root.path().to_str().unwrap().to_string(),
        port: 0,
        password_file: Some(passwords.path().to_path_buf()),
        allow_noauth: true,
        ..cfg
    };
    let server = Server::bind(cfg).await.unwrap();
    let addr = server.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(server.serve(async {
        let _ = stopped.await;
    }));
    Running {
        addr,
        stop,
        served,
        _root: root,
        _passwords: passwords,
    }
}

/// Short timeouts, so that the tests see them fire.
fn impatient() -> ServerConfig {
    ServerConfig {
        header_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(500),
        max_connections_per_client: 4,
        ..ServerConfig::default()
    }
}

/// How long until the server closes `s` (reading and discarding what it
/// sends); panics if it stays open past [`BOUND`].
async fn time_to_close(s: &mut TcpStream) -> Duration {
    let started = Instant::now();
    let mut buf = [0; 4096];
    timeout(BOUND, async {
        while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {}
    })
    .await
    .expect("the server left the connection open");
    started.elapsed()
}

const GET_ABOUT: &[u8] = b"GET /about HTTP/1.1\r\nHost: x\r\n\r\n";

/// Reads one response; returns its status and body.
async fn read_response(s: &mut TcpStream) -> (u16, String) {
    timeout(BOUND, async {
        let mut got = Vec::new();
        let mut buf = [0; 4096];
        let head_end = loop {
            if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = s.read(&mut buf).await.expect("read");
            assert!(n > 0, "connection closed instead of answering");
            got.extend_from_slice(&buf[..n]);
        };
        let head = String::from_utf8_lossy(&got[..head_end]).to_ascii_lowercase();
        let status = head[9..12].parse().unwrap();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        while got.len() < head_end + length {
            let n = s.read(&mut buf).await.expect("read");
            assert!(n > 0, "connection closed in the middle of a response");
            got.extend_from_slice(&buf[..n]);
        }
        let body = String::from_utf8_lossy(&got[head_end..head_end + length]).into_owned();
        (status, body)
    })
    .await
    .expect("no response in time")
}

async fn get_about(s: &mut TcpStream) -> u16 {
    s.write_all(GET_ABOUT).await.unwrap();
    read_response(s).await.0
}

/// A fresh connection still gets served.
async fn assert_serving(addr: SocketAddr) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    assert_eq!(get_about(&mut s).await, 200);
}

async fn stop(server: Running) {
    server.stop.send(()).unwrap();
    timeout(BOUND, server.served)
        .await
        .expect("the server did not stop")
        .unwrap()
        .unwrap();
}

/// Waits for the server to close `s`, which it must not do sooner than
/// `least` (the timeout under test has to be what closed it).
async fn closes_after_at_least(s: &mut TcpStream, least: Duration) {
    let waited = time_to_close(s).await;
    assert!(waited >= least, "closed after {waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connection_is_closed() {
    let server = start(impatient()).await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    closes_after_at_least(&mut s, Duration::from_millis(250)).await;
    assert_serving(server.addr).await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_request_head_is_closed() {
    let server = start(impatient()).await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(b"GET /about HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    time_to_close(&mut s).await;
    assert_serving(server.addr).await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_works_then_idle_connection_is_closed() {
    let server = start(impatient()).await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    assert_eq!(get_about(&mut s).await, 200);
    assert_eq!(get_about(&mut s).await, 200);
    closes_after_at_least(&mut s, Duration::from_millis(250)).await;
    assert_serving(server.addr).await;
    stop(server).await;
}

/// The idle bound on its own (the header timeout, which also covers a
/// keep-alive wait, set far out of reach), and what it must spare: a
/// request still being received, which takes longer in all than the idle
/// timeout but never pauses that long. A body that stops for longer is
/// given up (408), so that a stalled upload cannot hold its connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_timeout_spares_requests_in_flight() {
    let server = start(ServerConfig {
        header_timeout: Duration::from_secs(30),
        idle_timeout: Duration::from_millis(500),
        ..ServerConfig::default()
    })
    .await;

    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    time_to_close(&mut silent).await;

    let mut s = TcpStream::connect(server.addr).await.unwrap();
    assert_eq!(get_about(&mut s).await, 200);
    closes_after_at_least(&mut s, Duration::from_millis(450)).await;

    let pieces = [&b"{"[..], b"   ", b"}"];
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(
        format!(
            "PUT /?domain=/slow.h5 HTTP/1.1\r\nHost: x\r\n{ADMIN}Content-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n",
            pieces.concat().len()
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    for piece in pieces {
        tokio::time::sleep(Duration::from_millis(300)).await;
        s.write_all(piece).await.unwrap();
    }
    // Created: the server read the whole body, so the connection stayed.
    assert_eq!(read_response(&mut s).await.0, 201);

    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(
        format!(
            "PUT /?domain=/stalled.h5 HTTP/1.1\r\nHost: x\r\n{ADMIN}Content-Type: application/json\r\n\
             Content-Length: 3\r\n\r\n{{"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    assert_eq!(read_response(&mut s).await.0, 408);

    assert_serving(server.addr).await;
    stop(server).await;
}

/// Answers `method path` with `body` (JSON), as the admin, on a
/// connection of its own.
async fn admin_request(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(
        format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\n{ADMIN}Content-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    read_response(&mut s).await
}

/// Bytes in [`big_value`]: more than socket buffers on both sides hold,
/// so that the server has to wait for the client to read.
const BIG: usize = 16 << 20;

/// The request for the binary value of a new dataset of [`BIG`] bytes.
async fn big_value(addr: SocketAddr) -> String {
    let (status, _) = admin_request(addr, "PUT", "/?domain=/big.h5", "").await;
    assert_eq!(status, 201);
    let (status, body) = admin_request(
        addr,
        "POST",
        "/datasets?domain=/big.h5",
        &format!(r#"{{"type": "H5T_STD_U8LE", "shape": [{BIG}]}}"#),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    let id = body["id"].as_str().unwrap();
    format!(
        "GET /datasets/{id}/value?domain=/big.h5 HTTP/1.1\r\nHost: x\r\n{ADMIN}\
         Accept: application/octet-stream\r\n\r\n"
    )
}

/// A client reading a long response slowly, pausing for less than the
/// idle timeout each time but for longer in all, gets all of it; a client
/// that stops reading loses its connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_are_cut_only_when_nobody_reads_them() {
    let server = start(impatient()).await;
    let get = big_value(server.addr).await;

    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(get.as_bytes()).await.unwrap();
    let mut got = 0;
    let mut buf = vec![0; 1 << 20];
    let mut pauses = Duration::ZERO;
    while pauses < Duration::from_secs(1) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        pauses += Duration::from_millis(200);
        let n = timeout(BOUND, s.read_exact(&mut buf))
            .await
            .unwrap()
            .unwrap();
        got += n;
    }
    while got < BIG {
        let n = timeout(BOUND, s.read(&mut buf)).await.unwrap().unwrap();
        assert!(n > 0, "cut after {got} bytes");
        got += n;
    }

    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut s = socket.connect(server.addr).await.unwrap();
    s.write_all(get.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut got = 0;
    timeout(BOUND, async {
        while let Ok(n @ 1..) = s.read(&mut buf).await {
            got += n;
        }
    })
    .await
    .expect("the server left the connection open");
    assert!(got < BIG, "the whole response came through");

    assert_serving(server.addr).await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_per_client_are_capped_and_released() {
    let limit = 4;
    let server = start(ServerConfig {
        header_timeout: Duration::from_secs(30),
        idle_timeout: Duration::from_secs(30),
        max_connections_per_client: limit,
        ..ServerConfig::default()
    })
    .await;

    let mut held = Vec::new();
    for _ in 0..limit {
        let mut s = TcpStream::connect(server.addr).await.unwrap();
        // Answered, so counted, before the next one connects.
        assert_eq!(get_about(&mut s).await, 200);
        held.push(s);
    }
    for _ in 0..2 {
        let mut extra = TcpStream::connect(server.addr).await.unwrap();
        extra.write_all(GET_ABOUT).await.unwrap();
        let (status, body) = read_response(&mut extra).await;
        assert_eq!(status, 503);
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(body["message"].as_str().unwrap().contains("too many"));
        time_to_close(&mut extra).await;
    }
    // The held connections still work.
    assert_eq!(get_about(&mut held[0]).await, 200);

    drop(held);
    // The server counts a connection released once it sees it closed,
    // which takes a moment.
    let deadline = Instant::now() + BOUND;
    let mut fresh = Vec::new();
    while fresh.len() < limit {
        assert!(Instant::now() < deadline, "connections were not released");
        let mut s = TcpStream::connect(server.addr).await.unwrap();
        s.write_all(GET_ABOUT).await.unwrap();
        if read_response(&mut s).await.0 == 200 {
            fresh.push(s);
        } else {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    drop(fresh);
    stop(server).await;
}

/// Stopping closes idle keep-alive connections rather than waiting for
/// their clients, and the server returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_closes_idle_connections() {
    let server = start(ServerConfig {
        header_timeout: Duration::from_secs(30),
        idle_timeout: Duration::from_secs(30),
        ..ServerConfig::default()
    })
    .await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    assert_eq!(get_about(&mut s).await, 200);
    stop(server).await;
    time_to_close(&mut s).await;
}
