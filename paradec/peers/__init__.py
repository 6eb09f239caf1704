"""Other engines bench times beside paradec's methods in the same run, each in a process of its own
(llamacpp: llama.cpp on the embedded GGUF file). Hugging Face's peers run in bench's own process (paradec.bench)
and production engines over HTTP (paradec.production)."""
