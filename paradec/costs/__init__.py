"""What a forward pass costs: the machine's probe, the roofline, the speculative cost model and tree attention's
reads (measured memory is the benchmark's: paradec.bench_memory; the presets' memory model: paradec.tuning)."""
