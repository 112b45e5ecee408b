/**
 * How much a handler's requests matter when the instance is overloaded (`@Criticality`): `sheddable` ones are
 * refused first, `default` ones next, and a reserve of the concurrency limit is kept for `critical` ones.
 * A handler without `@Criticality` (nor one on its class) is `default`.
 */
export type Criticality = 'critical' | 'default' | 'sheddable';

/** Every criticality, from the most to the least protected. */
export const CRITICALITIES: readonly Criticality[] = ['critical', 'default', 'sheddable'];

export const isCriticality = (value: unknown): value is Criticality =>
  (CRITICALITIES as readonly unknown[]).includes(value);
