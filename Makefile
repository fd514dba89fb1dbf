# Wearlab — the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PORT ?= 8080
CARGO ?= cargo
PIP ?= python3 -m pip
# Architecture of the Lambda artifacts: arm64 when the aarch64 target is installed, else x86_64.
LAMBDA_ARCH ?= $(shell rustup target list --installed 2>/dev/null | grep -q aarch64-unknown-linux-gnu && echo arm64 || echo x86_64)

.PHONY: help run test tools lint unit browser cfn-lint contract openapi watch bench package clean-local

help:
	@echo "make run      start the whole API on http://127.0.0.1:$(PORT) (embedded storage in .local/)"
	@echo "make test     everything CI checks: fmt, clippy, tests (embedded + DynamoDB on moto), cfn-lint, contract fuzzing"
	@echo "make openapi  regenerate docs/openapi.json from the code"
	@echo "make watch    the Lambda functions under cargo lambda watch, on AWS adapters pointed at moto"
	@echo "make bench    benchmarks; figures go to docs/PERFORMANCE.md"
	@echo "make package  build every function for Lambda into target/lambda/ ($(LAMBDA_ARCH))"

run:
	$(CARGO) build --bin wearlab-local
	PORT=$(PORT) ./target/debug/wearlab-local

# Python tools the tests use, installed only when missing.
tools:
	@command -v moto_server >/dev/null || $(PIP) install --quiet 'moto[server]>=5.1'
	@command -v cfn-lint >/dev/null || $(PIP) install --quiet 'cfn-lint>=1.20'
	@command -v schemathesis >/dev/null || $(PIP) install --quiet 'schemathesis==4.32.5' 'hypothesis==6.170.15'
	@$(CARGO) nextest --version >/dev/null 2>&1 || $(CARGO) install --locked cargo-nextest

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

unit: tools
	scripts/with-moto $(CARGO) nextest run --workspace --locked --no-fail-fast

# The hosted pages (link widget, user portal) in headless Debian Chromium, driven by the pinned
# playwright-core against a local stack the tests start (infra/browser-tests; screenshots in
# target/browser-tests/). Installs Chromium (apt, as root) and the npm packages when missing.
browser:
	@test -x /usr/bin/chromium || (apt-get update && apt-get install -y --no-install-recommends chromium)
	@test -d infra/browser-tests/node_modules || (cd infra/browser-tests && npm ci --no-audit --no-fund)
	$(CARGO) build --locked --bin wearlab-local
	cd infra/browser-tests && node --test --test-concurrency=1 --test-reporter=spec hosted-pages.test.mjs

cfn-lint: tools
	cfn-lint template.yaml

# Contract fuzzing of the running local stack with the generated OpenAPI document (bounded:
# CONTRACT_EXAMPLES per operation, CONTRACT_MAX_TIME seconds). Every check runs except:
# - positive_data_acceptance: it expects each schema-valid request to succeed (or 404/409), but
#   the specification mandates 400 for schema-valid requests that break a business rule (a taken
#   client_user_id; an undo refused because another user took the id), and rules JSON Schema
#   cannot state answer 422 (client_user_id must not be an email or phone number, time zones are
#   IANA names, dates are real and in order). Each of those answers has its own test in infra/tests.
# - use_after_free: after DELETE it expects the user to stay gone, but POST /v2/user/undo_delete
#   restores a deleted user during the grace period by design, and its stateful phase links the
#   created user_id into undo_delete. The lifecycle tests check deleted users read as 404.
# - ensure_resource_availability: a POST repeated with an X-Idempotency-Key replays the first
#   answer, which may name a user deleted since (replay is what the key promises); the fuzzer
#   draws keys from a small space, so unrelated scenarios share keys. Create-then-read is
#   covered by the API tests.
contract: tools
	scripts/contract-test --exclude-checks positive_data_acceptance,use_after_free,ensure_resource_availability

# Regenerates docs/openapi.json from the code (a test fails while the committed copy differs).
openapi:
	$(CARGO) run --quiet --locked --bin wearlab-local -- --print-openapi > docs/openapi.json

test: tools lint unit browser cfn-lint contract
	@echo "make test: all checks passed"

watch: tools
	@command -v cargo-lambda >/dev/null || $(PIP) install --quiet cargo-lambda
	scripts/with-moto scripts/watch

bench:
	scripts/bench

package:
	@command -v cargo-lambda >/dev/null || $(PIP) install --quiet cargo-lambda
	scripts/package $(LAMBDA_ARCH)

clean-local:
	rm -rf .local
