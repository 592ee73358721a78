"""autoshard.models: ``tfm`` IR from HF-style model configs.

Library API (stdlib only)::

    from autoshard.models import load_config, build_model, count_parameters
    cfg = load_config("configs/models/gpt2-124m.json")   # -> ModelConfig
    text = build_model(cfg, batch=8, seq=1024)           # -> MLIR module text
    n = count_parameters(cfg)                            # -> 124439808

CLI::

    python3 -m autoshard.models CONFIG.json --batch B --seq S -o model.mlir \\
        [--vocab-multiple N] [--capacity-factor CF] [--dtype f32|bf16|f16|f64] \\
        [--dropout P] [--name NAME] [--quiet]

Errors in configs or options raise :class:`ConfigError` (a ``ValueError``)
whose message names the key or option and the offending value; the CLI
prints it and exits with status 2.  Accepted but ignored config content (an
unknown key, ``rope_scaling``) issues a :class:`ConfigWarning`; the CLI prints
it as ``autoshard.models: warning: ...``.

See :mod:`autoshard.models.builder` for the IR layout and conventions,
:mod:`autoshard.models.config` for the accepted config keys and
:mod:`autoshard.models.hf` for the Hugging Face weight map the module summary
carries (docs/hf-checkpoints.md).
"""

from .builder import (DTYPES, ROLES, Param, build_model, count_parameters, moe_capacity,
                      padded_vocab_size, parameter_specs)
from .config import ConfigError, ConfigWarning, ModelConfig, config_from_dict, load_config

__all__ = ["ConfigError", "ConfigWarning", "ModelConfig", "load_config", "config_from_dict", "build_model",
           "count_parameters", "parameter_specs", "moe_capacity", "padded_vocab_size", "Param",
           "ROLES", "DTYPES", "format_count"]


def format_count(n: int) -> str:
    """Human-readable parameter count: ``124.4M``, ``8.03B``, ``46.70B``."""
    if n >= 10**9:
        return f"{n / 1e9:.2f}B"
    if n >= 10**6:
        return f"{n / 1e6:.1f}M"
    if n >= 10**3:
        return f"{n / 1e3:.1f}K"
    return str(n)
