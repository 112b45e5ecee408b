// The types of decide.mjs, plain JavaScript so that .ci/run can run the provisioning before `npm ci`.

export type Tool = 'redis-server' | 'chromium';
export type PackageManager = 'apt' | 'dnf' | 'brew';

export declare const TOOLS: Record<Tool, { why: string; packages: Record<PackageManager, string> }>;

export declare function packageManagerOf(platform: string, osRelease?: string): PackageManager | undefined;

export declare function installHint(tool: Tool, manager: PackageManager | undefined): string;

export type ToolDecision =
  | { tool: Tool; action: 'found'; path: string }
  | { tool: Tool; action: 'install'; package: string }
  | { tool: Tool; action: 'missing'; hint: string };

export declare function decideTools(
  found: Partial<Record<Tool, string | undefined>>,
  machine: { manager: PackageManager | undefined; root: boolean },
): ToolDecision[];

export declare function missingToolsError(decisions: ToolDecision[], others?: ToolDecision[]): string | undefined;

export interface PostgresTarget {
  host: string;
  port: number;
  user: string;
  database: string;
}

export declare function postgresTarget(env: Record<string, string | undefined>): PostgresTarget;

export type PostgresProbe =
  { answer: 'ok' } | { answer: 'no-database' } | { answer: 'refused' } | { answer: 'error'; message: string };

export type PostgresDecision =
  | { use: 'configured' | 'running'; target: PostgresTarget; createDatabase: boolean }
  | { use: 'embedded'; target: PostgresTarget; reason: string }
  | { use: 'none'; error: string };

export declare function decidePostgres(env: Record<string, string | undefined>, probe: PostgresProbe): PostgresDecision;
