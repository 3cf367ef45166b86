"""The Redis module's Lua scripts. Each runs as one step on the server: nothing another client
does (a revert, a restore, a late call) can land between what a script checks and what it
writes.

Scripts that give back "whatever a key made" read the names from the key's made-set, so they
touch keys they were not handed in KEYS: fine on one server, not on Redis Cluster.
"""

from __future__ import annotations

# KEYS: fence, made-set, names...  ARGV: idempotency key, bookkeeping TTL (s).
# Answers 0 when a revert has ended the key (nothing made), else 1.
SPAWN = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
for i = 3, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'NX')
  redis.call('SADD', KEYS[2], KEYS[i])
end
redis.call('EXPIRE', KEYS[2], ARGV[2])
return 1
"""

# KEYS: fence, made-set, zone.  ARGV: idempotency key, duration (ms).
# Answers -1 when the key was ended, else the zone's time left in ms (an open zone is adopted).
# The made-set lives as long as the zone: Redis ends both.
ZONE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
if redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2], 'NX') then
  redis.call('SADD', KEYS[2], KEYS[3])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return tonumber(ARGV[2])
end
return math.max(redis.call('PTTL', KEYS[3]), 0)
"""

# KEYS: fence, made-set, names...  ARGV: bookkeeping TTL (s).
# Ends the key, then deletes the names given, or with none every name the key made. Already
# gone counts as given back. Answers how many names it deleted or found gone.
REVERT = """
redis.call('SET', KEYS[1], '1', 'EX', ARGV[1])
local names = {}
for i = 3, #KEYS do names[#names + 1] = KEYS[i] end
if #names == 0 then names = redis.call('SMEMBERS', KEYS[2]) end
for _, name in ipairs(names) do
  redis.call('DEL', name)
  redis.call('SREM', KEYS[2], name)
end
return #names
"""

# KEYS: target, applied-hash, fence.  ARGV: value, bookkeeping TTL (s).
# The first apply under a key records what it found (had = '0' when the key did not exist, so
# "absent" and "empty" stay apart) and sets the value; a repeat changes nothing. Answers {0}
# when a restore or a revert has ended the key, else {1, had, baseline, applied} as recorded.
APPLY = """
if redis.call('EXISTS', KEYS[3]) == 1 then return {0} end
if redis.call('EXISTS', KEYS[2]) == 0 then
  local found = redis.call('GET', KEYS[1])
  redis.call('HSET', KEYS[2], 'target', KEYS[1], 'had', found and '1' or '0',
             'baseline', found or '', 'applied', ARGV[1])
  redis.call('EXPIRE', KEYS[2], ARGV[2])
  redis.call('SET', KEYS[1], ARGV[1])
end
local r = redis.call('HMGET', KEYS[2], 'had', 'baseline', 'applied')
return {1, r[1], r[2], r[3]}
"""

# KEYS: target, applied-hash, fence.
# ARGV: has expected, expected, has baseline, baseline, bookkeeping TTL (s).
# Ends the key. What the key's apply recorded wins over the arguments; with nothing recorded
# and nothing expected, nothing was applied: ok. Then: the target still holds what was applied
# -> put the baseline back (or delete the key it was not); it holds the baseline -> restored
# before; anything else is somebody else's value -> {0, current}, left alone.
RESTORE = """
redis.call('SET', KEYS[3], '1', 'EX', ARGV[5])
local baseline, expected
if redis.call('EXISTS', KEYS[2]) == 1 then
  local r = redis.call('HMGET', KEYS[2], 'had', 'baseline', 'applied')
  if r[1] == '1' then baseline = r[2] end
  expected = r[3]
elseif ARGV[1] == '' then
  return {1}
else
  expected = ARGV[2]
  if ARGV[3] ~= '' then baseline = ARGV[4] end
end
local current = redis.call('GET', KEYS[1])
if current == false then current = nil end
if current == expected then
  if baseline == nil then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], baseline) end
  return {1}
end
if current == baseline then return {1} end
return {0, current or false}
"""
