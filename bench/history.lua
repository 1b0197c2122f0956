-- wrk script for `bench/run.py at`: each request asks for the history of a pin drawn uniformly from the
-- object ids listed one a line in the file HISTORY_IDS (from the environment), with the internal token.
local token = os.getenv("INTERNAL_TOKEN")
local ids = {}
for line in io.lines(os.getenv("HISTORY_IDS")) do ids[#ids + 1] = line end

dofile("bench/threads.lua")

request = function()
   local pin = ids[math.random(#ids)]
   return wrk.format("GET", "/v1/StudentLocation/" .. pin .. "/history", { Authorization = "Bearer " .. token })
end

dofile("bench/summary.lua")
