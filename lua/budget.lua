-- Reserve part of a budget, atomically: one key or tenant, one budget period.
--
-- KEYS[1]  the budget counter, tg:{<key:id | tenant:id>}:budget:<period id>
--          (same hash tag as the owner's limits, so one Cluster slot per owner)
-- ARGV[1]  cap: the budget, integer micro-USD
-- ARGV[2]  amount to reserve, integer micro-USD (>= 0)
-- ARGV[3]  seed: what the calling node's ledger says was spent in this period,
--          used only when the counter does not exist yet (first use of the
--          period, or a Redis that lost its data)
-- ARGV[4]  time to live of a new counter, ms (0 = none, for lifetime budgets)
--
-- Returns {admitted (1|0), spent before this reservation} — integers only.
-- Settlement is a plain INCRBY of (actual - reserved), which may be negative.
-- Amounts stay below 2^53, so Lua's doubles hold them exactly.

local cap = tonumber(ARGV[1])
local amount = tonumber(ARGV[2])

local spent = redis.call('GET', KEYS[1])
if spent then
  spent = tonumber(spent)
else
  spent = tonumber(ARGV[3])
  local ttl = tonumber(ARGV[4])
  if ttl > 0 then
    redis.call('SET', KEYS[1], spent, 'PX', ttl)
  else
    redis.call('SET', KEYS[1], spent)
  end
end

if spent + amount > cap then
  return {0, spent}
end
redis.call('INCRBY', KEYS[1], amount)
return {1, spent}
