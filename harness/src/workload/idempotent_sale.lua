-- KEYS: stock, orders, fence, requests (ids charged), duplicates.
-- ARGV: the new stock, the order, the token ('' for none), the request id.
-- Answers 2 for an id charged before, 0 for a stale token, 1 for a sale.
if redis.call('SADD', KEYS[4], ARGV[4]) == 0 then
  redis.call('RPUSH', KEYS[5], ARGV[2])
  return 2
end
if ARGV[3] ~= '' then
  local highest = tonumber(redis.call('GET', KEYS[3]) or '-1')
  if tonumber(ARGV[3]) < highest then
    redis.call('SREM', KEYS[4], ARGV[4])
    return 0
  end
  redis.call('SET', KEYS[3], ARGV[3])
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[2])
return 1
