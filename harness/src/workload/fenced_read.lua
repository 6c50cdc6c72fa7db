-- KEYS: stock, fence (the highest token seen). ARGV: the reader's token.
-- Registers the token if it is the highest yet; answers the stock.
local highest = tonumber(redis.call('GET', KEYS[2]) or '-1')
local token = tonumber(ARGV[1])
if token > highest then
  redis.call('SET', KEYS[2], token)
end
return tonumber(redis.call('GET', KEYS[1]) or '0')
