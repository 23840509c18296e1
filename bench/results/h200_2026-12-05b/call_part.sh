#!/bin/bash
# Device calls 4-8: one nvidia-cutlass-dsl part (carried as .device/cutlass-dsl/part.XX) copied
# into /tmp/cutlass-parts, where it stays while the machine is warm.
#   bash bench/results/h200_2026-12-05b/call_part.sh
mkdir -p /tmp/cutlass-parts && cp .device/cutlass-dsl/part.* /tmp/cutlass-parts/ && ls -la /tmp/cutlass-parts
