"""What the demo's containers print, as PyTorch and TensorFlow training scripts print it:
progress lines, then, for the ones that fail, the lines that say why. The kubelet serves
them through pods/log (``testbed.logs``), and the operator keeps their tails."""


def _steps(prefix: str, first: int, count: int, loss: float) -> str:
    lines = []
    for step in range(first, first + count):
        lines.append(f"{prefix} step {step:>5} | loss {loss:.4f} | lr 2.0e-05 | 412 samples/s")
        loss *= 0.997
    return "\n".join(lines) + "\n"


def succeeded(rank: int) -> str:
    """A DDP rank of the MNIST example that ends well."""
    return (
        f"[rank{rank}] Using device cuda:0, world size 2\n"
        + _steps(f"[rank{rank}] epoch 10", 900, 8, 0.0412)
        + f"[rank{rank}] Test set: Average loss: 0.0291, Accuracy: 9912/10000 (99%)\n"
        + f"[rank{rank}] saved checkpoint to /mnt/ckpt/mnist-ddp/final.pt\n"
    )


def resumed(rank: int, step: int) -> str:
    """A DDP rank of a job preempted before, resumed from its last checkpoint."""
    return (
        f"[rank{rank}] resuming from /mnt/ckpt/vit-pretrain/step-{step}.pt\n"
        + _steps(f"[rank{rank}] epoch 30", step + 1, 8, 0.7315)
        + f"[rank{rank}] saved checkpoint to /mnt/ckpt/vit-pretrain/final.pt\n"
    )


def oom_killed_tensorflow() -> str:
    """A TensorFlow worker the kernel kills for memory: no traceback, the log just stops."""
    return (
        "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1928] "
        "Created device /job:worker/replica:0/task:1/device:GPU:0 with 38375 MB memory\n"
        + _steps("Epoch 3/10", 1380, 8, 0.4123)
        + "W tensorflow/tsl/framework/cpu_allocator_impl.cc:83] "
        "Allocation of 8589934592 exceeds 10% of free system memory.\n"
        "W tensorflow/tsl/framework/cpu_allocator_impl.cc:83] "
        "Allocation of 8589934592 exceeds 10% of free system memory.\n"
    )


def lost_its_peer_tensorflow() -> str:
    """The other TensorFlow worker, whose collective fails when its peer dies."""
    return _steps("Epoch 3/10", 1380, 8, 0.4119) + (
        "Traceback (most recent call last):\n"
        '  File "/opt/bert/run_finetune.py", line 214, in <module>\n'
        "    history = model.fit(train_ds, epochs=10, callbacks=callbacks)\n"
        '  File "/usr/local/lib/python3.10/dist-packages/keras/src/utils/traceback_utils.py", '
        "line 70, in error_handler\n"
        "    raise e.with_traceback(filtered_tb) from None\n"
        "tensorflow.python.framework.errors_impl.UnavailableError: Collective ops is aborted "
        "by: failed to connect to all addresses; last error: UNKNOWN: ipv4:172.16.3.12:2222: "
        "Failed to connect to remote host: Connection refused\n"
        "The error could be from a previous operation. Restart your program to reset.\n"
        "\t [[{{node CollectiveReduceV2}}]] [Op:__inference_train_function_48213]\n"
    )


def cuda_out_of_memory(rank: int, step: int) -> str:
    """A PyTorch rank that runs out of GPU memory in its backward pass."""
    return _steps(f"[rank{rank}] epoch 1", step - 8, 8, 1.8731) + (
        "Traceback (most recent call last):\n"
        '  File "/workspace/train_sft.py", line 311, in <module>\n'
        "    main()\n"
        '  File "/workspace/train_sft.py", line 287, in main\n'
        "    loss.backward()\n"
        '  File "/usr/local/lib/python3.11/site-packages/torch/_tensor.py", line 626, '
        "in backward\n"
        "    torch.autograd.backward(\n"
        '  File "/usr/local/lib/python3.11/site-packages/torch/autograd/__init__.py", '
        "line 347, in backward\n"
        "    _engine_run_backward(\n"
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. "
        "GPU 3 has a total capacity of 79.15 GiB of which 2.12 GiB is free. Of the allocated "
        "memory 74.02 GiB is allocated by PyTorch, and 1.87 GiB is reserved by PyTorch but "
        "unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n"
    )


def nccl_timeout(rank: int, step: int) -> str:
    """A PyTorch rank whose collective times out when another rank dies."""
    return _steps(f"[rank{rank}] epoch 1", step - 8, 8, 1.8729) + (
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=48211, OpType=ALLREDUCE, NumelIn=262144000, "
        "NumelOut=262144000, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.\n"
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank {rank}] Process group watchdog "
        "thread terminated with exception: NCCL error: remote process exited or there was a "
        "network error, NCCL version 2.21.5\n"
        "ncclRemoteError: A call failed possibly due to a network error or a remote process "
        "exiting prematurely.\n"
        "torch.distributed.DistBackendError: NCCL communicator was aborted on rank "
        f"{rank}.\n"
    )
