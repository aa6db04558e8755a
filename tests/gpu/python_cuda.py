"""python_cuda.py PLAN OUT_DIR: the Python package (python/shardc over the
build's libshardc, SHARDC_LIBRARY) runs PLAN, whose inputs are all f32,
on the cuda backend: every input bound from a numpy array (normal, numpy
seed 7), then 2 steps with params from seed 7. It writes the inputs to
OUT_DIR/inputs.safetensors, and the outputs and the params after the
steps to OUT_DIR/py.out.safetensors and OUT_DIR/py.params.safetensors, for
tests/gpu/run.sh to compare with shardrun's CPU run of the same plan on
those inputs. With torch there, a torch CPU tensor bound by DLPack must
be read in place (bind returns the tensor's own address) and a step run
on it. With torch and a CUDA device, the same inputs as torch CUDA
tensors (one of them transposed in memory) bound by DLPack must be read
in place on the device, the two steps' outputs equal the numpy run's to
the bit (the same kernels on the same values), and an output written
into a torch CUDA tensor equal it too. Exit 1 on a failed check."""
import os
import sys

import numpy as np

import shardc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from st_io import st_write  # noqa: E402


def main():
    plan_path, out = sys.argv[1], sys.argv[2]
    plan = shardc.load_plan(plan_path)
    inputs = plan.tensors("input")
    rng = np.random.default_rng(7)
    arrays = {n: rng.standard_normal(t["shape"]).astype(np.float32) for n, t in inputs.items()}
    st_write(os.path.join(out, "inputs.safetensors"),
             [(n, "F32", list(a.shape), a.reshape(-1).tolist()) for n, a in arrays.items()])
    with shardc.Session(plan, backend="cuda", seed=7) as s:
        for name, a in arrays.items():
            s.bind(name, a)
        s.step(2)
        s.save_outputs(os.path.join(out, "py.out.safetensors"))
        s.save_params(os.path.join(out, "py.params.safetensors"))
    try:
        import torch
    except ImportError:
        print("python_cuda: no torch here: the DLPack check is skipped")
        return 0
    with shardc.Session(plan, backend="cuda", seed=7) as s:
        held = {n: torch.from_numpy(a.copy()) for n, a in arrays.items()}
        for name, x in held.items():
            if s.bind(name, x) != x.data_ptr():
                print(f"python_cuda: '{name}' was not bound in place")
                return 1
        s.run()
    print("python_cuda: torch CPU tensors bound in place, a step run on the GPU")
    if not torch.cuda.is_available():
        print("python_cuda: torch sees no CUDA device: the device-memory check is skipped")
        return 0
    with shardc.Session(plan, backend="cuda", seed=7) as ref:
        for name, a in arrays.items():
            ref.bind(name, a)
        ref.step(2)
        want = {n: ref.output(n) for n in plan.tensors("output")}
    with shardc.Session(plan, backend="cuda", seed=7) as s:
        held = {}
        for k, (name, a) in enumerate(arrays.items()):
            t = torch.from_numpy(a)
            if k == 0 and t.dim() == 2:  # a transposed layout: read by strides
                t = t.t().contiguous().t()
            held[name] = t.cuda()
        torch.cuda.synchronize()
        for name, x in held.items():
            if s.bind(name, x) != x.data_ptr():
                print(f"python_cuda: CUDA tensor '{name}' was not bound in place")
                return 1
        s.step(2)
        for name, w in want.items():
            got = s.output(name)
            dev = torch.empty(got.shape, dtype=torch.from_numpy(got).dtype, device="cuda")
            s.output(name, out=dev)
            if not np.array_equal(got, w) or not np.array_equal(dev.cpu().numpy(), w):
                print(f"python_cuda: output '{name}' from CUDA tensors differs from the numpy "
                      "run's")
                return 1
    print("python_cuda: torch CUDA tensors bound in place (one transposed), the outputs equal "
          "the numpy run's, written into a CUDA tensor too")
    return 0


if __name__ == "__main__":
    sys.exit(main())
