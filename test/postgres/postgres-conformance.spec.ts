import { blockSuite } from '../conformance/block-suite.js';
import { chargeSuite } from '../conformance/charge-suite.js';
import { settlementSuite } from '../conformance/settlement-suite.js';
import { conformanceSuite } from '../conformance/conformance-suite.js';
import { shadowSuite } from '../conformance/shadow-suite.js';
import { postgresTarget } from '../support/store-targets.js';

conformanceSuite(postgresTarget());

shadowSuite(postgresTarget());

blockSuite(postgresTarget());

chargeSuite(postgresTarget());

settlementSuite(postgresTarget(), { runs: 60 });
