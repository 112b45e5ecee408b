import { clusterTarget } from '../support/store-targets.js';
import { conformanceSuite } from '../conformance/conformance-suite.js';

conformanceSuite(clusterTarget());
