// The types of commit-messages.mjs, a plain script (`node etc/commit-messages.mjs`).

export declare const RULE_SINCE: string;
export declare const SUBJECT_MAX: number;
export declare function problemsOf(message: string): string[];
