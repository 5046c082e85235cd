#!/usr/bin/env bash
# The GPU validation: three calls on the GPU machine, from the repository root
# with the bundle (bench/gpu/pack.sh) carried as .gpu, each gathering its
# results into $OUT (two files per call: CALL.tar.gz and CALL.summary.txt):
#   bench/gpu/run.sh smoke            device, CUPTI, calibration, the gpu-labelled tests,
#                                     libdeepum under PyTorch
#   bench/gpu/run.sh model resnet50   profile; plan there at the full and half footprint; replays
#   bench/gpu/run.sh model gpt2
#   bench/gpu/run.sh lease, lease2    a lease of 15 minutes of device time in two calls,
#                                     most important first (the second continues the
#                                     first's folder: DEEPUM_GPU_WORK)
#   bench/gpu/run.sh only STEP...     chosen steps again, e.g. 'gpu_tests 60' 'model resnet50'
# And here, without a GPU (CI runs it):
#   bench/gpu/run.sh --dry-run        pack (incremental), size, relocation, planning a shipped
#                                     profile with a moved copy of the bundle, gathering
# Never allocates more managed memory than the card has: oversubscription is
# emulated with a budget (--gpu-memory, DEEPUM_GPU_MEMORY) under a plan.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# The bundle: the one this script sits in, else $DEEPUM_GPU_BUNDLE, else .gpu.
if [[ -f $here/../../MANIFEST ]]; then
  g=$(cd "$here/../.." && pwd)
else
  g=$(cd "${DEEPUM_GPU_BUNDLE:-.gpu}" 2>/dev/null && pwd) || g=""
fi
py="${PYTHON:-python3}"
max_files=8
max_file_bytes=$((16 * 1048576))
max_total_bytes=$((64 * 1048576))
part_bytes=$((15 * 1048576))
# Every step ends by this many seconds into the call, leaving time to gather
# within the machine's 10 minutes a command.
call_seconds=${DEEPUM_GPU_CALL_SECONDS:-540}
deadline=$((SECONDS + call_seconds))

say() { echo "== $*" | tee -a "$work/run.log"; }

# Runs a step under a time limit (cut to what is left before the deadline),
# its output in $work/NAME.txt; records the exit status and wall time in the
# summary. Never stops the call.
step() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS rc left=$((deadline - SECONDS))
  if ((left < 10)); then
    say "$name: not run, the call is out of time"
    printf '%-32s not run: the call is out of time\n' "$name" >>"$work/steps.txt"
    return 124
  fi
  ((limit > left)) && limit=$left
  say "$name: $*"
  timeout --kill-after=10 "$limit" "$@" >"$work/$name.txt" 2>&1
  rc=$?
  tail -n 5 "$work/$name.txt" | sed 's/^/   /'
  printf '%-32s rc=%-3d %4d s\n' "$name" "$rc" $((SECONDS - t0)) >>"$work/steps.txt"
  return $rc
}

# Makes the bundle's tools and libraries, libcupti and the Python package findable.
setup_env() {
  [[ -n $g && -x $g/bin/deepum-plan ]] || {
    echo "run.sh: no bundle (run bench/gpu/pack.sh, carry .gpu)" >&2
    exit 2
  }
  export PATH="$g/bin:$PATH"
  export PYTHONPATH="$g/python:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
  export DEEPUM_LIBRARY="$g/lib/libdeepum.so"
  local cupti
  cupti=$(find_cupti)
  export LD_LIBRARY_PATH="$g/lib${cupti:+:$cupti}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

# The directory of a libcupti.so.13 on this machine: the loader's, CUDA's,
# PyTorch's wheel's; else the bundle's copy.
find_cupti() {
  local d
  if ldconfig -p 2>/dev/null | grep -q 'libcupti\.so\.13 '; then
    return
  fi
  for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib \
    $("$py" -c 'import nvidia, os; [print(os.path.join(p, s, "lib")) for p in nvidia.__path__ for s in ("cu13", "cuda_cupti")]' 2>/dev/null); do
    [[ -f $d/libcupti.so.13 ]] && { echo "$d"; return; }
  done
  echo "$g/lib/cupti"
}

# PATH as is when absolute, else relative to the bundle's root.
in_bundle() {
  if [[ $1 == /* ]]; then echo "$1"; else echo "$g/$1"; fi
}

# deepum-sim's footprint (2 MiB blocks the steady-state iteration touches),
# divided by RATIO: the budget a plan is compiled for.
budget_for() {
  local profile=$1 ratio=$2 device=$3
  "$g/bin/deepum-sim" "$profile" --device "$device" --policy ideal --oversubscription "$ratio" \
    --json | "$py" -c 'import json, sys; print(json.load(sys.stdin)["gpu_memory_bytes"])'
}

# The calibration's device file, when this call has one, as deepum-plan's
# options (into the caller's array `devfile`).
device_file() {
  devfile=()
  [[ -s $work/calibrate.device.json ]] && devfile=(--device-file "$work/calibrate.device.json")
  return 0
}

# Plans PROFILE at the full and half footprint into $work/NAME.{fit,half}.plan.pb
# (the budgets in NAME.{fit,half}.budget), and a demand plan at half
# (NAME.demand.plan.pb: no prefetch), with the kernel compute times of
# the profile NATURAL (--mode kernels) when given (deepum-plan --compute-from;
# without them when the two profiles do not match, which the step's output
# says), for this call's calibration when it made one.
plan_profile() {
  local name=$1 profile=$2 device=$3 natural=${4:-} which ratio budget
  local -a devfile compute=()
  device_file
  for which in fit half; do
    ratio=1
    [[ $which == half ]] && ratio=2
    budget=$(budget_for "$profile" "$ratio" "$device") || {
      say "$name: deepum-sim could not size the $which plan"
      return 1
    }
    echo "$budget" >"$work/$name.$which.budget"
    if [[ -n $natural ]] && step "$name.plan-$which" 120 "$g/bin/deepum-plan" "$profile" \
      --compute-from "$natural" --gpu-memory "$budget" --device "$device" "${devfile[@]}" \
      -o "$work/$name.$which.plan.pb"; then
      compute=(--compute-from "$natural")
      continue
    fi
    compute=()
    step "$name.plan-$which${natural:+-own-durations}" 120 "$g/bin/deepum-plan" "$profile" \
      --gpu-memory "$budget" --device "$device" "${devfile[@]}" \
      -o "$work/$name.$which.plan.pb" || return 1
  done
  # The yardstick at half: no prefetch, demand faults, the budget evicting the
  # blocks needed farthest ahead; timed as the half plan was. Its failure
  # costs only its own run.
  cp "$work/$name.half.budget" "$work/$name.demand.budget"
  step "$name.plan-demand" 120 "$g/bin/deepum-plan" "$profile" --strategy demand \
    "${compute[@]}" --gpu-memory "$budget" --device "$device" "${devfile[@]}" \
    -o "$work/$name.demand.plan.pb" || rm -f "$work/$name.demand.plan.pb"
  return 0
}

# The device model closest to this GPU.
device_model() {
  local name
  name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  case "$name" in
  *H200*) echo h200 ;;
  *H100*PCIe*) echo h100-pcie ;;
  *) echo h100-sxm ;;
  esac
}

# deepum-calibrate: this GPU's UM parameters as a device file laid over the
# built-in model DEVICE (calibrate.device.json), and every measurement
# (calibrate.report.md); managed memory within half the free memory. The
# bundle's CUDA runtime only when the loader has none.
calibrate_ld_path() {
  local ld=${LD_LIBRARY_PATH:-}
  if ldd "$g/bin/deepum-calibrate" | grep -q 'libcudart\.so\.[0-9]* => not found'; then
    ld="$g/lib/cudart${ld:+:$ld}"
  fi
  echo "$ld"
}
calibrate() {
  local device=$1
  DEEPUM_PROGRESS=always LD_LIBRARY_PATH=$(calibrate_ld_path) step calibrate 120 "$g/bin/deepum-calibrate" --name "$device" \
    --out "$work/calibrate.device.json" --report "$work/calibrate.report.md" &&
    step calibrate-sim 60 "$g/bin/deepum-sim" --device "$device" \
      --device-file "$work/calibrate.device.json" --policy um --iterations 1 \
      "$g/profiles/resnet50.profile.pb.gz"
}

# Gathers $work into $out: CALL.summary.txt and CALL.tar.gz. While the archive
# is over the per-file limit its largest file leaves it, and comes back on its
# own if it fits and a file slot is left; the summary lists what could not.
gather() {
  local call=$1 out=$2 f size
  local -a out_of_tar=() excludes=()
  mkdir -p "$out"
  {
    echo "deepum GPU run: $call"
    cat "$work/steps.txt" 2>/dev/null
    echo
    cat "$work/run.log" 2>/dev/null
  } >"$out/$call.summary.txt"
  while :; do
    excludes=()
    for f in "${out_of_tar[@]}"; do excludes+=("--exclude=./$f"); done
    tar -C "$work" -czf "$out/$call.tar.gz" "${excludes[@]}" .
    (($(stat -c %s "$out/$call.tar.gz") <= max_file_bytes)) && break
    f=$(cd "$work" && find . -type f -printf '%s %P\n' | sort -rn |
      while read -r size f; do
        [[ " ${out_of_tar[*]} " == *" $f "* ]] || { echo "$f"; break; }
      done)
    [[ -n $f ]] || break
    out_of_tar+=("$f")
  done
  local size parts slots room
  for f in "${out_of_tar[@]}"; do
    size=$(stat -c %s "$work/$f")
    slots=$((max_files - $(find "$out" -type f | wc -l)))
    parts=$(((size + part_bytes - 1) / part_bytes))
    # Room within the 64 MiB that come back in all, a margin kept for the summary.
    room=$((max_total_bytes - 65536 - $(du -cb "$out" | tail -1 | cut -f1)))
    if ((size > room)); then
      echo "left out (the files back would pass 64 MiB in all): $f" >>"$out/$call.summary.txt"
    elif ((size <= max_file_bytes && slots > 0)); then
      cp "$work/$f" "$out/$call.${f//\//_}"
      echo "on its own, out of the archive: $f" >>"$out/$call.summary.txt"
    elif ((size > max_file_bytes && parts <= slots)); then
      # A profile of millions of migrations outgrows one file: in parts.
      split -b "$part_bytes" -d -a 2 "$work/$f" "$out/$call.${f//\//_}.part"
      echo "in $parts parts, out of the archive: $f (cat $call.${f//\//_}.part* > $f)" \
        >>"$out/$call.summary.txt"
    else
      echo "left out (too big to come back): $f" >>"$out/$call.summary.txt"
    fi
  done
  check_out "$out"
}

# What comes back from the GPU machine: at most 8 files of 16 MiB, 64 MiB in all.
check_out() {
  local out=$1 n f
  n=$(find "$out" -type f | wc -l)
  if ((n > max_files)); then
    echo "run.sh: $out holds $n files; at most $max_files come back" >&2
    return 1
  fi
  if (($(du -cb "$out" | tail -1 | cut -f1) > max_total_bytes)); then
    echo "run.sh: $out holds more than the 64 MiB that come back in all" >&2
    return 1
  fi
  while read -r f; do
    if (($(stat -c %s "$f") > max_file_bytes)); then
      echo "run.sh: $f is over 16 MiB" >&2
      return 1
    fi
  done < <(find "$out" -type f)
  echo "gather: $n file(s) in $out, each within 16 MiB"
}

# The device, the libcupti used, PyTorch's CUDA and the C library, into device.txt.
device_info() {
  local cupti
  {
    date -u '+%Y-%m-%d %H:%M:%S UTC'
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.free,clocks.sm,clocks.mem,power.limit --format=csv
    cupti=$(find_cupti)
    echo "libcupti.so.13: ${cupti:-found by the loader}"
    "$py" -c 'import torch, torchvision; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available(), "torchvision", torchvision.__version__)'
    "$py" -c 'import transformers; print("transformers", transformers.__version__)'
    ldd --version | head -1
    nvcc --version 2>/dev/null | tail -2
  } >"$work/device.txt" 2>&1
  cat "$work/device.txt" | tee -a "$work/run.log"
}

# The gpu-labelled tests, from the bundle's root (their paths are relative to
# it), each under LIMIT seconds.
gpu_tests() {
  local t
  for t in "$g"/tests/*_test; do
    (cd "$g" && step "$(basename "$t")" "$1" "$t" --gtest_color=no)
  done
}

# PyTorch on CUDA under deepum (python/tests/gpu_pytorch.py): profile, plan at
# half, bit-identical replay; under LIMIT seconds (default 150).
gpu_pytorch() {
  step gpu-pytorch "${1:-150}" "$py" "$g/python/tests/gpu_pytorch.py" "$g/bin" "$g"
}

smoke() {
  local device
  device_info
  device=$(device_model)
  calibrate "$device"
  gpu_tests 240
  gpu_pytorch 300
  step torch-resnet50 120 "$py" "$g/examples/resnet50_train.py" --batch 16 --steps 3
  DEEPUM_STATS="$work/deepum-resnet50.stats.json" step deepum-resnet50 120 \
    "$py" -m deepum.run -- "$py" "$g/examples/resnet50_train.py" --batch 16 --steps 3
  step profile-resnet50 180 "$g/bin/deepum-profile" --skip 1 --iterations 2 \
    -o "$work/resnet50-small.profile.pb.gz" -- \
    "$py" "$g/examples/resnet50_train.py" --batch 16 --steps 4 &&
    step inspect-resnet50 60 "$g/bin/deepum-inspect" "$work/resnet50-small.profile.pb.gz" &&
    plan_profile resnet50-small "$work/resnet50-small.profile.pb.gz" "$device"
}

# The training command of model NAME, into the caller's array `script`.
model_script() {
  case "$1" in
  resnet50) script=("$g/examples/resnet50_train.py" --batch 64) ;;
  gpt2) script=("$g/examples/gpt2_train.py" --size medium --batch 4 --seq-len 1024) ;;
  *)
    echo "run.sh: unknown model $1 (resnet50, gpt2)" >&2
    return 2
    ;;
  esac
}

# Runs step NAME (limit LIMIT) of a training command, reading NVML's energy
# counter at each step line it prints (NAME.energy.json; bench/gpu/energy.py).
train_step() {
  local name=$1 limit=$2
  shift 2
  step "$name" "$limit" "$py" "$g/bench/gpu/energy.py" "$work/$name.energy.json" -- "$@"
}

# STEPS steps (DEEPUM_GPU_STEPS, default 30) with PyTorch's allocator and
# under deepum without a plan; a profile (access-set) and plans at the full and
# half footprint; then STEPS steps with each plan at its budget. The runs that
# need no plan come first: they stand when profiling or planning fails.
model() {
  local name=$1 device steps=${DEEPUM_GPU_STEPS:-30} which budget
  local -a script
  model_script "$name" || return 2
  device=$(device_model)
  [[ ${DEEPUM_GPU_BASELINES:-1} != 0 ]] && baselines "$name" "$steps"
  # access-set: the GPU has room, so a natural profile would see no fault
  # after the first step; this one sees every block each kernel touches.
  local iterations=${DEEPUM_GPU_PROFILE_ITERATIONS:-3}
  # GPT-2 medium's one access-set iteration took 125 s on an H100, the step
  # before it 90 s, and the process's start 25 s.
  step "$name.profile" "${DEEPUM_GPU_PROFILE_SECONDS:-240}" "$g/bin/deepum-profile" --mode access-set --skip 1 \
    --iterations "$iterations" -o "$work/$name.profile.pb.gz" -- "$py" "${script[@]}" \
    --steps $((iterations + 2)) || return 1
  step "$name.inspect" 60 "$g/bin/deepum-inspect" --json "$work/$name.profile.pb.gz"
  # Millions of migration records make the profile too big to come back; the
  # planner and simulator do not read them (their totals are in the inspect
  # output above).
  step "$name.slim" 120 "$g/bin/deepum-inspect" "$work/$name.profile.pb.gz" --drop-migrations \
    --convert "$work/$name.profile.slim.pb.gz" >/dev/null &&
    rm -f "$work/$name.profile.pb.gz" &&
    mv "$work/$name.profile.slim.pb.gz" "$work/$name.profile.pb.gz"
  # The kernels' own durations, which the access-set profile's include its
  # faults in (--mode kernels: the Unified Memory counters of a natural
  # profile slowed ResNet-50's kernels from 40 to 110 ms a step on an H100).
  local natural=""
  kernels_profile "$name" && natural="$work/$name.kernels.pb.gz"
  plan_profile "$name" "$work/$name.profile.pb.gz" "$device" "$natural" || return 1
  run_plans "$name" "$steps"
}

# STEPS steps (default DEEPUM_GPU_STEPS, else 30) of model NAME with each of
# its plans in this call's folder (NAME.{half,fit,demand}.plan.pb, from a
# model call, plan_model or use_plan) at its budget, or only those named
# after STEPS; the demand plan DEEPUM_GPU_DEMAND_STEPS steps (default 10).
run_plans() {
  local name=$1 steps=${2:-${DEEPUM_GPU_STEPS:-30}} which budget n
  local -a script which_list=(half fit demand)
  (($# > 2)) && which_list=("${@:3}")
  model_script "$name" || return 2
  for which in "${which_list[@]}"; do
    [[ -s $work/$name.$which.plan.pb ]] || continue
    budget=$(cat "$work/$name.$which.budget")
    # Demand paging at half the footprint: each step faults gigabytes in.
    n=$steps
    [[ $which == demand ]] && n=${DEEPUM_GPU_DEMAND_STEPS:-10}
    DEEPUM_STATS="$work/$name.$which.stats.json" DEEPUM_LOG=info train_step "$name.deepum-$which" 150 \
      "$py" -m deepum.run --plan "$work/$name.$which.plan.pb" --gpu-memory "$budget" \
      -- "$py" "${script[@]}" --steps "$n"
  done
}

# Plans model NAME's access-set PROFILE (relative to the bundle's root when
# not absolute; e.g. one an earlier call recorded) as a model call does: fit,
# half and demand, with this call's kernels profile and calibration when it
# has them.
plan_model() {
  local name=$1 profile=$2 natural=""
  profile=$(in_bundle "$profile")
  [[ -s $work/$name.kernels.pb.gz ]] && natural="$work/$name.kernels.pb.gz"
  plan_profile "$name" "$profile" "$(device_model)" "$natural"
}

# Stages PLAN (a file made elsewhere; relative to the bundle's root when not
# absolute) as model NAME's WHICH plan (half, fit or demand) at BUDGET bytes,
# where run_plans and replay_profile find a model call's own.
use_plan() {
  local name=$1 which=$2 plan=$3 budget=$4
  plan=$(in_bundle "$plan")
  [[ -s $plan && $budget =~ ^[0-9]+$ ]] || {
    say "use_plan: no plan at $plan, or budget '$budget' is not a number of bytes"
    return 1
  }
  cp "$plan" "$work/$name.$which.plan.pb" && echo "$budget" >"$work/$name.$which.budget"
}

# The runs without a plan: STEPS steps with PyTorch's allocator and under
# deepum without a plan.
baselines() {
  local name=$1 steps=${2:-${DEEPUM_GPU_STEPS:-30}}
  local -a script
  model_script "$name" || return 2
  train_step "$name.torch" 90 "$py" "${script[@]}" --steps "$steps"
  DEEPUM_STATS="$work/$name.noplan.stats.json" train_step "$name.deepum-noplan" 90 \
    "$py" -m deepum.run -- "$py" "${script[@]}" --steps "$steps"
}

# A profile (natural) of the run replaying model NAME's WHICH plan at its
# budget: its demand faults and migrations per steady-state iteration. Its
# files are named after LABEL (default WHICH).
# deepum-profile keeps a plan out of the process it starts, so `env` hands the
# plan to the script.
replay_profile() {
  local name=$1 which=$2 label=${3:-$2} budget
  local -a script
  model_script "$name" || return 2
  [[ -s $work/$name.$which.plan.pb ]] || return 1
  budget=$(cat "$work/$name.$which.budget")
  # Demand paging takes seconds a step: two iterations of it.
  local iterations=3
  [[ $which == demand ]] && iterations=2
  DEEPUM_STATS="$work/$name.replay-$label.stats.json" step "$name.replay-profile-$label" 180 \
    "$g/bin/deepum-profile" --skip 2 --iterations "$iterations" \
    -o "$work/$name.replay-$label.profile.pb.gz" -- \
    env DEEPUM_PLAN_TEMPLATE="$work/$name.$which.plan.pb" DEEPUM_GPU_MEMORY="$budget" \
    DEEPUM_STRICT=1 "$py" "${script[@]}" --steps $((iterations + 4)) &&
    step "$name.replay-inspect-$label" 60 "$g/bin/deepum-inspect" --json \
      "$work/$name.replay-$label.profile.pb.gz"
}

# The kernel durations of model NAME alone (deepum-profile --mode kernels: no
# Unified Memory counters), everything resident after two steps, into
# $work/NAME.kernels.pb.gz.
kernels_profile() {
  local name=$1
  local -a script
  model_script "$name" || return 2
  step "$name.kernels" 120 "$g/bin/deepum-profile" --mode kernels --skip 2 --iterations 1 \
    -o "$work/$name.kernels.pb.gz" -- "$py" "${script[@]}" --steps 4
}

# Plans model NAME's access-set PROFILE (relative to the bundle's root when
# not absolute) at BUDGET bytes again, with this call's calibration and
# kernels profile when it made them (NAME.replan.plan.pb), then runs it STEPS
# steps (DEEPUM_GPU_STEPS, default 12) and profiles the replay.
replan() {
  local name=$1 profile=$2 budget=$3 device
  local -a devfile compute=()
  device=$(device_model)
  device_file
  profile=$(in_bundle "$profile")
  [[ -s $work/$name.kernels.pb.gz ]] && compute=(--compute-from "$work/$name.kernels.pb.gz")
  echo "$budget" >"$work/$name.replan.budget"
  step "$name.plan-replan" 120 "$g/bin/deepum-plan" "$profile" "${compute[@]}" \
    --gpu-memory "$budget" --device "$device" "${devfile[@]}" \
    -o "$work/$name.replan.plan.pb" || return 1
  replay_plan "$name" deepum-replan "$work/$name.replan.plan.pb" "$budget" "${DEEPUM_GPU_STEPS:-12}"
  replay_profile "$name" replan
}

# Kernel time per step of model NAME by PyTorch's profiler (no Unified Memory
# counters): what the natural profile's kernel durations are held against.
kernel_times() {
  local name=$1
  local -a script
  model_script "$name" || return 2
  step "$name.kernel-times" 120 "$py" "$g/bench/gpu/kernel_times.py" \
    "$work/$name.kernel-times.json" -- "${script[@]}" --steps 7
}

# STEPS steps of model NAME replaying PLAN (a file; relative to the bundle's
# root when not absolute) at BUDGET bytes, as step NAME.LABEL: a plan made
# elsewhere, e.g. a variant of one a model call wrote.
replay_plan() {
  local name=$1 label=$2 plan=$3 budget=$4 steps=${5:-20}
  local -a script
  model_script "$name" || return 2
  plan=$(in_bundle "$plan")
  DEEPUM_STATS="$work/$name.$label.stats.json" DEEPUM_LOG=info train_step "$name.$label" 150 \
    "$py" -m deepum.run --plan "$plan" --gpu-memory "$budget" -- "$py" "${script[@]}" --steps "$steps"
}

# A lease of 15 minutes of device time in two calls, most important first
# (docs/results/gpu.md, "Next GPU lease"); the second, on the warm machine,
# goes on in the first's folder (DEEPUM_GPU_WORK):
#   lease   the device, calibration, the gpu-labelled tests; GPT-2 medium
#           profiled again (one access-set iteration: its plans place what the
#           first step keeps by call), planned, and run at both budgets
#           (PyTorch and no plan were measured twice: not again).
#   lease2  profiles of GPT-2's replays (plan and demand paging at half);
#           ResNet-50's half plan (from tests/data's profile) with and without
#           the kernel waiting for its own prefetches, each with a replay
#           profile; the bit-for-bit check.
lease() {
  local device
  device_info
  device=$(device_model)
  calibrate "$device"
  gpu_tests 60
  DEEPUM_GPU_BASELINES=0 DEEPUM_GPU_STEPS=${DEEPUM_GPU_STEPS:-20} \
    DEEPUM_GPU_PROFILE_ITERATIONS=1 DEEPUM_GPU_PROFILE_SECONDS=330 \
    DEEPUM_GPU_DEMAND_STEPS=${DEEPUM_GPU_DEMAND_STEPS:-3} model gpt2
}
lease2() {
  local root
  root=$(cd "$g/.." && pwd)
  replay_profile gpt2 half
  kernels_profile resnet50
  plan_model resnet50 "$root/tests/data/h100-resnet50-b64.profile.pb.gz"
  run_plans resnet50 30 half
  replay_profile resnet50 half
  # The same plan, the kernel waiting for its own prefetches.
  if [[ -s $work/resnet50.half.plan.pb ]]; then
    DEEPUM_KERNEL_WAITS_FOR_PREFETCH=1 replay_plan resnet50 half-waiting \
      "$work/resnet50.half.plan.pb" "$(cat "$work/resnet50.half.budget")" 30
    DEEPUM_KERNEL_WAITS_FOR_PREFETCH=1 replay_profile resnet50 half half-waiting
  fi
  replay_profile gpt2 demand
  gpu_pytorch
}

# A rerun of chosen steps, in order, each a function and its arguments:
#   run.sh only 'gpu_tests 60' 'model resnet50' 'replay_profile resnet50 half'
only() {
  local s
  for s in "$@"; do
    case "${s%% *}" in
    device_info | calibrate | gpu_tests | model | replay_profile | gpu_pytorch | kernel_times | \
      replay_plan | kernels_profile | replan | use_plan | run_plans | baselines | plan_model)
      [[ $s == calibrate ]] && s="calibrate $(device_model)"
      # shellcheck disable=SC2086 # the words are the function and its arguments
      ${s} ;;
    *)
      echo "run.sh: only: unknown step '$s' (device_info, calibrate, gpu_tests N, model M," \
        "replay_profile M fit|half|demand, gpu_pytorch, kernel_times M," \
        "replay_plan M LABEL PLAN BUDGET [STEPS], kernels_profile M, replan M PROFILE BUDGET," \
        "use_plan M fit|half|demand PLAN BUDGET, run_plans M [STEPS [WHICH...]]," \
        "baselines M [STEPS], plan_model M PROFILE)" >&2
      return 2
      ;;
    esac
  done
}

# Here, no GPU: every step that needs none, on the bundle as the GPU machine gets it.
dry_run() {
  local t0=$SECONDS root copy fake tree bundle_bytes total
  root=$(cd "$here/../.." && pwd)
  bash "$root/bench/gpu/pack.sh" || return 1
  deadline=$((SECONDS + call_seconds)) # the build does not count
  g=$(cd "$root/${DEEPUM_GPU_BUNDLE:-.gpu}" && pwd)
  # What travels: the working tree (tracked files) and the bundle.
  bundle_bytes=$(du -sb "$g" | cut -f1)
  tree=$(git -C "$root" ls-files -z | (cd "$root" && xargs -0 stat -c %s 2>/dev/null) |
    awk '{s += $1} END {print s + 0}')
  total=$((bundle_bytes + tree))
  echo "dry-run: bundle $((bundle_bytes / 1048576)) MiB + working tree $((tree / 1048576)) MiB" \
    "= $((total / 1048576)) MiB to carry (limit 64 MiB)"
  ((total <= 64 * 1048576)) || {
    echo "dry-run: over the 64 MiB the GPU machine takes" >&2
    return 1
  }
  # A copy elsewhere: nothing may depend on where the bundle was built.
  copy=$(mktemp -d "${TMPDIR:-/tmp}/deepum-bundle.XXXXXX")
  cp -a "$g/." "$copy/"
  bash "$copy/bench/gpu/relocation.sh" "$copy" "$root/${DEEPUM_GPU_BUILD:-build-gpu}" "$root" ||
    return 1
  # ... and the check can fail: a file naming the checkout is found.
  mkdir -p "$copy.bad" && echo "built in $root/build-gpu/x" >"$copy.bad/note"
  if bash "$copy/bench/gpu/relocation.sh" "$copy.bad" "$root/build-gpu" "$root" 2>/dev/null; then
    echo "dry-run: the relocation check missed a build path" >&2
    return 1
  fi
  rm -rf "$copy.bad"
  g=$copy
  work=$(mktemp -d "${TMPDIR:-/tmp}/deepum-gpu-work.XXXXXX")
  setup_env
  local device=h100-sxm
  for t in "$g"/tests/*_test; do # no GPU here: they start and skip
    (cd "$g" && step "$(basename "$t")" 120 "$t" --gtest_color=no) || return 1
  done
  LD_LIBRARY_PATH=$(calibrate_ld_path) step calibrate-help 10 "$g/bin/deepum-calibrate" --help ||
    return 1
  # The energy wrapper: the command's step lines, its exit status (no NVML here).
  step energy 20 "$py" "$g/bench/gpu/energy.py" "$work/dry.energy.json" -- \
    sh -c 'echo step 0; echo other; echo step 1; exit 3'
  "$py" -c 'import json, sys; r = json.load(open(sys.argv[1]))
assert len(r["steps"]) == 2 and r["exit_status"] == 3, r' "$work/dry.energy.json" || {
    echo "dry-run: energy.py did not record the step lines and the exit status" >&2
    return 1
  }
  # The profile as its own natural profile: --compute-from changes nothing.
  plan_profile shipped-resnet50 "$g/profiles/resnet50.profile.pb.gz" "$device" \
    "$g/profiles/resnet50.profile.pb.gz" || return 1
  for which in fit half; do
    [[ -s $work/shipped-resnet50.$which.plan.pb ]] || return 1
    echo "dry-run: planned the shipped profile ($which, $(cat "$work/shipped-resnet50.$which.budget") bytes)"
  done
  # Gathering, on fake outputs shaped like a model call's: incompressible, one
  # file too big to come back even in parts, one that comes back in two, two
  # that must leave the archive.
  fake=$(mktemp -d "${TMPDIR:-/tmp}/deepum-gpu-out.XXXXXX")
  for f in gpt2.noplan.stats.json gpt2.fit.stats.json gpt2.torch.txt; do
    head -c 100000 /dev/urandom >"$work/$f"
  done
  head -c $((10 * 1048576)) /dev/urandom >"$work/gpt2.profile.pb.gz"
  head -c $((9 * 1048576)) /dev/urandom >"$work/gpt2.half.plan.pb"
  head -c $((17 * 1048576)) /dev/urandom >"$work/gpt2.huge.profile.pb.gz"
  head -c $((100 * 1048576)) /dev/urandom >"$work/gpt2.huger.profile.pb.gz"
  gather dry-run "$fake" || return 1
  grep -q 'left out (the files back would pass 64 MiB in all): gpt2.huger.profile.pb.gz' \
    "$fake/dry-run.summary.txt" &&
    grep -q 'in 2 parts, out of the archive: gpt2.huge.profile.pb.gz' "$fake/dry-run.summary.txt" &&
    cmp -s <(cat "$fake"/dry-run.gpt2.huge.profile.pb.gz.part*) "$work/gpt2.huge.profile.pb.gz" &&
    [[ -f $fake/dry-run.gpt2.profile.pb.gz ]] || {
    echo "dry-run: gathering did not keep within the limits as it should" >&2
    cat "$fake/dry-run.summary.txt" >&2
    return 1
  }
  rm -rf "$copy" "$work" "$fake"
  echo "dry-run: passed in $((SECONDS - t0)) s; bundle $((bundle_bytes / 1048576)) MiB" \
    "($bundle_bytes bytes)"
}

case "${1:-}" in
--dry-run)
  dry_run
  exit $?
  ;;
smoke | model | lease | lease2 | only)
  if [[ $1 == model && ${2:-} != resnet50 && ${2:-} != gpt2 ]]; then
    echo "usage: bench/gpu/run.sh model resnet50|gpt2" >&2
    exit 2
  fi
  call=$1
  [[ $call == model ]] && call="model-${2:-}"
  out="${OUT:-$PWD/gpu-out}"
  # DEEPUM_GPU_WORK: a later call on the same (warm) machine goes on in an
  # earlier call's folder, with its plans and profiles.
  if [[ -n ${DEEPUM_GPU_WORK:-} ]]; then
    work=$DEEPUM_GPU_WORK
    [[ -d $work ]] || { echo "run.sh: DEEPUM_GPU_WORK=$work is not a folder" >&2; exit 2; }
  else
    work=$(mktemp -d "${TMPDIR:-/tmp}/deepum-gpu-$call.XXXXXX")
  fi
  setup_env
  trap 'gather "$call" "$out"' EXIT
  case $1 in
  smoke) smoke ;;
  lease) lease ;;
  lease2) lease2 ;;
  only) shift && only "$@" ;;
  *) model "${2:-}" ;;
  esac
  ;;
*)
  echo "usage: bench/gpu/run.sh smoke | model resnet50|gpt2 | lease | lease2 | only STEP... | --dry-run" >&2
  exit 2
  ;;
esac
