-- Shared by the wrk scripts of `bench/run.py at`: each thread draws from its own random sequence, seeded
-- from AT_SEED (from the environment) and its number; `setup` sets the global `id` in each thread's state
-- before it starts.
local threads = 0

function setup(thread)
   threads = threads + 1
   thread:set("id", threads)
end

function init(args)
   math.randomseed(tonumber(os.getenv("AT_SEED") or "7") * 100 + id)
end
