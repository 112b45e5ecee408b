import { memoryTarget, redisTarget } from '../support/store-targets.js';
import { conformanceSuite } from './conformance-suite.js';
import { shadowSuite } from './shadow-suite.js';
import { blockSuite } from './block-suite.js';

conformanceSuite(memoryTarget);
conformanceSuite(redisTarget());

shadowSuite(memoryTarget);
shadowSuite(redisTarget());

blockSuite(memoryTarget);
blockSuite(redisTarget());
