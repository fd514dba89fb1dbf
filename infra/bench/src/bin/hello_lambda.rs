//! The baseline of the Lambda init measurement: the smallest `lambda_runtime` function.

use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::run(service_fn(|_event: LambdaEvent<Value>| async {
        Ok::<_, Error>(json!({"hello": "world"}))
    }))
    .await
}
