"""paradec: parallel decoding of LLMs, run for real, traced step by step.

Importing paradec (or paradec.traces.trace / paradec.core.tree) does not import torch: recorded traces
replay without it. The decoders live in paradec.core.engine, paradec.core.verify and paradec.drafters.
"""
__version__ = "0.1.0"
