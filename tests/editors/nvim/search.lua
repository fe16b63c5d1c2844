-- setup → attach to a markdown buffer → :CitelineSearch, workspace/symbol, documentSymbol.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local lib = dofile(here .. "lib.lua")

lib.run(function()
  lib.check(lib.ws ~= nil, "CITELINE_WS is set")
  lib.setup({ profile = "recall" })

  -- Attach from a nested file: the root must be the folder holding the marker.
  local bufnr, client = lib.open("notes/hashing.md")
  lib.out.attached = client ~= nil
  lib.out.root = client.config.root_dir
  local caps = client.server_capabilities or {}
  lib.out.commands = (caps.executeCommandProvider or {}).commands or {}
  lib.out.nvim_version = tostring(vim.version().major) .. "." .. tostring(vim.version().minor)
  lib.out.start_path = require("citeline")._start_path

  -- A second markdown buffer shares the same client.
  local buf2, client2 = lib.open("guide.md")
  lib.out.same_client = client2 ~= nil and client2.id == client.id

  -- :CitelineSearch fills the quickfix list in server order.
  lib.out.search = lib.qf_after("CitelineSearch ordered hashtable", "citeline search:")
  lib.out.search_result = require("citeline").last_result

  -- workspace/symbol through the buffer's client.
  local function symbols(query)
    local res = vim.lsp.buf_request_sync(buf2, "workspace/symbol", { query = query }, 10000)
    lib.check(res ~= nil, "workspace/symbol answered")
    for _, r in pairs(res) do
      lib.check(r.err == nil, "workspace/symbol error: " .. vim.inspect(r.err))
      local out = {}
      for _, s in ipairs(r.result or {}) do
        table.insert(out, {
          name = s.name,
          kind = s.kind,
          containerName = s.containerName,
          uri = s.location.uri,
          start_line = s.location.range.start.line,
          end_line = s.location.range["end"].line,
          end_character = s.location.range["end"].character,
        })
      end
      return out
    end
  end
  lib.out.symbols_collisions = symbols("collisions")
  lib.out.symbols_all = symbols("")
  lib.out.symbols_prefix = symbols("trouble")

  -- documentSymbol outline of guide.md.
  local res = vim.lsp.buf_request_sync(buf2, "textDocument/documentSymbol", {
    textDocument = { uri = vim.uri_from_bufnr(buf2) },
  }, 10000)
  lib.check(res ~= nil, "documentSymbol answered")
  local function conv(list)
    local out = {}
    for _, s in ipairs(list or {}) do
      table.insert(out, {
        name = s.name,
        start_line = s.range.start.line,
        end_line = s.range["end"].line,
        sel_line = s.selectionRange.start.line,
        children = conv(s.children),
      })
    end
    return out
  end
  for _, r in pairs(res) do
    lib.check(r.err == nil, "documentSymbol error: " .. vim.inspect(r.err))
    lib.out.outline = conv(r.result)
  end
  lib.out.server_alive = lib.server_exit == nil
  lib.out.bufnr = bufnr
end)
