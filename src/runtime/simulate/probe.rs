//! Fake Valkey and NATS servers, one loopback port per server pod, so that a program probing
//! "its" cache or broker (ADR-072 point 4) reaches a server that this run controls and never a
//! real service on the machine. Each answers with the password its pod started with: RESP
//! `AUTH` for Valkey, `CONNECT` + `PING` for NATS (which checks the password alone). A pod that
//! is not running closes the connection at once, and one marked unclear answers neither yes nor
//! no; a correct program treats both as no answer and restarts nothing.

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use serde_json::Value;

use super::server::{ApiContext, fill, lock};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Valkey,
    Nats,
}

const MAX_LINE: usize = 64 * 1024;
const MAX_COMMANDS: usize = 32;

pub fn serve_probe(
    ctx: &ApiContext,
    pod: &str,
    protocol: Protocol,
    mut stream: TcpStream,
    stop: &AtomicBool,
) {
    let Some((password, unclear)) = lock(&ctx.cluster).pod_server(pod) else {
        return;
    };
    match (protocol, unclear) {
        // Still loading its data: it answers, but neither yes nor no.
        (Protocol::Valkey, true) => {
            let _ = stream.write_all(b"-LOADING Valkey is loading the dataset in memory\r\n");
        }
        // Greets, then goes away without a word on the credentials.
        (Protocol::Nats, true) => {
            let _ = stream
                .write_all(b"INFO {\"server_id\":\"credlint-fake\",\"auth_required\":true}\r\n");
        }
        (Protocol::Valkey, false) => serve_valkey(&mut stream, &password, stop),
        (Protocol::Nats, false) => serve_nats(&mut stream, &password, stop),
    }
}

fn take_line(buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    let i = buf.windows(2).position(|w| w == b"\r\n")?;
    let line = buf[..i].to_vec();
    buf.drain(..i + 2);
    Some(line)
}

/// A parsed command and how many bytes it took.
type Parsed = (Vec<Vec<u8>>, usize);

/// One RESP command (array of bulk strings, or an inline command) from `buf`, if complete.
/// `Err` means a protocol error.
fn parse_command(buf: &[u8]) -> Option<Result<Parsed, ()>> {
    let line_end = buf.windows(2).position(|w| w == b"\r\n")?;
    if buf.first() != Some(&b'*') {
        let line = &buf[..line_end];
        let words = line
            .split(|b| *b == b' ')
            .filter(|w| !w.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        return Some(Ok((words, line_end + 2)));
    }
    let count: usize = match std::str::from_utf8(&buf[1..line_end])
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(n) if n <= 16 => n,
        _ => return Some(Err(())),
    };
    let mut pos = line_end + 2;
    let mut words = Vec::with_capacity(count);
    for _ in 0..count {
        let rest = &buf[pos..];
        let end = rest.windows(2).position(|w| w == b"\r\n")?;
        if rest.first() != Some(&b'$') {
            return Some(Err(()));
        }
        let len: usize = match std::str::from_utf8(&rest[1..end])
            .ok()
            .and_then(|s| s.parse().ok())
        {
            Some(n) if n <= MAX_LINE => n,
            _ => return Some(Err(())),
        };
        let start = pos + end + 2;
        if buf.len() < start + len + 2 {
            return None;
        }
        words.push(buf[start..start + len].to_vec());
        pos = start + len + 2;
    }
    Some(Ok((words, pos)))
}

fn serve_valkey(stream: &mut TcpStream, password: &[u8], stop: &AtomicBool) {
    let since = Instant::now();
    let mut buf = Vec::new();
    let mut authed = false;
    for _ in 0..MAX_COMMANDS {
        let (words, used) = loop {
            match parse_command(&buf) {
                Some(Ok(parsed)) => break parsed,
                Some(Err(())) => {
                    let _ = stream.write_all(b"-ERR Protocol error\r\n");
                    return;
                }
                None if buf.len() > MAX_LINE => return,
                None => {
                    if !fill(stream, &mut buf, stop, since) {
                        return;
                    }
                }
            }
        };
        buf.drain(..used);
        let command = words
            .first()
            .map(|w| w.to_ascii_uppercase())
            .unwrap_or_default();
        let reply: &[u8] = match command.as_slice() {
            b"AUTH" => {
                let (user, pass) = match words.len() {
                    2 => (&b"default"[..], words[1].as_slice()),
                    3 => (words[1].as_slice(), words[2].as_slice()),
                    _ => (&b""[..], &b""[..]),
                };
                if words.len() != 2 && words.len() != 3 {
                    b"-ERR wrong number of arguments for 'auth' command\r\n"
                } else if user == b"default" && pass == password {
                    authed = true;
                    b"+OK\r\n"
                } else {
                    b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
                }
            }
            b"PING" if authed => b"+PONG\r\n",
            b"QUIT" => {
                let _ = stream.write_all(b"+OK\r\n");
                return;
            }
            _ if !authed => b"-NOAUTH Authentication required.\r\n",
            _ => b"-ERR unknown command\r\n",
        };
        if stream.write_all(reply).is_err() {
            return;
        }
    }
}

fn serve_nats(stream: &mut TcpStream, password: &[u8], stop: &AtomicBool) {
    let info = "INFO {\"server_id\":\"credlint-fake\",\"server_name\":\"credlint-fake\",\"version\":\"2.10.0\",\"proto\":1,\"host\":\"127.0.0.1\",\"max_payload\":1048576,\"auth_required\":true}\r\n";
    if stream.write_all(info.as_bytes()).is_err() {
        return;
    }
    let since = Instant::now();
    let mut buf = Vec::new();
    let mut authed = false;
    for _ in 0..MAX_COMMANDS {
        let line = loop {
            if let Some(line) = take_line(&mut buf) {
                break line;
            }
            if buf.len() > MAX_LINE || !fill(stream, &mut buf, stop, since) {
                return;
            }
        };
        let text = String::from_utf8_lossy(&line);
        let (op, args) = text.split_once(' ').unwrap_or((&text, ""));
        let reply: &[u8] = match op.to_ascii_uppercase().as_str() {
            "CONNECT" => {
                let options: Value = serde_json::from_str(args.trim()).unwrap_or(Value::Null);
                let verbose = options
                    .get("verbose")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let pass = options.get("pass").and_then(Value::as_str).unwrap_or("");
                if pass.as_bytes() != password {
                    let _ = stream.write_all(b"-ERR 'Authorization Violation'\r\n");
                    return;
                }
                authed = true;
                if verbose { b"+OK\r\n" } else { b"" }
            }
            "PING" if authed => b"PONG\r\n",
            "PONG" => b"",
            _ if !authed => {
                let _ = stream.write_all(b"-ERR 'Authorization Violation'\r\n");
                return;
            }
            _ => b"-ERR 'Unknown Protocol Operation'\r\n",
        };
        if !reply.is_empty() && stream.write_all(reply).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp_commands_parse_incrementally() {
        let full = b"*2\r\n$4\r\nAUTH\r\n$3\r\npw!\r\n";
        for cut in 0..full.len() {
            assert!(
                parse_command(&full[..cut]).is_none(),
                "an incomplete command at {cut}"
            );
        }
        let (words, used) = parse_command(full).unwrap().unwrap();
        assert_eq!(words, vec![b"AUTH".to_vec(), b"pw!".to_vec()]);
        assert_eq!(used, full.len());
        let (words, _) = parse_command(b"AUTH default secret\r\n").unwrap().unwrap();
        assert_eq!(words.len(), 3);
        assert!(parse_command(b"*99\r\n").unwrap().is_err());
        assert!(parse_command(b"*1\r\n+x\r\n").unwrap().is_err());
    }
}
