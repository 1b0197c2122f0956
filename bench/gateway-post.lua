-- POST one new pin per request through the gateway, as apps do once logged in: a session id as a bearer
-- token, a JSON body. The gateway counts the write against the student's write limit, looks the session up,
-- then forwards the pin to locations-service as the session's account. Arguments (after `--`):
-- SESSION_ID [SESSION_ID...], one per student, taken in turn as post.lua takes its accounts.
-- The requests are formatted once per thread and then reused, so wrk spends its time on the network
-- rather than in Lua.

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "summary.lua")

local body = '{"mapString":"Mountain View, CA","mediaURL":"https://udacity.com",'
   .. '"latitude":37.386052,"longitude":-122.083851}'
local prepared = {}
local next_index = 0

function init(args)
   for i = 1, #args do
      prepared[#prepared + 1] = wrk.format("POST", nil, {
         ["Authorization"] = "Bearer " .. args[i],
         ["Content-Type"] = "application/json",
      }, body)
   end
end

function request()
   next_index = next_index % #prepared + 1
   return prepared[next_index]
end
