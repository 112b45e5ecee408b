import { IOREDIS, REDIS_CLIENTS } from '../support/redis-clients.js';
import { memoryTarget, redisTarget } from '../support/store-targets.js';
import { conformanceSuite } from './conformance-suite.js';
import { shadowSuite } from './shadow-suite.js';
import { blockSuite } from './block-suite.js';
import { chargeSuite } from './charge-suite.js';
import { settlementSuite } from './settlement-suite.js';

conformanceSuite(memoryTarget);
shadowSuite(memoryTarget);
blockSuite(memoryTarget);
chargeSuite(memoryTarget);
settlementSuite(memoryTarget);

// The Redis store through each client package the module drives, and, on the same random sequences (one seed),
// on its program without the lean path (lean.lua): Redis decides a consume of most shapes by either path.
const seed = process.env.FC_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : undefined;
conformanceSuite(redisTarget(IOREDIS, { lean: false }), { seed });
for (const kind of REDIS_CLIENTS) {
  conformanceSuite(redisTarget(kind), kind === IOREDIS ? { seed } : {});
  shadowSuite(redisTarget(kind));
  blockSuite(redisTarget(kind));
  chargeSuite(redisTarget(kind));
  settlementSuite(redisTarget(kind), { runs: 150 });
}
