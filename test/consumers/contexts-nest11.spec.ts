import { describeContextsOn } from './contexts-apps.js';

// Every context of the app of test/consumers/contexts in a Nest 11 project, on the packed package
// (contexts-apps.ts says what each context is checked for).

describeContextsOn('11');
