// Where a decision's Redis CPU goes: `npm run bench:redis-profile` (or `node bench/redis-profile.mjs`, after
// `npm run build`). Starts its own redis-server and loads a library that runs this module's dispatcher (the
// code of dist/, as the store's function runs it) and bare parts of a decision in loops over 20,000 keys
// inside one FCALL each, then reads each loop's time from INFO commandstats: µs per key, with none of the
// cost of a command (parsing, arguments, reply, network). Then a few Lua operations alone, in ns. Prints JSON.
import { spawn } from 'node:child_process';

import { Redis } from 'ioredis';

import { dispatcherCall } from '../dist/stores/redis/dispatcher.lua.js';
import { RATE_LIMIT_SCRIPT } from '../dist/stores/redis/rate-limit.lua.js';
import { freePort, ping } from './net.mjs';

const KEYS = 20_000;
const REPEATS = 5;

const port = await freePort();
const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', ''], {
  stdio: 'ignore',
});
process.once('exit', () => server.kill('SIGKILL'));
for (let i = 0; !(await ping(port)); i++) {
  if (i > 200) throw new Error(`redis-server did not start on ${port}`);
  await new Promise((resolve) => setTimeout(resolve, 50));
}
const client = new Redis({ port });

const definitions = RATE_LIMIT_SCRIPT.slice(0, RATE_LIMIT_SCRIPT.length - dispatcherCall.length - 1);
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
`;
await client.call('FUNCTION', 'LOAD', 'REPLACE', library);

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

const perKeyUs = {
  'building the key names': await perKey('key_names'),
  GET: await perKey('get'),
  'GET + SET PX': await perKey('get_set'),
};
for (const [name, code] of [
  ['fixed-window', 1],
  ['sliding-window-log', 2],
  ['sliding-window-counter', 3],
  ['token-bucket', 4],
  ['gcra', 5],
]) {
  perKeyUs[`a consume of one item: ${name}`] = await perKey('decision', String(code));
}
const opNs = {};
for (const [name, body] of Object.entries(OPS)) opNs[name] = await nsPerOp(body);
process.stdout.write(`${JSON.stringify({ perKeyUs, opNs }, null, 2)}\n`);
client.disconnect();
server.kill('SIGTERM');
