import { REDIS_CLIENTS } from '../support/redis-clients.js';
import { clusterTarget } from '../support/store-targets.js';
import { conformanceSuite } from '../conformance/conformance-suite.js';
import { shadowSuite } from '../conformance/shadow-suite.js';
import { blockSuite } from '../conformance/block-suite.js';

// The store on a Cluster through each client package's Cluster client.
for (const kind of REDIS_CLIENTS) {
  conformanceSuite(clusterTarget(kind));
  shadowSuite(clusterTarget(kind));
  blockSuite(clusterTarget(kind));
}
