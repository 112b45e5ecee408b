// The types of postgres.mjs.
import type { PostgresProbe, PostgresTarget } from './decide.mjs';

export declare function probePostgres(target: PostgresTarget): Promise<PostgresProbe>;

export declare function provisionPostgres(env?: Record<string, string | undefined>): Promise<{
  target: PostgresTarget;
  /** The data folder of an embedded server, removed by stop(). */
  databaseDir: string | undefined;
  stop(): Promise<void>;
}>;
