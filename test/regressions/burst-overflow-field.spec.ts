import { RateLimitPolicyError, validatePolicy } from '../../lib/index.js';

// Regression: a burst too large for exact integer math (burst × window in ms over 2^51) was reported under the
// field `limit`: the error sent the reader to a field that was fine.

describe('regression: a burst beyond the bounds of exact math names the field burst', () => {
  const fieldOf = (policy: object): string | undefined => {
    try {
      validatePolicy(policy as never, 'ExportController.run');
    } catch (error) {
      expect(error).toBeInstanceOf(RateLimitPolicyError);
      return (error as RateLimitPolicyError).field;
    }
    return undefined;
  };

  it.each(['token-bucket', 'gcra'] as const)('%s: the burst is named when the limit alone fits', (algorithm) => {
    expect(fieldOf({ algorithm, limit: 10, window: 2 ** 30, burst: 2 ** 22 })).toBe('burst');
  });

  it('the limit is named when the limit itself does not fit', () => {
    expect(fieldOf({ algorithm: 'token-bucket', limit: 2 ** 22, window: 2 ** 30, burst: 2 ** 23 })).toBe('limit');
    expect(fieldOf({ algorithm: 'fixed-window', limit: 2 ** 22, window: 2 ** 30 })).toBe('limit');
  });
});
