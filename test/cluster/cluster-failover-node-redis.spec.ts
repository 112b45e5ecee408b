import { describeFailoverThrough, ioredisFamily } from '../support/cluster-failover.js';
import { REDIS_CLIENTS } from '../support/redis-clients.js';

// A master of a 6-node Redis Cluster killed under an app, through the Cluster clients of node-redis 6 and 5 and Valkey GLIDE
// (test/support/cluster-failover.ts; the other clients: cluster-failover-ioredis.spec.ts).

describeFailoverThrough(REDIS_CLIENTS.filter((kind) => !ioredisFamily(kind)));
