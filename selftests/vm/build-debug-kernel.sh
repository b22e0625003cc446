#!/bin/bash
# Usage: selftests/vm/build-debug-kernel.sh [OUTDIR]   (default build/debug-6.12)
#
# Build (or reuse) the debug-6.12 test kernel: see build-kernel.sh.
exec "$(dirname "$0")/build-kernel.sh" debug-6.12 "$@"
