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
  # The lease's machine-readable summary also comes back on its own.
  [[ -s $work/summary.json ]] && cp "$work/summary.json" "$out/$call.summary.json"
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
      "$work/$name.replay-$label.profile.pb.gz" || return 1
  # Slimmed here so it comes back within the file limits (GPT-2's replay
  # had 1.45 million migration records); their totals are in the inspect output.
  step "$name.replay-slim-$label" 120 "$g/bin/deepum-inspect" \
    "$work/$name.replay-$label.profile.pb.gz" --drop-migrations \
    --convert "$work/$name.replay-$label.slim.pb.gz" >/dev/null &&
    mv "$work/$name.replay-$label.slim.pb.gz" "$work/$name.replay-$label.profile.pb.gz"
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

# The argument source: model NAME profiled in MODE (access-set, or natural:
# with room nothing faults after the first step, so the access sets are the
# arguments' alone), deepum-profile reading every launch's arguments; its
# access-set bytes by source (deepum-inspect --access-sources); planned at 2x
# of the planner's footprint from both sources (NAME.args.plan.pb); the
# replay of that plan profiled, and faults_vs_plan.py's share of the replay's
# fault records outside the plan's access sets (44-61% with faults alone on
# the H100 runs; the target is 5% at most).
arguments() {
  local name=$1 mode=${2:-access-set} device fp
  local -a script devfile
  model_script "$name" || return 2
  device=$(device_model)
  device_file
  step "$name.args-profile" 150 "$g/bin/deepum-profile" --mode "$mode" --skip 1 --iterations 1 \
    -o "$work/$name.args.profile.pb.gz" -- "$py" "${script[@]}" --steps 3 || return 1
  step "$name.args-sources" 60 "$g/bin/deepum-inspect" --access-sources \
    "$work/$name.args.profile.pb.gz"
  step "$name.args-slim" 120 "$g/bin/deepum-inspect" "$work/$name.args.profile.pb.gz" \
    --drop-migrations --convert "$work/$name.args.slim.pb.gz" >/dev/null &&
    mv "$work/$name.args.slim.pb.gz" "$work/$name.args.profile.pb.gz"
  step "$name.plan-args-footprint" 60 "$g/bin/deepum-plan" "$work/$name.args.profile.pb.gz" \
    --gpu-memory 1073741824 --device "$device" "${devfile[@]}" -o "$work/$name.args-probe.plan.pb" ||
    return 1
  fp=$(plan_footprint_bytes "$work/$name.plan-args-footprint.txt") || return 1
  echo $((fp / 2)) >"$work/$name.args.budget"
  step "$name.plan-args" 120 "$g/bin/deepum-plan" "$work/$name.args.profile.pb.gz" \
    --gpu-memory $((fp / 2)) --device "$device" "${devfile[@]}" -o "$work/$name.args.plan.pb" ||
    return 1
  replay_profile "$name" args || return 1
  step "$name.faults-vs-args" 60 "$py" "$g/bench/gpu/faults_vs_plan.py" "$work" \
    "$name.replay-args.profile.pb.gz" "$name.args.plan.pb"
}

# The copy path against Unified Memory's path alone on model NAME, in one
# call: the arguments profile of `arguments NAME` (which must have run in this
# folder) planned at its budget with the copy path and without it
# (--no-copy-path), each replayed (NAME.copy, NAME.uvm: step times, and the
# stats JSON's copy and guard counts). docs/executor.md, "The copy path".
copy_path() {
  local name=$1 device budget v
  local -a devfile extra
  device=$(device_model)
  device_file
  if [[ ! -s $work/$name.args.profile.pb.gz || ! -s $work/$name.args.budget ]]; then
    say "copy_path $name: no arguments profile here (run 'arguments $name' first)"
    return 2
  fi
  budget=$(cat "$work/$name.args.budget")
  for v in copy uvm; do
    extra=()
    [[ $v == uvm ]] && extra=(--no-copy-path)
    step "$name.plan-$v" 120 "$g/bin/deepum-plan" "$work/$name.args.profile.pb.gz" \
      --gpu-memory "$budget" --device "$device" "${devfile[@]}" "${extra[@]}" \
      -o "$work/$name.$v.plan.pb" || return 1
    replay_plan "$name" "$v" "$work/$name.$v.plan.pb" "$budget" "${DEEPUM_GPU_STEPS:-12}"
  done
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

# The lease: 15 minutes of device time (DEEPUM_GPU_LEASE_SECONDS), one machine
# start, at most two calls of at most 540 s each, the second on the warm
# machine going on in the first's folder (DEEPUM_GPU_WORK):
#   run.sh lease    call 1: the device, calibration, the bit-for-bit check,
#                   ResNet-50's plans at 1.0x, 1.5x and 2.0x by the planner's
#                   own footprint, each beside the same call's controls
#   run.sh lease2   call 2: the copy path against Unified Memory's alone on
#                   ResNet-50 and GPT-2 medium, then the alternatives at the
#                   same memory, the kernel waiting for its prefetches, the
#                   --mode kernels probe, GPT-2
# Each prints its time plan first (items in priority order with their
# estimates; what will not fit is listed as skipped), then runs the items in
# that order, skipping, with a line saying so, any whose estimate no longer
# fits before the call's deadline. summary.json (bench/gpu/lease_summary.py)
# is written at the end of each call from everything in the folder.
lease_seconds=${DEEPUM_GPU_LEASE_SECONDS:-900}
# A fresh machine's start as the lease counts it (the first leases: 1-2 min),
# and per call the tree's transfer and the gathering.
start_seconds=${DEEPUM_GPU_START_SECONDS:-120}
call_overhead=${DEEPUM_GPU_CALL_OVERHEAD:-30}
call_max=540

# The seconds call 1 or 2 may run: the first the most a call may, the second
# what the lease has left after the start, the first call and both overheads.
lease_call_seconds() {
  local c2=$((lease_seconds - start_seconds - call_max - 2 * call_overhead))
  ((c2 > call_max)) && c2=$call_max
  ((c2 < 0)) && c2=0
  if [[ $1 == 1 ]]; then echo "$call_max"; else echo "$c2"; fi
}

# The items of call 1 and 2 in priority order: "ESTIMATE_S|STEP" (a function
# and its arguments). Estimates: the H100 leases' step times (steps.txt), a
# ResNet-50 process starting in about 10 s and a step at 2x near 0.45 s.
lease_items() {
  case $1 in
  1) printf '%s\n' \
    "5|device_info" "10|calibrate" "20|context_baseline" \
    "100|gpu_pytorch" "20|kernels_profile resnet50" "15|lease_plans resnet50" \
    "40|controls resnet50 1" "25|lease_run resnet50 previous" "25|lease_run resnet50 r2.0" \
    "30|lease_run resnet50 demand2.0" "25|lease_run resnet50 r1.5" \
    "40|controls resnet50 2" "40|controls resnet50 3" \
    "25|replay_profile resnet50 r2.0" "25|replay_profile resnet50 demand2.0" \
    "10|lease_simulate resnet50" "60|arguments resnet50 access-set" ;;
  2) printf '%s\n' \
    "40|copy_path resnet50" "90|arguments gpt2 natural" "50|copy_path gpt2" \
    "25|alternative resnet50 checkpoint r2.0" "30|alternative resnet50 save_on_cpu r2.0" \
    "30|alternative resnet50 offload r2.0" "25|lease_run resnet50 r2.0-waits" \
    "25|replay_profile_waits resnet50 r2.0" "30|kernels_probe resnet50" \
    "330|model gpt2" ;;
  esac
}

# Prints the time plan of call CALL and returns it in `plan_lines`
# ("fits|ESTIMATE|STEP" or "skip|..."), cumulative from the call's start.
lease_plan() {
  local call=$1 seconds total=0 e s
  seconds=$(lease_call_seconds "$call")
  plan_lines=()
  echo "time plan: a lease of $lease_seconds s = machine start $start_seconds s + call 1 $(lease_call_seconds 1) s + call 2 $(lease_call_seconds 2) s + $call_overhead s a call to send and gather"
  echo "call $call: $seconds s, items in priority order (estimate, cumulative):"
  while IFS='|' read -r e s; do
    if ((total + e <= seconds)); then
      total=$((total + e))
      printf '  %-44s %4d s  %4d s\n' "$s" "$e" "$total"
      plan_lines+=("fits|$e|$s")
    else
      printf '  %-44s %4d s  skipped: does not fit (%d s left of %d)\n' "$s" "$e" \
        $((seconds - total)) "$seconds"
      plan_lines+=("skip|$e|$s")
    fi
  done < <(lease_items "$call")
}

# Runs call CALL's plan: each item that fits, unless the call's deadline no
# longer leaves its estimate; every skip is said and listed in steps.txt.
lease_call() {
  local call=$1 how e s left
  call_seconds=$(lease_call_seconds "$call")
  deadline=$((SECONDS + call_seconds))
  lease_plan "$call" >"$work/time-plan-$call.txt"
  tee -a "$work/run.log" <"$work/time-plan-$call.txt"
  lease_plan "$call" >/dev/null # plan_lines, in this shell
  for line in "${plan_lines[@]}"; do
    IFS='|' read -r how e s <<<"$line"
    left=$((deadline - SECONDS))
    if [[ $how == skip ]]; then
      say "$s: skipped, it does not fit the time plan (about $e s)"
      printf '%-32s skipped: does not fit the time plan (%d s)\n' "$s" "$e" >>"$work/steps.txt"
      continue
    fi
    if ((e > left)); then
      say "$s: skipped, needs about $e s and $left s are left"
      printf '%-32s skipped: needs %d s, %d s left\n' "$s" "$e" "$left" >>"$work/steps.txt"
      continue
    fi
    [[ $s == calibrate ]] && s="calibrate $(device_model)"
    # shellcheck disable=SC2086 # the words are the function and its arguments
    $s
  done
  lease_summary
}
lease() {
  # The planned runs replay plans made here from the profile in tests/data;
  # the previous best is call9's half plan, run at its own budget.
  lease_call 1
}
lease2() { lease_call 2; }

# The checkout the bundle travels in (tests/data, the earlier leases' plans):
# the bundle's parent, or DEEPUM_GPU_ROOT (the dry run's moved copy has none).
repo_root() {
  if [[ -n ${DEEPUM_GPU_ROOT:-} ]]; then echo "$DEEPUM_GPU_ROOT"; else (cd "$g/.." && pwd); fi
}

# One line of runs.jsonl: what a training step NAME was (MODEL, RATIO by the
# planner's count or "room", PATH: torch, noplan, plan, demand or an
# alternative, BUDGET bytes or 0, PLAN file or ""), read by lease_summary.py.
record_run() {
  printf '{"name": "%s", "model": "%s", "ratio": "%s", "path": "%s", "budget_bytes": %s, "plan": "%s"}\n' \
    "$1" "$2" "$3" "$4" "${5:-0}" "${6:-}" >>"$work/runs.jsonl"
}

# The device memory a process takes that holds nothing of the model's: CUDA's
# context, cuBLAS and cuDNN (a tiny model's two steps; energy.py samples the
# device). Residency is counted above this.
context_baseline() {
  train_step context 60 "$py" "$g/bench/gpu/alternatives.py" --model tiny --steps 2
}

# Plans model NAME's profile (tests/data's, with this call's kernels profile
# and calibration when it has them) at 1.0x, 1.5x and 2.0x of the footprint
# deepum-plan itself reports after its pool layout, and a demand plan at
# 2.0x; stages call9's half plan as "previous". Each plan's ratio as the
# planner prints it is kept in NAME.WHICH.ratio.
lease_plans() {
  local name=$1 root profile device fp r which budget
  local -a devfile compute=()
  root=$(repo_root)
  profile=$root/tests/data/h100-resnet50-b64.profile.pb.gz
  compute=(--compute-from "$root/tests/data/h100-resnet50-b64.kernels.pb.gz")
  [[ -s $work/$name.kernels.pb.gz ]] && compute=(--compute-from "$work/$name.kernels.pb.gz")
  device=$(device_model)
  device_file
  # The footprint: deepum-plan's summary of a plan at any budget.
  step "$name.plan-footprint" 60 "$g/bin/deepum-plan" "$profile" "${compute[@]}" \
    --gpu-memory 1073741824 --device "$device" "${devfile[@]}" -o "$work/$name.probe.plan.pb" ||
    return 1
  fp=$(plan_footprint_bytes "$work/$name.plan-footprint.txt") || {
    say "$name: no footprint in deepum-plan's summary"
    return 1
  }
  for r in 1.0 1.5 2.0; do
    which=r$r
    budget=$("$py" -c "import sys; print(int(int(sys.argv[1]) / float(sys.argv[2])))" "$fp" "$r")
    echo "$budget" >"$work/$name.$which.budget"
    step "$name.plan-$which" 120 "$g/bin/deepum-plan" "$profile" "${compute[@]}" \
      --gpu-memory "$budget" --device "$device" "${devfile[@]}" -o "$work/$name.$which.plan.pb" &&
      plan_ratio "$work/$name.plan-$which.txt" >"$work/$name.$which.ratio"
  done
  cp "$work/$name.r2.0.budget" "$work/$name.demand2.0.budget"
  step "$name.plan-demand2.0" 120 "$g/bin/deepum-plan" "$profile" --strategy demand "${compute[@]}" \
    --gpu-memory "$(cat "$work/$name.r2.0.budget")" --device "$device" "${devfile[@]}" \
    -o "$work/$name.demand2.0.plan.pb" &&
    plan_ratio "$work/$name.plan-demand2.0.txt" >"$work/$name.demand2.0.ratio"
  cp "$root/bench/gpu/results/2026-11-27-h100/call9/resnet50.half.plan.pb" "$work/$name.previous.plan.pb" &&
    cp "$root/bench/gpu/results/2026-11-27-h100/call9/resnet50.half.budget" "$work/$name.previous.budget" &&
    echo 1.51 >"$work/$name.previous.ratio"
  return 0
}
# deepum-plan's "footprint X GiB after the pool layout", in bytes.
plan_footprint_bytes() {
  "$py" -c 'import re, sys
m = re.search(r"footprint ([0-9.]+) (GiB|MiB) after the pool layout", open(sys.argv[1]).read())
sys.exit(1) if not m else print(int(float(m.group(1)) * (1 << (30 if m.group(2) == "GiB" else 20))))' "$1"
}
# deepum-plan's "(R.RRx oversubscribed)".
plan_ratio() {
  "$py" -c 'import re, sys
m = re.search(r"\(([0-9.]+)x oversubscribed\)", open(sys.argv[1]).read())
print(m.group(1) if m else "?")' "$1"
}

# The same-call controls, round ROUND: PyTorch with room, deepum without a
# plan and the plan at 1.0x, each for the steady steps and the warm-up.
controls() {
  local name=$1 round=$2 steps
  local -a script
  model_script "$name" || return 2
  steps=$((${DEEPUM_GPU_STEADY_STEPS:-20} + 5))
  record_run "$name.torch.$round" "$name" room torch
  train_step "$name.torch.$round" 60 "$py" "${script[@]}" --steps "$steps"
  record_run "$name.noplan.$round" "$name" room noplan
  DEEPUM_STATS="$work/$name.noplan.$round.stats.json" train_step "$name.noplan.$round" 60 \
    "$py" -m deepum.run -- "$py" "${script[@]}" --steps "$steps"
  [[ -s $work/$name.r1.0.plan.pb ]] && lease_run "$name" r1.0 "fit.$round"
}

# Model NAME replaying plan WHICH of lease_plans at its budget, for the
# steady steps and the warm-up, as step NAME.LABEL (default WHICH). WHICH
# ending in -waits is that plan with the kernel waiting for its own
# prefetches (DEEPUM_KERNEL_WAITS_FOR_PREFETCH=1).
lease_run() {
  local name=$1 which=$2 label=${3:-$2} plan budget path=plan steps
  local -a script envs=()
  model_script "$name" || return 2
  if [[ $which == *-waits ]]; then
    which=${which%-waits}
    envs=(DEEPUM_KERNEL_WAITS_FOR_PREFETCH=1)
    path=plan-waits
  fi
  [[ $which == demand* ]] && path=demand
  [[ $which == previous ]] && path=previous
  plan=$work/$name.$which.plan.pb
  [[ -s $plan ]] || { say "$name.$label: no plan $which"; return 1; }
  budget=$(cat "$work/$name.$which.budget")
  steps=$((${DEEPUM_GPU_STEADY_STEPS:-20} + 5))
  record_run "$name.$label" "$name" "$(cat "$work/$name.$which.ratio" 2>/dev/null || echo '?')" \
    "$path" "$budget" "$plan"
  (
    ((${#envs[@]})) && export "${envs[@]}"
    DEEPUM_STATS="$work/$name.$label.stats.json" DEEPUM_LOG=info \
      train_step "$name.$label" 150 "$py" -m deepum.run --plan "$plan" --gpu-memory "$budget" \
      -- "$py" "${script[@]}" --steps "$steps"
  )
}

# replay_profile of plan WHICH with the kernel waiting for its own prefetches
# (label WHICH-waits).
replay_profile_waits() {
  (export DEEPUM_KERNEL_WAITS_FOR_PREFETCH=1 && replay_profile "$1" "$2" "$2-waits")
}

# An alternative a user would pick (bench/gpu/alternatives.py MODE) under
# PyTorch's allocator capped at the budget of plan WHICH.
alternative() {
  local name=$1 mode=$2 which=$3 budget
  budget=$(cat "$work/$name.$which.budget" 2>/dev/null) || { say "$name: no budget $which"; return 1; }
  record_run "$name.$mode" "$name" "$(cat "$work/$name.$which.ratio" 2>/dev/null || echo '?')" \
    "$mode" "$budget"
  train_step "$name.$mode" 120 "$py" "$g/bench/gpu/alternatives.py" --model "$name" --mode "$mode" \
    --memory-bytes "$budget" --steps $((${DEEPUM_GPU_STEADY_STEPS:-20} + 5)) \
    --json "$work/$name.$mode.alternative.json"
}

# Why --mode kernels durations sum to 1.9x PyTorch's: the kernels profile
# again, five steps skipped (everything resident long before) and PyTorch's
# own allocator (--no-python), beside kernel_times' PyTorch profiler.
kernels_probe() {
  local name=$1
  local -a script
  model_script "$name" || return 2
  step "$name.kernels-probe" 90 "$g/bin/deepum-profile" --mode kernels --no-python --skip 5 \
    --iterations 1 -o "$work/$name.kernels-probe.pb.gz" -- "$py" "${script[@]}" --steps 7 &&
    kernel_times "$name"
}

# Every plan of lease_plans simulated with this call's calibration and kernels
# profile (NAME.WHICH.sim.json), for summary.json's simulated / measured.
lease_simulate() {
  local name=$1 root profile which device
  local -a devfile compute=()
  root=$(repo_root)
  profile=$root/tests/data/h100-resnet50-b64.profile.pb.gz
  compute=(--compute-from "$root/tests/data/h100-resnet50-b64.kernels.pb.gz")
  [[ -s $work/$name.kernels.pb.gz ]] && compute=(--compute-from "$work/$name.kernels.pb.gz")
  device=$(device_model)
  device_file
  for which in r1.0 r1.5 r2.0 demand2.0 previous; do
    [[ -s $work/$name.$which.plan.pb ]] || continue
    "$g/bin/deepum-sim" "$profile" "${compute[@]}" --device "$device" "${devfile[@]}" \
      --gpu-memory "$(cat "$work/$name.$which.budget")" --policy plan \
      --plan "$work/$name.$which.plan.pb" --json >"$work/$name.$which.sim.json" 2>>"$work/run.log" ||
      rm -f "$work/$name.$which.sim.json"
  done
}

# summary.json from everything in the folder (bench/gpu/lease_summary.py),
# and the page's table from it (summary.md).
lease_summary() {
  "$py" "$g/bench/gpu/lease_summary.py" "$work" -o "$work/summary.json" &&
    "$py" "$g/bench/gpu/lease_summary.py" --page "$work/summary.json" >"$work/summary.md" &&
    cat "$work/summary.md" | tee -a "$work/run.log"
}

# A rerun of chosen steps, in order, each a function and its arguments:
#   run.sh only 'gpu_tests 60' 'model resnet50' 'replay_profile resnet50 half'
only() {
  local s
  for s in "$@"; do
    case "${s%% *}" in
    device_info | calibrate | gpu_tests | model | replay_profile | gpu_pytorch | kernel_times | \
      replay_plan | kernels_profile | replan | use_plan | run_plans | baselines | plan_model | \
      context_baseline | lease_plans | controls | lease_run | alternative | kernels_probe | \
      lease_simulate | lease_summary | replay_profile_waits)
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

# The lease driver's parts that need no GPU, on the moved bundle: both calls'
# time plans (call 1 whole within 540 s; call 2 saying that GPT-2's profile
# does not fit), the runner skipping at run time what no longer fits, plans at
# 1.5x and 2.0x by the planner's own footprint, each simulated with a device
# file, and a recorded run (an alternative, on the CPU) through energy.py into
# summary.json and the page's table.
dry_run_lease() {
  local root=$1 p1 p2 r want got
  p1=$(lease_plan 1) && p2=$(lease_plan 2) || return 1
  printf '%s\n%s\n' "$p1" "$p2"
  # Call 2 compares the copy path with Unified Memory's alone on both models.
  grep -q '^call 1: 540 s' <<<"$p1" && ! grep -q 'skipped' <<<"$p1" &&
    grep -q '^  model gpt2 .*skipped: does not fit' <<<"$p2" &&
    grep -Eq '^  copy_path resnet50 +[0-9]+ s +[0-9]+ s$' <<<"$p2" &&
    grep -Eq '^  copy_path gpt2 +[0-9]+ s +[0-9]+ s$' <<<"$p2" || {
    echo "dry-run: the lease's time plan is not as it should be" >&2
    return 1
  }
  # An item that does not fit the plan, and one whose estimate no longer fits
  # when its turn comes, are skipped, each with a line.
  (
    lease_items() { printf '%s\n' "1|say ran" "1|sleep 3" "2|say late" "100|say never"; }
    lease_seconds=100000 call_max=4
    lease_summary() { :; }
    lease_call 1 >/dev/null
  )
  grep -q '^say never .*skipped: does not fit the time plan' "$work/steps.txt" &&
    grep -q '^say late .*skipped: needs 2 s' "$work/steps.txt" &&
    ! grep -q 'ran.*skipped' "$work/steps.txt" || {
    echo "dry-run: the lease runner did not skip what does not fit" >&2
    cat "$work/steps.txt" >&2
    return 1
  }
  # Plans at 1.0x, 1.5x and 2.0x by the planner's count, with a device file.
  cp "$root/bench/gpu/results/2026-11-27-h100/call9/calibrate.device.json" "$work/"
  DEEPUM_GPU_ROOT=$root lease_plans resnet50 || return 1
  for r in 1.0 1.5 2.0; do
    got=$(cat "$work/resnet50.r$r.ratio")
    "$py" -c 'import sys; sys.exit(abs(float(sys.argv[1]) / float(sys.argv[2]) - 1) > 0.02)' \
      "$got" "$r" || {
      echo "dry-run: the r$r plan is ${got}x by the planner's count" >&2
      return 1
    }
    echo "dry-run: planned resnet50 at ${got}x by the planner's count"
  done
  DEEPUM_GPU_ROOT=$root lease_simulate resnet50
  for want in r1.5 r2.0 demand2.0 previous; do
    [[ -s $work/resnet50.$want.sim.json ]] || {
      echo "dry-run: no simulation of the $want plan" >&2
      return 1
    }
  done
  # The context and an alternative (the tiny model offloading on the CPU)
  # where a Python here has torch; ctest gpu_alternatives checks their losses.
  local tpy="" c
  for c in "$py" /usr/bin/python3; do
    "$c" -c 'import torch' 2>/dev/null && { tpy=$c; break; }
  done
  if [[ -n $tpy ]]; then
    (py=$tpy && context_baseline) || return 1
    record_run dry.offload tiny 2.00 offload 1000000
    (py=$tpy && train_step dry.offload 120 "$py" "$g/bench/gpu/alternatives.py" --model tiny \
      --mode offload --steps 8 --offload-min-bytes 0) || return 1
  else
    echo "dry-run: no Python with torch here: alternatives.py not run"
  fi
  # A recorded run's step lines through energy.py into summary.json and its table.
  record_run dry.steps tiny 2.00 plan 1000000
  train_step dry.steps 20 "$py" -c 'for i in range(8): print(f"step {i} loss 1.0 time {10 + i} ms")' ||
    return 1
  lease_summary >/dev/null || return 1
  "$py" -c 'import json, sys
s = json.load(open(sys.argv[1]))
r = {x["name"]: x for x in s["runs"]}["dry.steps"]
assert (r["steady_steps"], r["median_ms"], r["iqr_ms"]) == (3, 16.0, [15.5, 16.5]), r
assert any("say never" in x for x in s["skipped"]), s["skipped"]' "$work/summary.json" &&
    grep -q '^| dry.steps | tiny | 2.00 | plan | 3 | 16.0 | 15.5–16.5 |' "$work/summary.md" || {
    echo "dry-run: summary.json or its table is not as it should be" >&2
    return 1
  }
  echo "dry-run: the lease's time plans, skips, plans by ratio, simulations and summary.json"
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
  dry_run_lease "$root" || return 1
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
