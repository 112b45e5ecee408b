import { describeConsumerApp } from './consumer-apps.js';

// The consumer app test/consumers/nest11-cjs on the packed package (consumer-apps.ts says what each app is).

describeConsumerApp('nest11-cjs');
