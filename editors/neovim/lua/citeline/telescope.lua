-- Telescope picker for citeline search hits, in the server's order.
--   require("citeline.telescope").search()            -- prompts for a query
--   require("citeline.telescope").search({ query = "ordered hashtable" })
-- Typing in the picker narrows the hits (substring) without reordering them.
local M = {}

local function require_telescope()
  local ok = pcall(require, "telescope")
  if not ok then
    vim.notify("citeline: telescope.nvim is not installed", vim.log.levels.ERROR)
    return nil
  end
  return {
    pickers = require("telescope.pickers"),
    finders = require("telescope.finders"),
    sorters = require("telescope.sorters"),
    conf = require("telescope.config").values,
    actions = require("telescope.actions"),
    action_state = require("telescope.actions.state"),
  }
end

--- A sorter that keeps the server's order: the score is the entry's rank, and
--- entries whose text does not contain the prompt (ignoring case) are filtered out.
function M.order_sorter(sorters)
  return sorters.Sorter:new({
    scoring_function = function(_, prompt, line, entry)
      if prompt ~= nil and prompt ~= "" then
        local hay = (line or (entry and entry.ordinal) or ""):lower()
        if not hay:find(prompt:lower(), 1, true) then
          return -1
        end
      end
      return (entry and entry.rank) or 1
    end,
  })
end

function M.entries(result, root)
  local citeline = require("citeline")
  local items = citeline.search_items(result, root)
  local entries = {}
  for i, hit in ipairs((result or {}).hits or {}) do
    local item = items[i]
    local where = string.format("%s:%d-%d", hit.path, hit.line_start, hit.line_end)
    entries[i] = {
      value = hit,
      rank = i,
      display = where .. "  " .. item.text,
      ordinal = where .. " " .. item.text .. " " .. (hit.snippet or ""),
      filename = item.filename,
      lnum = hit.line_start,
      col = 1,
      text = item.text,
    }
  end
  return entries
end

function M.search(opts)
  opts = opts or {}
  local t = require_telescope()
  if not t then
    return
  end
  local query = opts.query
  if query == nil or query == "" then
    query = vim.fn.input("citeline search: ")
  end
  if query == nil or query == "" then
    return
  end
  local citeline = require("citeline")
  local args = { query = query, limit = opts.limit or citeline.config.limit, labels = true }
  args.profile = opts.profile or citeline.config.profile
  citeline.execute("citeline.search", args, function(err, result, root)
    if err then
      vim.notify("citeline: " .. citeline.error_message(err), vim.log.levels.ERROR)
      return
    end
    local entries = M.entries(result, root)
    t.pickers
      .new(opts, {
        prompt_title = "citeline: " .. query,
        finder = t.finders.new_table({
          results = entries,
          entry_maker = function(e)
            return e
          end,
        }),
        sorter = M.order_sorter(t.sorters),
        previewer = t.conf.grep_previewer(opts),
      })
      :find()
  end)
end

return M
