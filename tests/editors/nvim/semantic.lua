-- :CitelineSemantic (citeline.lines in semantic mode) and profile = "hybrid" (SPEC §15),
-- against the real model. CITELINE_SEMANTIC_QUERY is the question; with
-- CITELINE_EXPECT_MISSING=1 the server lacks the semantic extra and both must fail
-- with a message (the notes are recorded either way).
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local lib = dofile(here .. "lib.lua")

-- A first request loads the model and embeds the candidate sections: seconds.
local WAIT = 60000

lib.run(function()
  local query = os.getenv("CITELINE_SEMANTIC_QUERY")
  lib.check(lib.ws ~= nil and query ~= nil, "CITELINE_WS and CITELINE_SEMANTIC_QUERY are set")
  lib.setup({ profile = "hybrid" })
  lib.open("guide.md")
  local citeline = require("citeline")

  local before = #lib.notes
  citeline.last_result = nil
  lib.out.semantic = lib.qf_after("CitelineSemantic " .. query, "citeline semantic:", WAIT)
  lib.out.semantic_result = citeline.last_result or vim.NIL
  -- The quickfix entry opens at the section's line.
  if #vim.fn.getqflist() > 0 then
    vim.cmd("cc 1")
    lib.out.opened = { vim.fn.expand("%:p"), vim.fn.line(".") }
  end
  -- :CitelineSearch with the configured profile, hybrid
  citeline.last_result = nil
  lib.out.hybrid = lib.qf_after("CitelineSearch " .. query, "citeline search:", WAIT)
  lib.out.hybrid_result = citeline.last_result or vim.NIL
  lib.out.notes = {}
  for i = before + 1, #lib.notes do
    table.insert(lib.out.notes, lib.notes[i].msg)
  end
  lib.out.server_alive = lib.server_exit == nil
end)
