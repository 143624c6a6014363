"""The Graph IR: dtypes, shapes, graphs, the ops table, the verifier, printer and interpreter."""
