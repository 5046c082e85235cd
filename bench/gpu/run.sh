#!/usr/bin/env bash
# The GPU validation run (runs ON the GPU machine, from the repository root,
# with .gpu/ carried). Two phases, because plans are compiled on the CPU
# machine between them:
#   bench/gpu/run.sh profile   gpu tests; profiles of the examples in both modes
#   bench/gpu/run.sh replay    overhead and oversubscription runs with the plans in .gpu/plans
# Results go to $OUT (or ./gpu-out). Never allocates more managed memory than the
# card has free: oversubscription is emulated with DEEPUM_GPU_MEMORY.
set -uo pipefail
out="${OUT:-$PWD/gpu-out}"; mkdir -p "$out"
g="$PWD/.gpu"
export LD_LIBRARY_PATH="$g/lib:${LD_LIBRARY_PATH:-}"
export PYTHONPATH="$g/python:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
export DEEPUM_LIBRARY="$g/lib/libdeepum.so"
py=python3
log() { echo "== $*" | tee -a "$out/run.log"; }

{ nvidia-smi --query-gpu=name,driver_version,memory.total,memory.free --format=csv; date -u; } \
  > "$out/device.txt" 2>&1
cat "$out/device.txt"

resnet=(examples/resnet50_train.py --batch 64)
gpt2=(examples/gpt2_train.py --size medium --batch 4 --seq-len 1024)

case "${1:-}" in
profile)
  log "gpu-labelled tests"
  for t in "$g"/tests/*; do "$t" --gtest_brief=1 2>&1 | tail -20; done | tee "$out/gpu-tests.txt"
  for mode in natural access-set; do
    log "profile resnet50 ($mode)"
    "$g/bin/deepum-profile" --skip 2 --iterations 5 --mode "$mode" -o "$out/resnet50.$mode.profile.pb.gz" \
      -- $py "${resnet[@]}" --steps 9 2>&1 | tail -15
    log "profile gpt2-medium ($mode)"
    "$g/bin/deepum-profile" --skip 2 --iterations 5 --mode "$mode" -o "$out/gpt2.$mode.profile.pb.gz" \
      -- $py "${gpt2[@]}" --steps 9 2>&1 | tail -15
  done
  for f in "$out"/*.profile.pb.gz; do "$g/bin/deepum-inspect" "$f"; done
  ;;
replay)
  for model in resnet50 gpt2; do
    script=("${resnet[@]}"); [[ $model == gpt2 ]] && script=("${gpt2[@]}")
    log "$model: PyTorch's caching allocator"
    $py "${script[@]}" --steps 50 > "$out/$model.torch.txt" 2>&1
    log "$model: deepum without a plan"
    $py -m deepum.run -- $py "${script[@]}" --steps 50 > "$out/$model.deepum.txt" 2>&1
    log "$model: deepum with its plan, everything fits"
    $py -m deepum.run --plan "$g/plans/$model.fit.plan.pb" -- $py "${script[@]}" --steps 50 \
      > "$out/$model.deepum-plan.txt" 2>&1
    budget=$(cat "$g/plans/$model.budget")
    log "$model: budget $budget without a plan, then with"
    DEEPUM_LOG=info $py -m deepum.run --gpu-memory "$budget" -- $py "${script[@]}" --steps 50 \
      > "$out/$model.budget-noplan.txt" 2>&1
    DEEPUM_LOG=info $py -m deepum.run --gpu-memory "$budget" --plan "$g/plans/$model.half.plan.pb" \
      -- $py "${script[@]}" --steps 50 > "$out/$model.budget-plan.txt" 2>&1
    tail -3 "$out/$model".*.txt
  done
  ;;
*)
  echo "usage: bench/gpu/run.sh profile|replay" >&2; exit 2 ;;
esac
