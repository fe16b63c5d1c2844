-- citeline.nvim: Neovim client for `citeline lsp`.
--
-- Starts (or attaches to) the citeline language server for Markdown buffers and
-- offers :CitelineSearch, :CitelineLines[!], :CitelineSemantic and :CitelineConcepts,
-- which fill the quickfix list in the server's order. A search list's hits are checked
-- again on writing a Markdown buffer and on focus (:CitelineVerify by hand): those whose
-- text moved, changed or went away are marked, and :CitelineReanchor jumps to where the
-- text is now. Works on Neovim 0.7 through 0.11+:
--   0.11+      vim.lsp.config + vim.lsp.enable
--   0.8-0.10   vim.lsp.start
--   0.7        vim.lsp.start_client + vim.lsp.buf_attach_client

local M = {}

M.name = "citeline"

local defaults = {
  -- Command that starts the server.
  cmd = { "citeline", "lsp" },
  -- Filetypes whose buffers start/attach the server.
  filetypes = { "markdown" },
  -- Files or folders that mark the workspace root (searched upwards from the
  -- buffer's file). Without any, the current working directory is the root.
  root_markers = { ".git", ".citeline" },
  -- Server settings, sent as initializationOptions and through
  -- workspace/didChangeConfiguration: limits, reserved, use_ignore,
  -- skip_invalid, symbols = { cap, list_cap }, profile, and unsaved (true:
  -- searches and symbols read the text of open buffers, unsaved edits included,
  -- instead of the files on disk; such hits are marked "[unsaved]").
  -- Change them while running with require("citeline").update_settings{...}.
  settings = {},
  -- Relevance profile sent with :CitelineSearch ("recall", "contract", or "hybrid":
  -- recall reranked by meaning, which needs the server's semantic extra,
  -- pip install 'citeline[semantic]'; without it the search fails saying so).
  profile = "recall",
  -- Least score (0-1) of the sections :CitelineSemantic shows (SPEC §15's default).
  semantic_threshold = 0.5,
  -- Number of hits / matches / concepts requested.
  limit = 20,
  lines_limit = 100,
  concepts_limit = 20,
  -- Context lines requested by :CitelineLines (kept in the quickfix context).
  lines_context = 2,
  -- Case sensitivity of :CitelineLines.
  case_sensitive = true,
  -- Open the quickfix window after a command fills it.
  open_quickfix = true,
  -- Where :CitelineSearch shows hits: "quickfix" or "select" (vim.ui.select, so
  -- whatever UI you plugged into it: telescope-ui-select, dressing.nvim, fzf-lua...).
  ui = "quickfix",
  -- Check the hits of the last :CitelineSearch list again when a Markdown buffer is
  -- written and when Neovim gains focus, and mark those no longer where they were
  -- ("[moved → b.md:40-48]", "[changed 80% → a.md:3-9]", "[missing]").
  verify = true,
  -- Start the server automatically for `filetypes`.
  autostart = true,
  -- Milliseconds to wait for the server to initialize before a command gives up.
  init_timeout = 10000,
  -- Optional callbacks passed to the client.
  on_attach = nil,
  on_exit = nil,
  capabilities = nil,
}

M.config = vim.deepcopy(defaults)
M._setup_done = false

local function has(feature)
  return vim.fn.has(feature) == 1
end

local function notify(msg, level)
  vim.notify("citeline: " .. msg, level or vim.log.levels.INFO)
end

local uv = vim.uv or vim.loop

---------------------------------------------------------------------------
-- Paths, split and joined as the platform does: on Windows `\` and `/` both
-- separate, a root is `C:\` or `\\server\share\`, and names compare without case.
-- Each helper takes `win` (default: this Neovim's platform) so that the tests run
-- Windows paths on Linux.
---------------------------------------------------------------------------

local paths = {}
M.paths = paths

paths.windows = vim.fn.has("win32") == 1

local function win_of(win)
  if win == nil then
    return paths.windows
  end
  return win
end

--- The length of the root at the start of `path` ("/", "C:\", "\\srv\share\"), 0 if none.
function paths.root_length(path, win)
  if win_of(win) then
    local unc = path:match("^[\\/][\\/][^\\/]+[\\/][^\\/]+[\\/]?")
    if unc then
      return #unc
    end
    local drive = path:match("^%a:[\\/]")
    if drive then
      return #drive
    end
  end
  if path:sub(1, 1) == "/" or (win_of(win) and path:sub(1, 1) == "\\") then
    return 1
  end
  return 0
end

function paths.is_absolute(path, win)
  return paths.root_length(path, win) > 0
end

function paths.sep(win)
  return win_of(win) and "\\" or "/"
end

local function seps(win)
  return win_of(win) and "[\\/]" or "/"
end

--- `path` without separators at its end, but never its root ("C:\" stays "C:\").
function paths.strip(path, win)
  local root = paths.root_length(path, win)
  local out = path
  while #out > root and out:sub(-1):match(seps(win)) do
    out = out:sub(1, -2)
  end
  return out
end

--- The folder holding `path`; a root is its own folder.
function paths.dirname(path, win)
  path = paths.strip(path, win)
  local root = paths.root_length(path, win)
  local i = #path
  while i > root and not path:sub(i, i):match(seps(win)) do
    i = i - 1
  end
  if i <= root then
    if root > 0 then
      return path:sub(1, root)
    end
    return "."
  end
  return paths.strip(path:sub(1, i), win)
end

--- `rel` (a bundle-relative path with `/`, as the server gives it) under `dir`, in the
--- platform's spelling; an absolute `rel` is returned as it is.
function paths.join(dir, rel, win)
  if dir == nil or paths.is_absolute(rel, win) then
    return rel
  end
  if win_of(win) then
    rel = rel:gsub("/", "\\")
  end
  local base = paths.strip(dir, win)
  if base:sub(-1):match(seps(win)) then
    return base .. rel
  end
  return base .. paths.sep(win) .. rel
end

--- Whether two absolute paths name the same file: on Windows whatever the separators and
--- the case (NTFS compares names without case).
function paths.same(a, b, win)
  if not win_of(win) then
    return a == b
  end
  local function key(p)
    return paths.strip(p, true):gsub("/", "\\"):lower()
  end
  return key(a) == key(b)
end

---------------------------------------------------------------------------
-- Root detection
---------------------------------------------------------------------------

--- Nearest folder above `path` (a file or folder) holding one of the markers;
--- the current working directory when there is none.
function M.find_root(path, markers)
  markers = markers or M.config.root_markers
  if path == nil or path == "" then
    return vim.fn.getcwd()
  end
  path = vim.fn.fnamemodify(path, ":p")
  local stat = uv.fs_stat(path)
  local dir = paths.strip(path)
  if not (stat and stat.type == "directory") then
    dir = paths.dirname(dir)
  end
  while true do
    for _, marker in ipairs(markers) do
      if uv.fs_stat(paths.join(dir, marker)) then
        return dir
      end
    end
    local up = paths.dirname(dir)
    if up == dir or dir == "" or dir == "." then
      break
    end
    dir = up
  end
  return vim.fn.getcwd()
end

local function buf_root(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  return M.find_root(name ~= "" and name or nil)
end

---------------------------------------------------------------------------
-- Client management
---------------------------------------------------------------------------

local get_clients = vim.lsp.get_clients or vim.lsp.get_active_clients

local function citeline_clients(filter)
  local out = {}
  for _, client in ipairs(get_clients()) do
    if client.name == M.name and (filter == nil or filter(client)) then
      table.insert(out, client)
    end
  end
  return out
end

local function client_root(client)
  local cfg = client.config or {}
  if cfg.root_dir then
    return cfg.root_dir
  end
  local folders = client.workspace_folders
  if folders and folders[1] then
    return vim.uri_to_fname(folders[1].uri)
  end
  return nil
end

--- The client configuration handed to Neovim.
function M.client_config(root)
  local cfg = M.config
  local config = {
    name = M.name,
    cmd = cfg.cmd,
    root_dir = root,
    workspace_folders = root and { { uri = vim.uri_from_fname(root), name = root } } or nil,
    -- An empty Lua table would be encoded as a JSON list.
    init_options = (cfg.settings and next(cfg.settings)) and cfg.settings or vim.empty_dict(),
    settings = (cfg.settings and next(cfg.settings)) and cfg.settings or vim.empty_dict(),
    capabilities = cfg.capabilities,
    on_attach = cfg.on_attach,
    on_init = function(client)
      if cfg.settings and next(cfg.settings) ~= nil then
        client.notify("workspace/didChangeConfiguration", { settings = cfg.settings })
      end
    end,
    on_exit = function(code, signal, client_id)
      if code ~= 0 and code ~= nil then
        vim.schedule(function()
          notify(
            string.format("server exited with code %s (signal %s)", tostring(code), tostring(signal)),
            vim.log.levels.WARN
          )
        end)
      end
      if cfg.on_exit then
        cfg.on_exit(code, signal, client_id)
      end
    end,
  }
  if has("nvim-0.11") then
    -- 0.11 passes the client as `self` to client methods.
    config.on_init = function(client)
      if cfg.settings and next(cfg.settings) ~= nil then
        client:notify("workspace/didChangeConfiguration", { settings = cfg.settings })
      end
    end
  end
  return config
end

--- Attach (starting if needed) the citeline server to `bufnr`. Returns the client id.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local root = buf_root(bufnr)
  if has("nvim-0.8") then
    return vim.lsp.start(M.client_config(root), { bufnr = bufnr })
  end
  -- 0.7: reuse a running client for the same root.
  local existing = citeline_clients(function(c)
    return client_root(c) == root
  end)[1]
  local id = existing and existing.id or vim.lsp.start_client(M.client_config(root))
  if id then
    vim.lsp.buf_attach_client(bufnr, id)
  end
  return id
end

local function start_detached(root)
  local config = M.client_config(root)
  if has("nvim-0.11") then
    return vim.lsp.start(config, { attach = false })
  end
  return vim.lsp.start_client(config)
end

--- The citeline client for the current buffer: the one attached to it, else one
--- whose root holds the buffer (or the cwd), else a new one started for that root.
function M.get_client(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local attached = citeline_clients(function(c)
    return vim.lsp.buf_is_attached(bufnr, c.id)
  end)[1]
  if attached then
    return attached
  end
  local root = buf_root(bufnr)
  local same_root = citeline_clients(function(c)
    return client_root(c) == root
  end)[1]
  if same_root then
    return same_root
  end
  if vim.fn.executable(M.config.cmd[1]) ~= 1 then
    notify("executable not found: " .. tostring(M.config.cmd[1]), vim.log.levels.ERROR)
    return nil
  end
  local id = start_detached(root)
  return id and vim.lsp.get_client_by_id(id) or nil
end

local function is_initialized(client)
  if client.initialized ~= nil then
    return client.initialized
  end
  return client.server_capabilities ~= nil
end

local function when_ready(client, fn)
  if is_initialized(client) then
    return fn()
  end
  local waited = 0
  local function poll()
    if vim.lsp.get_client_by_id(client.id) == nil then
      notify("server stopped before it was ready", vim.log.levels.ERROR)
      return
    end
    if is_initialized(client) then
      return fn()
    end
    waited = waited + 50
    if waited > M.config.init_timeout then
      notify("server did not initialize in time", vim.log.levels.ERROR)
      return
    end
    vim.defer_fn(poll, 50)
  end
  vim.defer_fn(poll, 50)
end

local function client_request(client, method, params, handler, bufnr)
  if has("nvim-0.11") then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

--- Readable text of a JSON-RPC error, preferring the citeline envelope's message.
function M.error_message(err)
  if type(err) ~= "table" then
    return tostring(err)
  end
  local data = err.data
  if type(data) == "table" then
    local env = data.error or data
    if type(env) == "table" and type(env.message) == "string" then
      -- An optional extra the server lacks (semantic mode, profile hybrid): its message
      -- says what to install; the code (schema_validation) would only mislead.
      local missing_extra = type(env.details) == "table" and type(env.details.install) == "string"
      if type(env.code) == "string" and not missing_extra then
        return env.message .. " [" .. env.code .. "]"
      end
      return env.message
    end
  end
  return err.message or vim.inspect(err)
end

--- Run `workspace/executeCommand` for `command` with the one request object `args`.
--- `callback(err, result, root)` runs on the main loop. With `root` (a folder), the
--- client serving that folder runs it, whatever the current buffer.
function M.execute(command, args, callback, bufnr, root)
  local client = root
      and citeline_clients(function(c)
        return client_root(c) == root
      end)[1]
    or M.get_client(bufnr)
  if not client then
    callback({ message = "no citeline language server is running" }, nil, nil)
    return
  end
  local root = client_root(client)
  args = vim.deepcopy(args)
  if root and args.root == nil then
    args.root = vim.uri_from_fname(root)
  end
  when_ready(client, function()
    local ok = client_request(client, "workspace/executeCommand", {
      command = command,
      arguments = { args },
    }, function(err, result)
      callback(err, result, root)
    end, bufnr or vim.api.nvim_get_current_buf())
    if ok == false then
      callback({ message = "the citeline server is not running" }, nil, root)
    end
  end)
end

---------------------------------------------------------------------------
-- Result → quickfix conversion (pure functions, unit tested)
---------------------------------------------------------------------------

--- Text for a one-line display: every line break (CRLF, LF or a lone CR) becomes a
--- space. Headings may hold them (a Setext heading over two lines, SPEC §3), and so may
--- titles; the quickfix list would show them as ^M or cut the entry.
function M.display(text)
  if type(text) ~= "string" then
    return "" -- nil, or vim.NIL for a JSON null
  end
  return (text:gsub("\r\n", " "):gsub("[\r\n]", " "))
end

M.UNSAVED_MARK = "[unsaved]"

--- Whether a hit or match came from an open buffer's unsaved text (setting `unsaved`).
function M.is_unsaved(hit)
  return type(hit) == "table" and (hit.unsaved == true or hit["x-unsaved"] == true)
end

local function mark_unsaved(hit, text)
  if M.is_unsaved(hit) then
    return M.UNSAVED_MARK .. " " .. text
  end
  return text
end

local function resolve(root, path)
  return paths.join(root, path)
end

local function trim(s)
  return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

--- The line of a snippet worth showing next to the heading: the first non-blank
--- line that is not a line of the heading itself (a Setext heading may span several
--- lines) nor a Setext underline, shown on one line.
function M.snippet_line(snippet, heading)
  local heading_lines = {}
  heading = type(heading) == "string" and heading or ""
  for part in (heading:gsub("\r\n", "\n") .. "\n"):gmatch("([^\n]*)\n") do
    part = trim(part)
    if part ~= "" then
      heading_lines[part] = true
    end
  end
  snippet = type(snippet) == "string" and snippet or ""
  for line in snippet:gmatch("[^\n]+") do
    local t = trim((line:gsub("\r$", "")))
    local atx = t:match("^#+$") or t:match("^#+%s")
    local underline = t:match("^=+$") or t:match("^%-+$")
    if t ~= "" and not underline and not atx and not heading_lines[t] then
      return M.display(t)
    end
  end
  return ""
end

--- The name of hit `i` of a citeline.search result: the server's label for it (`x-labels`,
--- asked for with `labels = true`: the heading; for the text before a file's first heading
--- the file's title, else its path, as workspace/symbol names it), else the heading, else
--- the path (a server that does not send labels).
function M.hit_label(result, i)
  local hit = result.hits[i]
  local labels = result["x-labels"]
  if type(labels) == "table" and type(labels[i]) == "string" and labels[i] ~= "" then
    return M.display(labels[i])
  end
  local heading = M.display(hit.heading)
  if heading == "" then
    return hit.path
  end
  return heading
end

--- Quickfix items for a citeline.search result, in server order.
function M.search_items(result, root)
  local items = {}
  for i, hit in ipairs((result or {}).hits or {}) do
    local heading = M.hit_label(result, i)
    local line = M.snippet_line(hit.snippet, hit.heading)
    local text = heading
    if line ~= "" then
      text = heading .. " — " .. line
    end
    table.insert(items, {
      filename = resolve(root, hit.path),
      lnum = hit.line_start,
      end_lnum = hit.line_end,
      text = mark_unsaved(hit, text),
    })
  end
  return items
end

local line_cache = {}

--- The loaded buffer of the file `path` (an absolute name), if any.
local function loaded_buffer(path)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and paths.same(vim.api.nvim_buf_get_name(bufnr), path) then
      return bufnr
    end
  end
  return nil
end

local function byte_col(path, match)
  local text = type(match.text) == "string" and match.text or ""
  local column = match.column or 1
  if text:sub(1, #"…") ~= "…" then
    local ok, idx = pcall(vim.str_byteindex, text, column - 1)
    if ok and idx then
      return idx + 1
    end
  end
  -- Windowed text: read the real line to convert code points into bytes; for a match
  -- in unsaved text that is the buffer's line, not the file's.
  local key = (M.is_unsaved(match) and "buffer:" or "file:") .. path
  local lines = line_cache[key]
  if lines == nil then
    local bufnr = M.is_unsaved(match) and loaded_buffer(path) or nil
    if bufnr then
      lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
    else
      local ok, read = pcall(vim.fn.readfile, path)
      lines = ok and read or {}
    end
    line_cache[key] = lines
  end
  local full = lines[match.line]
  if full then
    local ok, idx = pcall(vim.str_byteindex, full, column - 1)
    if ok and idx then
      return idx + 1
    end
  end
  return column
end

--- Quickfix items for a citeline.lines result (line and 1-based byte column).
function M.lines_items(result, root)
  line_cache = {}
  local items = {}
  for _, m in ipairs((result or {}).matches or {}) do
    local filename = resolve(root, m.path)
    table.insert(items, {
      filename = filename,
      lnum = m.line,
      col = byte_col(filename, m),
      text = mark_unsaved(m, M.display(m.text)),
    })
  end
  line_cache = {}
  return items
end

--- A semantic score as shown: two decimals ("0.87"), "?" for what is not a number.
function M.format_score(score)
  if type(score) ~= "number" or score ~= score then
    return "?"
  end
  return string.format("%.2f", math.min(1, math.max(0, score)))
end

--- Quickfix items for a citeline.lines result in semantic mode (SPEC §15): one per
--- section, in the server's order (by score), at the section's line that the server
--- chose; the text is the score, the heading and that line.
function M.semantic_items(result, root)
  local items = {}
  for _, m in ipairs((result or {}).matches or {}) do
    local heading = M.display(m["x-heading"])
    if heading == "" then
      heading = m.path
    end
    local line = trim(M.display(m.text))
    local text = M.format_score(m.score) .. "  " .. heading
    if line ~= "" then
      text = text .. " — " .. line
    end
    local item = {
      filename = resolve(root, m.path),
      lnum = m.line,
      col = 1,
      text = mark_unsaved(m, text),
    }
    if type(m["x-line_end"]) == "number" then
      item.end_lnum = m["x-line_end"]
    end
    table.insert(items, item)
  end
  return items
end

--- Quickfix items for a citeline.concepts result.
function M.concepts_items(result, root)
  local items = {}
  for _, c in ipairs((result or {}).concepts or {}) do
    local text = c.concept_id
    if type(c.title) == "string" and c.title ~= "" then
      text = text .. " — " .. M.display(c.title)
    end
    table.insert(items, { filename = resolve(root, c.path), lnum = 1, col = 1, text = text })
  end
  return items
end

---------------------------------------------------------------------------
-- Commands
---------------------------------------------------------------------------

local function set_qf(title, items, result, opts, root)
  opts = opts or {}
  -- The context keeps what a re-verify needs: the hits as cited, and the root their
  -- paths are relative to.
  local context = { citeline = result, citeline_root = root, citeline_kind = opts.kind }
  vim.fn.setqflist({}, " ", { title = title, items = items, context = context })
  if opts.kind == "search" then
    M._track_search(vim.fn.getqflist({ id = 0 }).id)
  end
  if #items == 0 then
    notify("no results for " .. title)
  elseif M.config.open_quickfix and not (opts and opts.no_open) then
    vim.cmd("copen")
  end
end

--- Offer quickfix-shaped `items` with vim.ui.select (in order); jump to the choice.
function M.select(title, items)
  if #items == 0 then
    notify("no results for " .. title)
    return
  end
  vim.ui.select(items, {
    prompt = title,
    kind = "citeline",
    format_item = function(item)
      local where = vim.fn.fnamemodify(item.filename, ":.") .. ":" .. item.lnum
      return where .. "  " .. item.text
    end,
  }, function(choice)
    if choice then
      vim.cmd("edit " .. vim.fn.fnameescape(choice.filename))
      local col = (choice.col and choice.col > 0) and (choice.col - 1) or 0
      pcall(vim.api.nvim_win_set_cursor, 0, { choice.lnum, col })
    end
  end)
end

local function run(command, args, title, to_items, opts)
  opts = opts or {}
  M.execute(command, args, function(err, result, root)
    if err then
      notify(M.error_message(err), vim.log.levels.ERROR)
      M.last_error = err
      if opts.on_done then
        opts.on_done(err, nil)
      end
      return
    end
    M.last_result = result
    local items = to_items(result, root)
    if (opts.ui or M.config.ui) == "select" then
      M.select(title, items)
    else
      set_qf(title, items, result, opts, root)
    end
    if result and result.truncated then
      notify(string.format("showing %d of %d results", #items, result.total or #items))
    end
    if opts.on_done then
      opts.on_done(nil, result, items)
    end
  end)
end

--- Ranked section search; results in the quickfix list.
function M.search(query, opts)
  opts = opts or {}
  -- labels: the server names each hit as workspace/symbol does (x-labels), so text before
  -- a file's first heading shows the file's title; no YAML parser needed here.
  local args = { query = query, limit = opts.limit or M.config.limit, labels = true }
  local profile = opts.profile or M.config.profile
  if profile then
    args.profile = profile
  end
  opts = vim.tbl_extend("keep", { kind = "search" }, opts)
  run("citeline.search", args, "citeline search: " .. query, M.search_items, opts)
end

--- Line search (exact by default, RE2 regex with opts.regex); results in the quickfix list.
function M.lines(pattern, opts)
  opts = opts or {}
  local case_sensitive = M.config.case_sensitive
  if opts.case_sensitive ~= nil then
    case_sensitive = opts.case_sensitive
  end
  local args = {
    pattern = pattern,
    mode = opts.regex and "regex" or "exact",
    case_sensitive = case_sensitive,
    limit = opts.limit or M.config.lines_limit,
    context = opts.context or M.config.lines_context,
  }
  local title = (opts.regex and "citeline grep: " or "citeline lines: ") .. pattern
  run("citeline.lines", args, title, M.lines_items, opts)
end

--- Search by meaning (SPEC §15): the sections that answer `query` in other words or
--- another language, each with its score, at or above opts.threshold (default
--- config.semantic_threshold); results in the quickfix list. Needs the server's
--- semantic extra; a first search on a new workspace embeds ~20 sections (seconds).
function M.semantic(query, opts)
  opts = opts or {}
  local args = {
    mode = "semantic",
    query = query,
    threshold = opts.threshold or M.config.semantic_threshold,
    limit = opts.limit or M.config.limit,
    context = 0,
  }
  run("citeline.lines", args, "citeline semantic: " .. query, M.semantic_items, opts)
end

--- Concept search (concept id or title contains the query).
function M.concepts(query, opts)
  opts = opts or {}
  local args = { query = query, limit = opts.limit or M.config.concepts_limit }
  run("citeline.concepts", args, "citeline concepts: " .. query, M.concepts_items, opts)
end

---------------------------------------------------------------------------
-- Re-verifying a search's hits (SPEC §18): after files change, each hit of a
-- :CitelineSearch list is checked against the files as they are now, and the hits
-- that are no longer where they were are marked in the list.
---------------------------------------------------------------------------

-- The server takes at most this many citations per request.
M.VERIFY_BATCH = 100

--- The citation sent for a hit: its place, its hashes, its heading, and its snippet (so
--- that the server can say how much of the cited text a changed section keeps).
function M.citation(hit)
  local c = { path = hit.path, line_start = hit.line_start, line_end = hit.line_end }
  for _, key in ipairs({ "section_sha256", "content_sha256", "heading", "snippet" }) do
    if type(hit[key]) == "string" then
      c[key] = hit[key]
    end
  end
  return c
end

--- "path:a-b" of a verify result's place today ("path" without lines), nil without one.
function M.verify_place(r)
  if type(r.path) ~= "string" then
    return nil
  end
  if type(r.line_start) == "number" and type(r.line_end) == "number" then
    return string.format("%s:%d-%d", r.path, r.line_start, r.line_end)
  end
  return r.path
end

--- The mark shown before a hit that verify did not find `valid` ("[moved → b.md:40-48]",
--- "[changed 80% → a.md:3-9]", "[stale]", "[missing]"); nil for a valid hit.
function M.verify_mark(r)
  if type(r) ~= "table" or r.status == "valid" then
    return nil
  end
  local where = M.verify_place(r)
  local arrow = where and (" → " .. M.display(where)) or ""
  if r.status == "moved" then
    return "[moved" .. arrow .. "]"
  elseif r.status == "changed" then
    local kept = ""
    if type(r.similarity) == "number" then
      kept = string.format(" %d%%", math.floor(r.similarity * 100 + 0.5))
    end
    return "[changed" .. kept .. arrow .. "]"
  end
  return "[" .. tostring(r.status) .. "]"
end

--- `items` (quickfix items of a search, in order) with the texts `texts` (the items' texts
--- as the search made them), each preceded by the mark of its verify result.
function M.mark_items(items, texts, results)
  local out = {}
  for i, item in ipairs(items) do
    local copy = vim.deepcopy(item)
    local text = texts[i] or item.text
    local mark = M.verify_mark((results or {})[i])
    copy.text = mark and (mark .. " " .. text) or text
    out[i] = copy
  end
  return out
end

-- Quickfix list ids of :CitelineSearch lists, oldest first.
M._search_lists = {}
-- Per list id: the number of the newest verify sent, so a late answer to an older
-- one does not overwrite a newer one's marks.
local verify_generation = {}

local function is_search_context(ctx)
  return type(ctx) == "table"
    and ctx.citeline_kind == "search"
    and type(ctx.citeline) == "table"
    and type(ctx.citeline.hits) == "table"
end

--- The citeline search list to verify, as (id, context): the current quickfix list when
--- it is one, else the newest such list still in the stack; nil when there is none.
function M.search_list()
  local current = vim.fn.getqflist({ id = 0, context = 1 })
  if current.id ~= 0 and is_search_context(current.context) then
    return current.id, current.context
  end
  for i = #M._search_lists, 1, -1 do
    local id = M._search_lists[i]
    local list = vim.fn.getqflist({ id = id, context = 1 })
    if list.id == id and is_search_context(list.context) then
      return id, list.context
    end
  end
  return nil
end

local function matches_filetype(bufnr)
  local ft = vim.bo[bufnr].filetype
  for _, f in ipairs(M.config.filetypes) do
    if f == ft then
      return true
    end
  end
  return false
end

local function watch_files()
  if M._watching then
    return
  end
  M._watching = true
  local group = vim.api.nvim_create_augroup("citeline_verify", { clear = true })
  vim.api.nvim_create_autocmd("BufWritePost", {
    group = group,
    callback = function(ev)
      local name = vim.api.nvim_buf_get_name(ev.buf)
      local markdown = matches_filetype(ev.buf) or name:match("%.md$") or name:match("%.markdown$")
      if M.config.verify and markdown then
        M.verify({ quiet = true })
      end
    end,
  })
  vim.api.nvim_create_autocmd("FocusGained", {
    group = group,
    callback = function()
      if M.config.verify then
        M.verify({ quiet = true })
      end
    end,
  })
end

function M._track_search(id)
  table.insert(M._search_lists, id)
  -- The stack holds at most ten lists: forget the ids that have left it.
  while #M._search_lists > 10 do
    table.remove(M._search_lists, 1)
  end
  watch_files()
end

--- Write verify `results` into the list `id` (made with `context`): its items keep their
--- places (which Neovim moves along with edits in loaded buffers) and get the marks.
local function apply_verify(id, context, results)
  local list = vim.fn.getqflist({ id = id, items = 1, context = 1, idx = 0 })
  if list.id ~= id or not is_search_context(list.context) then
    return false -- the list left the stack
  end
  local texts = {}
  for i, item in ipairs(M.search_items(context.citeline, context.citeline_root)) do
    texts[i] = item.text
  end
  local items = {}
  for i, item in ipairs(list.items) do
    items[i] = {
      bufnr = item.bufnr,
      lnum = item.lnum,
      end_lnum = item.end_lnum,
      col = item.col,
      end_col = item.end_col,
      vcol = item.vcol,
      type = item.type,
      text = item.text,
    }
  end
  list.context.citeline_verify = results
  vim.fn.setqflist({}, "r", {
    id = id,
    items = M.mark_items(items, texts, results),
    context = list.context,
    idx = list.idx,
  })
  return true
end

--- A summary of verify results: "3 hits: 2 valid, 1 moved".
function M.verify_summary(results)
  local counts, order = {}, { "valid", "moved", "changed", "stale", "missing" }
  for _, r in ipairs(results or {}) do
    counts[r.status] = (counts[r.status] or 0) + 1
  end
  local parts = {}
  for _, status in ipairs(order) do
    if counts[status] then
      table.insert(parts, counts[status] .. " " .. status)
    end
  end
  local n = #(results or {})
  return string.format("%d hit%s: %s", n, n == 1 and "" or "s", table.concat(parts, ", "))
end

--- Verify the hits of the citeline search list (the current one, else the newest in the
--- stack) against the files as they are now, in one request per 100 hits, and mark in
--- the list the hits that are no longer valid. opts.quiet: say nothing (the automatic
--- re-verify on save and focus); opts.on_done(err, results, id) runs when it is done.
function M.verify(opts)
  opts = opts or {}
  local function done(err, results, id)
    if err then
      M.last_verify_error = err
      if not opts.quiet then
        notify(M.error_message(err), vim.log.levels.ERROR)
      end
    elseif not opts.quiet then
      notify(M.verify_summary(results))
    end
    if opts.on_done then
      opts.on_done(err, results, id)
    end
  end
  local id, context = M.search_list()
  if not id then
    return done({ message = "no :CitelineSearch list to verify" }, nil, nil)
  end
  local hits = context.citeline.hits
  if #hits == 0 then
    return done(nil, {}, id)
  end
  if opts.quiet and #citeline_clients() == 0 then
    return -- the server was stopped: a write or a focus change does not start one
  end
  verify_generation[id] = (verify_generation[id] or 0) + 1
  local generation = verify_generation[id]
  local root = context.citeline_root
  local results, pending, failed = {}, 0, nil
  for first = 1, #hits, M.VERIFY_BATCH do
    local citations = {}
    for i = first, math.min(#hits, first + M.VERIFY_BATCH - 1) do
      table.insert(citations, M.citation(hits[i]))
    end
    pending = pending + 1
    local args = { citations = citations }
    if type(root) == "string" then
      args.root = vim.uri_from_fname(root)
    end
    M.execute("citeline.verify", args, function(err, result)
      if err then
        failed = failed or err
      else
        for j, r in ipairs((result or {}).results or {}) do
          results[first + j - 1] = r
        end
      end
      pending = pending - 1
      if pending > 0 then
        return
      end
      if failed then
        return done(failed, nil, id)
      end
      if verify_generation[id] ~= generation then
        return -- a newer verify of this list is on its way
      end
      M.last_verify = results
      apply_verify(id, context, results)
      done(nil, results, id)
    end, nil, type(root) == "string" and root or nil)
  end
end

local function leave_quickfix_window()
  if vim.bo.buftype ~= "quickfix" then
    return
  end
  vim.cmd("wincmd p")
  if vim.bo.buftype == "quickfix" then
    vim.cmd("aboveleft new") -- the quickfix window was the only one
  end
end

--- Jump from the current item of the citeline search list to where its text is now: the
--- list is verified again (its marks updated), then the item's file is opened at the place
--- verify gives (its place as cited when still valid). In the quickfix window the item is
--- the one under the cursor. opts.on_done(err, result) runs after the jump (or failure).
function M.reanchor(opts)
  opts = opts or {}
  local current = vim.fn.getqflist({ id = 0, idx = 0, context = 1, winid = 0 })
  if current.id == 0 or not is_search_context(current.context) then
    notify("the quickfix list is not a :CitelineSearch list", vim.log.levels.ERROR)
    if opts.on_done then
      opts.on_done({ message = "not a citeline search list" }, nil)
    end
    return
  end
  local idx = current.idx
  if vim.bo.buftype == "quickfix" and vim.api.nvim_get_current_win() == current.winid then
    idx = vim.fn.line(".")
  end
  local root = current.context.citeline_root
  M.verify({
    quiet = true,
    on_done = function(err, results, id)
      local r = results and results[idx]
      if err or r == nil then
        notify(err and M.error_message(err) or "no verify result for this item", vim.log.levels.ERROR)
        if opts.on_done then
          opts.on_done(err or { message = "no result" }, nil)
        end
        return
      end
      if r.status == "missing" or type(r.path) ~= "string" then
        notify("the cited text is gone (missing): search again", vim.log.levels.WARN)
        if opts.on_done then
          opts.on_done(nil, r)
        end
        return
      end
      vim.fn.setqflist({}, "a", { id = id, idx = idx })
      leave_quickfix_window()
      vim.cmd("edit " .. vim.fn.fnameescape(resolve(type(root) == "string" and root or nil, r.path)))
      local line = type(r.line_start) == "number" and r.line_start or 1
      pcall(vim.api.nvim_win_set_cursor, 0, { line, 0 })
      if r.status ~= "valid" then
        notify(r.status .. (M.verify_place(r) and (" → " .. M.verify_place(r)) or ""))
      end
      if opts.on_done then
        opts.on_done(nil, r)
      end
    end,
  })
end

function M.create_commands()
  local cmd = vim.api.nvim_create_user_command
  cmd("CitelineSearch", function(o)
    M.search(o.args)
  end, { nargs = "+", desc = "citeline: ranked section search into the quickfix list" })
  cmd("CitelineLines", function(o)
    M.lines(o.args, { regex = o.bang })
  end, {
    nargs = "+",
    bang = true,
    desc = "citeline: line search (exact; with ! an RE2 regex) into the quickfix list",
  })
  cmd("CitelineSemantic", function(o)
    M.semantic(o.args)
  end, { nargs = "+", desc = "citeline: sections that answer by meaning, with scores, into the quickfix list" })
  cmd("CitelineConcepts", function(o)
    M.concepts(o.args)
  end, { nargs = "+", desc = "citeline: concepts whose id or title contains the text" })
  cmd("CitelineVerify", function()
    M.verify()
  end, {
    desc = "citeline: check the search list's hits against the files now; mark those that moved or changed",
  })
  cmd("CitelineReanchor", function()
    M.reanchor()
  end, { desc = "citeline: jump from the current search hit to where its text is now" })
  cmd("CitelineStart", function()
    M.attach(0)
  end, { desc = "citeline: start/attach the language server for this buffer" })
end

---------------------------------------------------------------------------
-- Setup
---------------------------------------------------------------------------

--- Replace the server settings (`settings` of setup) and send them to every running
--- citeline client, e.g. update_settings{ unsaved = true }.
function M.update_settings(settings)
  M.config.settings = settings or {}
  local payload = next(M.config.settings) and M.config.settings or vim.empty_dict()
  for _, client in ipairs(citeline_clients()) do
    -- The client answers workspace/configuration from these (0.7-0.9: config.settings).
    client.config.settings = payload
    if client.settings ~= nil then
      client.settings = payload
    end
    if has("nvim-0.11") then
      client:notify("workspace/didChangeConfiguration", { settings = payload })
    else
      client.notify("workspace/didChangeConfiguration", { settings = payload })
    end
  end
  if has("nvim-0.11") and M._start_path == "enable" then
    vim.lsp.config(M.name, { settings = payload, init_options = payload })
  end
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  if opts and opts.cmd then
    M.config.cmd = opts.cmd -- lists are replaced, not merged
  end
  if opts and opts.filetypes then
    M.config.filetypes = opts.filetypes
  end
  if opts and opts.root_markers then
    M.config.root_markers = opts.root_markers
  end
  M.create_commands()
  M._setup_done = true
  if not M.config.autostart then
    return
  end

  if has("nvim-0.11") then
    local config = M.client_config(nil)
    config.root_dir = function(bufnr, on_dir)
      on_dir(buf_root(bufnr))
    end
    config.workspace_folders = nil
    config.filetypes = M.config.filetypes
    vim.lsp.config(M.name, config)
    vim.lsp.enable(M.name)
    M._start_path = "enable"
    -- vim.lsp.enable attaches buffers that are already open only once Neovim has
    -- entered (v:vim_did_enter); a setup() run from -c or a plugin file before that
    -- attaches them here.
    for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(bufnr) and matches_filetype(bufnr) then
        local attached = citeline_clients(function(c)
          return vim.lsp.buf_is_attached(bufnr, c.id)
        end)[1]
        if not attached then
          M.attach(bufnr)
        end
      end
    end
    return
  end
  M._start_path = has("nvim-0.8") and "start" or "start_client"

  local group = vim.api.nvim_create_augroup("citeline", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = M.config.filetypes,
    callback = function(ev)
      M.attach(ev.buf)
    end,
  })
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and matches_filetype(bufnr) then
      M.attach(bufnr)
    end
  end
end

return M
