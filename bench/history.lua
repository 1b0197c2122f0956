-- wrk script for `bench/run.py at`: each request asks for the history of a pin drawn uniformly from the
-- object ids listed one a line in the file HISTORY_IDS (from the environment), with the internal token.
local token = os.getenv("INTERNAL_TOKEN")
local ids = {}
for line in io.lines(os.getenv("HISTORY_IDS")) do ids[#ids + 1] = line end

-- Each thread its own draw: `setup` sets the global `id` in each thread's state before it starts.
local threads = 0

function setup(thread)
   threads = threads + 1
   thread:set("id", threads)
end

function init(args)
   math.randomseed(tonumber(os.getenv("AT_SEED") or "7") * 100 + id)
end

request = function()
   local pin = ids[math.random(#ids)]
   return wrk.format("GET", "/v1/StudentLocation/" .. pin .. "/history", { Authorization = "Bearer " .. token })
end

dofile("bench/summary.lua")
