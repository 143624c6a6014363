"""Fusion Explorer's compiler: a pure Python library (no Django, no Celery, no GPU needed).

Stages, each a function from one plain artifact to the next (see DESIGN.md): importers build
the Graph IR, ir/verify checks it, ir/interpreter defines what it computes.
"""
