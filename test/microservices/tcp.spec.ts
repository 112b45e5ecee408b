import { rpcSuite } from './rpc-suite.js';

describe('rate limiting microservices on the TCP transport', () => rpcSuite('tcp'));
