#!/usr/bin/env python3
"""deepum beside what users already know: the tables of docs/when-to-use.md.

For each shipped model, device and oversubscription ratio (capacity = footprint / ratio, as
deepum-sim defines it) this prints one row: `ideal`, the deepum plan and plain UM from
deepum-sim; activation checkpointing (deepum-sim on the checkpointed profile where one is
shipped, else modelled as one more forward pass); torch.autograd.graph.save_on_cpu and
ZeRO-Offload, modelled here from the profile and the device model, because the simulator does
not simulate them. Each model is stated in docs/when-to-use.md and in the functions below.

    /usr/bin/python3 bench/sim/alternatives.py [--build build] [--write docs/when-to-use.md]

Without --write the tables go to stdout; with it they replace the text between the markers of
that file. The script exits non-zero, writing nothing, when a modelled cost is inconsistent
(see check_row) or when the durations it recomputes differ from deepum-sim's ideal.
"""
import argparse
import bisect
import gzip
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
from deepum_trace import pb  # noqa: E402  (compiles proto/deepum/v1/profile.proto on demand)

BEGIN = "<!-- alternatives.py: begin (generated; do not edit by hand) -->"
END = "<!-- alternatives.py: end -->"
GIB = float(1 << 30)

# ZeRO-Offload's optimizer step runs on the host. Assumed: 1e9 parameters per second for a
# vectorised CPU Adam. Adam reads parameter, gradient and two moments and writes three of them
# back, 28 bytes per fp32 parameter: 28 GB/s, a fraction of a server socket's memory bandwidth.
# DeepSpeed reports its CPU-Adam "up to 6x" faster than torch.optim.Adam on the CPU
# (microsoft/DeepSpeed issue 479); the absolute rate is not measured here.
CPU_ADAM_PARAMS_PER_S = 1e9
# FSDP's CPU offload steps a stock torch.optim optimizer on the host: assumed 6x slower than
# the vectorised one (the "up to 6x" above).
TORCH_CPU_ADAM_PARAMS_PER_S = CPU_ADAM_PARAMS_PER_S / 6

ROLE = {1: "parameter", 2: "gradient", 3: "optimizer_state", 4: "activation", 5: "input",
        6: "workspace", 0: "unspecified"}
# The roofline's matmul operators (proto/include/deepum/format/Roofline.h isMatmulOperator).
MATMUL_OPS = {"aten::convolution", "aten::convolution_backward", "aten::mm", "aten::addmm",
              "aten::bmm", "aten::baddbmm"}


def device_model(name):
    with open(os.path.join(ROOT, "simulator", "devices", "device-models.json")) as f:
        for m in json.load(f)["models"]:
            if m["name"] == name:
                return m
    sys.exit(f"alternatives: no device model {name}")


def roofline_ns(k, d):
    """Roofline.h rooflineNs, for the durations deepum-sim uses on another device."""
    peak = d["matmul_flops_per_second"] if k.name in MATMUL_OPS else d["vector_flops_per_second"]
    compute = math.ceil(k.flops / (peak * d["matmul_efficiency"]) * 1e9)
    memory = math.ceil(k.dram_bytes / (d["dram_bytes_per_second"] * d["memory_efficiency"]) * 1e9)
    return max(compute, memory, math.ceil(d["kernel_min_us"] * 1e3))


class Analysis:
    """What the modelled alternatives need from a profile's steady-state iteration (the last
    marked one, as deepum-sim replays), on one device."""

    def __init__(self, path, device):
        m = pb.load()
        p = m.Profile()
        with gzip.open(path) if path.endswith(".gz") else open(path, "rb") as f:
            p.ParseFromString(f.read())
        it = p.iterations[-1]
        ks = p.kernels[it.first_kernel:it.first_kernel + it.kernel_count]
        n = len(ks)
        self.parameter_count = p.workload.parameter_count
        if p.device.name == device["name"]:
            self.dur_us = [(k.end_ns - k.start_ns) / 1e3 for k in ks]
        else:
            self.dur_us = [roofline_ns(k, device) / 1e3 for k in ks]
        allocs = {a.id: a for a in p.allocations}
        uses = {}
        for i, k in enumerate(ks):
            for t in k.tensors:
                uses.setdefault(t.allocation_id, []).append(i)
        # An allocation is live at position i when it exists while kernel i runs.
        # Kernels run one after another (one compute lane), so their times are sorted.
        ends = [k.end_ns for k in ks]
        starts = [k.start_ns for k in ks]
        first = []
        for a in p.allocations:
            lo = bisect.bisect_right(ends, a.alloc_time_ns)  # kernels over before it exists
            hi = n if not a.freed else bisect.bisect_left(starts, a.free_time_ns)
            if lo < hi:
                first.append((a.id, lo, hi))
        self.live = {aid: (lo, hi) for aid, lo, hi in first}
        self.size = {aid: allocs[aid].size_bytes for aid in self.live}
        self.role = {aid: ROLE.get(allocs[aid].role, "unspecified") for aid in self.live}

        def peak(weight):
            diff = [0] * (n + 1)
            for aid, (lo, hi) in self.live.items():
                w = weight(aid)
                if w:
                    diff[lo] += w
                    diff[hi] -= w
            best, cur, at = 0, 0, 0
            for i in range(n):
                cur += diff[i]
                if cur > best:
                    best, at = cur, i
            return best, at

        self.peak_live, _ = peak(lambda a: self.size[a])
        act_peak, self.turn = peak(lambda a: self.size[a] if self.role[a] == "activation" else 0)
        self.activation_peak = act_peak
        # Forward = the kernels before the turn (the position of peak live activation bytes,
        # swap-layer's forward/backward turn in deepum-sim).
        self.forward_us = sum(self.dur_us[:self.turn])
        self.ideal_us = sum(self.dur_us)
        # save_on_cpu: every tensor autograd saves is packed to the host in the forward pass
        # and unpacked in the backward pass. A saved tensor is one used on both sides of the
        # turn: activations and inputs (their GPU memory is then free between their last
        # forward and first backward use) and parameters (copied too, but still resident).
        self.saved_bytes = 0
        gaps = {}
        for aid, us in uses.items():
            if aid not in self.live or self.role[aid] not in ("activation", "input", "parameter"):
                continue
            fwd = [u for u in us if u < self.turn]
            bwd = [u for u in us if u >= self.turn]
            if not fwd or not bwd:
                continue
            self.saved_bytes += self.size[aid]
            if self.role[aid] != "parameter" and max(fwd) + 1 < min(bwd):
                gaps[aid] = (max(fwd) + 1, min(bwd))
        diff = [0] * (n + 1)
        for aid, (lo, hi) in self.live.items():
            s = self.size[aid]
            diff[lo] += s
            diff[hi] -= s
            if aid in gaps:
                g0, g1 = gaps[aid]
                g0, g1 = max(g0, lo), min(g1, hi)
                if g0 < g1:
                    diff[g0] -= s
                    diff[g1] += s
        cur, self.save_on_cpu_need = 0, 0
        for i in range(n):
            cur += diff[i]
            self.save_on_cpu_need = max(self.save_on_cpu_need, cur)
        # ZeRO-Offload: optimizer state and gradients live on the host; the optimizer step's
        # kernels (those touching optimizer state) leave the GPU for the CPU.
        self.zero_need, _ = peak(
            lambda a: 0 if self.role[a] in ("optimizer_state", "gradient") else self.size[a])
        self.fsdp_need, _ = peak(
            lambda a: 0 if self.role[a] in ("optimizer_state", "gradient", "parameter")
            else self.size[a])
        opt = {a for a in self.live if self.role[a] == "optimizer_state"}
        self.optimizer_us = sum(self.dur_us[i] for i, k in enumerate(ks)
                                if any(t.allocation_id in opt for t in k.tensors))
        self.parameter_bytes = sum(s for a, s in self.size.items() if self.role[a] == "parameter")
        self.gradient_bytes = sum(s for a, s in self.size.items() if self.role[a] == "gradient")
        if not self.parameter_count:
            self.parameter_count = self.parameter_bytes // 4  # fp32 profiles
        self.non_activation_peak, _ = peak(
            lambda a: 0 if self.role[a] in ("activation", "input") else self.size[a])


def sim(tools, profile, device, capacity, policy, iterations, warmup, plan=None):
    cmd = [os.path.join(tools, "deepum-sim"), profile, "--device", device, "--policy", policy,
           "--json", "--iterations", str(iterations), "--warmup", str(warmup)]
    cmd += ["--gpu-memory", str(capacity)] if isinstance(capacity, int) else \
        ["--oversubscription", str(capacity)]
    if plan:
        cmd += ["--plan", plan]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def plan_time(tools, profile, device, capacity, iterations, warmup, work):
    out = os.path.join(work, "p.plan.pb")
    subprocess.run([os.path.join(tools, "deepum-plan"), profile, "--gpu-memory", str(capacity),
                    "--device-model", device, "--quiet", "-o", out], check=True,
                   capture_output=True, text=True)
    return sim(tools, profile, device, capacity, "plan", iterations, warmup, plan=out)


def row(tools, data, model, device, ratio, a, iterations, warmup, work):
    dev = device_model(device)
    link = dev["link_bytes_per_second"]
    profile = os.path.join(data, f"{model}.profile.pb.gz")
    ideal = sim(tools, profile, device, ratio, "ideal", 1, 0)
    cap = ideal["gpu_memory_bytes"]
    if abs(ideal["ideal_us"] - a.ideal_us) > 1e-3 * ideal["ideal_us"]:
        sys.exit(f"alternatives: {model} on {device}: recomputed durations sum to "
                 f"{a.ideal_us:.1f} us, deepum-sim's ideal is {ideal['ideal_us']:.1f} us")
    r = dict(model=model, device=device, ratio=ratio, capacity=cap, ideal=ideal["ideal_us"],
             lower=None, peak_live=a.peak_live, link=link)
    p = plan_time(tools, profile, device, cap, iterations, warmup, work)
    u = sim(tools, profile, device, cap, "um", iterations, warmup)
    r.update(plan=p["iteration_us"], plan_faults=p["faults"], um=u["iteration_us"],
             lower=u["lower_bound_us"])
    # Checkpointing: the checkpointed profile under the plan at the same capacity where one is
    # shipped; else one more forward pass, its memory not modelled.
    ckpt = os.path.join(data, f"{model}-ckpt.profile.pb.gz")
    if os.path.exists(ckpt):
        c = plan_time(tools, ckpt, device, cap, iterations, warmup, work)
        r.update(ckpt=c["iteration_us"], ckpt_ideal=c["ideal_us"], ckpt_kind="profiled",
                 ckpt_fits=c["footprint_bytes"] <= cap, ckpt_footprint=c["footprint_bytes"])
    else:
        r.update(ckpt=a.ideal_us + a.forward_us, ckpt_ideal=a.ideal_us + a.forward_us,
                 ckpt_kind="modelled", ckpt_fits=a.non_activation_peak <= cap,
                 ckpt_footprint=None)
    # save_on_cpu(pin_memory=True): one copy per saved tensor each way, on the compute stream.
    r["soc_copy_us"] = 2 * a.saved_bytes / link * 1e6
    r["soc"] = a.ideal_us + r["soc_copy_us"]
    r["soc_need"] = a.save_on_cpu_need
    # ZeRO-Offload: updated parameters come back after the CPU step, on the critical path;
    # gradients leave during the backward pass, assumed hidden behind it.
    r["zero_cpu_us"] = a.parameter_count / CPU_ADAM_PARAMS_PER_S * 1e6
    r["zero"] = a.ideal_us - a.optimizer_us + a.parameter_bytes / link * 1e6 + r["zero_cpu_us"]
    r["zero_need"] = a.zero_need
    # FSDP CPU offload (one GPU): parameters too live on the host, copied in before the forward
    # and again before the backward pass and gradients copied out, on side streams that
    # overlap compute; the stock optimizer steps on the CPU after the backward pass.
    gpu_us = a.ideal_us - a.optimizer_us
    r["fsdp_cpu_us"] = a.parameter_count / TORCH_CPU_ADAM_PARAMS_PER_S * 1e6
    r["fsdp_param_us"] = 2 * a.parameter_bytes / link * 1e6
    r["fsdp"] = max(gpu_us, r["fsdp_param_us"], a.gradient_bytes / link * 1e6) + r["fsdp_cpu_us"]
    r["fsdp_need"] = a.fsdp_need
    check_row(r)
    return r


def check_row(r):
    """The modelled costs against what they are built from; any failure stops the script."""
    eps = 1e-6 * r["ideal"]
    problems = []
    if r["soc"] + eps < r["ideal"] + r["soc_copy_us"]:
        problems.append("save_on_cpu below ideal + copies / link")
    if r["plan"] + eps < r["lower"] or r["um"] + eps < r["lower"]:
        problems.append("a simulated policy beats deepum-sim's lower bound")
    if r["ckpt"] + eps < r["ckpt_ideal"]:
        problems.append("checkpointing below its own compute")
    if r["zero"] + eps < r["zero_cpu_us"]:
        problems.append("ZeRO-Offload below its CPU step")
    if r["fsdp"] + eps < r["fsdp_cpu_us"] + r["fsdp_param_us"] or r["fsdp_need"] > r["zero_need"]:
        problems.append("FSDP CPU offload inconsistent with its parts")
    if r["soc_need"] > r["peak_live"]:
        problems.append("save_on_cpu needs more memory than no offload")
    if problems:
        sys.exit(f"alternatives: {r['model']} on {r['device']} at {r['ratio']:g}x: "
                 + "; ".join(problems) + "; nothing written")


def cell(us, ideal, fits=True, need=None, mark=""):
    if not fits:
        return f"no fit ({need / GIB:.1f} GiB)" if need is not None else "no fit"
    return f"{us / 1e3:,.0f} ({us / ideal:.2f}x){mark}"


def ckpt_cell(r):
    if r["ckpt_kind"] == "modelled":
        if not r["ckpt_fits"]:
            return "no fit"
        return cell(r["ckpt"], r["ideal"], mark=" †")
    return cell(r["ckpt"], r["ideal"], mark="" if r["ckpt_fits"] else " with plan")


def candidates(r):
    """The columns that run at this capacity: the time of each."""
    cand = {"deepum plan": r["plan"], "plain UM": r["um"]}
    if r["ckpt_kind"] == "modelled":
        if r["ckpt_fits"]:
            cand["checkpointing †"] = r["ckpt"]
    else:
        cand["checkpointing" + ("" if r["ckpt_fits"] else " with plan")] = r["ckpt"]
    if r["soc_need"] <= r["capacity"]:
        cand["save_on_cpu"] = r["soc"]
    if r["zero_need"] <= r["capacity"]:
        cand["ZeRO-Offload"] = r["zero"]
    if r["fsdp_need"] <= r["capacity"]:
        cand["FSDP CPU offload"] = r["fsdp"]
    return cand


def fastest(r):
    cand = candidates(r)
    return min(cand, key=cand.get)


def render(rows, analyses, devices):
    out = []
    for device in devices:
        d = device_model(device)
        out += [f"### {device} (link {d['link_bytes_per_second'] / 1e9:g} GB/s per direction)", "",
                "| model | ratio | capacity GiB | peak live GiB | ideal | lower bound | deepum plan | "
                "plain UM | checkpointing | save_on_cpu | ZeRO-Offload | FSDP CPU offload | "
                "fastest that fits |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in (r for r in rows if r["device"] == device):
            ideal = r["ideal"]
            out.append(" | ".join([
                f"| {r['model']}", f"{r['ratio']:g}", f"{r['capacity'] / GIB:.2f}",
                f"{r['peak_live'] / GIB:.2f}", f"{ideal / 1e3:,.0f}", cell(r["lower"], ideal),
                cell(r["plan"], ideal), cell(r["um"], ideal),
                ckpt_cell(r),
                cell(r["soc"], ideal, r["soc_need"] <= r["capacity"], r["soc_need"]),
                cell(r["zero"], ideal, r["zero_need"] <= r["capacity"], r["zero_need"]),
                cell(r["fsdp"], ideal, r["fsdp_need"] <= r["capacity"], r["fsdp_need"]),
                fastest(r) + " |"]))
        out.append("")
        won = {}
        for r in (r for r in rows if r["device"] == device):
            won[fastest(r)] = won.get(fastest(r), 0) + 1
        n = sum(won.values())
        out += ["Fastest that fits, rows of " + str(n) + ": " + ", ".join(
            f"{k} {v}" for k, v in sorted(won.items(), key=lambda kv: -kv[1])) + ".", ""]
    out += ["### What the modelled columns are built from (per model, per device)", "",
            "| model | device | forward ms | saved for backward GiB | save_on_cpu copies ms | "
            "save_on_cpu needs GiB | optimizer step on GPU ms | ZeRO-Offload: CPU Adam ms | "
            "parameters back ms | ZeRO-Offload needs GiB | FSDP: torch CPU Adam ms | "
            "FSDP needs GiB | params, grads, optimizer state GiB |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (model, device), a in analyses.items():
        link = device_model(device)["link_bytes_per_second"]
        out.append(" | ".join([
            f"| {model}", device, f"{a.forward_us / 1e3:,.0f}", f"{a.saved_bytes / GIB:.2f}",
            f"{2 * a.saved_bytes / link * 1e3:,.0f}", f"{a.save_on_cpu_need / GIB:.2f}",
            f"{a.optimizer_us / 1e3:,.1f}",
            f"{a.parameter_count / CPU_ADAM_PARAMS_PER_S * 1e3:,.0f}",
            f"{a.parameter_bytes / link * 1e3:,.0f}", f"{a.zero_need / GIB:.2f}",
            f"{a.parameter_count / TORCH_CPU_ADAM_PARAMS_PER_S * 1e3:,.0f}",
            f"{a.fsdp_need / GIB:.2f}",
            f"{a.non_activation_peak / GIB:.2f} |"]))
    out.append("")
    return "\n".join(out)


def check_tables(text):
    """Every table row has as many cells as its header; every time cell is a number or 'no fit'."""
    header = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = len(cells)
        elif len(cells) != header:
            sys.exit(f"alternatives: malformed table row: {line}")
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--data", default=os.path.join(ROOT, "tests", "data"))
    ap.add_argument("--models", nargs="+", default=["resnet50", "vgg16", "gpt2-medium", "llama-1b"])
    ap.add_argument("--devices", nargs="+", default=["v100-pcie-16gb", "h100-pcie"])
    ap.add_argument("--ratios", nargs="+", type=float, default=[1.5, 2.0, 3.0])
    ap.add_argument("--iterations", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=6)
    ap.add_argument("--write", help="replace the generated part of this markdown file")
    a = ap.parse_args()
    tools = os.path.join(os.path.abspath(a.build), "tools")
    rows, analyses = [], {}
    with tempfile.TemporaryDirectory() as work:
        for device in a.devices:
            for model in a.models:
                an = Analysis(os.path.join(a.data, f"{model}.profile.pb.gz"), device_model(device))
                analyses[(model, device)] = an
                for ratio in a.ratios:
                    print(f"alternatives: {model} {device} {ratio:g}x", file=sys.stderr)
                    rows.append(row(tools, a.data, model, device, ratio, an, a.iterations,
                                    a.warmup, work))
    text = check_tables(render(rows, analyses, a.devices))
    if not a.write:
        sys.stdout.write(text)
        return
    with open(a.write) as f:
        page = f.read()
    if BEGIN not in page or END not in page:
        sys.exit(f"alternatives: {a.write} lacks the markers")
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(a.write, "w") as f:
        f.write(head + BEGIN + "\n\n" + text + "\n" + END + tail)


if __name__ == "__main__":
    main()
