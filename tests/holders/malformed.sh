#!/bin/sh
# A holder that answers every request with a line the protocol does not have.
while read -r request; do echo "@holder granted, I think"; done
