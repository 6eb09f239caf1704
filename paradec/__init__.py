"""paradec: parallel decoding of LLMs, run for real, traced step by step.

Importing paradec (or paradec.trace / paradec.tree) does not import torch: recorded traces
replay without it. The decoders live in paradec.engine, paradec.verify and paradec.drafters.
"""
__version__ = "0.1.0"
