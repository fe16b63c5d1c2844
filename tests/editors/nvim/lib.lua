-- Shared helpers for the headless Neovim tests (loaded with dofile).
-- Every script runs its body through lib.run(), which writes one JSON object
-- on stdout and quits with status 0, or writes the error on stderr and `cquit 1`.
local lib = {}

lib.ws = os.getenv("CITELINE_WS")
lib.out = {}
lib.notes = {}
lib.server_exit = nil

local function json(v)
  return vim.fn.json_encode(v)
end

function lib.fail(msg)
  error(msg, 2)
end

function lib.check(cond, msg)
  if not cond then
    error("check failed: " .. msg, 2)
  end
end

-- Capture vim.notify so tests can see error messages shown to the user.
vim.notify = function(msg, level)
  table.insert(lib.notes, { msg = msg, level = level })
  io.stderr:write("[notify] " .. tostring(msg) .. "\n")
end

function lib.cmd()
  local raw = os.getenv("CITELINE_LSP_CMD")
  if raw and raw ~= "" then
    return vim.fn.json_decode(raw)
  end
  return { "citeline", "lsp" }
end

function lib.setup(extra)
  local opts = vim.tbl_extend("force", {
    cmd = lib.cmd(),
    on_exit = function(code, signal)
      lib.server_exit = { code = code, signal = signal }
    end,
  }, extra or {})
  require("citeline").setup(opts)
end

--- Wait for cond() (processing events); fails fast when the server died.
function lib.wait(what, cond, ms)
  local ok = vim.wait(ms or 15000, function()
    return lib.server_exit ~= nil or cond()
  end, 20)
  if lib.server_exit ~= nil and not cond() then
    lib.fail(string.format("server exited (code %s) while waiting for %s", tostring(lib.server_exit.code), what))
  end
  if not ok then
    lib.fail("timed out waiting for " .. what)
  end
end

--- Every running citeline client.
function lib.clients()
  local get = vim.lsp.get_clients or vim.lsp.get_active_clients
  local out = {}
  for _, c in ipairs(get()) do
    if c.name == "citeline" then
      table.insert(out, c)
    end
  end
  return out
end

function lib.client_for(bufnr)
  for _, c in ipairs(lib.clients()) do
    if vim.lsp.buf_is_attached(bufnr, c.id) then
      return c
    end
  end
  return nil
end

--- Open a workspace file as a markdown buffer and wait until the client is
--- attached and initialized.
function lib.open(rel)
  vim.cmd("edit " .. vim.fn.fnameescape(lib.ws .. "/" .. rel))
  vim.bo.filetype = "markdown" -- -u NONE: no filetype detection
  local bufnr = vim.api.nvim_get_current_buf()
  lib.wait("client attach", function()
    local c = lib.client_for(bufnr)
    return c ~= nil and (c.initialized or c.server_capabilities ~= nil)
  end)
  return bufnr, lib.client_for(bufnr)
end

--- Run an Ex command that fills the quickfix list asynchronously; wait for it (at most
--- `ms` milliseconds, 15 s by default).
function lib.qf_after(cmd, title_prefix, ms)
  vim.fn.setqflist({}, " ", { title = "(pending)", items = {} })
  local before = #lib.notes
  vim.cmd(cmd)
  lib.wait(cmd, function()
    local title = vim.fn.getqflist({ title = 1 }).title
    return title:sub(1, #title_prefix) == title_prefix or #lib.notes > before
  end, ms)
  local out = {}
  for _, item in ipairs(vim.fn.getqflist()) do
    table.insert(out, {
      filename = vim.fn.fnamemodify(vim.fn.bufname(item.bufnr), ":p"),
      lnum = item.lnum,
      end_lnum = item["end_lnum"],
      col = item.col,
      text = item.text,
    })
  end
  return {
    title = vim.fn.getqflist({ title = 1 }).title,
    items = out,
    qf_open = vim.fn.getqflist({ winid = 1 }).winid ~= 0,
  }
end

function lib.run(body)
  local ok, err = xpcall(body, debug.traceback)
  if ok then
    io.stdout:write(json(lib.out) .. "\n")
    io.stdout:flush()
    vim.cmd("qall!")
  else
    io.stderr:write("TEST FAILED: " .. tostring(err) .. "\n")
    io.stderr:flush()
    vim.cmd("cquit 1")
  end
end

return lib
