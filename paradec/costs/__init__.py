"""What a forward pass and a run cost: the machine's probe, the roofline, the speculative cost model, tree
attention's reads, and memory, measured and modelled."""
