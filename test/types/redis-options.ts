// Type-checked by `npm run lint` (never run): an ioredis RedisOptions, an interface without an index signature,
// is accepted as `redis.options` — the reason RedisConnectionOptions' index signature is `any`, not `unknown`.
import type { RedisOptions } from 'ioredis';

import { RateLimitModule } from '../../lib/index.js';

const options: RedisOptions = { host: '10.0.0.5', port: 6379, db: 2 };
export const withRedisOptions = RateLimitModule.forRoot({ redis: { options } });
