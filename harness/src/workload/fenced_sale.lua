-- KEYS: stock, orders, fence. ARGV: the new stock, the order, the token.
-- Refuses (0) a token lower than the highest seen; otherwise writes (1).
local highest = tonumber(redis.call('GET', KEYS[3]) or '-1')
local token = tonumber(ARGV[3])
if token < highest then
  return 0
end
redis.call('SET', KEYS[3], token)
redis.call('SET', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[2])
return 1
