/** `nest-rate-limit/testing`: what a test of an app that uses the module needs. */
export { FAKE_CLOCK_START, FakeClock } from './fake-clock.js';
export { RateLimitTestingModule } from './rate-limit-testing.module.js';
