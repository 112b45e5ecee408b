// The load generator, in a process of its own: `node bench/load.mjs <port> <seconds> [spread|hot]`.
// autocannon, 50 connections, GET /hello with an x-user header: spread over 1,000 users (prebuilt request
// templates in shuffled order, so generating the load costs nothing per request), or one user ('hot').
// Prints one line of JSON: { rps, p50, p99, requests, non2xx, errors, timeouts } (latencies in ms).
import autocannon from 'autocannon';

const [port, seconds, mode = 'spread'] = process.argv.slice(2);
const USERS = 1000;

function shuffled(n) {
  const out = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

const users = mode === 'hot' ? ['hot'] : shuffled(USERS).map((i) => `u${i}`);
const result = await autocannon({
  url: `http://127.0.0.1:${port}`,
  connections: 50,
  duration: Number(seconds),
  requests: users.map((user) => ({ method: 'GET', path: '/hello', headers: { 'x-user': user } })),
});
process.stdout.write(
  `${JSON.stringify({
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
  })}\n`,
);
