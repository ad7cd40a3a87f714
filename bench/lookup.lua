-- GET /api/v1/devices/{token} over the devices `tuisong device import` seeded
-- (tokens are %064x of 1…TUISONG_BENCH_SEEDED).
local seeded = tonumber(os.getenv("TUISONG_BENCH_SEEDED"))
wrk.method = "GET"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TUISONG_BENCH_KEY")

function init(args)
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
end

function request()
  local n = math.random(1, seeded)
  return wrk.format(nil, "/api/v1/devices/" .. string.rep("0", 56) .. string.format("%08x", n))
end
