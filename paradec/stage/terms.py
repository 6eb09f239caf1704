"""The glossary's terms: every technical term of the article the app teaches, in English and French, a one-line
definition and the view that shows it (the app's glossary, ui/glossary.py, and the static site's draw them; a predict
question links the ones it uses, paradec.stage.learn). Data only."""
from __future__ import annotations

from dataclasses import dataclass

from ..words import N_


@dataclass(frozen=True)
class Term:
    en: str
    fr: str
    meaning: str  # one line, in English (N_); French from the catalogue
    view: str = ""  # the page that shows it (URL path), "" when the app does not
    where: str = ""  # what to look at there


T = Term
SECTIONS = {
    N_("Why decoding is slow"): [
        T("LLM", "LLM (grand modèle de langage)", N_("A large language model: here SmolLM2-135M, a small one."), "ar"),
        T("token", "token", N_("The unit a model reads and writes: a word or a piece of one."), "ar",
          N_("the token stream under the player")),
        T("autoregressive generation", "génération autorégressive", N_("Writing one token per forward pass, each "
          "pass waiting for the token before it."), "ar", N_("the player: one token per step")),
        T("forward pass", "passage (forward pass)", N_("One run of the whole model over the tokens it is given; "
          "it reads every weight once."), "ar"),
        T("decode phase", "phase de decode", N_("Generation after the prompt is read: one pass per token, "
          "memory-bound."), "roofline"),
        T("roofline analysis", "analyse roofline", N_("A chart of attainable FLOP/s against arithmetic "
          "intensity: left of the ridge, memory limits; right of it, compute."), "roofline",
          N_("the roofline chart")),
        T("arithmetic intensity", "intensité arithmétique", N_("FLOPs computed per byte read from memory; about "
          "1 FLOP/byte for a one-token decode pass in bfloat16."), "roofline"),
        T("ridge point", "point de crête", N_("The arithmetic intensity where a chip stops waiting on memory and "
          "starts waiting on compute."), "roofline"),
        T("memory bandwidth", "bande passante mémoire", N_("Bytes per second the memory delivers: the limit of "
          "a decode pass."), "roofline"),
        T("compute-bound", "compute-bound (limité par le calcul)", N_("A pass that waits on arithmetic, not "
          "memory: extra tokens in it are no longer free."), "roofline"),
        T("FLOP, TFLOPS", "FLOP, TFLOPS", N_("One floating-point operation; TFLOPS: 10¹² per second."), "roofline"),
        T("GPU", "GPU", N_("The accelerator LLMs are served on. This app runs on a CPU; its Roofline page shows "
          "GPUs with their published figures."), "roofline"),
    ],
    N_("Draft and verify"): [
        T("parallel decoding", "parallel decoding (décodage parallèle)", N_("Producing or checking several "
          "tokens in one pass instead of one token per pass."), ""),
        T("speculative decoding", "speculative decoding (décodage spéculatif)", N_("A cheap drafter proposes "
          "several tokens; the target checks them all in one pass and keeps the right ones."), "sps"),
        T("draft-and-verify", "spéculation puis vérification", N_("The family of methods that propose tokens "
          "first and verify them in one target pass."), "sps"),
        T("draft model", "modèle brouillon", N_("The small model that proposes tokens (q)."), "sps"),
        T("target model", "modèle cible", N_("The model whose output must not change (p); it verifies."), "sps"),
        T("draft tokens", "tokens brouillon (candidats)", N_("The tokens proposed for the target to check."),
          "sps", N_("the draft tree of each step")),
        T("rejection sampling", "rejection sampling", N_("Keep a drafted token with probability min(1, p/q), "
          "else resample from the residual: the output follows p exactly."), "sps",
          N_("the microscope of a sampled run")),
        T("acceptance rate", "taux d'acceptation", N_("The share of tested draft tokens the target accepts, "
          "counted per depth (α)."), "sps", N_("the acceptance-by-depth chart")),
        T("τ (tokens per forward)", "τ (tokens par passe)", N_("Tokens committed per target forward pass, the "
          "bonus included: AR's is 1."), "benchmark"),
        T("bonus token", "token bonus", N_("The target's own next token, free from the same verify pass."), "sps"),
        T("speedup", "speedup (accélération)", N_("Wall-clock time of AR over the method's, on the same prompt."),
          "benchmark"),
        T("lossless", "sans perte", N_("The output is exactly the target's (greedy) or follows its distribution "
          "(sampling)."), "benchmark"),
        T("prompt lookup", "prompt lookup", N_("Draft by copying what followed the last n-gram's earlier "
          "occurrence in the prompt: no model at all."), "pld"),
        T("n-gram", "n-gram", N_("A sequence of n tokens."), "pld"),
    ],
    N_("Heads and features"): [
        T("multi-token prediction", "prédiction parallèle (multi-token prediction)", N_("The model itself "
          "predicts several future tokens at once."), "medusa"),
        T("prediction heads", "têtes de prédiction (têtes de décodage)", N_("Small extra layers on the "
          "target's last hidden state; head k guesses the token k+1 positions ahead."), "medusa",
          N_("the per-head acceptance chart")),
        T("FFN with a residual connection", "FFN avec connexion résiduelle", N_("A Medusa head: one "
          "feed-forward layer whose input is added to its output."), "medusa"),
        T("top-K", "top-K", N_("The K most likely tokens of a head, each a branch of the tree."), "medusa"),
        T("Medusa", "Medusa", N_("Prediction heads on a frozen target, verified as a tree."), "medusa"),
        T("Medusa-2", "Medusa-2", N_("Medusa trained with the target, and typical acceptance: a threshold on p "
          "(lossy)."), "medusa", N_("the acceptance option")),
        T("typical acceptance", "typical acceptance", N_("Accept a draft token when the target gives it enough "
          "probability: faster, but the output can change (lossy)."), "medusa"),
        T("EAGLE", "EAGLE", N_("A one-layer head that drafts from the target's features, not only its last "
          "token."), "eagle"),
        T("features", "features (caractéristiques des couches)", N_("The hidden states of the target's layers, "
          "which EAGLE drafts from."), "eagle"),
        T("dynamic draft tree (EAGLE-2)", "arbre de draft dynamique (EAGLE-2)",
          N_("EAGLE-2: the tree grows where the head is confident, step by step."), "eagle"),
        T("multi-layer feature fusion (EAGLE-3)", "fusion multi-couches (EAGLE-3)",
          N_("EAGLE-3: features from a low, a middle and a high layer together."), "eagle"),
        T("single-model methods", "méthodes single-model", N_("Methods with no separate draft model: Medusa, "
          "EAGLE, early exit."), "eagle"),
        T("early exit", "early exit (sortie anticipée)", N_("The target's own first layers draft, with a small "
          "trained exit head."), "early_exit"),
        T("Kangaroo", "Kangaroo", N_("Early-exit drafting that stops when the exit layer is unsure (confidence). "
          "paradec's early exit has a confidence rule; Kangaroo itself is not run."), "early_exit"),
    ],
    N_("Iterating a block"): [
        T("Jacobi decoding", "décodage de Jacobi", N_("Guess a block of tokens, re-predict all in one pass, "
          "repeat until the guesses stop changing."), "jacobi", N_("the convergence grid")),
        T("Jacobi iteration", "itération de Jacobi", N_("One pass over the whole block of guesses."), "jacobi"),
        T("fixed point", "point fixe (convergence)", N_("A guess the target predicts again: it is final."),
          "jacobi"),
        T("Consistency LLMs (CLLM)", "Consistency LLMs (CLLM)", N_("A model fine-tuned to jump to the fixed "
          "point from any Jacobi state."), "jacobi"),
        T("blockwise parallel decoding", "décodage par blocs", N_("Stern et al. 2018: extra heads propose a "
          "block of tokens, the model verifies it; the ancestor of Medusa and of Jacobi-style methods."),
          "medusa"),
        T("Lookahead decoding", "Lookahead decoding", N_("Jacobi iterations in a 2D window feed a pool of "
          "n-grams, verified in the same pass."), "lookahead"),
        T("2D window", "fenêtre 2D", N_("Lookahead's window: W positions by N levels of Jacobi trajectories."),
          "lookahead", N_("the window in the combined mask")),
        T("lookahead branch", "branche lookahead", N_("The window part of a Lookahead pass: it grows the pool."),
          "lookahead"),
        T("verification branch", "branche vérification", N_("The n-grams from the pool checked in the same "
          "pass."), "lookahead"),
        T("diffusion models", "modèles de diffusion", N_("Models that denoise a whole sequence step by step; "
          "like Jacobi, they refine all positions at once. Not in the app."), ""),
    ],
    N_("Trees"): [
        T("tree attention", "attention en arbre", N_("Verify a tree of candidates in one pass: each node sees "
          "only its ancestors."), "medusa", N_("the attention mask beside the tree")),
        T("attention mask", "masque d'attention", N_("Which earlier tokens each position may read; a tree's "
          "encodes its branches."), "eagle"),
        T("root", "racine", N_("The tree's first node: the last verified token."), "medusa"),
        T("branch", "branche", N_("One candidate continuation, root to leaf."), "medusa"),
        T("depth", "profondeur", N_("How many tokens ahead a node is."), "medusa"),
        T("branching factor", "facteur de branchement", N_("Children per node."), "medusa"),
        T("KV cache", "KV-cache", N_("The keys and values of past tokens, kept so a pass computes only the new "
          "ones; a tree adds its nodes' entries."), "roofline"),
        T("DeFT", "DeFT (Decoding with Flash Tree-attention)", N_("A GPU kernel that reads the shared context "
          "once for a whole tree; the app models its KV reads."), "medusa"),
    ],
    N_("In production"): [
        T("serving framework", "framework de serving", N_("The server that batches and runs requests: vLLM, "
          "SGLang, TensorRT-LLM."), "production"),
        T("vLLM", "vLLM", N_("The most used open serving engine; paradec reads its speculative metrics."),
          "production"),
        T("SGLang", "SGLang", N_("A serving engine with speculative decoding built in. Not run here."), ""),
        T("TensorRT-LLM", "TensorRT-LLM", N_("NVIDIA's serving library. Not run here."), ""),
        T("Speculators", "Speculators", N_("vLLM's library of draft models and heads. Not run here."), ""),
        T("MoE", "MoE (mixture of experts)", N_("A model that runs only some of its layers' experts per token. "
          "Not in the app."), ""),
        T("Mirror-SD", "Mirror-SD", N_("Draft and target run at the same time on two accelerators."), "mirror"),
        T("GPU + NPU", "GPU + NPU", N_("Two kinds of accelerator side by side, as Mirror-SD uses. This machine "
          "has neither."), ""),
        T("latency", "latence", N_("Time a request waits for its tokens."), "production"),
        T("throughput", "throughput (débit)", N_("Tokens per second over all requests."), "production"),
    ],
    N_("Limits and tuning"): [
        T("memory overhead", "overhead mémoire", N_("Memory a method adds: a draft model, heads, a wider KV "
          "cache."), "benchmark"),
        T("hyperparameters", "hyperparamètres", N_("Draft length, tree depth, acceptance threshold: settings to "
          "tune per task and machine."), "tune"),
        T("dynamic draft length", "longueur de draft dynamique", N_("Choosing how many tokens to draft at each "
          "step (heuristic, confidence or learned rule)."), "sps", N_("the draft-length comparison")),
        T("Pacer", "Pacer", N_("A learned rule for the draft length. paradec's learned rule is of that kind; "
          "Pacer itself is not run."), "sps"),
    ],
}
