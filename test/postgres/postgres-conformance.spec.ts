import { conformanceSuite } from '../conformance/conformance-suite.js';
import { postgresTarget } from '../support/store-targets.js';

conformanceSuite(postgresTarget());
