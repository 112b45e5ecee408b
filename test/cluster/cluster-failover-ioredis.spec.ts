import { describeFailoverThrough, ioredisFamily } from '../support/cluster-failover.js';
import { REDIS_CLIENTS } from '../support/redis-clients.js';

// A master of a 6-node Redis Cluster killed under an app, through the Cluster clients of ioredis 6 and 5 and iovalkey
// (test/support/cluster-failover.ts; the other clients: cluster-failover-node-redis.spec.ts).

describeFailoverThrough(REDIS_CLIENTS.filter(ioredisFamily));
