/**
 * Baton's Lua scripts, one file per state change, and the {@link dev.baton.lua.Script} catalog
 * that loads them. Used by the synchronizers; not an API for applications.
 */
module dev.baton.lua {
    exports dev.baton.lua;
}
