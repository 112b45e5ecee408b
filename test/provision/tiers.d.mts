// The types of tiers.mjs (plain JavaScript: jest.config.js reads it).
export interface Tier {
  readonly paths: readonly string[];
  readonly needs: string;
  readonly slow?: boolean;
}

export declare const SLOW: readonly string[];
export declare const TIERS: Readonly<Record<string, Tier>> & { readonly slow: Tier };
export declare const SLOW_PROJECT: string;
