//! Describing SDK failures for `StoreError` / `SchedulerError`: operation and AWS error code,
//! or the transport's cause chain. Never the request, so never item data.

use std::error::Error;
use std::fmt::Debug;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

/// `op: Code` for a service error (`op: Code: message` with `with_message`, for services whose
/// messages name parameters, never values); `op: cause: cause...` for transport failures.
pub(crate) fn describe<E, R>(op: &str, err: &SdkError<E, R>, with_message: bool) -> String
where
    E: ProvideErrorMetadata + Error + 'static,
    R: Debug,
{
    match err {
        SdkError::ServiceError(se) => {
            let e = se.err();
            let code = e.code().unwrap_or("unknown service error");
            match e.message() {
                Some(m) if with_message => format!("{op}: {code}: {m}"),
                _ => format!("{op}: {code}"),
            }
        }
        // Its cause may quote the response body.
        SdkError::ResponseError(_) => format!("{op}: unreadable response"),
        other => {
            let mut msg = format!("{op}: {other}");
            let mut source = other.source();
            while let Some(cause) = source {
                msg.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            msg
        }
    }
}

pub(crate) fn is_code<E: ProvideErrorMetadata, R>(err: &SdkError<E, R>, code: &str) -> bool {
    err.code() == Some(code)
}
