-- :CitelineSearch, then real edits between the search and the re-verify: a buffer edited
-- and written (BufWritePost), a file renamed on disk (FocusGained), a section deleted;
-- the quickfix texts after each, and where :CitelineReanchor jumps.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local lib = dofile(here .. "lib.lua")

local function texts()
  local out = {}
  for _, item in ipairs(vim.fn.getqflist()) do
    table.insert(out, { vim.fn.fnamemodify(vim.fn.bufname(item.bufnr), ":p"), item.lnum, item.text })
  end
  return out
end

-- Run `trigger` and wait until a re-verify of the search list has landed.
local function verified(what, trigger)
  local citeline = require("citeline")
  local before = citeline.last_verify
  trigger()
  lib.wait(what, function()
    return citeline.last_verify ~= before
  end)
  return { items = texts(), results = citeline.last_verify }
end

local function reanchor(what)
  local done = nil
  require("citeline").reanchor({
    on_done = function(err, r)
      done = { err = err ~= nil, status = r and r.status or vim.NIL }
    end,
  })
  lib.wait(what, function()
    return done ~= nil
  end)
  done.file = vim.api.nvim_buf_get_name(0)
  done.line = vim.api.nvim_win_get_cursor(0)[1]
  done.buftype = vim.bo.buftype
  return done
end

lib.run(function()
  lib.setup({ profile = "recall" })
  local hashing = lib.open("notes/hashing.md")
  lib.out.search = lib.qf_after("CitelineSearch ordered hashtable", "citeline search:")

  -- Two lines typed above the first heading, and two words of Collisions replaced; written.
  vim.api.nvim_buf_set_lines(hashing, 0, 0, false, { "Preface.", "" })
  local n = vim.api.nvim_buf_line_count(hashing)
  local lines = vim.api.nvim_buf_get_lines(hashing, 0, n, false)
  for i, line in ipairs(lines) do
    if line:match("chaining buckets") then
      vim.api.nvim_buf_set_lines(hashing, i - 1, i, false, { (line:gsub("chaining buckets", "open addressing")) })
    end
  end
  lib.out.saved = verified("re-verify on write", function()
    vim.api.nvim_buf_call(hashing, function()
      vim.cmd("write")
    end)
  end)

  -- Renamed on disk, behind Neovim's back; Neovim gains focus.
  local ws = lib.ws
  assert(vim.loop.fs_rename(ws .. "/notes/unicode.md", ws .. "/notes/cafe.md"))
  lib.out.focus = verified("re-verify on focus", function()
    vim.cmd("doautocmd FocusGained")
  end)

  -- From the quickfix window, on the third item: the renamed file opens where the text is.
  vim.cmd("copen")
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  lib.out.reanchor_renamed = reanchor("reanchor from the quickfix window")
  lib.out.reanchor_renamed.idx = vim.fn.getqflist({ idx = 0 }).idx

  -- From a file window, the list's current item: the first one (moved in its file).
  vim.cmd("cfirst")
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  lib.out.reanchor_moved = reanchor("reanchor from a file window")

  -- The Collisions section deleted and written: missing; reanchor stays where it is.
  local collisions = nil
  for i, line in ipairs(vim.api.nvim_buf_get_lines(hashing, 0, -1, false)) do
    if line == "## Collisions" then
      collisions = i
    end
  end
  lib.check(collisions ~= nil, "Collisions heading in the buffer")
  vim.api.nvim_set_current_buf(hashing)
  vim.api.nvim_buf_set_lines(hashing, collisions - 1, -1, false, {})
  lib.out.deleted = verified("re-verify after deleting a section", function()
    vim.api.nvim_buf_call(hashing, function()
      vim.cmd("write")
    end)
  end)
  vim.fn.setqflist({}, "a", { idx = 2 })
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  lib.out.reanchor_missing = reanchor("reanchor on a missing hit")

  -- :CitelineVerify by hand says what it found.
  local before = #lib.notes
  lib.out.by_hand = verified(":CitelineVerify", function()
    vim.cmd("CitelineVerify")
  end)
  lib.out.by_hand_note = (lib.notes[#lib.notes] or {}).msg
  lib.check(#lib.notes > before, "a summary was shown")

  -- A new search list is not marked; the old one keeps its marks in the stack.
  lib.out.fresh = lib.qf_after("CitelineSearch hashtable costs", "citeline search:")
  vim.cmd("colder 2")
  lib.out.older = texts()
  lib.out.title = vim.fn.getqflist({ title = 1 }).title
  lib.out.server_alive = lib.server_exit == nil

  -- The server stopped: writing a Markdown buffer or gaining focus does not start one.
  for _, c in ipairs(lib.clients()) do
    vim.lsp.stop_client(c.id)
  end
  -- (lib.wait would stop at the server's exit, before Neovim forgets the client.)
  lib.check(
    vim.wait(10000, function()
      return #lib.clients() == 0
    end, 20),
    "the server stopped"
  )
  vim.api.nvim_buf_call(hashing, function()
    vim.cmd("write")
  end)
  vim.cmd("doautocmd FocusGained")
  -- (Without the guard a client shows up well within this time.)
  vim.wait(2000, function()
    return #lib.clients() > 0
  end, 20)
  lib.out.clients_after_stop = #lib.clients()
end)
