// Where a decision's Redis CPU goes: `npm run bench:redis-profile` (or `node bench/redis-profile.mjs`, after
// `npm run build`). Starts its own redis-server and loads a library that runs this module's dispatcher (the
// code of dist/, as the store's function runs it) and bare parts of a decision in loops over 20,000 keys
// inside one FCALL each, then reads each loop's time from INFO commandstats: µs per key, with none of the
// cost of a command (parsing, arguments, reply, network). Then where an item of a batch goes: FCALLs of 25
// one-item requests as the store sends them (its 'batch'), beside functions that take the same keys and
// arguments and do only part of the work (build the reply; GET each key; INCRBY each; GET and SET PX each),
// µs per item from INFO commandstats. Then a few Lua operations alone, in ns. Prints JSON.
//
// BENCH_CALLGRIND=1: redis-server runs under valgrind's callgrind, and only the batch part runs, reported in
// instructions per item (Ir, from callgrind's counters zeroed before and dumped after each measurement):
// slow, but the same on a loaded machine as on a quiet one.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';

import { Redis } from 'ioredis';

import { validatePolicy } from '../dist/index.js';
import { batchArgs, requestArgs } from '../dist/stores/redis/call-args.js';
import { StoredIdentities } from '../dist/stores/storage-key.js';
import { LUA_CALL as dispatcherCall } from '../dist/stores/redis/program.generated.js';
import { RATE_LIMIT_FUNCTION, RATE_LIMIT_LIBRARY, RATE_LIMIT_SCRIPT } from '../dist/stores/redis/rate-limit.lua.js';
import { freePort, ping } from './net.mjs';

const KEYS = 20_000;
const REPEATS = 5;

const callgrind = process.env.BENCH_CALLGRIND === '1';
const dumps = callgrind ? mkdtempSync(join(os.tmpdir(), 'redis-callgrind-')) : '';
const port = await freePort();
const redisArgs = ['--port', String(port), '--bind', '127.0.0.1', '--save', ''];
const server = callgrind
  ? spawn('valgrind', ['--tool=callgrind', `--callgrind-out-file=${dumps}/cg.out`, 'redis-server', ...redisArgs], {
      stdio: 'ignore',
    })
  : spawn('redis-server', redisArgs, { stdio: 'ignore' });
process.once('exit', () => server.kill('SIGKILL'));
for (let i = 0; !(await ping(port)); i++) {
  if (i > 200) throw new Error(`redis-server did not start on ${port}`);
  await new Promise((resolve) => setTimeout(resolve, 50));
}
const client = new Redis({ port });

const definitions = RATE_LIMIT_SCRIPT.slice(0, RATE_LIMIT_SCRIPT.length - dispatcherCall.length);
const library = `#!lua name=profile
local function build()
${definitions}
return function(KEYS, ARGV)
${dispatcherCall}
end
end
local decide
local function each_key(ARGV, body)
  local n, now = tonumber(ARGV[1]), ARGV[2]
  for i = 1, n do body('rl:{per-user:user:' .. (10000 + i) .. '}', now) end
  return n
end
redis.register_function('decision', function(KEYS, ARGV)
  if not decide then decide = build() end
  local code = ARGV[3]
  return each_key(ARGV, function(key, now)
    decide({ key }, { 'consume', now, '1000', code, '1000000', '60000', '1000000', '1' })
  end)
end)
redis.register_function('get_set', function(KEYS, ARGV)
  return each_key(ARGV, function(key)
    redis.call('GET', key)
    redis.call('SET', key, '123456789012', 'PX', '61000')
  end)
end)
redis.register_function('get', function(KEYS, ARGV)
  return each_key(ARGV, function(key) redis.call('GET', key) end)
end)
redis.register_function('key_names', function(KEYS, ARGV)
  return each_key(ARGV, function() end)
end)
local function per_key(KEYS, body)
  local out = {}
  for i = 1, #KEYS do
    body(KEYS[i])
    out[4 * i - 3], out[4 * i - 2], out[4 * i - 1], out[4 * i] = 1, 1000, 1000, 0
  end
  return out
end
redis.register_function('batch_reply', function(KEYS) return per_key(KEYS, function() end) end)
redis.register_function('batch_get', function(KEYS) return per_key(KEYS, function(k) redis.call('GET', k) end) end)
redis.register_function('batch_incrby', function(KEYS, ARGV)
  return per_key(KEYS, function(k) redis.call('INCRBY', k, '1') end)
end)
redis.register_function('batch_get_set', function(KEYS, ARGV)
  return per_key(KEYS, function(k)
    redis.call('GET', k)
    redis.call('SET', k, '1796053232358000', 'PX', '61000')
  end)
end)
`;
await client.call('FUNCTION', 'LOAD', 'REPLACE', library);
await client.call('FUNCTION', 'LOAD', 'REPLACE', RATE_LIMIT_LIBRARY);

/**
 * µs per item of FCALLs of `fn` with the keys and arguments of the store's batches of BATCH one-item requests
 * of `algorithm` over 10,000 users (the keys exist: a first pass writes them).
 */
const BATCH = 25;
const CALLS = callgrind ? 100 : 800;
/** Instructions redis-server ran while `run` ran (callgrind's counters zeroed, then dumped). */
async function instructions(run) {
  execFileSync('callgrind_control', ['-z', String(server.pid)]);
  await run();
  execFileSync('callgrind_control', ['-d', String(server.pid)]);
  const last = readdirSync(dumps)
    .filter((f) => f.startsWith('cg.out.'))
    .sort((a, b) => Number(a.split('.').at(-1)) - Number(b.split('.').at(-1)))
    .at(-1);
  return Number(/^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dumps, last), 'utf8'))?.[1]);
}
async function perBatchItem(fn, algorithm, count = 1) {
  const clock = { now: () => Date.now() };
  const identities = new StoredIdentities('rl:', {});
  const policies = ['per-user', 'per-route', 'login']
    .slice(0, count)
    .map((name) => validatePolicy({ name, algorithm, limit: 1_000_000, window: '1h' }));
  const call = (j) => {
    const requests = Array.from({ length: BATCH }, (_, i) =>
      requestArgs(
        'consume',
        policies.map((policy) => ({ policy, key: `user:${(j * BATCH + i) % 10_000}`, cost: 1 })),
        identities,
        clock,
      ),
    );
    const { keys, args } = batchArgs(requests, String(Date.now()), '1000');
    return client.call('FCALL', fn, keys.length, ...keys, ...args);
  };
  await client.flushall();
  for (let j = 0; j < 10_000 / BATCH; j++) await call(j);
  if (callgrind) {
    const ir = await instructions(async () => {
      for (let j = 0; j < CALLS; j++) await call(j);
    });
    return Math.round(ir / (CALLS * BATCH * count));
  }
  await client.config('RESETSTAT');
  for (let j = 0; j < CALLS; j++) await call(j);
  const stats = await client.info('commandstats');
  const usec = Number(/cmdstat_fcall:calls=\d+,usec=(\d+)/.exec(stats)?.[1]);
  return Number((usec / (CALLS * BATCH * count)).toFixed(2));
}

/** µs per key of one loop, over REPEATS calls on keys that exist (the first call writes them). */
async function perKey(fn, ...args) {
  await client.flushall();
  await client.call('FCALL', fn, 0, String(KEYS), String(Date.now()), ...args);
  await client.config('RESETSTAT');
  for (let r = 0; r < REPEATS; r++) await client.call('FCALL', fn, 0, String(KEYS), String(Date.now() + r), ...args);
  const stats = await client.info('commandstats');
  const usec = Number(/cmdstat_fcall:calls=\d+,usec=(\d+)/.exec(stats)?.[1]);
  return Number((usec / (REPEATS * KEYS)).toFixed(2));
}

const OPS = {
  'string.format %d': "local s = string.format('%d', 1796053232358 + i)",
  'struct.pack 12 bytes': "local s = struct.pack('>i6i3i3', 29933333, i % 100, 7)",
  'struct.unpack 12 bytes': "local a, b, c = struct.unpack('>i6i3i3', P)",
  'string.match of 3 numbers': "local a, b, c = string.match(T, '^(%-?%d+):(%d+):(%d+)$')",
  tonumber: 'local x = tonumber(S)',
  'a table of 3': 'local t = { i, 2, 3 }',
  'redis.call GET (hit)': 'redis.call("GET", K[i])',
  'redis.call SET PX (existing key)': 'redis.call("SET", K[i], "v", "PX", "61000")',
  'redis.call SET (existing key)': 'redis.call("SET", K[i], "v")',
};
async function nsPerOp(body) {
  const n = 100_000;
  await client.flushall();
  const script = `local P = struct.pack('>i6i3i3', 29933333, 5, 7) local T = '29933333:5:7' local S = '1000000'
    local K = {} for i = 1, ${n} do K[i] = 'rl:{per-user:user:' .. i .. '}' redis.call('SET', K[i], 'x', 'PX', '61000') end
    local t0 = redis.call('TIME') for i = 1, ${n} do ${body} end local t1 = redis.call('TIME')
    return (t1[1] - t0[1]) * 1000000 + (t1[2] - t0[2])`;
  return Math.round((Number(await client.eval(script, 0)) / n) * 1000);
}

const perKeyUs = {};
for (const [name, fn] of callgrind
  ? []
  : [
      ['building the key names', 'key_names'],
      ['GET', 'get'],
      ['GET + SET PX', 'get_set'],
    ]) {
  perKeyUs[name] = await perKey(fn);
}
for (const [name, code] of callgrind
  ? []
  : [
      ['fixed-window', 1],
      ['sliding-window-log', 2],
      ['sliding-window-counter', 3],
      ['token-bucket', 4],
      ['gcra', 5],
    ]) {
  perKeyUs[`a consume of one item: ${name}`] = await perKey('decision', String(code));
}
const batchItemUs = {};
for (const [algorithm, count] of [
  ['fixed-window', 1],
  ['sliding-window-counter', 1],
  ['token-bucket', 1],
  ['gcra', 1],
  ['fixed-window', 3],
]) {
  const parts = {
    'the call, its keys and arguments, the reply': 'batch_reply',
    '+ GET': 'batch_get',
    '+ INCRBY': 'batch_incrby',
    '+ GET + SET PX': 'batch_get_set',
    "this module's decision": RATE_LIMIT_FUNCTION,
  };
  const name = count === 1 ? algorithm : `${algorithm}, ${count} policies a request`;
  batchItemUs[name] = {};
  for (const [part, fn] of Object.entries(parts)) batchItemUs[name][part] = await perBatchItem(fn, algorithm, count);
}
const opNs = {};
for (const [name, body] of callgrind ? [] : Object.entries(OPS)) opNs[name] = await nsPerOp(body);
const unit = callgrind ? 'instructions per item (callgrind Ir)' : 'µs per item (INFO commandstats)';
process.stdout.write(`${JSON.stringify({ perKeyUs, batchItem: { unit, ...batchItemUs }, opNs }, null, 2)}\n`);
client.disconnect();
server.kill('SIGTERM');
