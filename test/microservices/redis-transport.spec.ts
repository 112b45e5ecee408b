import { rpcSuite } from './rpc-suite.js';

/** The transport's redis-server is another than the limiter's store (killed by the fail-mode test). */
describe('rate limiting microservices on the Redis transport', () => rpcSuite('redis'));
