#!/bin/sh
# A holder that reads every request and answers none.
cat >/dev/null
