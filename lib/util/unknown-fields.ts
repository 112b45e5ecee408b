/**
 * The first own field of `value` that `known` does not list, or undefined when every field is known; `hint`
 * says what it was probably meant to be (a different case, or at most two letters off), or else lists the
 * fields. A misspelt optional field (`failmode`, `bursts`) would otherwise be ignored, and a policy enforced
 * other than declared.
 * `ported` gives the hints of fields that another library has under that name (`ttl` of @nestjs/throttler).
 * @example unknownField({ failmode: 'closed' }, ['failMode'])?.hint === '(did you mean "failMode"?)'
 */
export function unknownField(
  value: object,
  known: readonly string[],
  ported: Readonly<Record<string, string>> = {},
): { field: string; hint: string } | undefined {
  for (const field of Object.keys(value)) {
    if (known.includes(field)) continue;
    // A field of another library (ported: its name here and why) is no misspelling: say what it became.
    if (Object.hasOwn(ported, field)) return { field, hint: `(${ported[field]})` };
    const meant = closest(field, known);
    return { field, hint: meant === undefined ? `(known: ${known.join(', ')})` : `(did you mean "${meant}"?)` };
  }
  return undefined;
}

/**
 * The field names of an options type, listed once per field: the compiler refuses a list that misses a field
 * of `T` or names one `T` does not have, so the list cannot fall behind the type.
 * @example const FIELDS = fieldNames<{ a?: number; b: string }>({ a: true, b: true });
 */
export function fieldNames<T extends object>(fields: { readonly [K in keyof Required<T>]: true }): readonly string[] {
  return Object.keys(fields);
}

/**
 * Throws when the module options object at `path` ('' for the top level, 'postgres' for a nested one) has a
 * field that `known` does not list.
 */
export function checkOptionFields(value: unknown, known: readonly string[], path: string): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    const got = typeof value === 'string' ? JSON.stringify(value) : Array.isArray(value) ? 'an array' : String(value);
    // @nestjs/throttler's forRoot takes an array of throttlers: the usual shape of an app being ported from it.
    const hint =
      path === '' && Array.isArray(value)
        ? ' (RateLimitModule.forRoot takes an options object: put the policies in `defaults`)'
        : '';
    throw new TypeError(
      `nest-rate-limit: option${path === '' ? 's' : ` "${path}"`} must be an object, got ${got}${hint}`,
    );
  }
  const unknown = unknownField(value, known);
  if (unknown === undefined) return;
  const name = path === '' ? unknown.field : `${path}.${unknown.field}`;
  throw new TypeError(`nest-rate-limit: option "${name}" is not an option of RateLimitModule ${unknown.hint}`);
}

function closest(field: string, known: readonly string[]): string | undefined {
  const lower = field.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = name.toLowerCase() === lower ? 0 : editDistance(lower, name.toLowerCase());
    if (distance <= 2 && (best === undefined || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

/** Levenshtein distance: insertions, deletions and substitutions of one character. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      row.push(Math.min((previous[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, substitution));
    }
    previous = row;
  }
  return previous[b.length] ?? 0;
}
