import { SetMetadata } from '@nestjs/common';

import type { Criticality as Level } from '../policy/criticality.js';
import { RATE_LIMIT_CRITICALITY } from '../planning/metadata-keys.js';

/** `'critical' | 'default' | 'sheddable'`: how much a handler's requests matter when load is shed. */
export type Criticality = Level;

/**
 * How much a handler's requests matter when the instance is overloaded (the module's `shedding` option):
 * `'sheddable'` ones are refused first, `'default'` ones next, and a reserve of the concurrency limit is kept
 * for `'critical'` ones. On a handler or a class; the handler's wins; none means `'default'`. Any other value
 * stops the start, naming `Class.method`.
 * @example @Criticality('critical') @Post('charges') create() {}
 */
export const Criticality = (criticality: Level): ClassDecorator & MethodDecorator =>
  SetMetadata(RATE_LIMIT_CRITICALITY, criticality);
