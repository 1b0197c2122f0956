-- The load of bench/soak.py: requests back to back on every connection, each connection kept for the whole
-- run, as a proxy in front of the gateway keeps its own. Arguments (after `--`): read|post [SESSION_ID]
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "summary.lua")

local prepared

function init(args)
   if args[1] == "post" then
      prepared = wrk.format("POST", nil, {
         ["Authorization"] = "Bearer " .. args[2],
         ["Content-Type"] = "application/json",
      }, '{"mapString":"Soak, Test","mediaURL":"https://udacity.com","latitude":37.386052,"longitude":-122.083851}')
   else
      prepared = wrk.format("GET", nil, {["Authorization"] = "Bearer " .. (args[2] or "")})
   end
end

function request()
   return prepared
end
