"""Fetching the GPU presets' models from the Hugging Face hub: one-line messages for the ways
a download fails (offline, gated, missing), a progress hook, and the vocabulary check a draft
and target pair must pass before sps uses them."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..tuning.presets import Model

Progress = Callable[[str, float, float], None]  # (what, bytes done, bytes expected so far)


class HubError(RuntimeError):
    """A model that cannot be fetched; the message is one line for the user."""


def download(model: Model, progress: Progress | None = None, token: str | None = None,
             cache_dir: str | Path | None = None) -> Path:
    """The model's files in the local hub cache (downloaded if missing); returns its folder.
    token=None uses the login or HF_TOKEN, as huggingface_hub does."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
    )

    try:
        return Path(snapshot_download(model.repo, allow_patterns=list(model.files), token=token, cache_dir=cache_dir,
                                      tqdm_class=progress_class(progress) if progress else None))
    except GatedRepoError:  # before RepositoryNotFoundError: it is a subclass
        raise HubError(f"{model.repo} is gated: accept its licence on https://huggingface.co/{model.repo} "
                       "and log in (hf auth login) or set HF_TOKEN") from None
    except RepositoryNotFoundError:
        raise HubError(f"{model.repo} does not exist on the Hugging Face hub "
                       "(or is private and needs a token)") from None
    except (LocalEntryNotFoundError, OfflineModeIsEnabled, ConnectionError):
        # snapshot_download turns offline mode and network failures into LocalEntryNotFoundError
        raise HubError(f"cannot reach the Hugging Face hub to fetch {model.repo}, and it is not in the local "
                       "cache (offline, or HF_HUB_OFFLINE is set)") from None


def progress_class(progress: Progress):
    """A tqdm class for snapshot_download that reports its byte counters' updates to `progress`.
    snapshot_download draws a file counter with it too; that one is left out, so that a single
    bar does not jump between a count of files and a count of bytes."""
    from tqdm.auto import tqdm

    class Reporting(tqdm):
        def update(self, n=1):
            shown = super().update(n)
            if self.unit == "B":
                progress(self.desc or "", float(self.n), float(self.total or 0))
            return shown

    return Reporting


def vocab_mismatch(target: str | Path, draft: str | Path) -> str:
    """Why two tokenizers (local folders or hub ids) cannot serve as target and draft, "" when
    their vocabularies map the same strings to the same ids."""
    from transformers import AutoTokenizer

    a = AutoTokenizer.from_pretrained(target).get_vocab()
    b = AutoTokenizer.from_pretrained(draft).get_vocab()
    if a == b:
        return ""
    only_a, only_b = a.keys() - b.keys(), b.keys() - a.keys()
    moved = sum(1 for t in a.keys() & b.keys() if a[t] != b[t])
    return (f"different vocabularies: {len(only_a)} tokens only in the target, {len(only_b)} only in the draft, "
            f"{moved} with other ids")
