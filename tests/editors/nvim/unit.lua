-- Pure conversions, no server.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local lib = dofile(here .. "lib.lua")

lib.run(function()
  local c = require("citeline")
  local result = {
    hits = {
      {
        path = "b.md",
        heading = "Second",
        line_start = 9,
        line_end = 12,
        snippet = "## Second\n\nbody of b\n",
      },
      { path = "a.md", heading = "", line_start = 1, line_end = 3, snippet = "\n\npreamble text" },
      { path = "s.md", heading = "Setext", line_start = 4, line_end = 8, snippet = "Setext\n======\nbelow" },
    },
  }
  lib.out.search_items = c.search_items(result, "/ws")
  lib.out.lines_items = c.lines_items({
    matches = {
      { path = "u.md", line = 3, column = 5, text = "café hashtable" },
      { path = "v.md", line = 1, column = 2, text = "ab" },
    },
  }, "/ws")
  lib.out.concepts_items = c.concepts_items({
    concepts = {
      { concept_id = "guide", path = "guide.md", title = "User Guide" },
      { concept_id = "x", path = "x.md", title = "" },
    },
  }, "/ws")
  lib.out.error_envelope = c.error_message({
    code = -32602,
    message = "schema_validation",
    data = { code = "schema_validation", message = "query must not be empty", details = {} },
  })
  lib.out.error_plain = c.error_message({ code = -32603, message = "boom" })
  -- Telescope helpers with a stand-in for telescope.sorters (telescope is not installed).
  local tel = require("citeline.telescope")
  local fake_sorters = {
    Sorter = {
      new = function(_, opts)
        return opts
      end,
    },
  }
  local sorter = tel.order_sorter(fake_sorters)
  local entries = tel.entries(result, "/ws")
  local scores = {}
  for _, prompt in ipairs({ "", "SECOND", "preamble", "nothing" }) do
    local row = {}
    for _, e in ipairs(entries) do
      table.insert(row, sorter.scoring_function(sorter, prompt, e.ordinal, e))
    end
    scores[prompt == "" and "(empty)" or prompt] = row
  end
  lib.out.telescope_scores = scores
  lib.out.telescope_display = vim.tbl_map(function(e)
    return e.display
  end, entries)
  lib.out.root_marker = c.find_root(lib.ws .. "/notes/hashing.md")
  lib.out.root_none = c.find_root("/")
end)
