-- wrk script for `bench/run.py at`: each request asks for the list at a moment drawn uniformly between
-- AT_FIRST and AT_LAST (seconds since 1970, from the environment), to the millisecond, with the internal token.
local first, last = tonumber(os.getenv("AT_FIRST")), tonumber(os.getenv("AT_LAST"))
local token = os.getenv("INTERNAL_TOKEN")

dofile("bench/threads.lua")

request = function()
   local moment = first + math.random() * (last - first)
   local seconds = math.floor(moment)
   local at = os.date("!%Y-%m-%dT%H:%M:%S", seconds) .. string.format(".%03dZ", math.floor((moment - seconds) * 1000))
   return wrk.format("GET", "/v1/StudentLocation?at=" .. at, { Authorization = "Bearer " .. token })
end

dofile("bench/summary.lua")
