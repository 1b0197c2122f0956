-- wrk script for `bench/run.py at`: each request asks for the list at a moment drawn uniformly between
-- AT_FIRST and AT_LAST (seconds since 1970, from the environment), to the millisecond, with the internal token.
local first, last = tonumber(os.getenv("AT_FIRST")), tonumber(os.getenv("AT_LAST"))
local token = os.getenv("INTERNAL_TOKEN")

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
   local moment = first + math.random() * (last - first)
   local seconds = math.floor(moment)
   local at = os.date("!%Y-%m-%dT%H:%M:%S", seconds) .. string.format(".%03dZ", math.floor((moment - seconds) * 1000))
   return wrk.format("GET", "/v1/StudentLocation?at=" .. at, { Authorization = "Bearer " .. token })
end

dofile("bench/summary.lua")
