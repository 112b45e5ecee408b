import { Query, Resolver } from '@nestjs/graphql';

import { Criticality } from '../../lib/index.js';
import { RateLimiter } from '../../lib/nest/rate-limiter.js';
import { GRAPHQL_DRIVERS, startGraphQLApp, type GraphQLTestApp } from '../support/graphql-app.js';
import { waitFor } from '../support/wait.js';

/** Operations of `slow` wait here until the test lets them go. */
const waiting: (() => void)[] = [];

@Resolver()
class WorkResolver {
  @Query(() => String)
  @Criticality('critical')
  async slow() {
    await new Promise<void>((resolve) => waiting.push(resolve));
    return 'slow';
  }

  @Query(() => String)
  @Criticality('sheddable')
  cheap() {
    return 'cheap';
  }
}

describe.each(GRAPHQL_DRIVERS)('load shedding of GraphQL operations (%s)', (driver) => {
  let t: GraphQLTestApp;
  beforeEach(async () => {
    t = await startGraphQLApp(driver, {
      resolvers: [WorkResolver],
      rateLimit: { shedding: { minLimit: 1, maxLimit: 1, maxEventLoopDelay: 0 } },
    });
  });
  afterEach(async () => {
    for (const go of waiting.splice(0)) go();
    await t.close();
  });

  it("fails a shed resolver's field with OVERLOADED and Retry-After, and admits again once the limit has room", async () => {
    const held = t.gql('{ slow }');
    await waitFor(() => waiting.length === 1);
    const refused = await t.gql('{ cheap }');
    expect(refused.status).toBe(200);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.errors).toEqual([
      {
        message: 'Service overloaded; sheddable requests are refused for now',
        path: ['cheap'],
        locations: expect.anything(),
        extensions: { code: 'OVERLOADED', criticality: 'sheddable', retryAfter: 1 },
      },
    ]);
    for (const go of waiting.splice(0)) go();
    expect((await held).data).toEqual({ slow: 'slow' });
    await waitFor(() => t.app.get(RateLimiter).shedding?.shedder.inFlight === 0);
    expect((await t.gql('{ cheap }')).data).toEqual({ cheap: 'cheap' });
  });
});
