// The types of package-size.mjs, a plain script (`node etc/package-size.mjs --write`).

/** What `npm pack --dry-run --json` says of the tarball (the members the page's numbers come from). */
export interface PackSummary {
  size: number;
  unpackedSize: number;
  files: { path: string; size: number }[];
}

export declare const SIZE_PAGE: string;
export declare const SIZE_PATTERN: RegExp;
export declare function packDryRun(root?: string): PackSummary;
export declare function sizeText(pack: PackSummary): string;
export declare function withSize(page: string, text: string): string;
