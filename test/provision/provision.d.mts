// The types of provision.mjs (plain JavaScript: .ci/run runs it before `npm ci`).
import type { PackageManager, Tool } from './decide.mjs';

export declare function say(line: string): void;

export declare function onPath(name: string, env?: Record<string, string | undefined>): string | undefined;

export declare function machine(): { manager: PackageManager | undefined; root: boolean };

export declare function provisionTools(
  tools: Tool[],
  options?: {
    env?: Record<string, string | undefined>;
    here?: { manager: PackageManager | undefined; root: boolean };
  },
): Partial<Record<Tool, string>>;

export declare class ProvisionError extends Error {}
