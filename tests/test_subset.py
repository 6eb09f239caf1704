import pytest
import torch

from paradec.core.sampling import Sampler
from paradec.drafters.subset import VocabSubset


def test_subset_logits_expand_to_the_full_vocabulary():
    w = torch.randn(10, 4)
    s = VocabSubset(torch.tensor([7, 2, 5]), 10)
    h = torch.randn(2, 4)
    sub = h @ s.head(w).T
    full = s.expand(sub)
    torch.testing.assert_close(full[:, [7, 2, 5]], (h @ w.T)[:, [7, 2, 5]])
    assert torch.isinf(full[:, [0, 1, 3, 4, 6, 8, 9]]).all()
    q = Sampler(temperature=1.0).probs(full[0])
    assert q[[0, 1, 3, 4, 6, 8, 9]].sum() == 0 and abs(float(q.sum()) - 1) < 1e-6


def test_subset_rejects_ids_outside_the_vocabulary():
    with pytest.raises(ValueError):
        VocabSubset(torch.tensor([3, 12]), 10)
