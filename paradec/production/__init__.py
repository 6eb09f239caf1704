"""Production engines beside the explorer: the same methods on vLLM or SGLang, read the way those
engines report them (per-request metrics, Prometheus counters, server info), turned into paradec's
own figures (τ, acceptance per position, speedup) and, where the engine reports every step, into a
coarse paradec trace. Standard library and prometheus_client only: the app uses it without torch.

Which engine is asked is the operator's choice alone (a command-line flag, the service's start-up
option, the app's PARADEC_ENGINE): a request or a visitor never names the URL."""
