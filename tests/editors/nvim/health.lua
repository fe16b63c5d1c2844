-- setup() after a Markdown buffer is open attaches it (vim.lsp.enable alone would not
-- before VimEnter on 0.11+), then :checkhealth citeline reports the running client.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local lib = dofile(here .. "lib.lua")

lib.run(function()
  vim.cmd("edit " .. vim.fn.fnameescape(lib.ws .. "/guide.md"))
  vim.bo.filetype = "markdown"
  local bufnr = vim.api.nvim_get_current_buf()
  lib.setup()
  lib.out.start_path = require("citeline")._start_path
  lib.wait("late attach", function()
    local c = lib.client_for(bufnr)
    return c ~= nil and (c.initialized or c.server_capabilities ~= nil)
  end)
  lib.out.attached = lib.client_for(bufnr) ~= nil
  vim.cmd("checkhealth citeline")
  lib.out.health = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  lib.out.server_alive = lib.server_exit == nil
end)
