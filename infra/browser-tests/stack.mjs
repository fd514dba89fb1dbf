// The local stack for the browser tests: the wearlab-local binary on a free loopback port
// with a throwaway data directory, and a small client for its HTTP API. Every wait is bounded.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(here, '..', '..');
const TARGET = process.env.CARGO_TARGET_DIR ? resolve(REPO, process.env.CARGO_TARGET_DIR) : join(REPO, 'target');
export const BINARY = process.env.WEARLAB_LOCAL_BIN ?? join(TARGET, 'debug', 'wearlab-local');
export const API_KEY = 'sk_local_browser_tests_0123456789';
const START_TIMEOUT_MS = 60_000;
const REQUEST_TIMEOUT_MS = 15_000;

async function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

export class Stack {
  /** Starts the binary (with `env` added to its environment) and waits (bounded) for its
   *  `Listening on http://...` line. */
  static async start(env = {}) {
    if (!existsSync(BINARY)) {
      throw new Error(`${BINARY} is missing: build it with cargo build --bin wearlab-local`);
    }
    const dataDir = mkdtempSync(join(tmpdir(), 'wearlab-browser-data-'));
    const port = await freePort();
    const child = spawn(BINARY, [], {
      env: { ...process.env, PORT: String(port), WEARLAB_API_KEY: API_KEY, WEARLAB_DATA_DIR: dataDir, RUST_LOG: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
    const base = await new Promise((ok, fail) => {
      let out = '';
      const timer = setTimeout(() => fail(new Error(`no "Listening on" within ${START_TIMEOUT_MS} ms: ${stderr}`)), START_TIMEOUT_MS);
      child.stdout.on('data', (d) => {
        out += d;
        const m = out.match(/Listening on (http:\/\/127\.0\.0\.1:\d+)/);
        if (m) { clearTimeout(timer); ok(m[1]); }
      });
      child.once('exit', (code) => { clearTimeout(timer); fail(new Error(`wearlab-local exited with ${code}: ${stderr}`)); });
    });
    child.stdout.resume();
    return new Stack(child, base, dataDir);
  }

  constructor(child, base, dataDir) {
    this.child = child;
    this.base = base;
    this.dataDir = dataDir;
  }

  /** Stops the stack it started (by its own pid) and removes its data. */
  async stop() {
    if (this.child.exitCode === null) {
      const exited = new Promise((ok) => this.child.once('exit', ok));
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  /** Calls the API with the team's key; answers the parsed JSON body (throws on non-2xx). */
  async api(method, path, body) {
    const res = await fetch(this.base + path, {
      method,
      headers: { 'x-service-api-key': API_KEY, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }

  async createUser(clientUserId) {
    return (await this.api('POST', '/v2/user', { client_user_id: clientUserId })).user_id;
  }

  async linkToken(body) {
    return this.api('POST', '/v2/link/token', body);
  }

  /** Moves the stack's clock forward (a local-only route). */
  async advanceClock(seconds) {
    return this.api('POST', `/local/clock/advance?seconds=${seconds}`);
  }

  /** Events the stack published for the team, of one type. */
  async events(eventType) {
    return this.api('GET', `/local/events?event_type=${encodeURIComponent(eventType)}`);
  }
}
