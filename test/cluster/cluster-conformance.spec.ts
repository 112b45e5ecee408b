import { clusterTarget } from '../support/store-targets.js';
import { conformanceSuite } from '../conformance/conformance-suite.js';
import { shadowSuite } from '../conformance/shadow-suite.js';
import { blockSuite } from '../conformance/block-suite.js';

conformanceSuite(clusterTarget());

shadowSuite(clusterTarget());
blockSuite(clusterTarget());
