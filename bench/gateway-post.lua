-- POST one new pin per request through the gateway, as an app does once logged in: the session id as
-- a bearer token, a JSON body. The gateway looks the session up, then forwards the pin to
-- locations-service as the session's account. Argument (after `--`): SESSION_ID
-- The request is formatted once per thread and then reused, so wrk spends its time on the network
-- rather than in Lua.

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "summary.lua")

local body = '{"mapString":"Mountain View, CA","mediaURL":"https://udacity.com",'
   .. '"latitude":37.386052,"longitude":-122.083851}'
local prepared

function init(args)
   prepared = wrk.format("POST", nil, {
      ["Authorization"] = "Bearer " .. args[1],
      ["Content-Type"] = "application/json",
   }, body)
end

function request()
   return prepared
end
