// Preloaded into the MCP Inspector CLI by tests/mcp_server/test_inspector.py (NODE_OPTIONS=--require).
//
// The CLI reports a failed HTTP exchange as Node's bare "fetch failed"; the reason (a refused or reset
// connection, a socket the server closed, a timeout) is in the error's `cause`, which the CLI drops. This writes
// the request and its cause to stderr, which the test shows when the inspector fails.
"use strict";

const fetchOf = globalThis.fetch;

globalThis.fetch = async function fetchWithCause(input, init) {
  const started = Date.now();
  try {
    return await fetchOf(input, init);
  } catch (error) {
    const cause = error && error.cause;
    const method = (init && init.method) || "GET";
    const reason = cause ? `${cause.code || cause.name}: ${cause.message}` : "no cause";
    process.stderr.write(`${method} ${input} failed after ${Date.now() - started} ms: ${error} (${reason})\n`);
    throw error;
  }
};
