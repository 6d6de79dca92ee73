-- lease.lua — report-and-get for one escrow-leased token bucket (docs/leases.md).
--
-- One atomic call per (node, bucket): apply what the node reports since its
-- last call, refill the bucket, take any debt, and grant a lease top-up.
-- Invariant kept on every path: tokens + outstanding <= burst, where
-- outstanding is the sum of live (unexpired) leases. Nodes spend only leased
-- tokens, so across any window D the cluster grants at most burst + rate*D.
--
-- Steps: Redis TIME (never backwards); drop expired leases; refill, noting
-- the least room; apply keep/returned and refund credit (at most the least
-- room since the refunds, see ARGV[7]); take debt;
-- grant; write back; TTL. The refill over the span since the last call
-- happens *before* the report is applied, piecewise — a lease counts against
-- the burst until it expired or its tokens were spent (ARGV[16..31]).
-- Refilling after the report would let the larger cap act retroactively and
-- over-grant; the model test (test/limits/algorithm/lease-model.test.ts)
-- found that interleaving (docs/leases.md, "Why this order").
--
-- Arithmetic (same as src/limits/algorithm/token-bucket.ts): a balance is
-- tokens + carry/rate_den with integer tokens (negative = debt) and integer
-- carry in [0, rate_den); the rate is rate_num units per rate_den ms, and the
-- node keeps rate_num*rate_den <= 2^50 so every value is an exact double.
-- Times are whole milliseconds of Redis TIME.
--
-- KEYS[1]  the bucket hash: "tg:{<hashTag>}:<limitName>"
-- ARGV[1]  node id: one per proxy process
-- ARGV[2]  call number: strictly increasing per node; a call whose number is not above the last seen is stale (delayed or resent) and changes nothing
-- ARGV[3]  report id: the call number that first carried this report (returned, refunded, debt); 0 = none; each report id is applied once, so resending it is safe
-- ARGV[4]  keep: unspent tokens the node still holds (absolute); its lease shrinks to min(lease, keep), the difference was spent (or never reached the node)
-- ARGV[5]  returned: unspent lease tokens handed back into the bucket (report)
-- ARGV[6]  refunded: credit from refunds of spends already reported (report); it may have waited on the node, so see ARGV[7]
-- ARGV[7]  refunded since: Redis ms (a lower bound the node derives from an earlier reply) before which the refunds did not exist; the credit is at most the least room the bucket had since then (m:/pm:), 0 if that span is not covered
-- ARGV[8]  debt: tokens spent beyond reservations, taken from the bucket, which may go negative (report)
-- ARGV[9]  want: the top-up asked for
-- ARGV[10] min: grant nothing unless at least this much fits now (0 = background top-up)
-- ARGV[11] burst: capacity in whole units
-- ARGV[12] rate_num: units earned per rate_den milliseconds
-- ARGV[13] rate_den: milliseconds per rate_num units
-- ARGV[14] lease_ttl: lease lifetime in ms from this call
-- ARGV[15] start_empty: 1 = a bucket not yet in Redis starts empty, 0 = full
-- ARGV[16] spent by 1: Redis ms by which the node had spent the amount in ARGV[17] (an upper bound it derives from an earlier reply); 0 = unknown
-- ARGV[17] spent amount 1
-- ARGV[18] spent by 2
-- ARGV[19] spent amount 2
-- ARGV[20] spent by 3
-- ARGV[21] spent amount 3
-- ARGV[22] spent by 4
-- ARGV[23] spent amount 4
-- ARGV[24] spent by 5
-- ARGV[25] spent amount 5
-- ARGV[26] spent by 6
-- ARGV[27] spent amount 6
-- ARGV[28] spent by 7
-- ARGV[29] spent amount 7
-- ARGV[30] spent by 8
-- ARGV[31] spent amount 8
--          (the spending that `keep` reports, in time order; the lease room it
--          frees is refilled from those times on — spending not dated here is
--          freed only now, which is later than it happened, never earlier)
--
-- Hash fields: tokens, carry, ts, outstanding, and per node <id>:
--   l:<id> lease held, x:<id> lease expiry (ms), q:<id> last call number, r:<id> last report id,
--   m:<id> least room (burst - outstanding - balance) since s:<id>, the node's last call,
--   pm:<id> the least room from ps:<id>, its call before, to s:<id>.
--
-- Returns integers only (Redis truncates Lua numbers):
--   { status (1 applied, 0 stale call), granted, kept, lease, tokens, carry,
--     outstanding, active nodes (live entries, this node included), now_ms,
--     retry_ms (when min > 0 and nothing was granted) }

local key = KEYS[1]
local node = ARGV[1]
local seq = tonumber(ARGV[2])
local report_id = tonumber(ARGV[3])
local keep = math.max(0, tonumber(ARGV[4]))
local returned = tonumber(ARGV[5])
local refunded = tonumber(ARGV[6])
local refunded_since = tonumber(ARGV[7])
local debt = tonumber(ARGV[8])
local want = tonumber(ARGV[9])
local min_grant = tonumber(ARGV[10])
local burst = tonumber(ARGV[11])
local rate_num = tonumber(ARGV[12])
local rate_den = tonumber(ARGV[13])
local lease_ttl = tonumber(ARGV[14])
local start_empty = tonumber(ARGV[15])

-- Integers are written with %d: tostring() keeps only 14 significant digits.
local function int(n)
  return string.format('%d', n)
end

local function floor_div(x, d)
  local q = math.floor(x / d)
  if q * d > x then
    q = q - 1
  elseif (q + 1) * d <= x then
    q = q + 1
  end
  return q
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local raw = redis.call('HGETALL', key)
local h = {}
for i = 1, #raw, 2 do
  h[raw[i]] = raw[i + 1]
end

local tokens, carry, ts
if h['tokens'] == nil then
  if start_empty == 1 then tokens = 0 else tokens = burst end
  carry = 0
  ts = now
else
  tokens = tonumber(h['tokens'])
  carry = tonumber(h['carry']) or 0
  ts = tonumber(h['ts'])
end
-- A failed-over or stepped clock never runs the bucket backwards.
local clock = math.max(now, ts)

local last_seq = tonumber(h['q:' .. node]) or 0
if seq <= last_seq then
  return { 0, 0, 0, tonumber(h['l:' .. node]) or 0, tokens, carry, tonumber(h['outstanding']) or 0, 0, clock, 0 }
end

-- Leases: live ones count against the burst; expired ones are dropped but
-- their unspent tokens are not returned (the node may have spent them).
-- Entries of nodes silent for 10 lease lives are forgotten.
local live = 0 -- sum of other nodes' live leases
local active = 0 -- other nodes with a live entry
local mine = 0 -- this node's live lease
local next_expiry = 0 -- earliest expiry of another node's non-empty lease
local ended = {} -- { time, amount }: lease room freed since the last call (expiries, dated spending)
local others = {} -- other nodes still remembered: their least room (m:<id>) is updated below
for field, value in pairs(h) do
  if string.sub(field, 1, 2) == 'x:' then
    local id = string.sub(field, 3)
    local expiry = tonumber(value)
    local lease = tonumber(h['l:' .. id]) or 0
    if id ~= node and not (expiry <= clock and expiry + 10 * lease_ttl <= clock) then others[#others + 1] = id end
    if expiry > clock then
      if id == node then
        mine = lease
      else
        active = active + 1
        live = live + lease
        if lease > 0 and (next_expiry == 0 or expiry < next_expiry) then next_expiry = expiry end
      end
    else
      if lease > 0 then ended[#ended + 1] = { expiry, lease } end
      if id ~= node and expiry + 10 * lease_ttl <= clock then
        redis.call('HDEL', key, 'l:' .. id, 'x:' .. id, 'q:' .. id, 'r:' .. id, 'm:' .. id, 's:' .. id, 'pm:' .. id, 'ps:' .. id)
      elseif lease ~= 0 then
        redis.call('HSET', key, 'l:' .. id, 0)
      end
    end
  end
end
-- This node is active too: it is calling.
active = active + 1

-- Refill: tokens = min(burst - outstanding, tokens + dt*rate), exactly, over
-- the time since the last call. That span is refilled *before* the report is
-- applied and piecewise: until a lease ended, or its tokens were spent, they
-- still counted against the burst, so letting the new, larger cap act from
-- the last call on would over-grant (the model test found this).
local function refill(dt, cap)
  if tokens >= cap then
    tokens = cap
    carry = 0
    return
  end
  if dt <= 0 then return end
  local q = math.floor(dt / rate_den)
  local r = dt - q * rate_den
  if r < 0 then
    q = q - 1
    r = r + rate_den
  elseif r >= rate_den then
    q = q + 1
    r = r - rate_den
  end
  local whole = q * rate_num
  if whole >= cap - tokens then
    tokens = cap
    carry = 0
  else
    local x = r * rate_num + carry
    local add = floor_div(x, rate_den)
    tokens = tokens + whole + add
    carry = x - add * rate_den
    if tokens >= cap then
      tokens = cap
      carry = 0
    end
  end
end

local apply_report = report_id > (tonumber(h['r:' .. node]) or 0)
local cap = burst - live - mine
for _, lease in ipairs(ended) do cap = cap - lease[2] end
-- This node's spending since its last call frees room in the lease from when
-- it happened; never more than what `keep` says was spent.
local spent = mine - math.min(mine, keep)
for i = 16, 30, 2 do
  local by = tonumber(ARGV[i])
  local amount = math.min(tonumber(ARGV[i + 1]), spent)
  if by > 0 and amount > 0 then
    ended[#ended + 1] = { by, amount }
    spent = spent - amount
  end
end

-- The least room (cap - balance, whole units) seen since the last call:
-- refill only narrows it, so its low points are where the cap grows.
local function room()
  if carry > 0 then return cap - tokens - 1 end
  return cap - tokens
end
local least = room()
table.sort(ended, function(a, b) return a[1] < b[1] end)
local from = ts
for _, lease in ipairs(ended) do
  local to = math.max(from, math.min(lease[1], clock))
  refill(to - from, cap)
  least = math.min(least, room())
  cap = cap + lease[2]
  from = to
end
refill(clock - from, cap)
least = math.min(least, room())

-- The report. `keep` is absolute, so it is applied on every fresh call; the
-- deltas only once per report id. A late report after expiry finds mine = 0
-- and changes nothing but tokens. Returned lease tokens were outstanding
-- until now, so they join after the refill; beyond the burst they are lost.
local kept = math.min(mine, keep)
mine = kept
if apply_report then
  tokens = tokens + returned
end

-- Refund credit: had it joined the bucket when the refunds happened (not
-- before refunded_since), it would have lost what did not fit into the
-- least room since then; that least room is m (since s) and pm (since ps).
local seen_since = tonumber(h['s:' .. node])
local seen_least = tonumber(h['m:' .. node])
local least_since = least
if seen_since ~= nil and seen_least ~= nil then least_since = math.min(least_since, seen_least) end
if apply_report and refunded > 0 then
  local covered = seen_since ~= nil and seen_since <= refunded_since
  local credit = math.min(refunded, least_since)
  local prev_since = tonumber(h['ps:' .. node])
  if not covered and prev_since ~= nil and prev_since <= refunded_since then
    covered = true
    credit = math.min(credit, tonumber(h['pm:' .. node]) or 0)
  end
  if covered and credit > 0 then tokens = tokens + credit end
end
local outstanding = live + mine
cap = burst - outstanding
if tokens >= cap then
  tokens = cap
  carry = 0
end

-- Debt: actual cost above the reservation. Future refill repays it.
if apply_report then
  tokens = tokens - debt
end

-- Grant: g = min(want, floor(tokens)), or nothing if g < min.
local granted = math.min(want, math.max(0, tokens))
local retry = 0
if granted < min_grant or granted <= 0 then
  granted = 0
  if min_grant > 0 then
    local deficit = (min_grant - tokens) * rate_den - carry
    retry = math.max(1, math.ceil(deficit / rate_num))
    -- More than the unleased capacity: it also takes another node's lease to end.
    if min_grant > cap and next_expiry > 0 then retry = math.max(retry, next_expiry - clock) end
  end
end
tokens = tokens - granted
mine = mine + granted
outstanding = outstanding + granted

local end_room = burst - outstanding - tokens
if carry > 0 then end_room = end_room - 1 end
local fields = {
  'm:' .. node, int(end_room), 's:' .. node, int(clock),
  'tokens', int(tokens), 'carry', int(carry), 'ts', int(clock), 'outstanding', int(outstanding),
  'l:' .. node, int(mine), 'x:' .. node, int(clock + lease_ttl), 'q:' .. node, int(seq),
}
if apply_report then
  fields[#fields + 1] = 'r:' .. node
  fields[#fields + 1] = int(report_id)
end
if seen_since ~= nil then
  fields[#fields + 1] = 'pm:' .. node
  fields[#fields + 1] = int(least_since)
  fields[#fields + 1] = 'ps:' .. node
  fields[#fields + 1] = int(seen_since)
end
for _, id in ipairs(others) do
  local seen = tonumber(h['m:' .. id])
  if seen ~= nil then
    fields[#fields + 1] = 'm:' .. id
    fields[#fields + 1] = int(math.min(seen, least, end_room))
  end
end
redis.call('HSET', key, unpack(fields))
-- An expired key must equal a full bucket: keep it until it would have
-- refilled and every lease has ended, twice over.
redis.call('PEXPIRE', key, int(2 * (math.ceil(burst * rate_den / rate_num) + lease_ttl)))

return { 1, granted, kept, mine, tokens, carry, outstanding, active, clock, retry }
