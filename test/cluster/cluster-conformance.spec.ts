import { REDIS_CLIENTS } from '../support/redis-clients.js';
import { startCluster, type TestCluster } from '../support/redis-cluster.js';
import { clusterTarget } from '../support/store-targets.js';
import { conformanceSuite } from '../conformance/conformance-suite.js';
import { shadowSuite } from '../conformance/shadow-suite.js';
import { blockSuite } from '../conformance/block-suite.js';
import { chargeSuite } from '../conformance/charge-suite.js';
import { settlementSuite } from '../conformance/settlement-suite.js';

// One Cluster for every target (each has a key prefix of its own), reached through each client package.
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startCluster();
});
afterAll(() => cluster.stop());

for (const kind of REDIS_CLIENTS) {
  conformanceSuite(clusterTarget(kind, () => cluster));
  shadowSuite(clusterTarget(kind, () => cluster));
  blockSuite(clusterTarget(kind, () => cluster));
  chargeSuite(clusterTarget(kind, () => cluster));
  settlementSuite(
    clusterTarget(kind, () => cluster),
    { runs: 30 },
  );
}
