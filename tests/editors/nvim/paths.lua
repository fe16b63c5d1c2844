-- The plugin's path helpers with Windows paths (on this Linux machine, `win` = true) and
-- POSIX ones: root detection and unsaved buffers use them.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local lib = dofile(here .. "lib.lua")

lib.run(function()
  local p = require("citeline").paths
  local function each(f, cases, win)
    local out = {}
    for _, case in ipairs(cases) do
      table.insert(out, f(case[1], case[2], win))
    end
    return out
  end
  local win_dirs = { "C:\\Users\\me\\notes\\a.md", "C:\\Users", "C:\\", "c:/work/docs/", "\\\\srv\\share\\docs\\a.md", "\\\\srv\\share\\", "D:\\a\\\\b\\\\" }
  local out = {}
  out.win_dirname = {}
  for _, path in ipairs(win_dirs) do
    table.insert(out.win_dirname, p.dirname(path, true))
  end
  out.posix_dirname = {}
  for _, path in ipairs({ "/ws/notes/a.md", "/ws", "/", "/ws//sub//", "rel" }) do
    table.insert(out.posix_dirname, p.dirname(path, false))
  end
  out.win_join = each(p.join, {
    { "C:\\ws", "notes/a.md" },
    { "C:\\", "a.md" },
    { "C:\\ws\\", "a.md" },
    { "\\\\srv\\share", "docs/a.md" },
    { "C:\\ws", "D:\\elsewhere\\b.md" },
  }, true)
  out.posix_join = each(p.join, { { "/ws", "notes/a.md" }, { "/", "a.md" }, { "/ws/", "a.md" }, { "/ws", "/abs.md" } }, false)
  out.win_absolute = {}
  for _, path in ipairs({ "C:\\a", "c:/a", "\\\\srv\\share\\a", "\\a", "a\\b", "C:a" }) do
    table.insert(out.win_absolute, p.is_absolute(path, true))
  end
  out.win_same = {
    p.same("C:\\Users\\Me\\Notes\\A.md", "c:/users/me/notes/a.md", true),
    p.same("C:\\a.md", "C:\\b.md", true),
    p.same("/ws/A.md", "/ws/a.md", false),
  }
  -- root detection walks up to a drive's root and stops there (a marker on the way up)
  local root = lib.ws .. "/paths-root"
  vim.fn.mkdir(root .. "/sub/deeper", "p")
  vim.fn.writefile({}, root .. "/.citeline-root")
  out.found_root = require("citeline").find_root(root .. "/sub/deeper/x.md", { ".citeline-root" })
  out.expected_root = root
  out.no_marker = require("citeline").find_root(root .. "/sub/deeper/x.md", { ".no-such-marker" })
  out.cwd = vim.fn.getcwd()
  lib.out = out
end)
