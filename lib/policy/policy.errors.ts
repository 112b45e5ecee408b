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

/** A function of a policy that the module calls per request; its name is the policy field that holds it. */
export type PolicyFunction = 'key' | 'cost' | 'limit' | 'burst' | 'settle';

/**
 * A key, cost, limit, burst or settle function that threw (or whose Promise rejected): named for what it is, so
 * that neither the log nor `onError` sends the reader to the store. It is a RateLimitPolicyError whose `field`
 * names the function and whose `cause` is what the function threw.
 * @example new PolicyFunctionError('cost', 'ai-tokens', 'AiController.complete', new TypeError('…')).message
 *   === 'cost function of policy "ai-tokens" on AiController.complete threw: TypeError: …'
 */
export class PolicyFunctionError extends RateLimitPolicyError {
  constructor(field: PolicyFunction, policy: string, where: string, thrown: unknown) {
    super('', { policy, field, where });
    // Not "Invalid rate-limit policy …": the policy is valid, its function failed on this request.
    this.message = `${field} function of policy "${policy}" on ${where} threw: ${described(thrown)}`;
    this.cause = thrown;
  }
}

/** What was thrown, in one line: a plain Error's message, a named error's name and message, else the value. */
function described(thrown: unknown): string {
  if (thrown instanceof Error || (typeof thrown === 'object' && thrown !== null && 'message' in thrown)) {
    const { name, message } = thrown as { name?: unknown; message?: unknown };
    const text = String(message);
    return typeof name === 'string' && name !== '' && name !== 'Error' ? `${name}: ${text}` : text;
  }
  return String(thrown);
}
