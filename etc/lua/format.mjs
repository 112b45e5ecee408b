// The .lua files' format: StyLua's (its WebAssembly build), with the settings of .stylua.toml.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as stylua from '@johnnymorganz/stylua';

import { ROOT } from './program.mjs';

/** Enum-valued settings of .stylua.toml, by their StyLua enum. */
const ENUMS = {
  line_endings: stylua.LineEndings,
  indent_type: stylua.IndentType,
  quote_style: stylua.QuoteStyle,
  call_parentheses: stylua.CallParenType,
  collapse_simple_statement: stylua.CollapseSimpleStatement,
};

/** A StyLua Config from .stylua.toml (flat `key = value` lines). */
function config() {
  const settings = stylua.Config.new();
  settings.syntax = stylua.LuaVersion.Lua51;
  for (const line of readFileSync(join(ROOT, '.stylua.toml'), 'utf8').split('\n')) {
    const match = /^(\w+)\s*=\s*(.+?)\s*$/.exec(line);
    if (!match) continue;
    const [, key, raw] = match;
    const value = raw.startsWith('"') ? JSON.parse(raw) : Number(raw);
    if (ENUMS[key]) {
      if (ENUMS[key][value] === undefined) throw new Error(`.stylua.toml: ${key} = ${raw} is not one of StyLua's`);
      settings[key] = ENUMS[key][value];
    } else settings[key] = value;
  }
  return settings;
}

/** `text` as StyLua formats it. */
export function formatLua(text) {
  return stylua.formatCode(text, config(), undefined, stylua.OutputVerification.None);
}
