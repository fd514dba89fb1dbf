//! The local stack's TCP listener. hyper answers a request line longer than it parses (a URI
//! over about 64 KiB) with an empty `414` of its own before the API sees the request; every
//! answer of the API is JSON, so the first request line of a connection is measured on its way
//! to hyper and, when it is that long, answered here with the API's JSON 414 and the connection
//! closed. (On AWS, API Gateway refuses such a request before Lambda.) Shorter lines up to the
//! API's own limit reach the app, which answers them (`wearlab_web`, `MAX_URI_BYTES`).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// The longest first request line passed on to hyper: under its own limit on the URI.
pub const MAX_REQUEST_LINE: usize = 60 * 1024;

const TOO_LONG: &[u8] =
    b"HTTP/1.1 414 URI Too Long\r\ncontent-type: application/json\r\nconnection: close\r\n\
content-length: 67\r\n\r\n{\"detail\":\"The address is longer than the API reads (8192 bytes).\"}";

pub struct Listener(pub TcpListener);

impl axum::serve::Listener for Listener {
    type Io = LineGuard;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (io, addr) = axum::serve::Listener::accept(&mut self.0).await;
        (LineGuard { inner: io, seen: 0, line_done: false, refused: false }, addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// A connection whose first request line is measured as hyper reads it.
pub struct LineGuard {
    inner: TcpStream,
    seen: usize,
    line_done: bool,
    refused: bool,
}

impl AsyncRead for LineGuard {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.refused {
            return Poll::Ready(Ok(())); // end of stream: hyper drops the connection
        }
        let before = buf.filled().len();
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if this.line_done || !matches!(polled, Poll::Ready(Ok(()))) {
            return polled;
        }
        let fresh = &buf.filled()[before..];
        match fresh.iter().position(|b| *b == b'\n') {
            Some(_) => this.line_done = true,
            None => this.seen += fresh.len(),
        }
        if !this.line_done && this.seen > MAX_REQUEST_LINE {
            // The answer is a few bytes into an idle socket's send buffer: written without
            // waiting; if it cannot be, the connection just closes.
            let _ = this.inner.try_write(TOO_LONG);
            this.refused = true;
            buf.set_filled(before);
            return Poll::Ready(Ok(()));
        }
        polled
    }
}

impl AsyncWrite for LineGuard {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// Sends `request` to a server on the guarded listener; answers what came back.
    async fn exchange(request: Vec<u8>) -> String {
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let app = axum::Router::new().route("/v2/user", axum::routing::get(|| async { "listed" }));
        let server = tokio::spawn(async move { axum::serve(Listener(tcp), app).await.unwrap() });
        let mut client = TcpStream::connect(addr).await.unwrap();
        // The server may close before it read all of a refused line: a failed write is fine.
        let _ = client.write_all(&request).await;
        let mut answer = Vec::new();
        let read = tokio::time::timeout(std::time::Duration::from_secs(10), client.read_to_end(&mut answer));
        let _ = read.await;
        server.abort();
        String::from_utf8_lossy(&answer).into_owned()
    }

    #[tokio::test]
    async fn a_request_line_longer_than_hyper_reads_gets_the_apis_json_414() {
        let line = format!("GET /v2/user?cursor={} HTTP/1.1\r\nhost: x\r\n\r\n", "a".repeat(100_000));
        let answer = exchange(line.into_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 414 "), "{}", &answer[..answer.len().min(200)]);
        assert!(answer.contains("content-type: application/json"), "{answer}");
        assert!(answer.ends_with("bytes).\"}"), "{answer}");
    }

    #[tokio::test]
    async fn ordinary_requests_pass() {
        let answer =
            exchange(b"GET /v2/user HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n".to_vec()).await;
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(answer.ends_with("listed"), "{answer}");
    }

    #[test]
    fn the_answer_says_its_length() {
        let (head, body) = std::str::from_utf8(TOO_LONG).unwrap().split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
        let parsed: serde_json::Value = serde_json::from_str(body).unwrap();
        let detail = parsed["detail"].as_str().unwrap();
        assert!(detail.contains(&format!("({} bytes)", wearlab_web::MAX_URI_BYTES)), "{detail}");
    }
}
