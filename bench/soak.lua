-- The paced load of bench/soak.sh: one request, then a pause, on every connection, so the soak holds a
-- steady rate instead of the most the machine can do. Arguments (after `--`): read|post PAUSE_MS [SESSION_ID]
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "summary.lua")

local prepared, pause

function init(args)
   pause = tonumber(args[2])
   if args[1] == "post" then
      prepared = wrk.format("POST", nil, {
         ["Authorization"] = "Bearer " .. args[3],
         ["Content-Type"] = "application/json",
      }, '{"mapString":"Soak, Test","mediaURL":"https://udacity.com","latitude":37.386052,"longitude":-122.083851}')
   else
      prepared = wrk.format("GET", nil, {["Authorization"] = "Bearer " .. (args[3] or "")})
   end
end

function request()
   return prepared
end

function delay()
   return pause
end
