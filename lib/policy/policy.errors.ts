/**
 * Thrown when a policy or an option is invalid. The message names the policy, where it was declared
 * (for example `AuthController.login`), the field, what was given and what would be right.
 * @example new RateLimitPolicyError('limit must be an integer >= 1, got 0', { policy: 'login', field: 'limit' })
 */
export class RateLimitPolicyError extends Error {
  readonly policy?: string;
  readonly field?: string;
  readonly where?: string;

  constructor(problem: string, at: { policy?: string; field?: string; where?: string } = {}) {
    const parts = [
      at.policy === undefined ? 'rate-limit policy' : `rate-limit policy "${at.policy}"`,
      at.where === undefined ? '' : ` (declared on ${at.where})`,
      at.field === undefined ? '' : `, field "${at.field}"`,
    ];
    super(`Invalid ${parts.join('')}: ${problem}`);
    this.name = 'RateLimitPolicyError';
    this.policy = at.policy;
    this.field = at.field;
    this.where = at.where;
  }
}
