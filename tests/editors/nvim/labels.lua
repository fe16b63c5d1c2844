-- :CitelineSearch over files whose matching text comes before their first heading: the
-- quickfix texts, and the names workspace/symbol gives the same sections.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local lib = dofile(here .. "lib.lua")

lib.run(function()
  lib.setup({ profile = "recall" })
  local bufnr = lib.open("guide.md")
  local query = os.getenv("CITELINE_LABELS_QUERY")
  lib.out.search = lib.qf_after("CitelineSearch " .. query, "citeline search:")
  lib.out.result = require("citeline").last_result
  local res = vim.lsp.buf_request_sync(bufnr, "workspace/symbol", { query = query }, 10000)
  lib.check(res ~= nil, "workspace/symbol answered")
  lib.out.symbols = {}
  for _, r in pairs(res) do
    lib.check(r.err == nil, "workspace/symbol error: " .. vim.inspect(r.err))
    for _, sym in ipairs(r.result or {}) do
      table.insert(lib.out.symbols, {
        name = sym.name,
        uri = sym.location.uri,
        line = sym.location.range.start.line,
      })
    end
  end
  lib.out.server_alive = lib.server_exit == nil
end)
