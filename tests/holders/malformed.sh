#!/bin/sh
# A holder that starts well (it answers `ping`), then answers every request
# with a line the protocol does not have.
while read -r request; do
  case $request in
  ping) echo "@holder pong" ;;
  *) echo "@holder granted, I think" ;;
  esac
done
