-- fs/read_text_file and fs/write_text_file, served from Neovim's buffers.
--
-- A read returns a loaded buffer's text, unsaved edits included (else the file on disk). A write
-- goes into the file's buffer (loading it first) as the smallest set of line changes, one undo
-- step, and then saves it unless save_on_write is off.
local config = require("tether.config")

local M = {}

M.NOT_FOUND = -32002
M.INVALID_PARAMS = -32602
M.INTERNAL = -32603

local function realpath(path)
  return vim.uv.fs_realpath(path) or vim.fs.normalize(path)
end

--- The loaded buffer showing `path`, if any.
function M.find_buf(path)
  local want = vim.fs.normalize(path)
  local real = realpath(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" then
      local name = vim.api.nvim_buf_get_name(buf)
      if name ~= "" and (name == want or realpath(name) == real) then
        return buf
      end
    end
  end
  return nil
end

--- The text Neovim would write for `buf`.
function M.buf_text(buf)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  if #lines == 1 and lines[1] == "" then
    return ""
  end
  local bo = vim.bo[buf]
  local eol = bo.eol or (bo.fixeol and not bo.binary)
  return table.concat(lines, "\n") .. (eol and "\n" or "")
end

local function slice(text, line, limit)
  if not line and not limit then
    return text
  end
  local lines = vim.split(text, "\n", { plain = true })
  if lines[#lines] == "" then
    lines[#lines] = nil
  end
  local first = math.max(line or 1, 1)
  local stop = limit and (first + limit - 1) or #lines
  local out = {}
  for i = first, math.min(stop, #lines) do
    out[#out + 1] = lines[i]
  end
  if #out == 0 then
    return ""
  end
  return table.concat(out, "\n") .. "\n"
end

local function check_path(params)
  if type(params.path) ~= "string" or params.path == "" then
    return "path is required"
  end
  if not vim.startswith(params.path, "/") and not params.path:match("^%a:[/\\]") then
    return "path must be absolute: " .. params.path
  end
end

--- Returns {content = ...} or nil, code, message.
function M.read(params)
  local bad = check_path(params)
  if bad then
    return nil, M.INVALID_PARAMS, bad
  end
  local buf = M.find_buf(params.path)
  local text
  if buf then
    text = M.buf_text(buf)
  else
    local fh, err = io.open(params.path, "rb")
    if not fh then
      if vim.uv.fs_stat(params.path) == nil then
        return nil, M.NOT_FOUND, "file not found: " .. params.path
      end
      return nil, M.INTERNAL, "cannot read " .. params.path .. ": " .. tostring(err)
    end
    text = fh:read("*a")
    fh:close()
  end
  return { content = slice(text, params.line, params.limit) }
end

-- Replace the buffer's lines with `new` through the hunks of a line diff, bottom first, so
-- marks and folds outside the changes stay put.
local function apply_lines(buf, new)
  local old = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local differ = (vim.text and vim.text.diff) or vim.diff
  local a = table.concat(old, "\n") .. "\n"
  local b = table.concat(new, "\n") .. "\n"
  local hunks = differ(a, b, { result_type = "indices", algorithm = "histogram" })
  for i = #hunks, 1, -1 do
    local sa, ca, sb, cb = unpack(hunks[i])
    local first = ca == 0 and sa or sa - 1 -- a pure insertion comes after line sa
    local replacement = {}
    for j = sb, sb + cb - 1 do
      replacement[#replacement + 1] = new[j]
    end
    vim.api.nvim_buf_set_lines(buf, first, first + ca, false, replacement)
  end
end

local function save(buf)
  local dir = vim.fs.dirname(vim.api.nvim_buf_get_name(buf))
  if dir and vim.uv.fs_stat(dir) == nil then
    vim.fn.mkdir(dir, "p")
  end
  local ok, err = pcall(vim.api.nvim_buf_call, buf, function()
    vim.cmd("silent keepalt lockmarks write!")
  end)
  return ok, err
end

--- Returns {} or nil, code, message.
function M.write(params)
  local bad = check_path(params) or (type(params.content) ~= "string" and "content is required")
  if bad then
    return nil, M.INVALID_PARAMS, bad
  end
  local buf = M.find_buf(params.path)
  if not buf then
    buf = vim.fn.bufadd(params.path)
    vim.bo[buf].buflisted = true
    local ok, err = pcall(vim.fn.bufload, buf)
    if not ok then
      return nil, M.INTERNAL, "cannot open " .. params.path .. ": " .. tostring(err)
    end
  end
  local content = params.content
  local ends_with_newline = content == "" or content:sub(-1) == "\n"
  local lines = vim.split(ends_with_newline and content:sub(1, -2) or content, "\n", { plain = true })
  local ok, err = pcall(apply_lines, buf, lines)
  if not ok then
    return nil, M.INTERNAL, "cannot change the buffer of " .. params.path .. ": " .. tostring(err)
  end
  vim.bo[buf].eol = ends_with_newline
  vim.bo[buf].fixeol = ends_with_newline
  if config.options.save_on_write then
    local saved, why = save(buf)
    if not saved then
      return nil, M.INTERNAL, "changed the buffer but could not save " .. params.path .. ": " .. tostring(why)
    end
  end
  return vim.empty_dict()
end

return M
