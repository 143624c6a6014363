"""The compiler's stages put together, the top floor under the CLI: compile a graph end to end
(`pipeline`: import, explore, codegen, price), codegen of a whole plan with its nvcc build and
emulated check (`codegen`), time its plans on a GPU (`measure`), the graph view pages draw
(`graph_view`, `graph_layout`) and the learned cost model's data collection (`learned/`).
"""
