-- Commands are available as soon as the plugin is on the runtimepath;
-- require("citeline").setup{} starts the server for Markdown buffers.
if vim.g.loaded_citeline then
  return
end
vim.g.loaded_citeline = true
if vim.fn.has("nvim-0.7") ~= 1 then
  return
end
require("citeline").create_commands()
