-- :CitelineLines (exact), :CitelineLines! (regex), :CitelineConcepts, error display.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local lib = dofile(here .. "lib.lua")

lib.run(function()
  lib.check(lib.ws ~= nil, "CITELINE_WS is set")
  lib.setup()
  lib.open("guide.md")

  lib.out.lines = lib.qf_after("CitelineLines hashtable", "citeline lines:")
  lib.out.lines_result = require("citeline").last_result
  lib.out.grep = lib.qf_after("CitelineLines! ^#+ C", "citeline grep:")
  lib.out.concepts = lib.qf_after("CitelineConcepts notes", "citeline concepts:")

  -- An invalid regex: the server's error message reaches the user.
  local before = #lib.notes
  lib.qf_after("CitelineLines! (unclosed", "citeline grep:")
  lib.out.error_notes = {}
  for i = before + 1, #lib.notes do
    table.insert(lib.out.error_notes, lib.notes[i].msg)
  end
  lib.out.server_alive = lib.server_exit == nil
end)
