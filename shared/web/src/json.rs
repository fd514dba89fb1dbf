//! JSON answers.

use axum::body::{Body, Bytes};
use axum::response::{IntoResponse, Response};
use http::header::CONTENT_TYPE;
use http::{HeaderValue, StatusCode};
use serde::Serialize;

/// Room for a typical answer (a user is about 270 bytes), so that writing one never regrows.
const INITIAL_CAPACITY: usize = 512;

/// An answer of `T` as JSON, the same response as `axum::Json` gives (200 with
/// `content-type: application/json`; if `T` cannot be serialised, a 500 with the error in plain
/// text), written more cheaply: into a `Vec` with room for a typical record, where axum writes
/// through a `BytesMut` writer that starts at 128 bytes and so regrows twice for a user.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        let mut buf = Vec::with_capacity(INITIAL_CAPACITY);
        match serde_json::to_writer(&mut buf, &self.0) {
            Ok(()) => JsonText(Bytes::from(buf)).into_response(),
            Err(e) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                [(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"))],
                e.to_string(),
            )
                .into_response(),
        }
    }
}

/// An answer whose JSON is written already (a kept page): 200 with
/// `content-type: application/json`, as [`Json`] answers.
#[derive(Debug, Clone)]
pub struct JsonText(pub Bytes);

impl IntoResponse for JsonText {
    fn into_response(self) -> Response {
        let mut res = Response::new(Body::from(self.0));
        res.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        res
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    async fn parts(res: Response) -> (StatusCode, Vec<(String, String)>, Bytes) {
        let status = res.status();
        let headers =
            res.headers().iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_owned())).collect();
        (status, headers, axum::body::to_bytes(res.into_body(), usize::MAX).await.unwrap())
    }

    #[tokio::test]
    async fn answers_as_axum_json_does() {
        let value = serde_json::json!({"user_id": "x", "n": [1, 2.5, null], "s": "\"\u{e9}\n"});
        let big: Vec<u32> = (0..1000).collect();
        assert_eq!(
            parts(Json(&value).into_response()).await,
            parts(axum::Json(&value).into_response()).await
        );
        assert_eq!(parts(Json(&big).into_response()).await, parts(axum::Json(&big).into_response()).await);
        // Maps with non-string keys cannot be written as JSON: a 500 in plain text.
        let bad = BTreeMap::from([(vec![1u8], 1)]);
        let (ours, axums) =
            (parts(Json(&bad).into_response()).await, parts(axum::Json(&bad).into_response()).await);
        assert_eq!(ours.0, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(ours, axums);
    }
}
