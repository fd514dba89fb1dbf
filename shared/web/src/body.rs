//! Reading a request body: at most [`MAX_BODY_BYTES`] as sent, then decoded as its
//! `Content-Encoding` says. The mobile SDKs send their uploads gzipped.
//!
//! The one place a JSON body is read. `JsonBodyBytes` (under `JsonBody` and `Parsed`) reads
//! through [`read`]; so does the idempotency layer for its fingerprint, and it then hands the
//! route the decoded body without its `Content-Encoding` and marked decoded ([`mark_decoded`]),
//! as if it had been sent plain (but up to the decompressed limit). So the
//! fingerprint and every extractor see the same decoded bytes, a gzipped request and its plain
//! retry (or the other way round) are the same request for `X-Idempotency-Key`, and a body is
//! decoded once.

use std::io::Read;

use axum::body::{Body, Bytes};
use http::header::{CONTENT_ENCODING, CONTENT_LENGTH};
use http::request::Parts;
use http::{HeaderMap, HeaderValue};

use crate::ApiError;

/// Request bodies above this, as sent, are refused with 413 (API Gateway + Lambda carry at most
/// 6 MB).
pub const MAX_BODY_BYTES: usize = 6 * 1024 * 1024;

/// The most a compressed body may expand to (each coding, when a body names several); past
/// it, 413. Ten times the 10,000 samples of the
/// SDKs' largest upload (about 3.2 MB of JSON, 90 KB gzipped), and about five times what a plain
/// body may be: a real upload never comes near, while a gzip bomb (a few KB that expand to
/// gigabytes) costs the process at most this much memory before it is refused.
pub const MAX_DECODED_BODY_BYTES: usize = 32 * 1024 * 1024;

/// What the API decodes, as a 415 names it.
const SUPPORTED: &str = "gzip (also named x-gzip) or identity";

/// How much of a gzip stream is inflated at a time.
const CHUNK: usize = 64 * 1024;

pub(crate) fn too_large() -> ApiError {
    ApiError::PayloadTooLarge(format!(
        "Request body too large: the limit is {} MB. Split the request into smaller ones.",
        MAX_BODY_BYTES / (1024 * 1024)
    ))
}

fn too_large_decoded(cap: usize) -> ApiError {
    ApiError::PayloadTooLarge(format!(
        "Request body too large once decompressed: the limit is {} MiB after gzip decoding. Split \
         the request into smaller ones.",
        cap / (1024 * 1024)
    ))
}

fn not_gzip() -> ApiError {
    ApiError::BadRequest(
        "The body is not a valid gzip stream (Content-Encoding: gzip): bad header, truncated or \
         corrupt."
            .into(),
    )
}

/// A content coding the API decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    Gzip,
}

/// The codings of `Content-Encoding`, in the order they were applied (`identity` left out);
/// one the API does not decode is a 415 naming what it does.
fn codings(headers: &HeaderMap) -> Result<Vec<Coding>, ApiError> {
    let mut found = Vec::new();
    for value in headers.get_all(CONTENT_ENCODING) {
        let unsupported = || {
            ApiError::UnsupportedMediaType(format!(
                "Unsupported Content-Encoding: the API decodes {SUPPORTED}."
            ))
        };
        let text = value.to_str().map_err(|_| unsupported())?;
        for coding in text.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
                found.push(Coding::Gzip);
            } else if !coding.eq_ignore_ascii_case("identity") {
                return Err(unsupported());
            }
        }
    }
    Ok(found)
}

/// Marks a request whose body [`read`] has already decoded (the idempotency layer's).
#[derive(Debug, Clone, Copy)]
struct Decoded;

/// Reads `body` (at most [`MAX_BODY_BYTES`]) and undoes the codings its headers name; a body
/// already decoded ([`mark_decoded`]) is read as it is, up to [`MAX_DECODED_BODY_BYTES`].
pub(crate) async fn read(parts: &Parts, body: Body) -> Result<Bytes, ApiError> {
    if parts.extensions.get::<Decoded>().is_some() {
        return axum::body::to_bytes(body, MAX_DECODED_BODY_BYTES)
            .await
            .map_err(|_| too_large_decoded(MAX_DECODED_BODY_BYTES));
    }
    // Refused before the body is read: an unknown coding is a 415 whatever its size.
    let codings = codings(&parts.headers)?;
    let raw = axum::body::to_bytes(body, MAX_BODY_BYTES).await.map_err(|_| too_large())?;
    // The last coding applied is undone first.
    codings.iter().rev().try_fold(raw, |bytes, coding| match coding {
        Coding::Gzip => gunzip(&bytes, MAX_DECODED_BODY_BYTES).map(Bytes::from),
    })
}

/// Makes `parts` describe the body [`read`] decoded into `len` bytes, for the route that reads
/// it next: without `Content-Encoding`, with its new `Content-Length`, and marked decoded (so it
/// is not decoded again, and may be larger than a body as sent).
pub(crate) fn mark_decoded(parts: &mut Parts, len: usize) {
    if parts.headers.remove(CONTENT_ENCODING).is_some() {
        parts.headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
    }
    parts.extensions.insert(Decoded);
}

/// Inflates a gzip stream (one member or several, RFC 1952) a chunk at a time, refusing it as
/// soon as the output passes `cap`: the size the stream's trailer claims is not trusted, and a
/// bomb costs at most `cap` bytes. Anything but a whole, intact stream is a 400.
fn gunzip(compressed: &[u8], cap: usize) -> Result<Vec<u8>, ApiError> {
    // An empty body is no gzip stream (the decoder would read it as zero members).
    if compressed.is_empty() {
        return Err(not_gzip());
    }
    let mut decoder = flate2::read::MultiGzDecoder::new(compressed);
    // JSON usually compresses ten to thirty times; the output grows from there, never past `cap`.
    let mut out = Vec::with_capacity(compressed.len().saturating_mul(8).min(cap));
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = match decoder.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(not_gzip()),
        };
        if out.len() + n > cap {
            return Err(too_large_decoded(cap));
        }
        if out.capacity() < out.len() + n {
            // Doubling, but never past the cap.
            let target = (out.capacity() * 2).max(out.len() + n).min(cap);
            out.reserve_exact(target - out.len());
        }
        out.extend_from_slice(&chunk[..n]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::GzEncoder;
    use http::{HeaderValue, StatusCode};

    use super::*;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn parts(encoding: Option<&str>) -> Parts {
        let mut req = http::Request::builder();
        if let Some(e) = encoding {
            req = req.header(CONTENT_ENCODING, e);
        }
        req.body(()).unwrap().into_parts().0
    }

    async fn decoded(encoding: Option<&str>, body: Vec<u8>) -> Result<Bytes, ApiError> {
        read(&parts(encoding), Body::from(body)).await
    }

    fn status(e: ApiError) -> StatusCode {
        axum::response::IntoResponse::into_response(e).status()
    }

    const JSON: &[u8] = br#"{"client_user_id": "gz-1"}"#;

    #[tokio::test]
    async fn gzip_bodies_are_decoded_whatever_the_case_of_the_name() {
        for name in ["gzip", "GZIP", "Gzip", "x-gzip", "X-GZIP", " gzip ", "identity, gzip"] {
            let got = decoded(Some(name), gzip(JSON)).await.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(&got[..], JSON, "{name}");
        }
    }

    #[tokio::test]
    async fn plain_and_identity_bodies_are_as_sent() {
        for name in [None, Some("identity"), Some("IDENTITY"), Some("")] {
            assert_eq!(&decoded(name, JSON.to_vec()).await.unwrap()[..], JSON, "{name:?}");
        }
        // Not a coding to undo: no magic-byte sniffing of a plain body.
        let gz = gzip(JSON);
        assert_eq!(&decoded(None, gz.clone()).await.unwrap()[..], &gz[..]);
    }

    #[tokio::test]
    async fn codings_are_undone_last_applied_first() {
        let twice = gzip(&gzip(JSON));
        assert_eq!(&decoded(Some("gzip, gzip"), twice).await.unwrap()[..], JSON);
    }

    #[tokio::test]
    async fn concatenated_members_are_one_body() {
        let mut two = gzip(br#"{"client_user_id": "#);
        two.extend(gzip(br#""gz-1"}"#));
        assert_eq!(&decoded(Some("gzip"), two).await.unwrap()[..], JSON);
    }

    #[tokio::test]
    async fn a_broken_stream_is_a_400() {
        let good = gzip(JSON);
        let truncated = good[..good.len() - 6].to_vec();
        let mut bad_crc = good.clone();
        let at = bad_crc.len() - 8;
        bad_crc[at] ^= 0xff;
        let mut bad_size = good.clone();
        let at = bad_size.len() - 1;
        bad_size[at] ^= 0xff;
        let mut trailing = good.clone();
        trailing.extend_from_slice(b"garbage");
        for (what, body) in [
            ("plain JSON", JSON.to_vec()),
            ("empty", Vec::new()),
            ("bad header", b"\x1f\x8c\x08\x00junk".to_vec()),
            ("truncated", truncated),
            ("bad CRC", bad_crc),
            ("bad ISIZE", bad_size),
            ("trailing bytes", trailing),
        ] {
            let e = decoded(Some("gzip"), body).await.expect_err(what);
            assert!(e.to_string().contains("not a valid gzip stream"), "{what}: {e}");
            assert_eq!(status(e), StatusCode::BAD_REQUEST, "{what}");
        }
    }

    #[tokio::test]
    async fn unknown_codings_are_a_415_naming_what_is_supported() {
        for name in ["br", "deflate", "compress", "zstd", "gzip, br", "br, gzip"] {
            let e = decoded(Some(name), gzip(JSON)).await.expect_err(name);
            assert!(e.to_string().contains("gzip"), "{name}: {e}");
            assert_eq!(status(e), StatusCode::UNSUPPORTED_MEDIA_TYPE, "{name}");
        }
    }

    #[test]
    fn a_bomb_stops_at_the_cap_whatever_the_trailer_claims() {
        // 64 MiB of zeros is about 64 KB gzipped; a cap of 1 MiB refuses it after about 1 MiB.
        let zeros = vec![0u8; 64 * 1024 * 1024];
        let mut bomb = gzip(&zeros);
        drop(zeros);
        assert!(bomb.len() < 100 * 1024, "{} bytes", bomb.len());
        let e = gunzip(&bomb, 1024 * 1024).unwrap_err();
        assert_eq!(status(e), StatusCode::PAYLOAD_TOO_LARGE);
        // A trailer that claims a tiny size changes nothing.
        let n = bomb.len();
        bomb[n - 4..].copy_from_slice(&16u32.to_le_bytes());
        let e = gunzip(&bomb, 1024 * 1024).unwrap_err();
        assert!(e.to_string().contains("once decompressed"), "{e}");
        assert!(e.to_string().contains("the limit is 1 MiB"), "{e}");
    }

    #[test]
    fn the_output_never_grows_past_the_cap() {
        let body = vec![b' '; 1024 * 1024];
        let gz = gzip(&body);
        assert_eq!(gunzip(&gz, body.len()).unwrap(), body, "exactly the cap passes");
        assert_eq!(status(gunzip(&gz, body.len() - 1).unwrap_err()), StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[tokio::test]
    async fn an_encoded_body_over_the_sent_limit_is_the_usual_413() {
        let e = decoded(Some("gzip"), vec![0u8; MAX_BODY_BYTES + 1]).await.unwrap_err();
        assert!(e.to_string().contains("6 MB"), "{e}");
    }

    #[tokio::test]
    async fn a_decoded_body_reads_as_a_plain_one() {
        let mut p = parts(Some("gzip"));
        p.headers.insert(CONTENT_LENGTH, HeaderValue::from(30));
        let bytes = read(&p, Body::from(gzip(JSON))).await.unwrap();
        mark_decoded(&mut p, bytes.len());
        assert!(p.headers.get(CONTENT_ENCODING).is_none());
        assert_eq!(p.headers[CONTENT_LENGTH], JSON.len().to_string().as_str());
        assert_eq!(&read(&p, Body::from(bytes)).await.unwrap()[..], JSON, "not decoded twice");
    }

    #[tokio::test]
    async fn a_decoded_body_may_be_larger_than_one_as_sent() {
        let big = vec![b' '; MAX_BODY_BYTES + 1];
        let mut p = parts(Some("gzip"));
        let bytes = read(&p, Body::from(gzip(&big))).await.unwrap();
        mark_decoded(&mut p, bytes.len());
        assert_eq!(read(&p, Body::from(bytes)).await.unwrap().len(), big.len());
        let over = vec![b' '; MAX_DECODED_BODY_BYTES + 1];
        let e = read(&p, Body::from(over)).await.unwrap_err();
        assert_eq!(status(e), StatusCode::PAYLOAD_TOO_LARGE);
    }
}
