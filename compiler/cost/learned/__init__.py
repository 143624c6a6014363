"""The learned cost model (issue 8): a GraphSAGE network over a kernel's op graph and its
CodeGen plan that predicts the kernel's runtime, after Kaufman et al., "A Learned Performance
Model for Tensor Processing Units" (MLSys 2021), adapted to GPUs.

NumPy only (the compiler builds samples without torch):
- features.py: `kernel_sample(graph, kernel, plan, device, ...)`: one kernel under one plan;
- dataset.py: the dataset file (gzip JSON lines with a header naming the features);
- synthetic.py: a known runtime function, to test the pipeline where nothing is measured.
The data itself is made by running the compiler, a stage above this package
(compiler/stages/learned/: a program's samples, GPU collection, the web app's measurements).

torch + torch_geometric:
- model.py: `CostModel`, `ModelConfig`, `collate`, `predict_us`;
- train.py: losses, `train`, `metrics` / `evaluate`, `save_model` / `load_model`;
- experiment.py: splits by program and by model family, learned vs SOL vs projected on the
  same held-out set, the readout comparison, `train_costmodel` (a versioned model file);
- registry.py: the versioned model files of a directory and which one is active;
- predict.py: `LearnedPredictor`, `attach_learned`: learned times in explore/codegen results.

No GPU has measured anything for it yet: the tests and benchmarks fit a synthetic function and
no accuracy on GPUs is claimed. This package does not import torch itself: import the submodule
you need.
"""
