"""Node-score arithmetic the framework applies itself (Kubernetes' ``framework.MaxNodeScore`` and
``plugins/helper.DefaultNormalizeScore``, which Volcano's nodeorder uses through ``nodescore.CalculatePluginScore``):
here, not in ``plugins/``, because node selection normalises registered scores and the framework must not import
plugins."""

from __future__ import annotations

import numpy as np

#: Kubernetes' ``framework.MaxNodeScore``
MAX_NODE_SCORE = 100


def default_normalize(raw: np.ndarray, reverse: bool) -> np.ndarray:
    """Kubernetes' ``helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores)`` over the scored nodes: scale
    so the largest raw score is 100 (integer division), reversed as 100 - that when asked; with every raw score
    0, all become 100 when reversed and stay 0 otherwise."""
    top = float(raw.max()) if len(raw) else 0.0
    if top == 0:
        return np.full(len(raw), float(MAX_NODE_SCORE) if reverse else 0.0)
    scaled = np.floor_divide(MAX_NODE_SCORE * raw, top)
    return MAX_NODE_SCORE - scaled if reverse else scaled
