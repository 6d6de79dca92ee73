-- Reserve part of a budget, atomically: one key or tenant, one budget period.
--
-- KEYS[1]  the budget counter, tg:{<key:id | tenant:id>}:budget:<period id>
--          (same hash tag as the owner's limits, so one Cluster slot per owner)
-- ARGV[1]  cap: the budget, integer micro-USD
-- ARGV[2]  amount to reserve, integer micro-USD (>= 0)
-- ARGV[3]  seed: what the calling node's ledger says was spent in this period,
--          used only when the counter does not exist yet (first use of the
--          period, or a Redis that lost its data). A negative seed means "ask
--          me": a missing counter is then not created and {2, 0, 0} returned,
--          so the node can read the exact spend (replicas: PostgreSQL) first.
-- ARGV[4]  time to live of a new counter, ms (0 = none, for lifetime budgets)
-- ARGV[5]  least amount worth reserving (<= ARGV[2]); when the whole amount
--          does not fit but this does, what is left of the budget is reserved
--          (a request admitted with a smaller output limit). Default: ARGV[2].
--
-- Returns {admitted (1|0), spent before this reservation, amount reserved}
-- — integers only.
-- Settlement is a plain INCRBY of (actual - reserved), which may be negative.
-- Amounts stay below 2^53, so Lua's doubles hold them exactly.

local cap = tonumber(ARGV[1])
local amount = tonumber(ARGV[2])

local spent = redis.call('GET', KEYS[1])
if spent then
  spent = tonumber(spent)
else
  spent = tonumber(ARGV[3])
  if spent < 0 then
    return {2, 0, 0}
  end
  local ttl = tonumber(ARGV[4])
  if ttl > 0 then
    redis.call('SET', KEYS[1], spent, 'PX', ttl)
  else
    redis.call('SET', KEYS[1], spent)
  end
end

local least = amount
if ARGV[5] then
  least = tonumber(ARGV[5])
end
local granted = amount
if spent + amount > cap then
  granted = cap - spent
end
if granted < least or granted < 0 then
  return {0, spent, 0}
end
if granted > 0 then
  redis.call('INCRBY', KEYS[1], granted)
end
return {1, spent, granted}
