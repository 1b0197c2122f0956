-- POST one new pin per request, as the gateway sends it: the internal token, the acting account in
-- X-Actor, a JSON body. Arguments (after `--`): TOKEN ACTOR_HEADER [ACTOR_HEADER...]
-- The requests are formatted once per thread and then reused in turn, so wrk spends its time on the
-- network rather than in Lua.

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "summary.lua")

local body = '{"mapString":"Mountain View, CA","mediaURL":"https://udacity.com",'
   .. '"latitude":37.386052,"longitude":-122.083851}'
local prepared = {}
local next_index = 0

function init(args)
   local token = args[1]
   for i = 2, #args do
      prepared[#prepared + 1] = wrk.format("POST", nil, {
         ["Authorization"] = "Bearer " .. token,
         ["X-Actor"] = args[i],
         ["Content-Type"] = "application/json",
      }, body)
   end
end

function request()
   next_index = next_index % #prepared + 1
   return prepared[next_index]
end
