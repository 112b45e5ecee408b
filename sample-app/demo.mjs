// Stand-in for the sample app until the Nest module lands: one policy on the in-memory store.
import { MemoryRateLimitStore, validatePolicy } from '../dist/index.js';

const store = new MemoryRateLimitStore();
const policy = validatePolicy({ name: 'demo', algorithm: 'sliding-window-counter', limit: 3, window: '10s' });
for (let i = 1; i <= 5; i++) {
  const [d] = await store.consume([{ policy, key: 'user-42', cost: 1 }]);
  console.log(
    `request ${i}: ${d.allowed ? 'allowed' : `denied, retry in ${d.retryAfterMs} ms`} (remaining ${d.remaining})`,
  );
}
