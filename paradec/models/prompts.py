"""A user's prompt as token ids, and the tokens that end an answer."""
from __future__ import annotations


def encode_prompt(tokenizer, prompt: str, chat: bool = True) -> list[int]:
    """Token ids of a user prompt, wrapped in the model's own chat template when it has one."""
    if chat and getattr(tokenizer, "chat_template", None):
        enc = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, return_dict=True
        )
        return list(enc["input_ids"])
    return tokenizer(prompt)["input_ids"]


def eos_ids(tokenizer, model) -> set[int]:
    ids = model.generation_config.eos_token_id if model.generation_config else None
    ids = ids if isinstance(ids, list) else [ids]
    return {i for i in ids + [tokenizer.eos_token_id] if i is not None}
