import { RateLimitPolicyError, validatePolicy, type RateLimitPolicy } from '../../lib/index.js';
import { parseWindow } from '../../lib/policy/window.js';

describe('parseWindow', () => {
  it.each([
    ['500ms', 500],
    ['10s', 10_000],
    ['1m', 60_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    [250, 250],
  ])('reads %p as %p ms', (input, ms) => {
    expect(parseWindow(input)).toBe(ms);
  });

  it.each(['', '10', '1w', '1.5s', '-1s', '0s', 'ten seconds', 0, -5, 1.5, NaN, Infinity, null])(
    'rejects %p',
    (input) => {
      expect(parseWindow(input)).toBeUndefined();
    },
  );
});

describe('validatePolicy', () => {
  const base: RateLimitPolicy = { name: 'api', algorithm: 'gcra', limit: 10, window: '1m' };

  it('applies defaults and converts the window', () => {
    const p = validatePolicy({ algorithm: 'token-bucket', limit: 10, window: '1s', burst: 20 });
    expect(p).toMatchObject({ name: 'token-bucket-10-1s-b20', limit: 10, windowMs: 1000, capacity: 20 });
    expect(validatePolicy({ algorithm: 'fixed-window', limit: 5, window: 100 }).name).toBe('fixed-window-5-100ms');
    expect(validatePolicy({ algorithm: 'sliding-window-log', limit: 5, window: '1h' }).capacity).toBe(5);
  });

  const bad: [string, Record<string, unknown>, string, RegExp][] = [
    ['unknown algorithm', { algorithm: 'leaky' }, 'algorithm', /must be one of fixed-window, .*got "leaky"/],
    ['limit < 1', { limit: 0 }, 'limit', /integer >= 1 or a function of the request, got 0/],
    ['non-integer limit', { limit: 2.5 }, 'limit', /integer >= 1 or a function of the request, got 2.5/],
    ['string limit', { limit: '10' }, 'limit', /integer >= 1 or a function of the request, got "10"/],
    ['bad window', { window: '1 minute' }, 'window', /duration like .*got "1 minute"/],
    ['zero window', { window: 0 }, 'window', /got 0/],
    ['burst < 1', { burst: 0 }, 'burst', /integer >= 1 or a function of the request, got 0/],
    ['fractional burst', { burst: 1.5 }, 'burst', /integer >= 1 or a function of the request, got 1.5/],
    ['negative cost', { cost: -1 }, 'cost', /non-negative integer, got -1/],
    ['non-finite cost', { cost: Infinity }, 'cost', /non-negative integer, got Infinity/],
    ['NaN cost', { cost: NaN }, 'cost', /got NaN/],
    ['unknown key', { key: 'session' }, 'key', /'ip', 'user' or a function/],
    ['unknown failMode', { failMode: 'sometimes' }, 'failMode', /'open', 'closed' or 'local'/],
    ['unsafe name', { name: 'a"b' }, 'name', /A-Z a-z 0-9/],
    ['overflowing limit × window', { limit: 1e9, window: '1d' }, 'limit', /2\^51/],
    [
      'a field of another case',
      { failmode: 'closed' },
      'failmode',
      /is not a policy field \(did you mean "failMode"\?\)/,
    ],
    ['a misspelt field', { bursts: 20 }, 'bursts', /is not a policy field \(did you mean "burst"\?\)/],
    ['a field of no policy', { description: 'x' }, 'description', /is not a policy field \(known: name, algorithm, /],
  ];

  it.each(bad)('rejects %s, naming the policy, the place and the field', (_, patch, field, problem) => {
    const policy = { ...base, ...patch } as unknown as RateLimitPolicy;
    let error: unknown;
    try {
      validatePolicy(policy, 'AuthController.login');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RateLimitPolicyError);
    const e = error as RateLimitPolicyError;
    expect(e.field).toBe(field);
    expect(e.message).toContain('AuthController.login');
    expect(e.message).toContain(`field "${field}"`);
    expect(e.message).toContain(`"${(patch.name as string | undefined) ?? 'api'}"`);
    expect(e.message).toMatch(problem);
  });

  it('rejects burst on the window algorithms', () => {
    expect(() => validatePolicy({ algorithm: 'fixed-window', limit: 5, window: '1s', burst: 10 })).toThrow(
      /field "burst": applies only to token-bucket and gcra/,
    );
  });

  it('accepts a cost function (checked per request) and integer costs', () => {
    expect(() => validatePolicy({ ...base, cost: () => 3 })).not.toThrow();
    expect(() => validatePolicy({ ...base, cost: 0 })).not.toThrow();
  });
});
