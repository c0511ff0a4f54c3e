'use strict';
// Drives one node-redlock version, unmodified, for lockagent/redlock's
// TestForeignClientInterop. It reads one command per line on stdin and answers each with
// one JSON line on stdout:
//
//   acquire <key> <ttl_ms> <retry_count> <retry_delay_ms> <retry_jitter_ms>
//       -> {"ok":true,"value":"...","waitMs":12,"attempts":1}
//       -> {"ok":false,"error":"...","clientErrors":["NOPERM ..."],"waitMs":3}
//   release  (the lock the last acquire took)
//       -> {"ok":true} | {"ok":false,"error":"..."}
//   quit
//
// Usage: node driver.js redlock4|redlock5, with INTEROP_ENDPOINTS (host:port,...),
// INTEROP_USER and INTEROP_PASSWORD in the environment. The ioredis options are the ones
// the kit's guide for other clients gives (enableReadyCheck and disableClientInfo: the
// user may run neither INFO nor CLIENT SETINFO); INTEROP_IOREDIS_DEFAULTS=1 keeps
// ioredis's defaults instead, to show that locks work with them too.
const readline = require('readline');
const Redis = require('ioredis');

const version = process.argv[2];
if (version !== 'redlock4' && version !== 'redlock5') {
  console.error('usage: node driver.js redlock4|redlock5');
  process.exit(2);
}

const kitOptions = process.env.INTEROP_IOREDIS_DEFAULTS === '1'
  ? {}
  : { enableReadyCheck: false, disableClientInfo: true };
const clients = process.env.INTEROP_ENDPOINTS.split(',').map((ep) => {
  const i = ep.lastIndexOf(':');
  return new Redis({
    host: ep.slice(0, i),
    port: Number(ep.slice(i + 1)),
    username: process.env.INTEROP_USER,
    password: process.env.INTEROP_PASSWORD,
    ...kitOptions,
  });
});
// Every client logs its connection errors here rather than crashing the driver: a master
// that refuses a command is one vote against, as in an application.
clients.forEach((c) => c.on('error', () => {}));

function errorText(e) {
  return e && e.message ? e.message : String(e);
}

// One lock at a time: the tests drive one holder per process.
let held = null;
const clientErrors = new Set();

async function acquire(key, ttl, retryCount, retryDelay, retryJitter) {
  clientErrors.clear();
  const settings = { driftFactor: 0.01, retryCount, retryDelay, retryJitter };
  const start = Date.now();
  try {
    if (version === 'redlock4') {
      const Redlock4 = require('redlock');
      const rl = new Redlock4(clients, settings);
      rl.on('clientError', (e) => clientErrors.add(errorText(e)));
      held = await rl.lock(key, ttl);
      return { ok: true, value: held.value, waitMs: Date.now() - start, attempts: held.attempts };
    }
    const Redlock5 = require('redlock5').default;
    const rl = new Redlock5(clients, settings);
    rl.on('error', (e) => {
      // A key held by someone else is a vote against, not an error worth reporting.
      if (e.name !== 'ResourceLockedError') clientErrors.add(errorText(e));
    });
    held = await rl.acquire([key], ttl);
    return { ok: true, value: held.value, waitMs: Date.now() - start, attempts: held.attempts.length };
  } catch (e) {
    held = null;
    return { ok: false, error: errorText(e), clientErrors: [...clientErrors], waitMs: Date.now() - start };
  }
}

async function release() {
  if (held === null) return { ok: false, error: 'nothing held' };
  const lock = held;
  held = null;
  try {
    await (version === 'redlock4' ? lock.unlock() : lock.release());
    return { ok: true };
  } catch (e) {
    return { ok: false, error: errorText(e) };
  }
}

async function main() {
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    const [cmd, ...args] = line.trim().split(/\s+/);
    let reply;
    if (cmd === 'acquire') {
      const [key, ...numbers] = args;
      reply = await acquire(key, ...numbers.map(Number));
    } else if (cmd === 'release') {
      reply = await release();
    } else if (cmd === 'quit') {
      break;
    } else {
      reply = { ok: false, error: `unknown command ${JSON.stringify(cmd)}` };
    }
    process.stdout.write(JSON.stringify(reply) + '\n');
  }
  await Promise.all(clients.map((c) => c.quit().catch(() => {})));
}

main().catch((e) => {
  console.error(errorText(e));
  process.exit(1);
});
