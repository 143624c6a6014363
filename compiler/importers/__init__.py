"""Importers: XLA HLO text, ONNX and the project's JSON format, each building a Graph."""
