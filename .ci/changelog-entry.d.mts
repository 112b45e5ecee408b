/** The text under `## <version>` of a CHANGELOG, up to the next `## `; throws when it is missing or empty. */
export function changelogEntry(changelog: string, version: string): string;
