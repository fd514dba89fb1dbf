//! Wearlab's integration tests: one binary, one module per area.
//!
//! Tests that need AWS run against moto: `make test` starts `moto_server` and sets
//! `WEARLAB_TEST_AWS_ENDPOINT`.

mod architecture;
mod audit;
mod body_limits;
mod bulk;
mod contract;
mod crash;
mod docs_names;
mod fair_use;
mod function_ports;
mod gzip_bodies;
mod hardening;
mod helpers;
mod hosted;
mod hot_partitions;
mod idempotency;
mod lab;
mod lambda_env;
mod lifecycle;
mod lifecycle_events;
mod linking;
mod max_heart_rate;
mod metrics;
mod one_422;
mod outbox;
mod phone_auth;
mod phone_sync;
mod phone_uploads;
mod pipeline;
mod provider_secrets;
mod provider_truth;
mod queues;
mod real_providers;
mod retryable;
mod secrets_at_rest;
mod simulator_pages;
mod storage_conformance;
mod throttle;
mod users_api;
mod users_count;
mod users_on_dynamodb;
mod users_page_cache;
mod webhook_urls;
mod webhooks;
