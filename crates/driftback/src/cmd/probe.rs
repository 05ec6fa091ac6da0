//! `driftback probe`: ask a running daemon's health endpoint, for container health checks (the
//! image has no curl). Exits 0 when the endpoint answers 2xx, non-zero with the reason otherwise.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args as ClapArgs;

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// The endpoint to ask (plain HTTP: the daemon's [serve] listen address).
    #[arg(long, default_value = "http://127.0.0.1:9464/healthz")]
    pub url: String,
    /// Seconds to wait for the connection and the answer.
    #[arg(long, default_value_t = 5)]
    pub timeout_secs: u64,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let (authority, path) = split_url(&args.url)?;
    let timeout = Duration::from_secs(args.timeout_secs.max(1));
    let address = authority
        .to_socket_addrs()
        .with_context(|| format!("resolving {authority}"))?
        .next()
        .with_context(|| format!("{authority} resolves to no address"))?;
    let mut stream =
        TcpStream::connect_timeout(&address, timeout).with_context(|| format!("connecting to {authority}"))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n")?;
    // The status line is all a probe needs; read at most a little of the answer.
    // A server that closes abruptly after answering still answered.
    let mut head = Vec::new();
    if let Err(e) = stream.take(4096).read_to_end(&mut head)
        && head.is_empty()
    {
        return Err(e).with_context(|| format!("reading the answer of {}", args.url));
    }
    let status = status_code(&head).with_context(|| format!("{} did not answer HTTP", args.url))?;
    if !(200..300).contains(&status) {
        bail!("{} answered {status}", args.url);
    }
    println!("{} answered {status}", args.url);
    Ok(())
}

/// `http://host:port/path` as (`host:port`, `/path`).
fn split_url(url: &str) -> anyhow::Result<(String, String)> {
    let rest = url
        .strip_prefix("http://")
        .with_context(|| format!("{url}: only plain http:// URLs can be probed (the daemon's listen address)"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() || authority.contains(['@', ' ']) {
        bail!("{url}: no host to probe");
    }
    let authority = if authority.contains(':') { authority.to_string() } else { format!("{authority}:80") };
    Ok((authority, path.to_string()))
}

fn status_code(head: &[u8]) -> Option<u16> {
    let line = head.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split_whitespace();
    parts.next().filter(|v| v.starts_with("HTTP/"))?;
    parts.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_authority_and_path() {
        assert_eq!(split_url("http://127.0.0.1:9464/healthz").unwrap(), ("127.0.0.1:9464".into(), "/healthz".into()));
        assert_eq!(split_url("http://localhost").unwrap(), ("localhost:80".into(), "/".into()));
        assert!(split_url("https://example.com/healthz").is_err());
        assert!(split_url("http:///healthz").is_err());
    }

    #[test]
    fn the_status_line_gives_the_code() {
        assert_eq!(status_code(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"), Some(200));
        assert_eq!(status_code(b"HTTP/1.1 503 Service Unavailable\r\n"), Some(503));
        assert_eq!(status_code(b"SSH-2.0-OpenSSH\r\n"), None);
        assert_eq!(status_code(b""), None);
    }
}
