#!/bin/sh
# A holder that dies before it answers anything.
exit 3
