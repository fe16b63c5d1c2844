-- autostart = false, no Markdown buffer: :CitelineSearch starts a client for the
-- working directory without attaching it to the (empty) buffer.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
local lib = dofile(here .. "lib.lua")

lib.run(function()
  lib.setup({ autostart = false })
  lib.out.clients_before = #lib.clients()
  lib.out.search = lib.qf_after("CitelineSearch ordered hashtable", "citeline search:")
  local clients = lib.clients()
  lib.out.clients_after = #clients
  lib.out.root = clients[1] and clients[1].config.root_dir
  lib.out.attached_to_scratch = clients[1] ~= nil and vim.lsp.buf_is_attached(0, clients[1].id)
  lib.out.server_alive = lib.server_exit == nil
end)
