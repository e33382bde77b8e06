#!/usr/bin/env python3
"""NCCL all-reduce time on two GPUs of this machine, with PyTorch alone (no ember).

A reference for ember's gradient sync: one 25 MB bucket and the small preset's whole gradient
(about 580 MB in fp32). Run with NCCL_NVLS_ENABLE=0 on the shared GPU machines:
    NCCL_NVLS_ENABLE=0 python3 bench/nccl_allreduce_probe.py
(NCCL_DEBUG=INFO also prints the transport, e.g. "via P2P/CUMEM" over NVLink.)
"""
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES_MB = (25, 580)


def run(rank: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533", RANK=str(rank), WORLD_SIZE="2",
                      LOCAL_RANK=str(rank))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl")
    for mb in SIZES_MB:
        x = torch.ones(mb * 262144, device="cuda")  # 262144 fp32 values per MB
        for _ in range(3):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        start = time.time()
        for _ in range(10):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        seconds = (time.time() - start) / 10
        if rank == 0:
            print(f"allreduce {mb} MB fp32: {seconds * 1e3:.2f} ms, algbw {mb / 1024 / seconds:.1f} GB/s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, nprocs=2)
