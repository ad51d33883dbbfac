-- wrk driver for bench/exchange/run.sh: one thread, each request built from a file, the run ended
-- once every planned request is answered. C and Lua on the load side, so that the load generator
-- leaves core 1 to Redis (AsyncHTTPClient cost more per request than the gateway's answer).
--
--   wrk -t1 -c64 -d600s -s driver.lua URL -- signin  <tokens> [sessions-out]
--        POST /auth/v1/token?grant_type=id_token once per line "<id token> <raw nonce>"; with
--        sessions-out, writes "<access token> <refresh token>" per answer
--   wrk ... -- refresh <sessions> <rounds>
--        each session's refresh token, then the one each answer gives, <rounds> times in all
--   wrk ... -- user <sessions> <requests>
--        GET /auth/v1/user with the sessions' access tokens in turn
--   wrk ... -- settings <sessions> <requests>
--        GET /auth/v1/settings: the router's cheapest answer (no token, no store), the floor
--        under every other row
--
-- Prints one line: "RESULT per_second,p50_ms,p99_ms,non_200". A connection with nothing left to
-- send (the last refreshes of a chain are in flight) sends GET /bench-idle, answered 404 and not
-- counted; the rate counts only planned requests, from the first request sent to the last answer.
-- wrk itself only ever stops at the end of its -d duration or on SIGINT taken by its main thread,
-- so once everything is answered the script stops its thread and sends SIGINT until wrk exits.

local threads = {}

function setup(thread)
    table.insert(threads, thread)
end

-- Globals, so that done() can read them from the thread (thread:get).
answered, errors, first_sent, last_answered = 0, 0, 0, 0
local mode, wrk_pid, queue, head, tail, planned, out
local json = { ["Content-Type"] = "application/json" }

local function push(item)
    tail = tail + 1
    queue[tail] = item
end

-- Wall-clock seconds (wrk's Lua has no clock of its own); read twice per run.
local function now()
    local pipe = io.popen("date +%s.%N")
    local value = tonumber(pipe:read("*l"))
    pipe:close()
    return value
end

function init(args)
    local pipe = io.popen("echo $PPID")
    wrk_pid = pipe:read("*l")
    pipe:close()
    mode = args[1]
    queue, head, tail = {}, 1, 0
    for line in io.lines(args[2]) do
        local first, second = line:match("^(%S+) (%S+)$")
        if first then
            if mode == "signin" then
                push('{"provider":"apple","id_token":"' .. first .. '","nonce":"' .. second .. '"}')
            elseif mode == "refresh" then
                push('{"refresh_token":"' .. second .. '"}')
            else
                push("Bearer " .. first)
            end
        end
    end
    if mode == "signin" then
        planned = tail
        if args[3] then out = io.open(args[3], "w") end
    elseif mode == "refresh" then
        planned = tail * tonumber(args[3])
    else
        planned = tonumber(args[3])
    end
end

local sent, verified = 0, false

function request()
    if not verified then
        -- wrk calls request() once after init to check what it returns, and never sends it.
        verified = true
        return wrk.format("GET", "/bench-idle")
    end
    if sent >= planned or (mode ~= "user" and mode ~= "settings" and head > tail) then
        return wrk.format("GET", "/bench-idle")
    end
    if sent == 0 then first_sent = now() end
    sent = sent + 1
    if mode == "user" then
        return wrk.format("GET", "/auth/v1/user", { ["Authorization"] = queue[(sent - 1) % tail + 1] })
    elseif mode == "settings" then
        return wrk.format("GET", "/auth/v1/settings")
    end
    local body = queue[head]
    queue[head] = nil
    head = head + 1
    local grant = mode == "signin" and "id_token" or "refresh_token"
    return wrk.format("POST", "/auth/v1/token?grant_type=" .. grant, json, body)
end

function response(status, headers, body)
    if status == 404 and body:find(':"not_found"', 1, true) then
        -- GET /bench-idle's answer: not counted.
        return
    end
    answered = answered + 1
    if status ~= 200 then
        errors = errors + 1
    elseif out then
        local access = body:match('"access_token":"([^"]+)"')
        local refresh = body:match('"refresh_token":"([^"]+)"')
        if access and refresh then out:write(access, " ", refresh, "\n") end
    elseif mode == "refresh" and tail < planned then
        local refresh = body:match('"refresh_token":"([^"]+)"')
        if refresh then push('{"refresh_token":"' .. refresh .. '"}') end
    end
    if answered == planned then
        last_answered = now()
        if out then
            out:close()
            out = nil
        end
        io.popen("(while kill -INT " .. wrk_pid .. " 2>/dev/null; do sleep 0.02; done) >/dev/null 2>&1 &"):close()
        wrk.thread:stop()
    end
end

function done(summary, latency, requests)
    local all, failed, seconds = 0, 0, 0
    for _, thread in ipairs(threads) do
        all = all + thread:get("answered")
        failed = failed + thread:get("errors")
        seconds = math.max(seconds, thread:get("last_answered") - thread:get("first_sent"))
    end
    if seconds <= 0 then seconds = summary.duration / 1e6 end
    io.write(string.format("RESULT %.1f,%.2f,%.2f,%d\n", all / seconds, latency:percentile(50) / 1000,
        latency:percentile(99) / 1000, failed))
end
