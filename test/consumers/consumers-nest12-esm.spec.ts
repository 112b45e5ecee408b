import { describeConsumerApp } from './consumer-apps.js';

// The consumer app test/consumers/nest12-esm on the packed package (consumer-apps.ts says what each app is).

describeConsumerApp('nest12-esm');
