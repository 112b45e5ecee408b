// The .lua files of lib/, their headers, and their order in the program: every file after the files that
// provide what it requires. Fails (naming the file and the name) on a name used before it is defined, defined
// twice, required but never provided, or provided but never used.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

import { analyse, parseLua } from './scopes.mjs';

/** The repository (LUA_ASSEMBLE_ROOT: another, for the assembler's own spec, test/unit/lua-assembler.spec.ts). */
export const ROOT = process.env.LUA_ASSEMBLE_ROOT ?? join(import.meta.dirname, '../..');
/** The part of the program that runs at every call; every other file is a definition. */
export const CALL_FILE = 'lib/stores/redis/lua/call.lua';
/** Where the constants the Lua shares with TypeScript are defined (LUA_CONSTANTS). */
const CONSTANTS_FILE = 'lib/stores/redis/lua-constants.ts';

/** Every .lua file of lib/, by its path from the repository's root, sorted. */
export function luaFiles() {
  return readdirSync(join(ROOT, 'lib'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.lua'))
    .map((file) => join('lib', file))
    .sort();
}

/** The names of LUA_CONSTANTS: the properties of its object literal. */
export function constantNames() {
  const source = ts.createSourceFile(CONSTANTS_FILE, readFileSync(join(ROOT, CONSTANTS_FILE), 'utf8'), 99, true);
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    for (const declaration of statement.declarationList.declarations) {
      if (declaration.name.getText(source) !== 'LUA_CONSTANTS') continue;
      const init = declaration.initializer;
      if (!init || !ts.isObjectLiteralExpression(init)) break;
      return init.properties.map((property) => property.name.getText(source));
    }
  }
  throw new Error(`${CONSTANTS_FILE}: no LUA_CONSTANTS = { ... } (an object literal)`);
}

/** A header's list: `-- <key>: a, b` and the `--   c, d` lines that continue it; `(...)` reads as none. */
function headerList(lines, key, file) {
  const at = lines.findIndex((line) => line.startsWith(`-- ${key}:`));
  if (at < 0 || at > 6) throw new Error(`${file}: its header has no "-- ${key}:" line`);
  let text = lines[at].slice(`-- ${key}:`.length);
  for (let i = at + 1; /^-- {3}\S/.test(lines[i] ?? ''); i++) text += `,${lines[i].slice(2)}`;
  if (text.trim().startsWith('(')) return [];
  return text
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
}

/** One file: its text, header and names (analyse() with its requires as the outer names). */
export function readUnit(file) {
  const text = readFileSync(join(ROOT, file), 'utf8');
  if (text.includes('${')) throw new Error(`${file}: has \${...}: a .lua file names constants, never interpolates`);
  const lines = text.split('\n');
  const requires = headerList(lines, 'requires', file);
  const provides = headerList(lines, 'provides', file);
  const chunk = parseLua(text, file);
  const names = analyse(chunk, new Set(requires));
  const returns = chunk.body.find((statement) => statement.type === 'ReturnStatement');
  if (returns && file !== CALL_FILE) {
    throw new Error(`${file}:${returns.loc.start.line}: returns at its top level: only ${CALL_FILE} may`);
  }
  return { file, text, requires, provides, ...names };
}

/**
 * The files in the program's order, checked: definitions ordered by their requires and provides (ties in path
 * order), the call file last. Returns them with the problems found (empty: the program is sound).
 */
export function orderedUnits() {
  const constants = constantNames();
  const units = luaFiles().map(readUnit);
  const problems = [];
  const providers = new Map(constants.map((name) => [name, CONSTANTS_FILE]));
  const definedAt = new Map(constants.map((name) => [name, CONSTANTS_FILE]));
  for (const unit of units) {
    for (const { name, line } of unit.topLevel) {
      if (definedAt.has(name))
        problems.push(`\`${name}\` is defined twice: ${definedAt.get(name)} and ${unit.file}:${line}`);
      else definedAt.set(name, `${unit.file}:${line}`);
    }
    for (const name of unit.provides) {
      if (!unit.topLevel.some((local) => local.name === name)) {
        problems.push(`${unit.file}: provides \`${name}\`, which is not one of its top-level locals`);
      } else if (!providers.has(name)) providers.set(name, unit.file);
    }
    for (const [name, line] of unit.free) {
      problems.push(
        `${unit.file}:${line}: \`${name}\` is used but not defined (not a local above it, not in its requires, not a Redis global)`,
      );
    }
    for (const name of unit.requires) {
      if (!providers.has(name) && !units.some((other) => other.provides.includes(name))) {
        problems.push(`${unit.file}: requires \`${name}\`, which no file provides and LUA_CONSTANTS does not define`);
      } else if (!unit.usedOuter.has(name)) problems.push(`${unit.file}: requires \`${name}\` but never uses it`);
    }
    for (const { name, line, top } of unit.unused) {
      if (!(top && unit.provides.includes(name)))
        problems.push(`${unit.file}:${line}: local \`${name}\` is never used`);
    }
  }
  const required = new Set(units.flatMap((unit) => unit.requires));
  for (const unit of units) {
    for (const name of unit.provides) {
      if (!required.has(name)) problems.push(`${unit.file}: provides \`${name}\`, which no file requires`);
    }
  }
  for (const name of constants) {
    if (!required.has(name)) problems.push(`${CONSTANTS_FILE}: LUA_CONSTANTS.${name} is required by no .lua file`);
  }
  return { units: order(units, providers, problems), constants, problems };
}

/** Definitions in dependency order (ties in path order), then the call file; a cycle is a problem. */
function order(units, providers, problems) {
  const call = units.find((unit) => unit.file === CALL_FILE);
  if (!call) throw new Error(`${CALL_FILE} is missing`);
  const done = new Set([...providers].filter(([, file]) => !file.endsWith('.lua')).map(([name]) => name));
  const left = units.filter((unit) => unit !== call);
  const ordered = [];
  while (left.length > 0) {
    const next = left.findIndex((unit) => unit.requires.every((name) => done.has(name) || !providers.has(name)));
    if (next < 0) {
      problems.push(`a cycle of requires among ${left.map((unit) => unit.file).join(', ')}`);
      ordered.push(...left.splice(0));
      break;
    }
    const [unit] = left.splice(next, 1);
    unit.provides.forEach((name) => done.add(name));
    ordered.push(unit);
  }
  for (const name of call.provides)
    problems.push(`${CALL_FILE}: provides \`${name}\`: it runs last, nothing follows it`);
  return [...ordered, call];
}

export const relativePath = (path) => relative(ROOT, path);
