// The types of postgres.mjs.
import type { PostgresProbe, PostgresTarget } from './decide.mjs';

export declare function probePostgres(target: PostgresTarget): Promise<PostgresProbe>;

export declare function provisionPostgres(
  env?: Record<string, string | undefined>,
): Promise<{ target: PostgresTarget; stop(): Promise<void> }>;
