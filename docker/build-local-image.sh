#!/usr/bin/env bash
# Builds a Redis image from the host's own redis-server, for machines whose
# Docker cannot pull: a root holding the binary and the libraries it links,
# imported as an image. Usage: docker/build-local-image.sh [tag]
set -euo pipefail
tag="${1:-lockstages/redis:local}"
server="$(command -v redis-server)" || { echo "redis-server is not installed here" >&2; exit 1; }
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/local/bin" "$root/tmp" "$root/data"
cp -L "$server" "$root/usr/local/bin/redis-server"
# The binary's shared libraries and the dynamic loader, at their own paths.
for lib in $(ldd "$server" | grep -o '/[^ ]*'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
tar -C "$root" -c . | docker import \
  --change 'ENTRYPOINT ["/usr/local/bin/redis-server"]' \
  --change 'EXPOSE 6379' \
  - "$tag" >/dev/null
echo "$tag"
