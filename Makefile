# Wearlab — the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PORT ?= 8080
CARGO ?= cargo
PIP ?= python3 -m pip
# Architecture of the Lambda artifacts: arm64 when the aarch64 target is installed, else x86_64.
LAMBDA_ARCH ?= $(shell rustup target list --installed 2>/dev/null | grep -q aarch64-unknown-linux-gnu && echo arm64 || echo x86_64)

.PHONY: help run test tools lambda-tools fhir-tools lint unit fhir browser cfn-lint contract openapi watch watch-smoke bench package sam-build clean-local

help:
	@echo "make run      start the whole API on http://127.0.0.1:$(PORT) (embedded storage in .local/)"
	@echo "make test     everything CI checks: fmt, clippy, tests (embedded + DynamoDB on moto), FHIR validation and client, cfn-lint + sam validate, contract fuzzing, make watch smoke"
	@echo "make openapi  regenerate docs/openapi.json from the code"
	@echo "make watch    the Lambda functions under cargo lambda watch, on AWS adapters pointed at moto"
	@echo "make bench    benchmarks; figures go to docs/PERFORMANCE.md"
	@echo "make package  build every function for Lambda into target/lambda/ ($(LAMBDA_ARCH))"
	@echo "make sam-build  sam build of template.yaml (every function, $(LAMBDA_ARCH)) into .aws-sam/build/"

run:
	$(CARGO) build --bin wearlab-local
	PORT=$(PORT) ./target/debug/wearlab-local

# Python tools the tests use, installed only when missing.
tools:
	@command -v moto_server >/dev/null || $(PIP) install --quiet 'moto[server]>=5.1'
	@command -v cfn-lint >/dev/null || $(PIP) install --quiet 'cfn-lint>=1.20'
	@command -v schemathesis >/dev/null || $(PIP) install --quiet 'schemathesis==4.32.5' 'hypothesis==6.170.15'
	@$(CARGO) nextest --version >/dev/null 2>&1 || $(CARGO) install --locked cargo-nextest

# The Lambda tool chain: cargo-lambda (brings zig for linking) and the AWS SAM CLI.
lambda-tools:
	@command -v cargo-lambda >/dev/null || $(PIP) install --quiet 'cargo-lambda>=1.8'
	@command -v sam >/dev/null || $(PIP) install --quiet 'aws-sam-cli>=1.140'

# The FHIR checks' tools, from PyPI, in a virtualenv of their own (installed only when missing):
# fhir.resources 6.4.0 is the last release whose models are FHIR R4 4.0.1 (later ones are R4B
# and R5) and it needs pydantic 1, which the other Python tools here do not share; fhirclient
# is SMART on FHIR's Python client.
FHIR_VENV ?= target/fhir-venv
FHIR_OUT = $(or $(CARGO_TARGET_DIR),target)/fhir-resources
fhir-tools:
	@test -x $(FHIR_VENV)/bin/python || python3 -m venv $(FHIR_VENV)
	@$(FHIR_VENV)/bin/python -c 'import fhir.resources, fhirclient' 2>/dev/null || \
		$(FHIR_VENV)/bin/python -m pip install --quiet 'fhir.resources==6.4.0' 'pydantic>=1.10,<2' 'fhirclient==4.4.0'

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

unit: tools
	scripts/with-moto $(CARGO) nextest run --workspace --locked --no-fail-fast

# FHIR R4 checked by tools no one here wrote (docs/FHIR.md): every resource the fhir tests
# answer (on both adapters) is validated with fhir.resources, then fhirclient reads a patient and
# pages through its Observations on a local stack.
fhir: tools fhir-tools
	rm -rf $(FHIR_OUT)
	scripts/with-moto $(CARGO) nextest run --workspace --locked -E 'test(/fhir/)'
	$(FHIR_VENV)/bin/python infra/tests/fhir/validate.py $(FHIR_OUT)
	FHIR_PYTHON=$(FHIR_VENV)/bin/python scripts/fhir-client-test

# The hosted pages (link widget, user portal) in headless Debian Chromium, driven by the pinned
# playwright-core against a local stack the tests start (infra/browser-tests; screenshots in
# target/browser-tests/). Installs Chromium (apt, as root) and the npm packages when missing.
browser:
	@test -x /usr/bin/chromium || (apt-get update && apt-get install -y --no-install-recommends chromium)
	@test -f infra/browser-tests/node_modules/axe-core/axe.min.js -a -d infra/browser-tests/node_modules/playwright-core \
		|| (cd infra/browser-tests && npm ci --no-audit --no-fund)
	$(CARGO) build --locked --bin wearlab-local
	cd infra/browser-tests && node --test --test-concurrency=1 --test-reporter=spec *.test.mjs

# sam validate runs offline; it only wants a region and credentials to exist, so dummy ones.
cfn-lint: tools lambda-tools
	cfn-lint template.yaml
	env -u AWS_PROFILE AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
		SAM_CLI_TELEMETRY=0 sam validate --lint --template template.yaml

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

test: tools lint unit fhir browser cfn-lint contract watch-smoke
	@echo "make test: all checks passed"

watch: tools lambda-tools
	scripts/with-moto scripts/watch

# `make watch` started on a free port, every function started, one request per route group,
# everything stopped (scripts/watch-smoke); part of `make test`.
watch-smoke: tools lambda-tools
	scripts/watch-smoke

bench:
	scripts/bench

package: lambda-tools
	scripts/package $(LAMBDA_ARCH)

# Slow (release builds of every function): not part of `make test`. Figures in docs/OPERATIONS.md.
sam-build: lambda-tools
	scripts/package --sam $(LAMBDA_ARCH)

clean-local:
	rm -rf .local
