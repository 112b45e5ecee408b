import { join } from 'node:path';

import { type ChildProcess, installConsumer, INSTALL_MS, packedForThisFile, run, startApp } from './consumer-kit.js';

/**
 * Every context on every Nest major the peer ranges accept, with the default options (the module's global
 * guard, no @UseGuards): the app of test/consumers/contexts (one policy of limit 3 in each context) in a Nest
 * 10, 11 and 12 project, each with its own lock file and the packed package. On Express with Apollo and a
 * socket.io gateway, and on Fastify with Mercurius and a `ws` gateway; a TCP microservice in both. Five calls
 * in each context: the app's tally says 3 handled and 2 denied, and the client is told so wherever its
 * transport tells it (`ws` clients get no `exception` event from Nest before 12).
 */
export const MAJORS = [{ nest: '10' }, { nest: '11' }, { nest: '12' }] as const;

const PLATFORMS = [
  { platform: 'express', gateway: 'socket.io', graphql: 'Apollo' },
  { platform: 'fastify', gateway: 'ws', graphql: 'Mercurius' },
] as const;

const POLICIES = ['http', 'gql', 'ws-returns', 'ws-throws', 'ws-acks', 'rpc'];
const THREE_OF_FIVE = ['handled', 'handled', 'handled', 'RATE_LIMITED', 'RATE_LIMITED'];

interface Report {
  readonly tally: Record<string, { handled: number; denied: number }>;
  readonly told: Record<string, string[]>;
}

/** The tests of every context on Nest `nest` (each major a spec file of its own: contexts-nest<major>.spec.ts). */
export function describeContextsOn(nest: (typeof MAJORS)[number]['nest']): void {
  const packed = packedForThisFile();
  describe(`every context of a Nest ${nest} app`, () => {
    let dir: string;

    beforeAll(async () => {
      dir = await installConsumer(packed(), `contexts-nest${nest}`, [[join('contexts', 'src'), 'src']]);
      await run('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: dir });
    }, 2 * INSTALL_MS);

    it(`runs on Nest ${nest}`, async () => {
      const { stdout } = await run(process.execPath, ['-p', 'require("@nestjs/core/package.json").version'], {
        cwd: dir,
      });
      expect(stdout.trim().split('.')[0]).toBe(nest);
    });

    describe.each(PLATFORMS)('on $platform ($graphql, $gateway)', ({ platform, gateway }) => {
      let app: ChildProcess;
      let output: () => string;
      let report: Report;

      beforeAll(async () => {
        const started = await startApp(dir, [platform]);
        ({ app, output } = started);
        const [http, tcp] = started.ports.map(String);
        const { stdout } = await run(process.execPath, [join('dist', 'client.js'), platform, http ?? '', tcp ?? ''], {
          cwd: dir,
          timeout: 60_000,
        });
        report = JSON.parse(stdout) as Report;
      }, 90_000);
      afterAll(() => app?.kill());

      it.each(POLICIES)('limits %s: of five calls, 3 handled and 2 denied', (policy) => {
        expect(report.tally[policy]).toEqual({ handled: 3, denied: 2 });
      });

      it('tells the client of each denial wherever the transport carries it', () => {
        const told = ['http', 'gql', 'rpc', ...(gateway === 'socket.io' ? ['ws-returns', 'ws-throws', 'ws-acks'] : [])];
        expect(Object.fromEntries(told.map((policy) => [policy, report.told[policy]]))).toEqual(
          Object.fromEntries(told.map((policy) => [policy, THREE_OF_FIVE])),
        );
      });

      // Regression: on Nest 10, each GraphQL denial was logged as an unhandled error with its stack.
      it('logs no denial as an error', () => {
        expect(output()).not.toMatch(/ERROR|ExceptionsHandler/);
      });
    });

    // The docs' other set-up: `global: false` and RateLimitGuard as an APP_GUARD of the app's. Nest 10 and 11 apply
    // no global guard to gateways, and a hybrid app's microservice gets none without `inheritAppConfig`: the
    // module's own guard on those handlers limits them all the same.
    it('with `global: false` and RateLimitGuard as an APP_GUARD, limits every context too', async () => {
      const started = await startApp(dir, ['express', 'app-guard']);
      try {
        const [http, tcp] = started.ports.map(String);
        const { stdout } = await run(process.execPath, [join('dist', 'client.js'), 'express', http ?? '', tcp ?? ''], {
          cwd: dir,
          timeout: 60_000,
        });
        const { tally } = JSON.parse(stdout) as Report;
        expect(Object.fromEntries(POLICIES.map((policy) => [policy, tally[policy]]))).toEqual(
          Object.fromEntries(POLICIES.map((policy) => [policy, { handled: 3, denied: 2 }])),
        );
      } finally {
        started.app.kill();
      }
    }, 90_000);
  });
}
