# The Hugging Face Space (README.md's front matter: sdk: docker, app_port: 8501). The install is
# scripts/install.sh, the same script `make setup` runs and the fresh-venv test exercises.
#
# CPU by default. On a GPU Space, set the Space variable TORCH_INDEX to a CUDA wheel index (e.g.
# https://download.pytorch.org/whl/cu128): Spaces pass variables to the build as arguments, and
# CUDA wheels carry their own CUDA libraries, so this slim base serves both.
FROM python:3.11-slim

ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu

# A C++ compiler, ninja and Python's headers build paradec's CPU kernel (paradec/cpu/kernels.py) for the CPU the
# Space runs on. This base's Python carries its headers; a Debian python3 (make space-check's stand-in for this
# base, when the registry cannot be reached) needs python3-dev for them.
RUN apt-get update \
    && apt-get install -y --no-install-recommends g++ ninja-build $(python3 -c "import os, sysconfig; \
       print('' if os.path.exists(sysconfig.get_paths()['include'] + '/Python.h') else 'python3-dev')") \
    && rm -rf /var/lib/apt/lists/*

# Spaces run the container as uid 1000; everything it writes (the venv, the hub cache, the
# converted embedded model) lives under that user's home.
RUN useradd --create-home --uid 1000 user
USER user
ENV HOME=/home/user \
    XDG_CACHE_HOME=/home/user/.cache \
    HF_HOME=/home/user/.cache/huggingface \
    PIP_NO_CACHE_DIR=1 \
    PYTHONUNBUFFERED=1
WORKDIR /home/user/app

# The install first, on its own layer: code changes do not redo it.
COPY --chown=user requirements.txt ./
COPY --chown=user scripts/install.sh scripts/
RUN TORCH_INDEX="$TORCH_INDEX" scripts/install.sh /home/user/venv

COPY --chown=user . .
# The image requires its CPU kernel: without it every live run takes torch's slower products, and nothing would
# say so. Under require the kernel's build below, and the check before the app starts, fail rather than fall back.
ENV PARADEC_KERNEL=require
# Convert the embedded model's GGUF now (~20 s), not on every start of the Space, and build the CPU kernel
# (built for the builder's CPU, -march=native: the start rebuilds it where the Space's CPU differs).
RUN /home/user/venv/bin/python -c "from paradec.models import embedded_path; embedded_path()" \
    && /home/user/venv/bin/python -m paradec.cpu.kernels

EXPOSE 8501
# The kernel first: loaded, or rebuilt for this CPU (about a minute on 2 cores), or the container stops with the
# reason as its last log line. XSRF protection off: the Space shows the app in an iframe whose browsers drop
# Streamlit's XSRF cookie, which makes every upload (the trace Import) fail with 403; the app keeps no user data.
CMD ["/bin/sh", "-c", "/home/user/venv/bin/python -m paradec.cpu.kernels && exec /home/user/venv/bin/streamlit \
run app.py --server.address=0.0.0.0 --server.port=8501 --server.enableXsrfProtection=false"]
