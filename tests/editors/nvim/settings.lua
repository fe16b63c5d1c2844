-- setup{ settings = ... } reaches the server (initializationOptions + didChangeConfiguration).
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local lib = dofile(here .. "lib.lua")

lib.run(function()
  lib.setup({ settings = { symbols = { cap = 1, list_cap = 2 } } })
  local bufnr = lib.open("guide.md")
  local function names(query)
    local res = vim.lsp.buf_request_sync(bufnr, "workspace/symbol", { query = query }, 10000)
    lib.check(res ~= nil, "workspace/symbol answered")
    for _, r in pairs(res) do
      lib.check(r.err == nil, "workspace/symbol error: " .. vim.inspect(r.err))
      local out = {}
      for _, s in ipairs(r.result or {}) do
        table.insert(out, s.name)
      end
      return out
    end
  end
  lib.out.all = names("")
  lib.out.some = names("o")
  -- update_settings() sends new settings to the running server.
  require("citeline").update_settings({ symbols = { cap = 1, list_cap = 3 } })
  lib.out.all_after = names("")
  lib.out.warnings = {}
  for _, n in ipairs(lib.notes) do
    table.insert(lib.out.warnings, n.msg)
  end
end)
