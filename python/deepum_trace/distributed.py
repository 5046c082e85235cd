"""Tracing one rank of data-parallel training, as torchrun starts it.

torchrun starts one tracer per rank with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT set. With more than one rank, every tracer joins a gloo process group and
trains a DistributedDataParallel around its model, so its profile holds what a DDP rank
allocates beyond single-process training: the gradient buckets the reducer averages in
(one flat buffer per bucket, as large as the gradients together) and the coalesced
buffer broadcasts of the forward. Each rank writes its own profile: `{rank}` and
`{local_rank}` in the output path name it.

Every rank must issue the same collectives in the same order or gloo waits forever: all
ranks build the model from the same seed, take the same warm-up and traced steps at the
same batch sizes, and the process group has a timeout.
"""

import datetime
import os
from dataclasses import dataclass


class DistributedError(ValueError):
    pass


@dataclass
class World:
    rank: int
    local_rank: int
    size: int
    local_size: int

    @property
    def parallel(self):
        return self.size > 1


def from_environ(environ=None):
    """The launch torchrun describes in the environment; a single process without it."""
    env = os.environ if environ is None else environ

    def number(name, default):
        text = env.get(name, "")
        if text == "":
            return default
        try:
            return int(text)
        except ValueError:
            raise DistributedError(f"{name}={text!r} is not a number") from None

    size = number("WORLD_SIZE", 1)
    rank = number("RANK", 0)
    world = World(rank, number("LOCAL_RANK", rank), size, number("LOCAL_WORLD_SIZE", size))
    if size < 1 or not 0 <= rank < size:
        raise DistributedError(f"RANK={rank} is not a rank of WORLD_SIZE={size}")
    if world.parallel:
        missing = [v for v in ("MASTER_ADDR", "MASTER_PORT") if not env.get(v)]
        if missing:
            raise DistributedError(f"WORLD_SIZE={size} but {' and '.join(missing)} not set "
                                   "(start the tracer with torchrun)")
    return world


def output_path(template, world):
    """`template` with {rank} and {local_rank} replaced. With several ranks, a path that
    does not tell them apart is refused: they would overwrite each other's profile."""
    if world.parallel:
        unique = "{rank}" in template or \
            ("{local_rank}" in template and world.local_size == world.size)
        if not unique:
            raise DistributedError(
                f"-o {template}: all {world.size} ranks would write this one file; put "
                "{rank} in the path, e.g. -o 'model.rank{rank}.profile.pb.gz'")
    return template.replace("{rank}", str(world.rank)) \
        .replace("{local_rank}", str(world.local_rank))


def join(world, timeout_s):
    """Join the gloo process group of `world`; returns the module to leave it with."""
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_gloo_available():
        raise DistributedError("this torch has no torch.distributed with gloo")
    dist.init_process_group("gloo", init_method="env://", rank=world.rank,
                            world_size=world.size,
                            timeout=datetime.timedelta(seconds=timeout_s))
    return dist


def wrap(workload):
    """Train `workload` data-parallel: its loss calls a DistributedDataParallel around the
    model (which still names the parameters), DDP's gradient buckets become persistent
    state of the trace, and the buckets' rebuild in DDP's second step is not traced."""
    from torch.nn.parallel import DistributedDataParallel
    workload.wrapper = DistributedDataParallel(workload.model)
    workload.warmup_steps = max(workload.warmup_steps, 2)
    workload.held_state = ("GRADIENT", "ddp.gradient_bucket")
    return workload
