import { REDIS_CLIENTS } from '../support/redis-clients.js';
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

// The Redis store through each client package the module drives.
for (const kind of REDIS_CLIENTS) {
  conformanceSuite(redisTarget(kind));
  shadowSuite(redisTarget(kind));
  blockSuite(redisTarget(kind));
  chargeSuite(redisTarget(kind));
  settlementSuite(redisTarget(kind), { runs: 150 });
}
