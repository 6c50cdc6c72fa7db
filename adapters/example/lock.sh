#!/bin/sh
# A complete lockstages holder: a lock of `SET key value NX PX ttl` and a
# compare-and-delete script, over redis-cli, speaking the holder protocol
# (book: "Bring your own lock"). Run it as a row:
#   lockstages matrix --holder-cmd adapters/example/lock.sh --name example
set -u
spec=${LOCKSTAGES_HOLDER:?not started by lockstages (no LOCKSTAGES_HOLDER)}
get() { printf '%s' "$spec" | sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p"; }
name=$(get name); db=$(get db_url); key=$(get key)
lock=$(printf '%s' "$spec" | sed -n 's/.*"lock_urls":\["\([^"]*\)".*/\1/p')
ttl=$(printf '%s' "$spec" | sed -n 's/.*"ttl":{"secs":\([0-9]*\),"nanos":\([0-9]*\)}.*/\1 \2/p')
ttl_ms=$(( ${ttl% *} * 1000 + ${ttl#* } / 1000000 ))
case $lock in redis://*) ;; *) echo "@holder error lock.sh: $lock is not redis://"; exit 2 ;; esac
stock="${key%lock:stock}stock"; orders="${key%lock:stock}orders"
answer() { printf '@holder %s\n' "$*"; }
# Each call is one connection, named first: the harness tells clients apart
# by CLIENT SETNAME. Prints the last command's reply.
redis() { url=$1; shift
  printf 'CLIENT SETNAME %s\n%s\n' "$name" "$*" | redis-cli -u "$url" | tail -n 1; }
now_ms() { date +%s%3N; }
n=0
while read -r request arg; do
  case $request in
  ping) answer pong ;;
  acquire)
    n=$((n + 1)); value="$name-$$-$n"; until=$(( $(now_ms) + arg ))
    while [ "$(redis "$lock" SET "$key" "$value" NX PX "$ttl_ms")" != OK ]; do
      [ "$(now_ms)" -ge "$until" ] && { answer not-acquired; continue 2; }
      sleep 0.01
    done
    answer "acquired $value -" ;;
  read) got=$(redis "$db" GET "$stock"); answer "stock ${got:-0}" ;;
  sell)
    if [ "$arg" -le 0 ]; then answer sold-out; continue; fi
    redis "$db" "SET $stock $((arg - 1))
RPUSH $orders $name" >/dev/null
    answer "sold $arg" ;;
  release)
    deleted=$(redis "$lock" EVAL "\"if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0\"" 1 "$key" "$value")
    # 0: the key is gone or another's (our TTL ran out): nothing deleted.
    if [ "$deleted" = 1 ]; then answer released deleted; else answer released nothing; fi ;;
  wait-lost) answer lost no ;;
  *) answer "error lock.sh cannot do \`$request $arg\`" ;;
  esac
done
