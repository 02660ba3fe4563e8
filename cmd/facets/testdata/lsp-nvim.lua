-- Drives `facets lsp` from Neovim 0.7's built-in client, as a user's
-- config would (vim.lsp.start is 0.8+, so start_client and
-- buf_attach_client), for TestNeovimDiagnostics. Inputs come from the
-- environment: FACETS_BIN and FACETS_ARGS (JSON list) start the server,
-- FACETS_ROOT is the workspace, FACETS_FILES (JSON list) are opened in
-- order, FACETS_EDITS (JSON object path -> lines) replace those buffers'
-- text without saving. The diagnostics Neovim holds for every file are
-- written as JSON to FACETS_OUT.
local env = vim.env
local files = vim.fn.json_decode(env.FACETS_FILES)
local edits = vim.fn.json_decode(env.FACETS_EDITS)
local result = { files = {}, errors = {} }

local function finish()
  local f = assert(io.open(env.FACETS_OUT, "w"))
  f:write(vim.fn.json_encode(result))
  f:close()
  vim.cmd("qa!")
end

local published = {} -- file name -> version of the last diagnostics
local exited = nil
local cmd = { env.FACETS_BIN }
vim.list_extend(cmd, vim.fn.json_decode(env.FACETS_ARGS))
local id = vim.lsp.start_client({
  name = "facets",
  cmd = cmd,
  root_dir = env.FACETS_ROOT,
  flags = { debounce_text_changes = 0 },
  handlers = {
    ["textDocument/publishDiagnostics"] = function(err, res, ctx, config)
      vim.lsp.diagnostic.on_publish_diagnostics(err, res, ctx, config)
      published[vim.uri_to_fname(res.uri)] = res.version or -1
    end,
  },
  on_exit = function(code)
    exited = code
  end,
})
if not id then
  table.insert(result.errors, "start_client failed")
  finish()
end

local bufs = {}
for _, name in ipairs(files) do
  vim.cmd("edit " .. vim.fn.fnameescape(name))
  local buf = vim.api.nvim_get_current_buf()
  bufs[name] = buf
  vim.lsp.buf_attach_client(buf, id)
end

local function wait_all(what, ready)
  local ok = vim.wait(30000, function()
    for _, name in ipairs(files) do
      if not ready(name) then
        return false
      end
    end
    return true
  end, 10)
  if not ok then
    for _, name in ipairs(files) do
      if not ready(name) then
        table.insert(result.errors, what .. ": none for " .. name)
      end
    end
  end
end

wait_all("diagnostics after didOpen", function(name)
  return published[name] ~= nil
end)

-- Unsaved changes: the diagnostics must follow the buffer.
for name, lines in pairs(edits) do
  published[name] = nil
  vim.api.nvim_buf_set_lines(bufs[name], 0, -1, false, lines)
end
wait_all("diagnostics after didChange", function(name)
  if edits[name] == nil then
    return true
  end
  -- the version of a didChange is the buffer's changedtick (in every Neovim since 0.5)
  return published[name] == vim.api.nvim_buf_get_changedtick(bufs[name])
end)

for _, name in ipairs(files) do
  local buf = bufs[name]
  local entry = { file = name, diagnostics = {} }
  if edits[name] ~= nil then
    entry.buffer = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n"
  end
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    local related = {}
    for _, r in ipairs((d.user_data and d.user_data.lsp and d.user_data.lsp.relatedInformation) or {}) do
      table.insert(related, vim.uri_to_fname(r.location.uri))
    end
    table.insert(entry.diagnostics, {
      lnum = d.lnum,
      col = d.col,
      severity = d.severity,
      code = d.code,
      source = d.source,
      message = d.message,
      related = related,
    })
  end
  table.insert(result.files, entry)
end

-- A real editor's exit: shutdown, then exit; the server must end with 0.
vim.lsp.stop_client(id)
if not vim.wait(10000, function()
  return exited ~= nil
end, 10) then
  table.insert(result.errors, "the server did not exit after shutdown")
end
result.exit = exited
finish()
