import RedisBridge

/// The Lua scripts that read and write accounts on Redis, each one atomic.
///
/// Every script gets the key prefix as `ARGV[1]` and builds the keys it finds on its way (the
/// records of the user an index entry names, a user's sessions) with the same layout as
/// ``RedisKeyspace``; the keys known up front are passed in `KEYS`. Scripts run on one Redis
/// primary (standalone or Sentinel). Writes are ordered records first, then the index entries that
/// point at them; removals the other way round (ARCHITECTURE.md, "Atomic account writes"): were a
/// script ever split at slot boundaries (Redis Cluster), a crash between the parts would leave a
/// record nothing points at, never an entry pointing at nothing.
enum RedisAccountScripts {
    /// Key builders and the account reader every script shares.
    private static let prelude = """
        local P = ARGV[1]
        local function userBase(uid) return P .. '{u:' .. uid .. '}:' end
        local function identityIndex(field) return P .. 'idn:' .. field end
        local function emailIndex(email) return P .. 'email:' .. email end
        local function sessionKey(uid, sid) return userBase(uid) .. 's:' .. sid end
        local function sessionOwner(sid) return P .. 'sid:' .. sid end
        -- {user, identities, session record or false, refreshed ms or false}, or false.
        local function account(uid, sid)
          local base = userBase(uid)
          local user = redis.call('GET', base .. 'user')
          if not user then return false end
          local record, refreshed = false, false
          if sid ~= '' then
            local f = redis.call('HMGET', base .. 's:' .. sid, 'record', 'refreshed_ms')
            record, refreshed = f[1], f[2]
          end
          return {user, redis.call('HVALS', base .. 'identities'), record, refreshed}
        end
        -- Ends sessions of uid: their owner entries and index entries first, then the records.
        local function endSessions(uid, sids)
          local ended = {}
          for _, sid in ipairs(sids) do
            redis.call('DEL', sessionOwner(sid))
            redis.call('ZREM', userBase(uid) .. 'sessions', sid)
            if redis.call('DEL', sessionKey(uid, sid)) == 1 then ended[#ended + 1] = sid end
          end
          return ended
        end

        """

    /// `GET /user` and every authenticated call. ARGV: prefix, user id, session id ('' = none).
    static let account = RedisScript(prelude + "return account(ARGV[2], ARGV[3])")

    /// A sign-in's reads, after its single-use marks (``SingleUseMarks``) are taken. KEYS: the
    /// identity index entry, then those of the email index entry, the token's replay record and
    /// the server nonce to use up that the sign-in has, in that order (no empty key: an ACL that
    /// allows only the prefix would refuse one). ARGV: prefix, '1' with an email entry, the replay
    /// record's expiry (ms since 1970; '' without one), '1' with a nonce. Reply: {'replayed'} |
    /// {'nonce_unknown'} (nothing read) | {'identity', owner, account} | {'email', holder, account}
    /// | {'none'}.
    static let signInLookup = RedisScript(
        prelude + """
            local position = 1
            local function optional(present)
              if not present then return nil end
              position = position + 1
              return KEYS[position]
            end
            local email = optional(ARGV[2] == '1')
            local replay = optional(ARGV[3] ~= '')
            local nonce = optional(ARGV[4] == '1')
            if replay and not redis.call('SET', replay, '1', 'PXAT', ARGV[3], 'NX') then return {'replayed'} end
            if nonce and not redis.call('GETDEL', nonce) then return {'nonce_unknown'} end
            local owner = redis.call('GET', KEYS[1])
            if owner then return {'identity', owner, account(owner, '')} end
            if email then
              local holder = redis.call('GET', email)
              if holder then return {'email', holder, account(holder, '')} end
            end
            return {'none'}
            """
    )

    /// ``AccountChange``: a compare-and-set on the user record plus every write of the change.
    /// KEYS: user, identities, users index, the account's fence. ARGV: prefix, user id, '1' with
    /// the base stamp or '0' (the user must not exist), the stamp, the new record, creation ms, the
    /// fence token the change holds ('' = none), then operations:
    /// `claim field`, `email address`, `save field record`, `drop field`, `release address`,
    /// `session id record hash created_ms limit` (limit: the most sessions the user keeps, the
    /// oldest others ended; 0 for no limit), `endall`.
    /// Reply: {'ok', ended session ids...} | {'stale'} | {'fenced'} | {'identity_taken', owner} |
    /// {'email_taken', holder}.
    static let commit = RedisScript(
        prelude + """
            local uid = ARGV[2]
            local fence = redis.call('GET', KEYS[4])
            if fence and fence ~= ARGV[7] then return {'fenced'} end
            local current = redis.call('GET', KEYS[1])
            if ARGV[3] == '1' then
              if current ~= ARGV[4] then return {'stale'} end
            elseif current then
              return {'stale'}
            end
            local arity = {claim = 2, email = 2, save = 3, drop = 2, release = 2, session = 6, endall = 1}
            local ops = {}
            local i = 8
            while i <= #ARGV do
              local n = arity[ARGV[i]]
              if not n or i + n - 1 > #ARGV then return redis.error_reply('ERR malformed account change') end
              ops[#ops + 1] = {ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]}
              i = i + n
            end
            -- Checks: nothing is written unless every claim holds.
            for _, op in ipairs(ops) do
              if op[1] == 'claim' then
                local owner = redis.call('GET', identityIndex(op[2]))
                if owner and owner ~= uid then return {'identity_taken', owner} end
              elseif op[1] == 'email' then
                local holder = redis.call('GET', emailIndex(op[2]))
                if holder and holder ~= uid then return {'email_taken', holder} end
              end
            end
            -- Records first.
            redis.call('SET', KEYS[1], ARGV[5])
            for _, op in ipairs(ops) do
              if op[1] == 'save' then
                redis.call('HSET', KEYS[2], op[2], op[3])
              elseif op[1] == 'session' then
                redis.call('HSET', sessionKey(uid, op[2]), 'record', op[3], 'current', op[4], 'created_ms', op[5], 'refreshed_ms', op[5])
                redis.call('ZADD', userBase(uid) .. 'sessions', op[5], op[2])
              end
            end
            -- Then the entries that point at them.
            redis.call('ZADD', KEYS[3], 'NX', ARGV[6], uid)
            for _, op in ipairs(ops) do
              if op[1] == 'claim' then
                redis.call('SET', identityIndex(op[2]), uid)
              elseif op[1] == 'email' then
                redis.call('SET', emailIndex(op[2]), uid)
              elseif op[1] == 'session' then
                redis.call('SET', sessionOwner(op[2]), uid)
              end
            end
            -- Removals: entries first, then records.
            local ended = {}
            local function add(sids) for _, sid in ipairs(sids) do ended[#ended + 1] = sid end end
            for _, op in ipairs(ops) do
              if op[1] == 'session' and (tonumber(op[6]) or 0) > 0 then
                -- Over the limit: the oldest sessions end (never the one just started).
                local index = userBase(uid) .. 'sessions'
                local excess = redis.call('ZCARD', index) - tonumber(op[6])
                if excess > 0 then
                  local oldest = {}
                  for _, sid in ipairs(redis.call('ZRANGE', index, 0, excess)) do
                    if sid ~= op[2] and #oldest < excess then oldest[#oldest + 1] = sid end
                  end
                  add(endSessions(uid, oldest))
                end
              elseif op[1] == 'drop' then
                if redis.call('GET', identityIndex(op[2])) == uid then redis.call('DEL', identityIndex(op[2])) end
                redis.call('HDEL', KEYS[2], op[2])
              elseif op[1] == 'release' then
                if redis.call('GET', emailIndex(op[2])) == uid then redis.call('DEL', emailIndex(op[2])) end
              elseif op[1] == 'endall' then
                add(endSessions(uid, redis.call('ZRANGE', userBase(uid) .. 'sessions', 0, -1)))
              end
            end
            if fence then redis.call('DEL', KEYS[4]) end
            local reply = {'ok'}
            for _, sid in ipairs(ended) do reply[#reply + 1] = sid end
            return reply
            """
    )

    /// A new session alone. KEYS: session, user's session index, session owner entry.
    /// ARGV: prefix, user id, session id, record, refresh hash, created ms.
    static let createSession = RedisScript(
        prelude + """
            redis.call('HSET', KEYS[1], 'record', ARGV[4], 'current', ARGV[5], 'created_ms', ARGV[6], 'refreshed_ms', ARGV[6])
            redis.call('ZADD', KEYS[2], ARGV[6], ARGV[3])
            redis.call('SET', KEYS[3], ARGV[2])
            return 1
            """
    )

    /// Ends sessions. KEYS: the user's session index. ARGV: prefix, user id, session ids...
    /// Reply: the ids that existed.
    static let deleteSessions = RedisScript(
        prelude + """
            local sids = {}
            for i = 3, #ARGV do sids[#sids + 1] = ARGV[i] end
            return endSessions(ARGV[2], sids)
            """
    )

    /// Removes one identity. KEYS: identities, identity index entry. ARGV: prefix, user id, field.
    static let deleteIdentity = RedisScript(
        prelude + """
            if redis.call('GET', KEYS[2]) == ARGV[2] then redis.call('DEL', KEYS[2]) end
            return redis.call('HDEL', KEYS[1], ARGV[3])
            """
    )

    /// Replaces an identity that is still linked. KEYS: identities. ARGV: prefix, field, record.
    static let updateIdentity = RedisScript(
        prelude + """
            if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then return 0 end
            redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
            return 1
            """
    )

    /// Removes a user and everything that points at it. KEYS: user, identities, session index,
    /// users index. ARGV: prefix, user id. Reply: the ids of the sessions that existed.
    static let deleteUser = RedisScript(
        prelude + """
            local uid = ARGV[2]
            for _, field in ipairs(redis.call('HKEYS', KEYS[2])) do
              if redis.call('GET', identityIndex(field)) == uid then redis.call('DEL', identityIndex(field)) end
            end
            local user = redis.call('GET', KEYS[1])
            if user then
              local ok, record = pcall(cjson.decode, user)
              if ok and type(record) == 'table' and type(record.email) == 'string' then
                if redis.call('GET', emailIndex(record.email)) == uid then redis.call('DEL', emailIndex(record.email)) end
              end
            end
            redis.call('ZREM', KEYS[4], uid)
            local ended = endSessions(uid, redis.call('ZRANGE', KEYS[3], 0, -1))
            redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], userBase(uid) .. 'fence')
            return ended
            """
    )

    /// Rotation and reuse detection on the user's slot, refused for a banned or deleted user.
    /// KEYS: the session hash, the user's session index, the user. ARGV: prefix, user id, session
    /// id, presented hash, child hash, sealed child, now (ms), reuse interval (ms), timebox (ms,
    /// 0 = none), inactivity (ms, 0 = none). Reply: {outcome} or, when the session goes on,
    /// {'rotated', account} | {'reused', sealed current, account}.
    static let rotation = RedisScript(
        prelude + """
            local s = KEYS[1]
            local uid, sid = ARGV[2], ARGV[3]
            local now, reuse, timebox, inactivity = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
            local user = redis.call('GET', KEYS[3])
            if not user then return {'not_found'} end
            local ok, record = pcall(cjson.decode, user)
            if not ok or type(record) ~= 'table' then return redis.error_reply('ERR a stored user does not decode') end
            if type(record.deletedAt) == 'number' or (type(record.bannedUntil) == 'number' and record.bannedUntil > now) then
              return {'banned'}
            end
            if redis.call('EXISTS', s) == 0 then return {'not_found'} end
            local f = redis.call('HMGET', s, 'current', 'parent', 'parent_at', 'sealed', 'ancestors', 'created_ms', 'refreshed_ms')
            local current, parent, ancestors = f[1], f[2] or '', f[5] or ''
            local parentAt, created, refreshed = tonumber(f[3] or '0'), tonumber(f[6] or '0'), tonumber(f[7] or '0')
            local function revoke() endSessions(uid, {sid}) end
            if timebox > 0 and now > created + timebox then revoke() return {'expired_timebox'} end
            if inactivity > 0 and now > refreshed + inactivity then revoke() return {'expired_inactivity'} end
            if ARGV[4] == current then
              local list = ancestors
              if parent ~= '' then list = parent .. ' ' .. ancestors end
              local kept, count = {}, 0
              for hash in string.gmatch(list, '%S+') do
                if count < 32 then kept[#kept + 1] = hash count = count + 1 end
              end
              redis.call('HSET', s, 'parent', current, 'current', ARGV[5], 'parent_at', now, 'sealed', ARGV[6],
                'ancestors', table.concat(kept, ' '), 'refreshed_ms', now)
              return {'rotated', account(uid, sid)}
            end
            if parent ~= '' and ARGV[4] == parent then
              if now - parentAt <= reuse then
                -- A write of its own, so that a WAIT after this script also covers the child
                -- (written earlier, perhaps by a request whose WAIT timed out).
                redis.call('HSET', s, 'reused_ms', now)
                return {'reused', f[4] or '', account(uid, sid)}
              end
              revoke()
              return {'reuse_detected'}
            end
            if string.find(' ' .. ancestors .. ' ', ' ' .. ARGV[4] .. ' ', 1, true) then
              revoke()
              return {'reuse_detected'}
            end
            return {'not_found'}
            """
    )
}
