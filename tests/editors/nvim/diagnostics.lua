-- Diagnostics: a file whose front matter does not parse gets one where the error is;
-- fixing it in the buffer (unsaved) clears it, since the server checks open documents'
-- editor text.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local lib = dofile(here .. "lib.lua")

local function diags(bufnr)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(out, { lnum = d.lnum, severity = d.severity, message = d.message, source = d.source })
  end
  return out
end

lib.run(function()
  lib.setup()
  local bufnr = lib.open("broken.md")
  lib.wait("diagnostics", function()
    return #vim.diagnostic.get(bufnr) > 0
  end)
  lib.out.before = diags(bufnr)
  -- Close the front matter in the buffer without writing the file.
  vim.api.nvim_buf_set_lines(bufnr, 2, 2, false, { "---" })
  lib.wait("diagnostics cleared", function()
    return #vim.diagnostic.get(bufnr) == 0
  end)
  lib.out.after = diags(bufnr)
  lib.out.modified = vim.bo[bufnr].modified
  lib.out.server_alive = lib.server_exit == nil
end)
