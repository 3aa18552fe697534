#!/bin/bash
# interleaved whole-snapshot loads, before (main f0da4f3's build in /tmp/simd28_base) and after
# (this branch), of one store ingested once by:
#   build/bench/bench_ttft --lengths 2048 --frac 4 --full-reps 0 --reps 1 --store $S \
#       --quant q6h --also-quants fp16,q8,q4h,q5h,q3h,k5v3h,k4v2h
S=${S:-/tmp/simd28_store}
for round in 1 2; do for q in fp16 q8 q4h q6h q5h q3h k5v3h k4v2h; do for b in before after; do
  if [ $b = before ]; then B=/tmp/simd28_base/build; else B=/work/wt/simd28/build; fi
  echo "## $q $b $round $(cat /proc/loadavg)"
  $B/bench/bench_ttft --lengths 2048 --frac 4 --full-reps 0 --reps 5 --store $S --quant $q --load-only 2>&1 | grep '^| 2048 | [0-9.]* | ' 
done; done; done
