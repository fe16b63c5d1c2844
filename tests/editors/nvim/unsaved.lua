-- settings = { unsaved = true }: a word typed into a buffer but not written is found by
-- :CitelineSearch and :CitelineLines, and the quickfix entries say "[unsaved]".
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local lib = dofile(here .. "lib.lua")

lib.run(function()
  lib.setup({ settings = { unsaved = true } })
  local bufnr = lib.open("guide.md")
  vim.api.nvim_buf_set_lines(bufnr, -1, -1, false, { "", "The zebrafish setting is new." })
  lib.out.modified = vim.bo[bufnr].modified
  lib.out.search = lib.qf_after("CitelineSearch zebrafish", "citeline search:")
  lib.out.lines = lib.qf_after("CitelineLines zebrafish", "citeline lines:")
  lib.out.notes = {}
  for _, n in ipairs(lib.notes) do
    table.insert(lib.out.notes, n.msg)
  end
  lib.out.server_alive = lib.server_exit == nil
end)
