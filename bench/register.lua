-- PUT /api/v1/devices/{token} with distinct tokens: each wrk thread owns a prefix.
local counter = 0
local prefix = "ff"
local threads = {}

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  prefix = string.format("%08x", 0xb0000000 + id)
end

wrk.method = "PUT"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TUISONG_BENCH_KEY")
wrk.body = '{"environment":"production","user":"bench-user","locale":"zh-Hans"}'

function request()
  counter = counter + 1
  local token = prefix .. string.rep("0", 48) .. string.format("%08x", counter)
  return wrk.format(nil, "/api/v1/devices/" .. token)
end
