# The CUDA toolkit's stub libcuda.so as libcuda.so.1, first on the library
# path: every entry point the backend needs resolves (a missing one would
# be named), and cuInit fails as a stub's does. Exit 4 (no GPU), with the
# driver's error, on any machine, GPU or not. Skipped without the toolkit.
# RUN: test -n "$SHARDC_CUDA_STUB" || { echo "skipped: no CUDA toolkit (no stub libcuda.so)"; exit 77; }
# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# RUN: mkdir -p %t.lib && ln -sf "$SHARDC_CUDA_STUB" %t.lib/libcuda.so.1
# RUN: LD_LIBRARY_PATH=%t.lib %expect 4 %shardrun %t.plan --backend cuda 2>&1 | FileCheck %s
# CHECK: shardrun: error: --backend cuda: no usable CUDA driver: cuInit failed: CUDA_ERROR_STUB_LIBRARY (the CUDA driver is a stub library, not a driver)
# CHECK-NOT: error
