"""The learned cost model's data, made by running the compiler (compiler/cost/learned/ holds the
model, its features and the dataset file format):
- samples.py: the samples of a whole program (every strategy's kernels, their candidate plans);
- collect.py: a dataset collected on a GPU (every candidate built, checked, timed alone);
- records.py: samples from the web app's measurements of a run.
"""
