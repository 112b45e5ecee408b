import { memoryTarget, redisTarget } from '../support/store-targets.js';
import { conformanceSuite } from './conformance-suite.js';

conformanceSuite(memoryTarget);
conformanceSuite(redisTarget());
