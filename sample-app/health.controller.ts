import { Controller, Get } from '@nestjs/common';

import { Criticality, SkipRateLimit } from '../lib/index.js';

@Controller('health')
export class HealthController {
  /**
   * Probes of load balancers and orchestrators must never be limited (nor send rate-limit headers), and are
   * shed last (`critical`: the reserve is theirs too): an instance that fails its probe under load is taken
   * out, and its load moves to the others, which are busy too.
   */
  @Get()
  @SkipRateLimit()
  @Criticality('critical')
  health(): { status: 'ok' } {
    return { status: 'ok' };
  }
}
