import { RateLimitPolicyError, type RateLimitPolicy, validatePolicy } from '../../lib/index.js';

// Regression (issue 19, item 6): `window: '1 minute'` compiled (typed `number | string`) and failed only at
// start; `limit: '10'` from an environment variable said `got "10"` without saying it was a string.

describe('regression: values from configuration', () => {
  it("types window and block so that a duration of another shape does not compile, while ms and '10s' do", () => {
    const fine: RateLimitPolicy[] = [
      { algorithm: 'fixed-window', limit: 10, window: 60_000 },
      { algorithm: 'fixed-window', limit: 10, window: '10s', block: '15m' },
      { algorithm: 'gcra', limit: 10, window: '500ms', block: 1000 },
    ];
    expect(fine.map((p) => validatePolicy(p).windowMs)).toEqual([60_000, 10_000, 500]);
    // @ts-expect-error — '1 minute' is not a duration the module reads
    const minute: RateLimitPolicy = { algorithm: 'fixed-window', limit: 10, window: '1 minute' };
    // @ts-expect-error — nor is 'forever'
    const forever: RateLimitPolicy = { algorithm: 'fixed-window', limit: 10, window: '1m', block: 'forever' };
    // and both still stop at run time, for JavaScript and casts
    expect(() => validatePolicy(minute)).toThrow(/field "window"/);
    expect(() => validatePolicy(forever)).toThrow(/field "block"/);
  });

  it.each([
    ['limit', { algorithm: 'fixed-window', limit: '10', window: '1m' }, 'got "10" (a string: use Number(...))'],
    ['window', { algorithm: 'fixed-window', limit: 10, window: '60000' }, 'got "60000" (a string: use Number(...))'],
    ['burst', { algorithm: 'token-bucket', limit: 10, window: '1m', burst: ' 2.5 ' }, 'got " 2.5 " (a string'],
  ])('says that a numeric %s is a string', (field, policy, hint) => {
    const error = (() => {
      try {
        validatePolicy(policy as unknown as RateLimitPolicy);
      } catch (e) {
        return e as Error;
      }
      throw new Error('validatePolicy accepted it');
    })();
    expect(error).toBeInstanceOf(RateLimitPolicyError);
    expect(error.message).toContain(`field "${field}"`);
    expect(error.message).toContain(hint);
  });

  it('keeps other strings as they are', () => {
    expect(() => validatePolicy({ algorithm: 'fixed-window', limit: 'ten', window: '1m' } as never)).toThrow(
      /got "ten"$/,
    );
  });
});
