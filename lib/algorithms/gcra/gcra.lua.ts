/** Lua twin of gcra.ts: the token bucket's twin (gcra.ts says why). */
export const gcraLua = `
local GCRA = make_TB()
`;
