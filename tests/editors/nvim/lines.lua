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
  -- ui = "select": the hits go through vim.ui.select in server order; choosing one opens it.
  local offered
  vim.ui.select = function(items, opts, on_choice)
    offered = {}
    for _, item in ipairs(items) do
      table.insert(offered, opts.format_item(item))
    end
    on_choice(items[2])
  end
  require("citeline").search("ordered hashtable", { ui = "select" })
  lib.wait("vim.ui.select", function()
    return offered ~= nil
  end)
  lib.out.select_offered = offered
  lib.out.select_opened = { vim.fn.expand("%:p"), vim.fn.line(".") }
  lib.out.server_alive = lib.server_exit == nil
end)
