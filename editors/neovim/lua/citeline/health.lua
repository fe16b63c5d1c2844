-- :checkhealth citeline
local M = {}

local health = vim.health or require("health")
local start = health.start or health.report_start
local ok = health.ok or health.report_ok
local warn = health.warn or health.report_warn
local error = health.error or health.report_error
local info = health.info or health.report_info

function M.check()
  start("citeline")

  if vim.fn.has("nvim-0.7") == 1 then
    local v = vim.version()
    ok(string.format("Neovim %d.%d.%d", v.major, v.minor, v.patch))
  else
    error("Neovim 0.7 or later is required")
  end

  local citeline = require("citeline")
  if not citeline._setup_done then
    warn('setup() has not been called: add require("citeline").setup{} to your config')
  end

  local cmd = citeline.config.cmd or {}
  local exe = cmd[1]
  if exe and vim.fn.executable(exe) == 1 then
    local out = vim.fn.system({ exe, "--help" })
    if vim.v.shell_error == 0 then
      ok(string.format("executable: %s (%s)", vim.fn.exepath(exe), table.concat(cmd, " ")))
    else
      warn(string.format("%s --help failed: %s", exe, out))
    end
  else
    error(
      string.format("executable not found: %s", tostring(exe)),
      { "pip install citeline", 'or set cmd = { "/path/to/citeline", "lsp" } in setup()' }
    )
  end

  local get_clients = vim.lsp.get_clients or vim.lsp.get_active_clients
  local running = 0
  for _, client in ipairs(get_clients()) do
    if client.name == citeline.name then
      running = running + 1
      local root = (client.config or {}).root_dir or "?"
      local cmds = {}
      local caps = client.server_capabilities or {}
      if caps.executeCommandProvider then
        cmds = caps.executeCommandProvider.commands or {}
      end
      ok(string.format("client %d running, root %s, commands: %s", client.id, root, table.concat(cmds, ", ")))
    end
  end
  if running == 0 then
    info("no citeline client is running (open a Markdown file or run :CitelineStart)")
  end
  info("search profile: " .. tostring(citeline.config.profile))
  info("semantic threshold: " .. tostring(citeline.config.semantic_threshold))
  local unsaved = (citeline.config.settings or {}).unsaved == true
  info("unsaved text: " .. (unsaved and "searched (settings.unsaved = true)" or "not searched (files on disk)"))
  if citeline.config.verify then
    info("search hits checked again: on write of a Markdown buffer and on focus (verify = true)")
  else
    info("search hits checked again: by hand only, :CitelineVerify (verify = false)")
  end
end

return M
