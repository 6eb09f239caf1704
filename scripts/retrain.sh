#!/usr/bin/env bash
# Retrain every shipped drafter on the self-distillation data, one after another, into OUT (default: paradec's
# cache), skipping the ones already done (a model card there): an interrupted trainer goes on from its last
# checkpoint. Copy a result into assets/drafters/ only after its comparison shows it is better
# (docs/drafters.md).
#
#   scripts/retrain.sh [--weights q4|f32] [OUT [NAME...]]   (run from the repository root)
#
# --weights: the target engine the drafters learn the features of and are compared on (default f32, the float32
# engine; q4: the file's 4-bit blocks, the CPU default). The answers are the shipped ones; their features for that
# engine are made first where missing (python -m paradec.train features, resumable).
# NAMEs (medusa, sps, eagle, early-exit, eagle3) pick which drafters to retrain; none: all of them.
set -euo pipefail
weights=f32
if [ "${1:-}" = --weights ]; then weights=$2; shift 2; fi
out=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/paradec/retrained-$weights}
shift $(( $# > 0 ? 1 : 0 ))
only=" $* "
py=${PYTHON:-.venv/bin/python}
mkdir -p "$out"
wanted() {  # wanted NAME: whether NAME is to be retrained (every drafter when no NAME was given)
  [ "$only" = "  " ] || [[ "$only" == *" $1 "* ]]
}
step() {  # step NAME ARGS...: python -m paradec.train ARGS --out OUT/NAME, unless OUT/NAME/card.md exists
  local name=$1; shift
  wanted "${name%-smollm2}" || return 0
  if [ -f "$out/$name/card.md" ]; then echo "retrain: $name done before"; return; fi
  echo "retrain: $name ($(date -u +%H:%M) UTC)"
  "$py" -m paradec.train "$@" --weights "$weights" --out "$out/$name"
}
compare() {  # compare NAME METHODS [ARGS...]: the shipped drafter beside the new one, in one bench run each
  local name=$1 methods=$2; shift 2
  wanted "$name" || return 0
  if [ -f "$out/compare-$name.json" ]; then return; fi
  echo "retrain: comparing $name ($(date -u +%H:%M) UTC)"
  "$py" -m paradec bench --split heldout --per-category 1 --max-new-tokens 64 --out "$out/compare-$name.json" \
    --weights "$weights" --methods "$methods" "$@"
}
"$py" -m paradec.train features --weights "$weights"
# Medusa first: its τ (1.43) is what keeps it near 1.1x AR now that a verify pass costs about one token's pass;
# EAGLE-3 last: the longest (about 95 min on 2 threads).
# Each is compared (13 held-out prompts, 64 tokens) as soon as it is trained, so a stopped run has its numbers so far.
# Each new head is scored beside the shipped one (--baseline) on the same held-out rows for its card's "before".
step medusa-smollm2 medusa --steps 2000 --prompt-weight 0.5 --threads 2 --baseline assets/drafters/medusa-smollm2
compare medusa "medusa,medusa[heads=$out/medusa-smollm2]"
step sps-smollm2 draft --layers 2 --vocab 4096 --steps 1200 --lr 2e-3 --threads 2 --baseline assets/drafters/sps-smollm2
if wanted sps && [ ! -f "$out/sps-smollm2/stop.json" ]; then  # the learned draft length, fitted on the new draft
  "$py" -m paradec.train stop --draft "trained:$out/sps-smollm2" --weights "$weights" --out "$out/sps-smollm2"
fi
compare sps sps --draft "trained:$out/sps-smollm2"
step eagle-smollm2 eagle --version 1 --steps 3000 --threads 2 --baseline assets/drafters/eagle-smollm2
compare eagle "eagle,eagle[head=$out/eagle-smollm2],eagle2,eagle2[head=$out/eagle-smollm2]"
step early-exit-smollm2 early_exit --steps 1500 --threads 2 --baseline assets/drafters/early-exit-smollm2
compare early-exit "early_exit,early_exit[adapter=$out/early-exit-smollm2]"
step eagle3-smollm2 eagle --version 3 --steps 3000 --threads 2 --baseline assets/drafters/eagle3-smollm2
compare eagle3 "eagle3,eagle3[head=$out/eagle3-smollm2]"
echo "retrain: done; compare $out/compare-*.json with assets/bench/cpu-2core.json (the shipped drafters' run)"
