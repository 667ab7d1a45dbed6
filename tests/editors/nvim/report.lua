-- Run by tests/editors/test_neovim.py in a headless Neovim (0.7 or later), after the set-up of
-- docs/editors.md has attached the built-in LSP client to `flowc lsp` for the opened .flow
-- buffer: wait for the server's diagnostics of that buffer, write them as JSON, quit.
--   FLOWC_NVIM_OUT  where to write          FLOWC_NVIM_TIMEOUT_MS  how long to wait
local out = assert(os.getenv("FLOWC_NVIM_OUT"))
local timeout_ms = tonumber(os.getenv("FLOWC_NVIM_TIMEOUT_MS") or "60000")
local buf = vim.api.nvim_get_current_buf()

local arrived = vim.wait(timeout_ms, function()
  return #vim.diagnostic.get(buf) > 0
end, 50)

local diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(buf)) do
  local lsp = (d.user_data or {}).lsp or {}
  table.insert(diagnostics, {
    lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col,
    severity = d.severity, source = d.source, message = d.message,
    code = d.code or lsp.code,  -- Neovim 0.7 keeps the LSP code in user_data only
  })
end
local clients = {}
local attached = vim.lsp.get_clients and vim.lsp.get_clients({ bufnr = buf })  -- 0.10 on
  or vim.lsp.buf_get_clients(buf)
for _, client in pairs(attached) do
  table.insert(clients, client.name)
end
local file = assert(io.open(out, "w"))
file:write(vim.fn.json_encode({
  arrived = arrived,
  filetype = vim.bo[buf].filetype,
  commentstring = vim.bo[buf].commentstring,
  clients = clients,
  version = vim.version().major * 100 + vim.version().minor,
  diagnostics = diagnostics,
}))
file:close()
vim.cmd("qall!")
