"""The learned cost model (issue 8): a GraphSAGE network over a kernel's op graph and its
CodeGen plan that predicts the kernel's runtime, after Kaufman et al., "A Learned Performance
Model for Tensor Processing Units" (MLSys 2021), adapted to GPUs.

- features.py: `kernel_sample(graph, kernel, plan, device, breakdown=None, resources=None)`,
  NumPy only, so the compiler can build samples without torch;
- model.py: `CostModel`, `ModelConfig`, `collate`, `predict_us` (torch + torch_geometric);
- train.py: losses, `split_by_program`, `train`, `metrics` / `evaluate`, `save_model` /
  `load_model`.

Nothing here has been trained on measured GPU times yet: the tests fit a known synthetic
function; no accuracy on GPUs is claimed. This package does not import torch itself: import
the submodule you need.
"""
