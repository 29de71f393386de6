//! Loopback TCP services that live exactly as long as their handle: the fake API server
//! (HTTP/1.1 over TLS) and, in `probe`, the fake Valkey and NATS servers.
//!
//! Threads only: an accept loop blocks in `accept` until a connection comes or the service is
//! stopped (shutting the listener down wakes it; a [`TICK`] timeout on the listener bounds the
//! wait even so), each connection is served by a thread of the service's own (kept for the
//! next connection; a new one while all are busy) whose socket reads time out every [`TICK`] so
//! that it notices the stop flag, and dropping a [`Service`]
//! stops the loop, closes the port and joins every thread. A panic in a handler ends that
//! connection only.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::RoleRule;
use super::cluster::{ApiRequest, Cluster, Event, Response, status_error};
use super::rbac::{authorize, request_info};

/// How often blocked threads look at the stop flag.
pub const TICK: Duration = Duration::from_millis(20);
const MAX_CONNECTIONS: usize = 64;
/// A connection that sends nothing for this long is closed.
const IDLE_LIMIT: Duration = Duration::from_secs(30);
const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 3 * 1024 * 1024;

/// Locks a mutex even if a handler thread panicked while holding it: the state is plain data
/// and the judge still wants what was recorded.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

type Handler = dyn Fn(TcpStream, &AtomicBool) + Send + Sync;

/// A listening loopback port and its threads.
pub struct Service {
    address: std::net::SocketAddr,
    /// The listening socket (a second descriptor of it), shut down to wake the accept loop.
    listener: TcpListener,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Service {
    /// Listens on the loopback of `net` (the program's network namespace) where there is one,
    /// else on the host's.
    pub fn start(
        name: &str,
        handler: Arc<Handler>,
        net: Option<&super::netns::NetNs>,
    ) -> io::Result<Service> {
        Service::start_at(name, handler, net, false)
    }

    /// [`Service::start`]; with `api` and a namespace, at the `kubernetes` Service's address
    /// and port 443 as a pod sees them.
    pub fn start_at(
        name: &str,
        handler: Arc<Handler>,
        net: Option<&super::netns::NetNs>,
        api: bool,
    ) -> io::Result<Service> {
        let listener = match net {
            Some(net) if api => {
                net.bind(std::net::SocketAddrV4::new(super::netns::API_ADDRESS, 443))?
            }
            Some(net) => net.bind_loopback()?,
            None => TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?,
        };
        // A connection is accepted as it comes (a poll of a non-blocking listener made each
        // wait for the next tick); the timeout only bounds how long a stop can go unseen.
        rustix::net::sockopt::set_socket_timeout(
            &listener,
            rustix::net::sockopt::Timeout::Recv,
            Some(TICK),
        )?;
        let address = listener.local_addr()?;
        let waker = listener.try_clone()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = thread::Builder::new()
            .name(format!("credlint-sim-{name}"))
            .spawn(move || accept_loop(listener, handler, flag))?;
        Ok(Service {
            address,
            listener: waker,
            stop,
            thread: Some(thread),
        })
    }

    pub fn port(&self) -> u16 {
        self.address.port()
    }

    /// The address it listens at.
    pub fn host(&self) -> std::net::IpAddr {
        self.address.ip()
    }

    /// Stops accepting, closes the port and waits for every connection thread.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Linux ends a listening socket shut down for reading: a blocked `accept` returns, and
        // so does every later one.
        let _ = rustix::net::shutdown(&self.listener, rustix::net::Shutdown::Read);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A service's connection threads: each serves one connection, then waits for the next, so
/// that the dozen connections of a run do not each start a thread. A connection that finds
/// every thread busy gets a new one, up to [`MAX_CONNECTIONS`] at a time; past that it is
/// closed unanswered.
#[derive(Default)]
struct Workers {
    queue: Mutex<Queue>,
    ready: std::sync::Condvar,
}

#[derive(Default)]
struct Queue {
    /// Accepted, not yet taken by a thread.
    waiting: std::collections::VecDeque<TcpStream>,
    /// Threads waiting for a connection, and threads in all.
    idle: usize,
    live: usize,
}

fn accept_loop(listener: TcpListener, handler: Arc<Handler>, stop: Arc<AtomicBool>) {
    let workers = Arc::new(Workers::default());
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    while !stop.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((stream, _)) => {
                let configured = stream.set_nonblocking(false).is_ok()
                    && stream.set_read_timeout(Some(TICK)).is_ok()
                    && stream
                        .set_write_timeout(Some(Duration::from_secs(5)))
                        .is_ok();
                if !configured {
                    continue;
                }
                let mut queue = lock(&workers.queue);
                if queue.idle > queue.waiting.len() {
                    queue.waiting.push_back(stream);
                    drop(queue);
                    workers.ready.notify_one();
                    continue;
                }
                if queue.live >= MAX_CONNECTIONS {
                    continue;
                }
                queue.waiting.push_back(stream);
                queue.live += 1;
                drop(queue);
                let (workers_, handler, flag) = (
                    Arc::clone(&workers),
                    Arc::clone(&handler),
                    Arc::clone(&stop),
                );
                let spawned = thread::Builder::new()
                    .name("credlint-sim-conn".into())
                    .spawn(move || serve_connections(&workers_, &*handler, &flag));
                match spawned {
                    Ok(t) => threads.push(t),
                    Err(_) => {
                        let mut queue = lock(&workers.queue);
                        queue.live -= 1;
                        queue.waiting.pop_back();
                    }
                }
            }
            Err(e) if again(&e) => {}
            // Stopped; or out of descriptors or memory for now: wait rather than spin.
            Err(_) if !stop.load(Ordering::Acquire) => thread::sleep(Duration::from_millis(2)),
            Err(_) => {}
        }
    }
    drop(listener);
    {
        // Under the lock: a thread that saw no stop flag is already waiting, and wakes.
        let mut queue = lock(&workers.queue);
        queue.waiting.clear();
        workers.ready.notify_all();
    }
    for t in threads {
        let _ = t.join();
    }
}

/// One connection thread: serves connections from the queue until the service stops.
fn serve_connections(workers: &Workers, handler: &Handler, stop: &AtomicBool) {
    loop {
        let stream = {
            let mut queue = lock(&workers.queue);
            loop {
                if stop.load(Ordering::Acquire) {
                    queue.live -= 1;
                    return;
                }
                if let Some(stream) = queue.waiting.pop_front() {
                    break stream;
                }
                queue.idle += 1;
                queue = workers
                    .ready
                    .wait(queue)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                queue.idle -= 1;
            }
        };
        let _ = catch_unwind(AssertUnwindSafe(|| handler(stream, stop)));
    }
}

/// A socket call that timed out or was interrupted: worth making again.
fn again(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Reads from `stream` into `buf`, waiting out read timeouts until data, EOF, the stop flag or
/// the idle limit. Returns false when the connection should end.
pub fn fill(stream: &mut impl Read, buf: &mut Vec<u8>, stop: &AtomicBool, since: Instant) -> bool {
    let mut chunk = [0u8; 8192];
    loop {
        if stop.load(Ordering::Acquire) || since.elapsed() > IDLE_LIMIT {
            return false;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return false,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                return true;
            }
            Err(e) if again(&e) => {}
            Err(_) => return false,
        }
    }
}

/// One parsed HTTP request.
#[derive(Debug)]
pub struct HttpRequest {
    pub method: String,
    pub path: String,
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub keep_alive: bool,
}

impl HttpRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Why a request could not be read: the connection ended, or the request is bad (answer it).
pub enum ReadError {
    Closed,
    Bad(u16, &'static str),
}

/// Reads one request; leaves bytes of a pipelined next request in `buf`.
pub fn read_request(
    stream: &mut impl Read,
    buf: &mut Vec<u8>,
    stop: &AtomicBool,
) -> Result<HttpRequest, ReadError> {
    let since = Instant::now();
    let head_end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD {
            return Err(ReadError::Bad(431, "request header too large"));
        }
        if !fill(stream, buf, stop, since) {
            return Err(ReadError::Closed);
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    buf.drain(..head_end + 4);
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Bad(400, "malformed request line"));
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
        return Err(ReadError::Bad(400, "malformed request line"));
    }
    let mut headers = Vec::new();
    for line in lines {
        let Some((k, v)) = line.split_once(':') else {
            return Err(ReadError::Bad(400, "malformed header"));
        };
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut req = HttpRequest {
        method: method.to_string(),
        path: path.to_string(),
        query: query.to_string(),
        headers,
        body: Vec::new(),
        keep_alive: version != "HTTP/1.0",
    };
    if let Some(c) = req.header("connection") {
        let c = c.to_ascii_lowercase();
        if c.contains("close") {
            req.keep_alive = false;
        } else if c.contains("keep-alive") {
            req.keep_alive = true;
        }
    }
    let chunked = req
        .header("transfer-encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
    if chunked {
        req.body = read_chunked(stream, buf, stop, since)?;
    } else if let Some(len) = req.header("content-length") {
        let Ok(len) = len.parse::<usize>() else {
            return Err(ReadError::Bad(400, "bad Content-Length"));
        };
        if len > MAX_BODY {
            return Err(ReadError::Bad(413, "request body too large"));
        }
        while buf.len() < len {
            if !fill(stream, buf, stop, since) {
                return Err(ReadError::Closed);
            }
        }
        req.body = buf.drain(..len).collect();
    }
    Ok(req)
}

fn read_chunked(
    stream: &mut impl Read,
    buf: &mut Vec<u8>,
    stop: &AtomicBool,
    since: Instant,
) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        let line_end = loop {
            if let Some(i) = find(buf, b"\r\n") {
                break i;
            }
            if buf.len() > MAX_HEAD {
                return Err(ReadError::Bad(400, "bad chunk"));
            }
            if !fill(stream, buf, stop, since) {
                return Err(ReadError::Closed);
            }
        };
        let size_text = String::from_utf8_lossy(&buf[..line_end]).into_owned();
        let size_hex = size_text.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size_hex, 16) else {
            return Err(ReadError::Bad(400, "bad chunk size"));
        };
        if size > MAX_BODY - body.len() {
            return Err(ReadError::Bad(413, "request body too large"));
        }
        buf.drain(..line_end + 2);
        if size == 0 {
            // Skip trailers up to the empty line.
            loop {
                if let Some(i) = find(buf, b"\r\n") {
                    let empty = i == 0;
                    buf.drain(..i + 2);
                    if empty {
                        return Ok(body);
                    }
                    continue;
                }
                if buf.len() > MAX_HEAD || !fill(stream, buf, stop, since) {
                    return Err(ReadError::Closed);
                }
            }
        }
        while buf.len() < size + 2 {
            if !fill(stream, buf, stop, since) {
                return Err(ReadError::Closed);
            }
        }
        body.extend(buf.drain(..size));
        buf.drain(..2);
    }
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        431 => "Request Header Fields Too Large",
        _ => "Internal Server Error",
    }
}

pub fn write_response(
    stream: &mut impl Write,
    resp: &Response,
    head_only: bool,
    keep_alive: bool,
) -> io::Result<()> {
    let body = if resp.body.is_null() {
        Vec::new()
    } else {
        serde_json::to_vec(&resp.body).unwrap_or_default()
    };
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {}\r\n\r\n",
        resp.status,
        reason(resp.status),
        body.len(),
        if keep_alive { "keep-alive" } else { "close" },
    );
    stream.write_all(head.as_bytes())?;
    if !head_only {
        stream.write_all(&body)?;
    }
    stream.flush()
}

/// What the API server knows for a simulation: who may call it and the namespace it serves.
pub struct ApiContext {
    pub tls: Arc<rustls::ServerConfig>,
    pub token: String,
    pub rules: Vec<RoleRule>,
    pub namespace: String,
    /// `system:serviceaccount:<ns>:<owner>-credentials`, for error messages.
    pub user: String,
    pub cluster: Mutex<Cluster>,
    /// How many lines create.py has: a request's origin must be one of them.
    pub script_lines: u32,
}

/// The line of create.py a request says it was sent from (the hook's header, the last one
/// if the program added its own), when it is a line the program has. The program can set the
/// header itself, so nothing but a line inside it is accepted: a finding never moves outside
/// the program, and without a valid line it points at the program as a whole.
pub fn request_origin(req: &HttpRequest, script_lines: u32) -> Option<u32> {
    let line = number_header(req, super::incluster::ORIGIN_HEADER, 10)?
        .parse::<u32>()
        .ok()?;
    (1..=script_lines).contains(&line).then_some(line)
}

/// The last value of a hook header that must be plain decimal digits (at most `longest`): the
/// program can send its own, so anything else is no value at all.
fn number_header<'r>(req: &'r HttpRequest, header: &str, longest: usize) -> Option<&'r str> {
    let name = header.to_ascii_lowercase();
    let value = req
        .headers
        .iter()
        .rev()
        .find(|(k, _)| *k == name)?
        .1
        .as_str();
    (!value.is_empty() && value.len() <= longest && value.bytes().all(|b| b.is_ascii_digit()))
        .then_some(value)
}

/// The request as findings name it: method, path and query, printable and bounded.
pub fn request_label(method: &str, path: &str, query: &str) -> String {
    let mut label = format!("{method} {path}");
    if !query.is_empty() {
        label.push('?');
        label.push_str(query);
    }
    let mut out: String = label
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(300)
        .collect();
    if label.chars().count() > 300 {
        out.push_str("...");
    }
    out
}

fn forbidden(ctx: &ApiContext, info: &super::rbac::RequestInfo) -> Response {
    let message = if info.is_resource {
        let what = if info.name.is_empty() {
            info.resource.clone()
        } else {
            format!("{} {:?}", info.resource, info.name)
        };
        let resource = if info.subresource.is_empty() {
            info.resource.clone()
        } else {
            format!("{}/{}", info.resource, info.subresource)
        };
        let scope = if info.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {:?}", info.namespace)
        };
        format!(
            "{what} is forbidden: User {:?} cannot {} resource {:?} in API group {:?} {scope}",
            ctx.user, info.verb, resource, info.api_group
        )
    } else {
        format!(
            "forbidden: User {:?} cannot {} path {:?}",
            ctx.user, info.verb, info.path
        )
    };
    status_error(403, "Forbidden", &message, &info.name, &info.resource)
}

/// The program's virtual clock as the request reports it (the hook's header: nanoseconds since
/// the run began), None without a readable one.
pub fn request_clock(req: &HttpRequest) -> Option<u64> {
    number_header(req, super::incluster::CLOCK_HEADER, 20)?
        .parse()
        .ok()
}

/// Authenticates, authorizes (recording a denial) and hands the request to the cluster.
pub fn handle_api(ctx: &ApiContext, req: &HttpRequest) -> Response {
    let bearer = req
        .header("authorization")
        .and_then(|a| a.strip_prefix("Bearer "))
        .map(str::trim);
    if bearer != Some(ctx.token.as_str()) {
        return status_error(401, "Unauthorized", "Unauthorized", "", "");
    }
    let info = request_info(&req.method, &req.path, &req.query);
    let label = request_label(&req.method, &req.path, &req.query);
    let mut cluster = lock(&ctx.cluster);
    cluster.advance_clock(request_clock(req));
    if let Some(line) = request_origin(req, ctx.script_lines) {
        cluster.note_origin(&label, line);
    }
    let content_type = req.header("content-type").unwrap_or("");
    cluster.record_sent(&label, &info.resource, content_type, &req.body);
    if !authorize(&ctx.rules, &ctx.namespace, &info) {
        cluster.record(Event::Denied { request: label });
        cluster.after_request();
        return forbidden(ctx, &info);
    }
    let api = ApiRequest {
        query: &req.query,
        content_type,
        body: &req.body,
        label: &label,
    };
    let resp = cluster.handle(&api, &info);
    // The controllers act after every request, so a race the request opens is met every time.
    cluster.after_request();
    resp
}

/// Serves HTTPS requests on one connection until it closes.
pub fn serve_api_connection(ctx: &ApiContext, stream: TcpStream, stop: &AtomicBool) {
    let Ok(conn) = rustls::ServerConnection::new(Arc::clone(&ctx.tls)) else {
        return;
    };
    let mut tls = rustls::StreamOwned::new(conn, stream);
    let mut buf = Vec::new();
    loop {
        let req = match read_request(&mut tls, &mut buf, stop) {
            Ok(r) => r,
            Err(ReadError::Closed) => break,
            Err(ReadError::Bad(code, message)) => {
                let resp = status_error(code, "BadRequest", message, "", "");
                let _ = write_response(&mut tls, &resp, false, false);
                break;
            }
        };
        let resp =
            catch_unwind(AssertUnwindSafe(|| handle_api(ctx, &req))).unwrap_or_else(|_| Response {
                status: 500,
                body: status_error(
                    500,
                    "InternalError",
                    "the fake API server failed on this request",
                    "",
                    "",
                )
                .body,
            });
        let head_only = req.method == "HEAD";
        if write_response(&mut tls, &resp, head_only, req.keep_alive).is_err() || !req.keep_alive {
            break;
        }
    }
    tls.conn.send_close_notify();
    let _ = tls.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> Result<HttpRequest, ReadError> {
        let mut stream = io::Cursor::new(bytes.to_vec());
        read_request(&mut stream, &mut Vec::new(), &AtomicBool::new(false))
    }

    #[test]
    fn requests_parse_with_length_or_chunks() {
        let req = read(b"PATCH /api/v1/x?a=b HTTP/1.1\r\nContent-Type: application/json-patch+json\r\nContent-Length: 2\r\n\r\n[]").ok().unwrap();
        assert_eq!(
            (req.method.as_str(), req.path.as_str(), req.query.as_str()),
            ("PATCH", "/api/v1/x", "a=b")
        );
        assert_eq!(
            req.header("content-type"),
            Some("application/json-patch+json")
        );
        assert_eq!(req.body, b"[]");
        assert!(req.keep_alive);
        let req = read(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nT: 1\r\n\r\n").ok().unwrap();
        assert_eq!(req.body, b"abcde");
        assert!(!req.keep_alive);
    }

    #[test]
    fn malformed_requests_are_refused_without_panicking() {
        let bad: &[&[u8]] = &[
            b"GET\r\n\r\n",
            b"GET / HTTP/2\r\n\r\n",
            b"GET x HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\nno colon\r\n\r\n",
            b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
            b"GET / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
            b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
            b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ];
        for bytes in bad {
            assert!(
                matches!(read(bytes), Err(ReadError::Bad(..))),
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
        // Truncated input ends the connection.
        for bytes in [
            &b"GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab"[..],
            b"GET / HTTP/1.1\r\n",
            b"",
        ] {
            assert!(matches!(read(bytes), Err(ReadError::Closed)));
        }
        let huge = vec![b'a'; MAX_HEAD + 10];
        assert!(matches!(read(&huge), Err(ReadError::Bad(431, _))));
    }

    #[test]
    fn an_origin_is_a_line_of_the_program_or_nothing() {
        let with = |values: &[&str]| {
            let mut head = String::from("GET / HTTP/1.1\r\n");
            for v in values {
                head.push_str(&format!("X-Credlint-Origin: {v}\r\n"));
            }
            head.push_str("\r\n");
            let req = read(head.as_bytes()).ok().unwrap();
            request_origin(&req, 40)
        };
        assert_eq!(with(&["12"]), Some(12));
        assert_eq!(with(&["1"]), Some(1));
        assert_eq!(with(&["40"]), Some(40));
        // The hook's header comes last: a program's own earlier one does not win.
        assert_eq!(with(&["3", "17"]), Some(17));
        assert_eq!(with(&[]), None);
        for forged in [
            "0",
            "41",
            "4294967296",
            "99999999999",
            "-3",
            "+3",
            "3.0",
            " ",
            "0x10",
            "١٢",
        ] {
            assert_eq!(with(&[forged]), None, "{forged:?}");
        }
    }

    #[test]
    fn labels_are_printable_and_bounded() {
        assert_eq!(request_label("GET", "/a", ""), "GET /a");
        assert_eq!(request_label("GET", "/a", "watch=1"), "GET /a?watch=1");
        assert_eq!(request_label("GET", "/a\u{1b}[31m", ""), "GET /a?[31m");
        assert!(request_label("GET", &"x".repeat(1000), "").chars().count() <= 303);
    }
}
